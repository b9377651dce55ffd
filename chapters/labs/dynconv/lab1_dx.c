/*
 * chapters/labs/dynconv/lab1_dx.c: Lab 1, the dx half of the backward on the CPU.
 *
 * The forward (cpu/dynconv.c) computes, for every b, t, d,
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d]      (x = 0 before t = 0)
 * Given dout = dL/dout, write dx = dL/dx into every element of dx.
 * Work it out on paper first (chapter 01, "The gradient with respect to x"):
 * which outputs did x[b,s,d] feed, and through which weights?
 * Shapes: dout [B,T,D], kernels [B,T,D,W], dx [B,T,D], all contiguous.
 * Check it:  make lab LAB=lab1_dx
 */
#include "lab.h"

void lab1_dx(int64_t B, int64_t T, int64_t D, int W, const float *dout, const float *kernels, float *dx) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0.0f;
                /* TODO(lab 1): add to acc what every output that read x[b,s,d] passes back to it.
                 * Tokens past T do not exist: nothing comes back from them. */
                (void)W, (void)dout, (void)kernels;
                dx[(b * T + s) * D + d] = acc;
            }
}
