/*
 * chapters/labs/dynconv/solutions/lab3_naive_fwd.cu: a reference solution to Lab 3 (for instructors).
 *
 * The same kernel as gpu_naive/dynconv.cu, for contiguous tensors and one
 * sequence per batch row: decode i into (b, t, d), sum the W products whose
 * source token is >= 0, write out[i].
 */
#include "cuda_check.cuh"
#include "../lab.h"

__global__ void lab3_naive_fwd_kernel(int64_t B, int64_t T, int64_t D, int W, const float *x, const float *kernels,
                                      float *out) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * T * D) return; /* the last block may reach past the end */
    int64_t d = i % D, t = (i / D) % T, b = i / (D * T);
    float acc = 0.0f;
    for (int w = 0; w < W; w++) {
        int64_t src = t + w - W + 1;
        if (src >= 0) acc += kernels[i * W + w] * x[(b * T + src) * D + d];
    }
    out[i] = acc;
}

extern "C" ladder_status lab3_naive_fwd(int64_t B, int64_t T, int64_t D, int W, const float *x, const float *kernels,
                                        float *out) {
    const int threads = 256;
    lab3_naive_fwd_kernel<<<ladder_blocks(B * T * D, threads), threads>>>(B, T, D, W, x, kernels, out);
    LADDER_LAUNCH_CHECK("lab3_naive_fwd_kernel");
    return LADDER_OK;
}
