/*
 * gpu_tensorcore/attention_bwd_d256.cu: the tensor-core attention backward compiled for the head dims (HD, HDV) =
 * (256, 256), in bf16 and fp16, for both policies (attention_tc.cuh). The kernels are in attention_tc_bwd.cuh;
 * the head dims are split over several files so that a full build compiles them side by side.
 */
#include "attention_tc_bwd.cuh"

namespace attn_tc {
template ladder_status bwd_launch<plain, __nv_bfloat16, 256, 256>(args, bool, bool *);
template ladder_status bwd_launch<plain, __half, 256, 256>(args, bool, bool *);
template ladder_status bwd_launch<hooked, __nv_bfloat16, 256, 256>(args, bool, bool *);
template ladder_status bwd_launch<hooked, __half, 256, 256>(args, bool, bool *);
} // namespace attn_tc
