/*
 * chapters/labs/flash/lab2_dscale.c: Lab 2, the gradient of the softmax scale (CPU).
 *
 * A model that learns its attention temperature needs dL/dscale. For unmasked attention of one head,
 *     S = scale * q k^T,  P = softmax(S) row by row,  o = P v,  loss = sum(o * dout),
 * return dL/dscale from q, k, v, the forward's o and lse, and dout, recomputing P from lse the way the
 * backward in chapter 3 does (P_ij = exp(S_ij - lse_i)), without storing P.
 * Shapes: q [Sq][D], k [Sk][D], v [Sk][Dv], o and dout [Sq][Dv], lse [Sq].
 * Check it:  make lab LAB=lab2_dscale
 */
#include "lab.h"

double lab2_dscale(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q, const float *k,
                   const float *v, const float *o, const float *lse, const float *dout) {
    double dscale = 0.0;
    for (int64_t i = 0; i < Sq; i++) {
        /* TODO(lab 2): what does row i contribute? Chapter 3's dS tells you how the loss moves with S_ij;
         * how does S_ij move with the scale? */
        (void)Sk, (void)D, (void)Dv, (void)scale, (void)q, (void)k, (void)v, (void)o, (void)lse, (void)dout;
    }
    return dscale;
}
