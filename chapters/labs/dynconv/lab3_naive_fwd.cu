/*
 * chapters/labs/dynconv/lab3_naive_fwd.cu: Lab 3, the forward as a CUDA kernel (needs a GPU).
 *
 * One thread per output element:
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d]      (x = 0 before t = 0)
 * The launcher is written; complete the kernel. Thread i owns the i-th
 * element of out in C order (d fastest). All pointers are device memory.
 * Shapes: x [B,T,D], kernels [B,T,D,W], out [B,T,D], all contiguous.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab3_naive_fwd
 */
#include "cuda_check.cuh"
#include "lab.h"

__global__ void lab3_naive_fwd_kernel(int64_t B, int64_t T, int64_t D, int W, const float *x, const float *kernels,
                                      float *out) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * T * D) return; /* the last block may reach past the end */
    /* TODO(lab 3): find this thread's b, t and d from i, sum the window, write out[i]. */
    (void)W, (void)x, (void)kernels, (void)out;
}

extern "C" ladder_status lab3_naive_fwd(int64_t B, int64_t T, int64_t D, int W, const float *x, const float *kernels,
                                        float *out) {
    const int threads = 256;
    lab3_naive_fwd_kernel<<<ladder_blocks(B * T * D, threads), threads>>>(B, T, D, W, x, kernels, out);
    LADDER_LAUNCH_CHECK("lab3_naive_fwd_kernel");
    return LADDER_OK;
}
