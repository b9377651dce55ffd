/* chapters/labs/flash/solutions/lab3_alibi.c: a reference answer to Lab 3 (see ../lab3_alibi.c). */
#include <math.h>

#include "../lab.h"

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
                S[c] = scale * s - slope * (float)(d - j);
                tile_max = fmaxf(tile_max, S[c]);
            }
            /* what was summed under the old max m is worth exp(m - m_new) under the new one */
            const float m_new = fmaxf(m, tile_max), alpha = m == -INFINITY ? 0.0f : expf(m - m_new);
            l *= alpha;
            for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] *= alpha;
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
