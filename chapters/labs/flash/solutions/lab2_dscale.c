/* chapters/labs/flash/solutions/lab2_dscale.c: a reference answer to Lab 2 (see ../lab2_dscale.c). */
#include <math.h>

#include "../lab.h"

double lab2_dscale(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q, const float *k,
                   const float *v, const float *o, const float *lse, const float *dout) {
    double dscale = 0.0;
    for (int64_t i = 0; i < Sq; i++) {
        double Delta = 0.0; /* rowsum(dO * O) */
        for (int64_t e = 0; e < Dv; e++) Delta += (double)dout[i * Dv + e] * o[i * Dv + e];
        for (int64_t j = 0; j < Sk; j++) {
            double qk = 0.0, dP = 0.0;
            for (int64_t e = 0; e < D; e++) qk += (double)q[i * D + e] * k[j * D + e];
            for (int64_t e = 0; e < Dv; e++) dP += (double)dout[i * Dv + e] * v[j * Dv + e];
            const double P = exp(scale * qk - lse[i]);
            /* dL/dS_ij = P (dP - Delta), and dS_ij/dscale = q_i . k_j */
            dscale += P * (dP - Delta) * qk;
        }
    }
    return dscale;
}
