/* The flash rung functions by rung number: the dispatcher's table (see flash_rungs.h). */
#include "flash_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

/* gpu_tensorcore is not written yet: NULL, so the dispatcher says "rung gpu_tensorcore was not built" */
const flash_fn flash_fwd_rungs[LADDER_RUNG_COUNT] = {flash_fwd_cpu, GPU(flash_fwd_gpu_naive), GPU(flash_fwd_gpu_tiled), NULL};
const flash_fn flash_bwd_rungs[LADDER_RUNG_COUNT] = {flash_bwd_cpu, GPU(flash_bwd_gpu_naive), GPU(flash_bwd_gpu_tiled), NULL};
