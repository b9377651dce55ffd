/*
 * chapters/labs/recurrent/lab4_gla_forward_gpu.cu: Lab 4, Lab 1's gated forward as a CUDA kernel (needs a GPU).
 *
 * For each head h of one sequence, with a per-key-channel gate gk in log space:
 *     S_t[i,j] = exp(gk_t[i]) * S_{t-1}[i,j] + k_t[i] * v_t[j],   S_0 = h0
 *     o_t[j]   = scale * sum_i q_t[i] * S_t[i,j]
 * for t = 0 .. L-1, and ht = the state after the last step. The launcher is written: block (x, h) of the grid
 * owns columns x * THREADS .. of head h's state, one column j per thread. Complete the kernel. Which part of the
 * state does o_t[j] read, and so which part can one thread own with no other thread ever touching it? Where can
 * that part live while the thread walks the sequence (the block has no shared memory, and K is known only at
 * run time)? Which threads must do nothing at all?
 * Shapes: q, k, gk [L,H,K]; v, o [L,H,V]; h0, ht [H,K,V]; all contiguous, device memory.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab4_gla_forward_gpu
 */
#include "cuda_check.cuh"
#include "lab.h"

constexpr int THREADS = 128;

__global__ void lab4_gla_forward_kernel(int64_t L, int64_t H, int64_t K, int64_t V, float scale, const float *q,
                                        const float *k, const float *v, const float *gk, const float *h0, float *o,
                                        float *ht) {
    const int64_t h = blockIdx.y, j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    /* TODO(lab 4): run column j of head h's state through the L steps, writing o_t[j] at every step and the
     * final column into ht. */
    (void)L, (void)H, (void)K, (void)V, (void)scale, (void)q, (void)k, (void)v, (void)gk, (void)h0, (void)o,
        (void)ht, (void)h, (void)j;
}

extern "C" ladder_status lab4_gla_forward_gpu(int64_t L, int64_t H, int64_t K, int64_t V, float scale,
                                              const float *q, const float *k, const float *v, const float *gk,
                                              const float *h0, float *o, float *ht) {
    const dim3 grid((unsigned)((V + THREADS - 1) / THREADS), (unsigned)H);
    lab4_gla_forward_kernel<<<grid, THREADS>>>(L, H, K, V, scale, q, k, v, gk, h0, o, ht);
    LADDER_LAUNCH_CHECK("lab4_gla_forward_kernel");
    return LADDER_OK;
}
