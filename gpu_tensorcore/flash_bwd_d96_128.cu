/*
 * gpu_tensorcore/flash_bwd_d96_128.cu: the tensor-core flash backward compiled for the head dims (HD, HDV) =
 * (96, 96), (128, 128), in bf16 and fp16. The kernels are in flash_tc_bwd.cuh; the head dims
 * are split over three files so that a full build compiles them side by side.
 */
#include "flash_tc_bwd.cuh"

namespace flash_tc {
template ladder_status bwd_launch<__nv_bfloat16, 96, 96>(const args &, bool);
template ladder_status bwd_launch<__half, 96, 96>(const args &, bool);
template ladder_status bwd_launch<__nv_bfloat16, 128, 128>(const args &, bool);
template ladder_status bwd_launch<__half, 128, 128>(const args &, bool);
} // namespace flash_tc
