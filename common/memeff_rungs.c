/* The memeff rung functions by rung number: the dispatcher's table (see memeff_rungs.h). */
#include "memeff_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

const memeff_fn memeff_fwd_rungs[LADDER_RUNG_COUNT] = {memeff_fwd_cpu, GPU(memeff_fwd_gpu_naive),
                                                       GPU(memeff_fwd_gpu_tiled), GPU(memeff_fwd_gpu_tensorcore)};
const memeff_fn memeff_bwd_rungs[LADDER_RUNG_COUNT] = {memeff_bwd_cpu, GPU(memeff_bwd_gpu_naive),
                                                       GPU(memeff_bwd_gpu_tiled), GPU(memeff_bwd_gpu_tensorcore)};
