/*
 * chapters/labs/flash/lab3_alibi.c: Lab 3, ALiBi in the online softmax (CPU).
 *
 * ALiBi replaces position embeddings by a bias that grows with distance: for query row i, whose diagonal
 * (bottom-right causal, as in chapter 3) is key d = i + Sk - Sq, and key j <= d,
 *     S_ij = scale * q_i . k_j - slope * (d - j),
 * keys j > d masked. Write o and lse one key tile of BC keys at a time with the online softmax of chapter 3
 * (running max m, running sum l, rescale by exp(m_old - m_new)); never hold a whole row of scores.
 * A row that sees no key (d < 0) gets o = 0 and lse = -inf.
 * Shapes: q [Sq][D], k [Sk][D], v [Sk][Dv], o [Sq][Dv], lse [Sq].
 * Check it:  make lab LAB=lab3_alibi
 */
#include <math.h>

#include "lab.h"

enum { BC = 16 }; /* keys per tile */

void lab3_alibi(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, float slope, const float *q,
                const float *k, const float *v, float *o, float *lse) {
    for (int64_t i = 0; i < Sq; i++) {
        const int64_t d = i + Sk - Sq; /* the diagonal key */
        float m = -INFINITY, l = 0.0f;
        for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] = 0.0f;
        for (int64_t j0 = 0; j0 <= d && j0 < Sk; j0 += BC) {
            float S[BC];
            float tile_max = -INFINITY;
            for (int64_t c = 0; c < BC; c++) {
                const int64_t j = j0 + c;
                S[c] = -INFINITY;
                if (j > d || j >= Sk) continue;
                float s = 0.0f;
                for (int64_t e = 0; e < D; e++) s += q[i * D + e] * k[j * D + e];
                /* TODO(lab 3): the bias */
                (void)slope;
                S[c] = scale * s;
                tile_max = fmaxf(tile_max, S[c]);
            }
            /* TODO(lab 3): the online softmax. As written this only works while the running max never grows. */
            const float m_new = fmaxf(m, tile_max);
            for (int64_t c = 0; c < BC; c++) {
                const float P = S[c] == -INFINITY ? 0.0f : expf(S[c] - m_new);
                l += P;
                for (int64_t e = 0; P > 0.0f && e < Dv; e++) o[i * Dv + e] += P * v[(j0 + c) * Dv + e];
            }
            m = m_new;
        }
        for (int64_t e = 0; l > 0.0f && e < Dv; e++) o[i * Dv + e] /= l;
        lse[i] = l > 0.0f ? m + logf(l) : -INFINITY;
    }
}
