/* The recurrent rung functions by rung number: the dispatcher's table (see recurrent_rungs.h). */
#include "recurrent_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

const recurrent_fn recurrent_fwd_rungs[LADDER_RUNG_COUNT] = {recurrent_fwd_cpu, GPU(recurrent_fwd_gpu_naive),
                                                             GPU(recurrent_fwd_gpu_tiled),
                                                             GPU(recurrent_fwd_gpu_tensorcore)};
const recurrent_fn recurrent_bwd_rungs[LADDER_RUNG_COUNT] = {recurrent_bwd_cpu, GPU(recurrent_bwd_gpu_naive),
                                                             GPU(recurrent_bwd_gpu_tiled),
                                                             GPU(recurrent_bwd_gpu_tensorcore)};
