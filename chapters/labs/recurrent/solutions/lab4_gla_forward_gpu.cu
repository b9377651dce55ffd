/*
 * chapters/labs/recurrent/solutions/lab4_gla_forward_gpu.cu: a reference solution to Lab 4 (for instructors).
 *
 * o_t[j] reads column j of the state only, so a thread owns that column for the whole sequence and no other
 * thread touches it: no barrier, no atomics. The column is K floats, more than a thread's registers can hold
 * when K is known only at run time, so it lives in ht itself (global memory, mostly in L1 and L2), entry i at
 * ht[h][i][j]: the threads of a warp touch neighbouring j, so each of its accesses is one coalesced row.
 * Threads past V return before touching anything.
 */
#include "cuda_check.cuh"
#include "../lab.h"

constexpr int THREADS = 128;

__global__ void lab4_gla_forward_kernel(int64_t L, int64_t H, int64_t K, int64_t V, float scale, const float *q,
                                        const float *k, const float *v, const float *gk, const float *h0, float *o,
                                        float *ht) {
    const int64_t h = blockIdx.y, j = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    if (j >= V) return;
    float *S = ht + h * K * V + j; /* column j: S[i * V] */
    for (int64_t i = 0; i < K; i++) S[i * V] = h0[h * K * V + i * V + j];
    for (int64_t t = 0; t < L; t++) {
        const int64_t row = t * H + h;
        const float *qt = q + row * K, *kt = k + row * K, *gt = gk + row * K;
        const float vj = v[row * V + j];
        float acc = 0.0f;
        for (int64_t i = 0; i < K; i++) {
            const float s = expf(gt[i]) * S[i * V] + kt[i] * vj;
            S[i * V] = s;
            acc += qt[i] * s;
        }
        o[row * V + j] = scale * acc;
    }
}

extern "C" ladder_status lab4_gla_forward_gpu(int64_t L, int64_t H, int64_t K, int64_t V, float scale,
                                              const float *q, const float *k, const float *v, const float *gk,
                                              const float *h0, float *o, float *ht) {
    const dim3 grid((unsigned)((V + THREADS - 1) / THREADS), (unsigned)H);
    lab4_gla_forward_kernel<<<grid, THREADS>>>(L, H, K, V, scale, q, k, v, gk, h0, o, ht);
    LADDER_LAUNCH_CHECK("lab4_gla_forward_kernel");
    return LADDER_OK;
}
