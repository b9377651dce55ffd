/*
 * gpu_tensorcore/attention_fwd_d192_256.cu: the tensor-core attention forward compiled for the head dims (HD, HDV) =
 * (192, 192), (192, 128), (256, 256), in bf16 and fp16, for both policies (attention_tc.cuh). The kernels are in attention_tc_fwd.cuh;
 * the head dims are split over several files so that a full build compiles them side by side.
 */
#include "attention_tc_fwd.cuh"

namespace attn_tc {
template ladder_status fwd_launch<plain, __nv_bfloat16, 192, 192>(const args &);
template ladder_status fwd_launch<plain, __half, 192, 192>(const args &);
template ladder_status fwd_launch<plain, __nv_bfloat16, 192, 128>(const args &);
template ladder_status fwd_launch<plain, __half, 192, 128>(const args &);
template ladder_status fwd_launch<plain, __nv_bfloat16, 256, 256>(const args &);
template ladder_status fwd_launch<plain, __half, 256, 256>(const args &);
template ladder_status fwd_launch<hooked, __nv_bfloat16, 192, 192>(const args &);
template ladder_status fwd_launch<hooked, __half, 192, 192>(const args &);
template ladder_status fwd_launch<hooked, __nv_bfloat16, 192, 128>(const args &);
template ladder_status fwd_launch<hooked, __half, 192, 128>(const args &);
template ladder_status fwd_launch<hooked, __nv_bfloat16, 256, 256>(const args &);
template ladder_status fwd_launch<hooked, __half, 256, 256>(const args &);
} // namespace attn_tc
