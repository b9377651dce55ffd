/* The memeff rung functions by rung number: the dispatcher's table (see memeff_rungs.h). */
#include "memeff_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

/* gpu_tiled and gpu_tensorcore are the attention family's (issue 19, part 1): NULL until they land, and the
 * descriptor lists them in rungs_missing */
const memeff_fn memeff_fwd_rungs[LADDER_RUNG_COUNT] = {memeff_fwd_cpu, GPU(memeff_fwd_gpu_naive), NULL, NULL};
const memeff_fn memeff_bwd_rungs[LADDER_RUNG_COUNT] = {memeff_bwd_cpu, GPU(memeff_bwd_gpu_naive), NULL, NULL};
