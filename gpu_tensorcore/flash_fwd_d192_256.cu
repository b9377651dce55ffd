/*
 * gpu_tensorcore/flash_fwd_d192_256.cu: the tensor-core flash forward compiled for the head dims (HD, HDV) =
 * (192, 192), (192, 128), (256, 256),
 * in bf16 and fp16. The kernels are in flash_tc_fwd.cuh; the head dims are split over several files
 * so that a full build compiles them side by side.
 */
#include "flash_tc_fwd.cuh"

namespace flash_tc {
template ladder_status fwd_launch<__nv_bfloat16, 192, 192>(const args &);
template ladder_status fwd_launch<__half, 192, 192>(const args &);
template ladder_status fwd_launch<__nv_bfloat16, 192, 128>(const args &);
template ladder_status fwd_launch<__half, 192, 128>(const args &);
template ladder_status fwd_launch<__nv_bfloat16, 256, 256>(const args &);
template ladder_status fwd_launch<__half, 256, 256>(const args &);
} // namespace flash_tc
