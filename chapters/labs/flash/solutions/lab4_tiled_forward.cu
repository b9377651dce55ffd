/*
 * chapters/labs/flash/solutions/lab4_tiled_forward.cu: a reference solution to Lab 4 (for instructors).
 *
 * The block stages a tile of BC keys (k and v) into shared memory, every thread copying every BR-th float, and
 * each thread runs its row's online softmax over the tile: the tile's scores, their max against the running m,
 * the sum l and the output o rescaled by exp(m_old - m_new) once per tile, then the tile's exp(S - m) added. The
 * tile is read by every row before the next one overwrites it, so there are two barriers a tile, and every thread
 * reaches both: a thread whose row is past Sq still stages its share and waits; it only writes nothing at the end.
 * A causal block needs no key past its last row's diagonal, so its loop stops there; inside the last tiles each
 * row masks its own keys. A row that never saw a key keeps m = -inf and l = 0, and writes o = 0, lse = -inf.
 * q_i and o_i live in per-thread arrays (D and Dv are known only at run time, so local memory, in L1).
 */
#include <math.h>

#include "cuda_check.cuh"
#include "../lab.h"

constexpr int BR = 32; /* query rows of a block, one per thread */
constexpr int BC = 32; /* keys of a staged tile */

__global__ void lab4_tiled_forward_kernel(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, int causal,
                                          const float *q, const float *k, const float *v, float *o, float *lse) {
    extern __shared__ float tile[]; /* BC rows of k (D floats each), then BC rows of v (Dv floats each) */
    const int64_t i = (int64_t)blockIdx.x * BR + threadIdx.x; /* this thread's query row: none when i >= Sq */
    float *ks = tile, *vs = tile + BC * D;
    const bool mine = i < Sq;
    const int64_t shift = Sk - Sq; /* row i's diagonal key is i + shift */
    const int64_t last = min((int64_t)(blockIdx.x + 1) * BR, Sq) - 1;
    const int64_t kend = causal ? max((int64_t)0, min(Sk, last + shift + 1)) : Sk;
    float qi[LAB4_MAX_D], acc[LAB4_MAX_D], s[BC];
    for (int64_t e = 0; e < D; e++) qi[e] = mine ? q[i * D + e] : 0.0f;
    for (int64_t e = 0; e < Dv; e++) acc[e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j0 = 0; j0 < kend; j0 += BC) {
        const int nk = (int)min((int64_t)BC, kend - j0);
        for (int64_t x = threadIdx.x; x < nk * D; x += BR) ks[x] = k[j0 * D + x];
        for (int64_t x = threadIdx.x; x < nk * Dv; x += BR) vs[x] = v[j0 * Dv + x];
        __syncthreads(); /* the tile is whole before any row reads it */
        if (mine) {
            float mt = m;
            for (int c = 0; c < nk; c++) {
                float dot = 0.0f;
                for (int64_t e = 0; e < D; e++) dot += qi[e] * ks[c * D + e];
                s[c] = !causal || j0 + c <= i + shift ? scale * dot : -INFINITY;
                mt = fmaxf(mt, s[c]);
            }
            if (mt != -INFINITY) { /* else the row has seen no key yet, and nothing changes */
                const float corr = expf(m - mt); /* 0 while m is -inf */
                l *= corr;
                for (int64_t e = 0; e < Dv; e++) acc[e] *= corr;
                for (int c = 0; c < nk; c++) {
                    const float p = expf(s[c] - mt);
                    l += p;
                    for (int64_t e = 0; e < Dv; e++) acc[e] += p * vs[c * Dv + e];
                }
                m = mt;
            }
        }
        __syncthreads(); /* every row is done with the tile before the next one is staged over it */
    }
    if (!mine) return;
    for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] = l > 0.0f ? acc[e] / l : 0.0f;
    lse[i] = l > 0.0f ? m + logf(l) : -INFINITY;
}

extern "C" ladder_status lab4_tiled_forward(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, int causal,
                                            const float *q, const float *k, const float *v, float *o, float *lse) {
    const unsigned blocks = (unsigned)((Sq + BR - 1) / BR);
    const size_t shared = (size_t)BC * (size_t)(D + Dv) * sizeof(float); /* at most 32 KiB */
    lab4_tiled_forward_kernel<<<blocks, BR, shared>>>(Sq, Sk, D, Dv, scale, causal, q, k, v, o, lse);
    LADDER_LAUNCH_CHECK("lab4_tiled_forward_kernel");
    return LADDER_OK;
}
