/*
 * chapters/labs/dynconv/dilated_ref.h: the expected dx of Labs 1 and 3, for their checkers.
 *
 * It does not use a formula for dx. The loss L = sum_t dout[t] * out[t] of one channel is linear in
 * x, so dL/dx[s] is exactly the value of L at x = e_s (1 at token s, 0 everywhere else). That value
 * comes straight from the forward's definition, in float64: slow (T*T*W per channel, so the
 * checkers keep T small when dil > 1), obviously right, and not the loop the labs ask for.
 */
#ifndef LADDER_LAB_DILATED_REF_H
#define LADDER_LAB_DILATED_REF_H

#include <stdint.h>

/*
 * want[b,s,d] = dL/dx[b,s,d] for the dilated forward
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t-(W-1-w)*dil, d]      (x = 0 before token 0)
 * dout [B,T,D], kernels [B,T,D,W], want [B,T,D], all contiguous.
 */
static inline void dilated_dx_by_definition(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout,
                                            const float *kernels, float *want) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t d = 0; d < D; d++)
            for (int64_t s = 0; s < T; s++) {
                double L = 0.0; /* L(e_s) = sum_t dout[t] * out[t] with x = e_s */
                for (int64_t t = 0; t < T; t++) {
                    double out_t = 0.0;
                    for (int w = 0; w < W; w++) {
                        int64_t src = t - (int64_t)(W - 1 - w) * dil;
                        double x_src = src == s ? 1.0 : 0.0; /* e_s; tokens before 0 are never s */
                        out_t += (double)kernels[((b * T + t) * D + d) * W + w] * x_src;
                    }
                    L += (double)dout[(b * T + t) * D + d] * out_t;
                }
                want[(b * T + s) * D + d] = (float)L;
            }
}

#endif
