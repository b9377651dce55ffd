/*
 * chapters/labs/dynconv/lab3_naive_dx.cu: Lab 3, Lab 1's dx as a CUDA kernel (needs a GPU).
 *
 * The forward, with a dilation dil >= 1:
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t-(W-1-w)*dil, d]      (x = 0 before token 0)
 * and Lab 1 gave dx = dL/dx as a gather. Here one thread owns one dx element: thread i owns the i-th
 * element of dx in C order (d fastest). The launcher is written; complete the kernel. All pointers
 * are device memory.
 * Shapes: dout [B,T,D], kernels [B,T,D,W], dx [B,T,D], all contiguous.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab3_naive_dx
 */
#include "cuda_check.cuh"
#include "lab.h"

__global__ void lab3_naive_dx_kernel(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout,
                                     const float *kernels, float *dx) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * T * D) return; /* the last block may reach past the end */
    /* TODO(lab 3): find this thread's b, s and d from i, gather what x[b,s,d] receives, write dx[i]. */
    (void)W, (void)dil, (void)dout, (void)kernels, (void)dx;
}

extern "C" ladder_status lab3_naive_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout,
                                       const float *kernels, float *dx) {
    const int threads = 256;
    lab3_naive_dx_kernel<<<ladder_blocks(B * T * D, threads), threads>>>(B, T, D, W, dil, dout, kernels, dx);
    LADDER_LAUNCH_CHECK("lab3_naive_dx_kernel");
    return LADDER_OK;
}
