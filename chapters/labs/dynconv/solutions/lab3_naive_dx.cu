/*
 * chapters/labs/dynconv/solutions/lab3_naive_dx.cu: a reference solution to Lab 3 (for instructors).
 *
 * Lab 1's gather, one thread per dx element: decode i into (b, s, d), then sum
 * dout[b,t,d] * kernels[b,t,d,w] over t = s+(W-1-w)*dil < T, and write dx[i].
 */
#include "cuda_check.cuh"
#include "../lab.h"

__global__ void lab3_naive_dx_kernel(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout,
                                     const float *kernels, float *dx) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * T * D) return; /* the last block may reach past the end */
    int64_t d = i % D, s = (i / D) % T, b = i / (D * T);
    float acc = 0.0f;
    for (int w = 0; w < W; w++) {
        int64_t t = s + (int64_t)(W - 1 - w) * dil;
        if (t < T) acc += dout[(b * T + t) * D + d] * kernels[((b * T + t) * D + d) * W + w];
    }
    dx[i] = acc;
}

extern "C" ladder_status lab3_naive_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout,
                                       const float *kernels, float *dx) {
    const int threads = 256;
    lab3_naive_dx_kernel<<<ladder_blocks(B * T * D, threads), threads>>>(B, T, D, W, dil, dout, kernels, dx);
    LADDER_LAUNCH_CHECK("lab3_naive_dx_kernel");
    return LADDER_OK;
}
