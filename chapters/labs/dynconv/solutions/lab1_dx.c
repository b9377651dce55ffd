/*
 * chapters/labs/dynconv/solutions/lab1_dx.c: a reference solution to Lab 1 (for instructors).
 *
 * In the forward, x[b,s,d] is read by out[b,t,d] for t = s+W-1-w, w = 0..W-1,
 * through kernels[b,t,d,w]; so
 *     dx[b,s,d] = sum_w dout[b, s+W-1-w, d] * kernels[b, s+W-1-w, d, w]
 * over the w whose t = s+W-1-w is still a token (t < T).
 */
#include "../lab.h"

void lab1_dx(int64_t B, int64_t T, int64_t D, int W, const float *dout, const float *kernels, float *dx) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < T; s++)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0.0f;
                for (int w = 0; w < W; w++) {
                    int64_t t = s + W - 1 - w;
                    if (t < T) acc += dout[(b * T + t) * D + d] * kernels[((b * T + t) * D + d) * W + w];
                }
                dx[(b * T + s) * D + d] = acc;
            }
}
