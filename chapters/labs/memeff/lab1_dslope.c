/*
 * chapters/labs/memeff/lab1_dslope.c: Lab 1, the gradient of per-head ALiBi slopes through dropout (CPU).
 *
 * A model that learns its ALiBi slopes needs dL/dslope for each head. The bias of head h is
 *     bias_hij = -slopes[h] * |i - j|,   S_hij = scale * q_hi . k_hj + bias_hij,
 * and dropout with probability p acts on P as in chapter 4. Write dslope[h] for every head from q, k, v, the
 * forward's o and lse, and dout, recomputing P from lse and the dropout mask from Philox, as the backward does,
 * without storing either. Shapes (one sequence, B = 1): q [H][Sq][D], k [H][Sk][D], v [H][Sk][Dv],
 * o and dout [H][Sq][Dv], lse [H][Sq]. Element (0, h, i, j) draws Philox output offset + (h*Sq + i)*Sk + j.
 * Check it:  make lab LAB=lab1_dslope
 */
#include <math.h>

#include "lab.h"

void lab1_dslope(int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *slopes,
                 float p, uint64_t seed, uint64_t offset, const float *q, const float *k, const float *v,
                 const float *o, const float *lse, const float *dout, double *dslope) {
    for (int64_t h = 0; h < H; h++) {
        dslope[h] = 0.0;
        /* TODO(lab 1): how does the loss move with S_hij (with dropout on), and how does S_hij move with
         * slopes[h]? Chapter 4's dS and dbias are the first half. */
        (void)Sq, (void)Sk, (void)D, (void)Dv, (void)scale, (void)slopes, (void)p, (void)seed, (void)offset,
            (void)q, (void)k, (void)v, (void)o, (void)lse, (void)dout;
    }
}
