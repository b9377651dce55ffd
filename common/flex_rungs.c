/* The flex rung functions by rung number: the dispatcher's tables (see flex_rungs.h). gpu_tiled and gpu_tensorcore
 * build their block lists with the GPU builder of gpu_naive/flex.cu. */
#include "flex_rungs.h"

#ifdef LADDER_HAVE_CUDA
#define GPU(f) f
#else
#define GPU(f) NULL /* not built: the dispatcher reports the rung unavailable */
#endif

const flex_fn flex_fwd_rungs[LADDER_RUNG_COUNT] = {flex_fwd_cpu, GPU(flex_fwd_gpu_naive), GPU(flex_fwd_gpu_tiled),
                                                   GPU(flex_fwd_gpu_tensorcore)};
const flex_fn flex_bwd_rungs[LADDER_RUNG_COUNT] = {flex_bwd_cpu, GPU(flex_bwd_gpu_naive), GPU(flex_bwd_gpu_tiled),
                                                   GPU(flex_bwd_gpu_tensorcore)};
const flex_fn flex_build_rungs[LADDER_RUNG_COUNT] = {flex_build_cpu, GPU(flex_build_gpu), GPU(flex_build_gpu),
                                                     GPU(flex_build_gpu)};

flex_blocks flex_blocks_of(const ladder_flex_args *a) {
    return (flex_blocks){.kv_num = a->kv_num_blocks.data, .kv_idx = a->kv_indices.data,
                         .full_kv_num = a->full_kv_num_blocks.data, .full_kv_idx = a->full_kv_indices.data,
                         .q_num = a->q_num_blocks.data, .q_idx = a->q_indices.data,
                         .full_q_num = a->full_q_num_blocks.data, .full_q_idx = a->full_q_indices.data,
                         .MB = a->kv_indices.shape[0], .MH = a->kv_indices.shape[1], .Tq = a->kv_indices.shape[2],
                         .Tk = a->kv_indices.shape[3]};
}
