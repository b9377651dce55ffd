/*
 * chapters/labs/dynconv/solutions/lab1_dx.c: a reference solution to Lab 1 (for instructors).
 *
 * In the forward, out[b,t,d] reads x[b, t-(W-1-w)*dil, d] through kernels[b,t,d,w]. So x[b,s,d] is
 * read by out[b,t,d] for t = s+(W-1-w)*dil, w = 0..W-1, and
 *     dx[b,s,d] = sum_w dout[b, s+(W-1-w)*dil, d] * kernels[b, s+(W-1-w)*dil, d, w]
 * over the w whose t is still a token (t < T). With dil = 1 this is chapter 01's dx.
 */
#include "../lab.h"

void lab1_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout, const float *kernels, float *dx) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0.0f;
                for (int w = 0; w < W; w++) {
                    int64_t t = s + (int64_t)(W - 1 - w) * dil;
                    if (t < T) acc += dout[(b * T + t) * D + d] * kernels[((b * T + t) * D + d) * W + w];
                }
                dx[(b * T + s) * D + d] = acc;
            }
}
