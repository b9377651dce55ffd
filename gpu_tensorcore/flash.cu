/*
 * gpu_tensorcore/flash.cu: the tensor-core flash rung's entry points: pick the compiled head dims and the
 * dtype, set up the fp32 scratch the backward needs, and call the launchers (flash_fwd_*.cu, flash_bwd_*.cu;
 * the kernels and what changed since gpu_tiled/ are described in flash_tc_fwd.cuh and flash_tc_bwd.cuh).
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all fp16; lse
 * and dlse f32; device pointers; any input strides; contiguous outputs; D, Dv <= 256; Hq, B <= 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tensorcore [--dtype fp16]
 */
#include "flash_rungs.h"
#include "flash_tc.cuh"

namespace flash_tc {
namespace {

template <class T> ladder_status fwd_for(const args &a) {
    const head_dims d = pick_head_dims(a.D, a.Dv);
    switch (d.hd * 1000 + d.hdv) {
    case 64064: return fwd_launch<T, 64, 64>(a);
    case 128128: return fwd_launch<T, 128, 128>(a);
    case 192192: return fwd_launch<T, 192, 192>(a);
    case 192128: return fwd_launch<T, 192, 128>(a);
    default: return fwd_launch<T, 256, 256>(a);
    }
}

template <class T> ladder_status bwd_for(const args &a, bool deterministic) {
    const head_dims d = pick_head_dims(a.D, a.Dv);
    switch (d.hd * 1000 + d.hdv) {
    case 64064: return bwd_launch<T, 64, 64>(a, deterministic);
    case 128128: return bwd_launch<T, 128, 128>(a, deterministic);
    case 192192: return bwd_launch<T, 192, 192>(a, deterministic);
    case 192128: return bwd_launch<T, 192, 128>(a, deterministic);
    default: return bwd_launch<T, 256, 256>(a, deterministic);
    }
}

/* Scratch from the stream-ordered pool (after the first call it costs no cudaMalloc), freed in stream order. */
ladder_status scratch(float **p, int64_t n) {
    LADDER_CUDA_TRY(cudaMallocAsync((void **)p, sizeof(float) * (size_t)n, 0));
    return LADDER_OK;
}

} // namespace
} // namespace flash_tc

extern "C" ladder_status flash_fwd_gpu_tensorcore(const ladder_flash_problem *fp, const ladder_flash_args *fa) {
    using namespace flash_tc;
    const args a = pack(fp, fa);
    return fa->q.dtype == LADDER_BF16 ? fwd_for<__nv_bfloat16>(a) : fwd_for<__half>(a);
}

extern "C" ladder_status flash_bwd_gpu_tensorcore(const ladder_flash_problem *fp, const ladder_flash_args *fa) {
    using namespace flash_tc;
    args a = pack(fp, fa);
    const int64_t rows = a.B * a.Hq * a.Sq;
    LADDER_TRY(scratch(&a.delta, rows));
    ladder_status st = fp->deterministic ? LADDER_OK : scratch(&a.dq_accum, rows * a.D);
    if (st == LADDER_OK)
        st = fa->q.dtype == LADDER_BF16 ? bwd_for<__nv_bfloat16>(a, fp->deterministic)
                                        : bwd_for<__half>(a, fp->deterministic);
    /* freed in stream order, after the kernels that use them; a failed free is reported unless an error came first */
    cudaError_t e1 = cudaFreeAsync(a.delta, 0), e2 = a.dq_accum ? cudaFreeAsync(a.dq_accum, 0) : cudaSuccess;
    if (st == LADDER_OK && (e1 != cudaSuccess || e2 != cudaSuccess))
        st = ladder_fail(LADDER_ERR_CUDA, "freeing the backward's scratch failed: %s",
                         cudaGetErrorString(e1 != cudaSuccess ? e1 : e2));
    return st;
}
