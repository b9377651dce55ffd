/*
 * chapters/labs/memeff/solutions/lab3_warp_rows.cu: a reference solution of Lab 3 (see ../lab3_warp_rows.cu).
 * Each lane runs the online softmax over its keys (a split of one key each 32), then the warp merges the 32
 * partial (m, l, o) by the split-key combine: the row max by shuffles, each lane's l and o rescaled by
 * exp(m_lane - m), summed by shuffles. A lane that saw no key has m = -inf and weighs 0.
 */
#include <math.h>

#include "cuda_check.cuh"
#include "../lab.h"

constexpr int WARPS = 4; /* warps per block */

__global__ void lab3_warp_rows_kernel(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q,
                                      const float *k, const float *v, const float *bias, int64_t sbias_i,
                                      int64_t sbias_j, float p, uint64_t seed, uint64_t offset, float *o, float *lse) {
    const int64_t i = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (i >= Sq) return; /* the whole warp */
    const float drop_scale = ladder_dropout_scale(p);
    float m = -INFINITY, l = 0.0f, acc[LAB3_MAX_DV];
#pragma unroll
    for (int e = 0; e < LAB3_MAX_DV; e++) acc[e] = 0.0f;
    for (int64_t j = lane; j < Sk; j += 32) {
        float s = 0.0f;
        for (int64_t e = 0; e < D; e++) s += q[i * D + e] * k[j * D + e];
        s *= scale;
        if (bias) s += bias[i * sbias_i + j * sbias_j];
        const float m_new = fmaxf(m, s);
        const float alpha = expf(m - m_new), w = expf(s - m_new); /* m = -inf at first: alpha = 0 */
        const float f = p > 0.0f ? (ladder_dropout_keep(seed, offset + (uint64_t)i * Sk + j, p) ? drop_scale : 0.0f)
                                 : 1.0f;
        l = alpha * l + w;
#pragma unroll
        for (int e = 0; e < LAB3_MAX_DV; e++)
            if (e < Dv) acc[e] = alpha * acc[e] + w * f * v[j * Dv + e];
        m = m_new;
    }
    float M = m;
    for (int off = 16; off > 0; off /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
    const float c = m == -INFINITY ? 0.0f : expf(m - M); /* a lane with no key weighs 0 */
    float L = c * l;
    for (int off = 16; off > 0; off /= 2) L += __shfl_xor_sync(0xffffffffu, L, off);
#pragma unroll
    for (int e = 0; e < LAB3_MAX_DV; e++) {
        float x = c * acc[e];
        for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
        if (lane == 0 && e < Dv) o[i * Dv + e] = L > 0.0f ? x / L : 0.0f;
    }
    if (lane == 0) lse[i] = L > 0.0f ? M + logf(L) : -INFINITY;
}

extern "C" ladder_status lab3_warp_rows(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q,
                                        const float *k, const float *v, const float *bias, int64_t sbias_i,
                                        int64_t sbias_j, float p, uint64_t seed, uint64_t offset, float *o,
                                        float *lse) {
    const unsigned blocks = (unsigned)((Sq + WARPS - 1) / WARPS);
    lab3_warp_rows_kernel<<<blocks, 32 * WARPS>>>(Sq, Sk, D, Dv, scale, q, k, v, bias, sbias_i, sbias_j, p, seed,
                                                  offset, o, lse);
    LADDER_LAUNCH_CHECK("lab3_warp_rows_kernel");
    return LADDER_OK;
}
