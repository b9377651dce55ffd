/* chapters/labs/flash/solutions/lab1_combine.c: a reference answer to Lab 1 (see ../lab1_combine.c). */
#include <math.h>

#include "../lab.h"

void lab1_combine(int64_t n_splits, int64_t Sq, int64_t Dv, const float *o_parts, const float *lse_parts, float *o,
                  float *lse) {
    for (int64_t i = 0; i < Sq; i++) {
        /* lse = log sum_s exp(lse_s), taken around the largest so that no exp overflows */
        float m = -INFINITY;
        for (int64_t s = 0; s < n_splits; s++) m = fmaxf(m, lse_parts[s * Sq + i]);
        for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] = 0.0f;
        if (m == -INFINITY) { /* no split saw a key: the row is fully masked */
            lse[i] = -INFINITY;
            continue;
        }
        float l = 0.0f;
        for (int64_t s = 0; s < n_splits; s++) l += expf(lse_parts[s * Sq + i] - m);
        lse[i] = m + logf(l);
        /* split s holds exp(lse_s - lse) of the row's softmax mass, and o_s is its normalised average */
        for (int64_t s = 0; s < n_splits; s++) {
            const float w = expf(lse_parts[s * Sq + i] - lse[i]);
            for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] += w * o_parts[(s * Sq + i) * Dv + e];
        }
    }
}
