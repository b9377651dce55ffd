/* The flash rung functions by rung number: the dispatcher's table (see flash_rungs.h). */
#include "flash_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

const flash_fn flash_fwd_rungs[LADDER_RUNG_COUNT] = {flash_fwd_cpu, GPU(flash_fwd_gpu_naive), GPU(flash_fwd_gpu_tiled),
                                                     GPU(flash_fwd_gpu_tensorcore)};
const flash_fn flash_bwd_rungs[LADDER_RUNG_COUNT] = {flash_bwd_cpu, GPU(flash_bwd_gpu_naive), GPU(flash_bwd_gpu_tiled),
                                                     GPU(flash_bwd_gpu_tensorcore)};
