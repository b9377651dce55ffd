/*
 * chapters/labs/dynconv/lab1_dx.c: Lab 1, dx of a dilated convolution, on the CPU.
 *
 * The forward, for every b, t, d, with a dilation dil >= 1:
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t-(W-1-w)*dil, d]      (x = 0 before token 0)
 * Weight w reaches back (W-1-w)*dil tokens; with dil = 1 this is the forward of chapter 01.
 * Given dout = dL/dout, write dx = dL/dx into every element of dx, as a gather: each dx element
 * sums what it receives and is written once.
 * Work it out on paper first, with chapter 01's chain rule: which outputs read x[b,s,d], through
 * which weights, and which of those outputs exist near the end of the row?
 * Shapes: dout [B,T,D], kernels [B,T,D,W], dx [B,T,D], all contiguous.
 * Check it:  make lab LAB=lab1_dx
 */
#include "lab.h"

void lab1_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout, const float *kernels, float *dx) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0.0f;
                /* TODO(lab 1): add to acc what every output that read x[b,s,d] passes back to it.
                 * Tokens past T-1 do not exist: nothing comes back from them. */
                (void)W, (void)dil, (void)dout, (void)kernels;
                dx[(b * T + s) * D + d] = acc;
            }
}
