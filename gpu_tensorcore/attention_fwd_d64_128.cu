/*
 * gpu_tensorcore/attention_fwd_d64_128.cu: the tensor-core attention forward compiled for the head dims (HD, HDV) =
 * (64, 64), (128, 128), in bf16 and fp16, for both policies (attention_tc.cuh). The kernels are in attention_tc_fwd.cuh;
 * the head dims are split over several files so that a full build compiles them side by side.
 */
#include "attention_tc_fwd.cuh"

namespace attn_tc {
template ladder_status fwd_launch<plain, __nv_bfloat16, 64, 64>(const args &);
template ladder_status fwd_launch<plain, __half, 64, 64>(const args &);
template ladder_status fwd_launch<plain, __nv_bfloat16, 128, 128>(const args &);
template ladder_status fwd_launch<plain, __half, 128, 128>(const args &);
template ladder_status fwd_launch<hooked, __nv_bfloat16, 64, 64>(const args &);
template ladder_status fwd_launch<hooked, __half, 64, 64>(const args &);
template ladder_status fwd_launch<hooked, __nv_bfloat16, 128, 128>(const args &);
template ladder_status fwd_launch<hooked, __half, 128, 128>(const args &);
} // namespace attn_tc
