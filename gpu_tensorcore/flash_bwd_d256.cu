/*
 * gpu_tensorcore/flash_bwd_d256.cu: the tensor-core flash backward compiled for the head dims (HD, HDV) =
 * (256, 256),
 * in bf16 and fp16. The kernels are in flash_tc_bwd.cuh; the head dims are split over several files
 * so that a full build compiles them side by side.
 */
#include "flash_tc_bwd.cuh"

namespace flash_tc {
template ladder_status bwd_launch<__nv_bfloat16, 256, 256>(const args &, bool);
template ladder_status bwd_launch<__half, 256, 256>(const args &, bool);
} // namespace flash_tc
