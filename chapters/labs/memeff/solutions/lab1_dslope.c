/*
 * chapters/labs/memeff/solutions/lab1_dslope.c: a reference solution of Lab 1 (see ../lab1_dslope.c).
 * The chain rule through the bias: dL/dslope_h = sum_ij dS_hij * dbias_hij/dslope_h = -sum_ij dS_hij |i - j|,
 * with dS = P (dP f - Delta), f dropout's factor, Delta = rowsum(dO * O).
 */
#include <math.h>

#include "../lab.h"

void lab1_dslope(int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *slopes,
                 float p, uint64_t seed, uint64_t offset, const float *q, const float *k, const float *v,
                 const float *o, const float *lse, const float *dout, double *dslope) {
    const double drop_scale = 1.0 / (1.0 - (double)p);
    for (int64_t h = 0; h < H; h++) {
        double acc = 0.0;
        for (int64_t i = 0; i < Sq; i++) {
            const float *qi = q + (h * Sq + i) * D, *oi = o + (h * Sq + i) * Dv, *dOi = dout + (h * Sq + i) * Dv;
            double delta = 0.0;
            for (int64_t e = 0; e < Dv; e++) delta += (double)dOi[e] * oi[e];
            for (int64_t j = 0; j < Sk; j++) {
                const float *kj = k + (h * Sk + j) * D, *vj = v + (h * Sk + j) * Dv;
                const double dist = (double)(i > j ? i - j : j - i);
                double qk = 0.0, dp = 0.0;
                for (int64_t e = 0; e < D; e++) qk += (double)qi[e] * kj[e];
                for (int64_t e = 0; e < Dv; e++) dp += (double)dOi[e] * vj[e];
                const double P = exp(scale * qk - slopes[h] * dist - lse[h * Sq + i]);
                const uint64_t n = ladder_dropout_counter(offset, 0, h, i, j, H, Sq, Sk);
                const double f = p == 0.0f ? 1.0 : ladder_dropout_keep(seed, n, p) ? drop_scale : 0.0;
                acc += P * (dp * f - delta) * -dist;
            }
        }
        dslope[h] = acc;
    }
}
