/* The dynconv rung functions by rung number: the dispatcher's table (see dynconv_rungs.h). */
#include "dynconv_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

const dynconv_fn dynconv_fwd_rungs[LADDER_RUNG_COUNT] = {
    dynconv_fwd_cpu, GPU(dynconv_fwd_gpu_naive), GPU(dynconv_fwd_gpu_tiled), GPU(dynconv_fwd_gpu_tensorcore)};
const dynconv_fn dynconv_bwd_rungs[LADDER_RUNG_COUNT] = {
    dynconv_bwd_cpu, GPU(dynconv_bwd_gpu_naive), GPU(dynconv_bwd_gpu_tiled), GPU(dynconv_bwd_gpu_tensorcore)};
