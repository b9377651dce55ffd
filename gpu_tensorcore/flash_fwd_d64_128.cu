/*
 * gpu_tensorcore/flash_fwd_d64_128.cu: the tensor-core flash forward compiled for the head dims (HD, HDV) =
 * (64, 64), (128, 128),
 * in bf16 and fp16. The kernels are in flash_tc_fwd.cuh; the head dims are split over several files
 * so that a full build compiles them side by side.
 */
#include "flash_tc_fwd.cuh"

namespace flash_tc {
template ladder_status fwd_launch<__nv_bfloat16, 64, 64>(const args &);
template ladder_status fwd_launch<__half, 64, 64>(const args &);
template ladder_status fwd_launch<__nv_bfloat16, 128, 128>(const args &);
template ladder_status fwd_launch<__half, 128, 128>(const args &);
} // namespace flash_tc
