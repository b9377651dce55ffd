/*
 * cpu/dynconv.c: dynamic causal convolution, the CPU rung.
 *
 * The math, written to be read. Every output element is independent, so one
 * OpenMP loop over (batch, token) covers the forward and each half of the
 * backward; no thread ever writes where another writes, and each sum runs
 * in the same order every time, so results are bitwise repeatable.
 *
 * Inside a token, the loops run along d, the channel: a token's output, its
 * row of x and its kernels are each one contiguous stretch of memory, so the
 * compiler vectorises those loops (#pragma omp simd), and one thread walks
 * through its tokens in order, each row of x read once from memory and then
 * from cache by the W tokens that use it. This operation moves many bytes for
 * little arithmetic: what bounds it is how fast memory delivers the kernels.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, host pointers,
 * any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run dynconv --rung cpu
 */
#include <stddef.h>

#include "dynconv_rungs.h"
#include "varlen.h"

ladder_status dynconv_fwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    const float *x = a->x.data, *k = a->kernels.data;
    const int64_t *sx = a->x.strides, *sk = a->kernels.strides; /* x [B,T,D], kernels [B,T,D,W] */
    const int64_t sxd = sx[2], skd = sk[2], skw = sk[3];
    float *out = a->out.data;               /* [B,T,D], contiguous */
    const int32_t *cu = a->cu_seqlens.data; /* NULL: every batch row is one sequence */
    const int n_seqs = cu ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    const int64_t T = p->T, D = p->D;
    const int W = p->W;

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t start, end;
            ladder_sequence_bounds(cu, n_seqs, T, t, &start, &end);
            float *restrict o = out + (b * T + t) * D;
            for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
            /* out[b,t,d] = sum_w kernels[b,t,d,w] * x[b, t+w-W+1, d], x = 0 before the sequence starts: one w at
             * a time, for every d */
            for (int w = 0; w < W; w++) {
                const int64_t src = t + w - W + 1;
                if (src < start) continue;
                const float *xs = x + b * sx[0] + src * sx[1], *kw = k + b * sk[0] + t * sk[1] + w * skw;
#pragma omp simd
                for (int64_t d = 0; d < D; d++) o[d] += kw[d * skd] * xs[d * sxd];
            }
        }
    return LADDER_OK;
}

ladder_status dynconv_bwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    const float *x = a->x.data, *k = a->kernels.data, *dout = a->dout.data;
    const int64_t *sx = a->x.strides, *sk = a->kernels.strides, *sg = a->dout.strides;
    const int64_t sxd = sx[2], skd = sk[2], skw = sk[3], sgd = sg[2];
    float *dx = a->dx.data, *dk = a->dkernels.data; /* contiguous */
    const int32_t *cu = a->cu_seqlens.data;         /* NULL: every batch row is one sequence */
    const int n_seqs = cu ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    const int64_t T = p->T, D = p->D;
    const int W = p->W;

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t start, end;
            ladder_sequence_bounds(cu, n_seqs, T, t, &start, &end);
            const float *g = dout + b * sg[0] + t * sg[1]; /* dout[b,t,:] */
            /* forward: out[t] += kernels[t,w] * x[t+w-W+1], so dL/dkernels[t,w] = dout[t] * x[t+w-W+1], written in
             * the order of dkernels, (d, w) */
            float *restrict dkt = dk + (b * T + t) * D * W;
            for (int64_t d = 0; d < D; d++)
                for (int w = 0; w < W; w++) {
                    const int64_t src = t + w - W + 1;
                    dkt[d * W + w] = src >= start ? g[d * sgd] * x[b * sx[0] + src * sx[1] + d * sxd] : 0.0f;
                }
            /* forward: x[s] feeds out[s+W-1-w] through kernels[s+W-1-w, w] for every w whose output token is
             * still in s's sequence, so dL/dx[s] = sum_w dout[s+W-1-w] * kernels[s+W-1-w, w], for every d */
            float *restrict dxt = dx + (b * T + t) * D;
            for (int64_t d = 0; d < D; d++) dxt[d] = 0.0f;
            for (int w = 0; w < W; w++) {
                const int64_t dst = t + W - 1 - w;
                if (dst >= end) continue;
                const float *gd = dout + b * sg[0] + dst * sg[1], *kw = k + b * sk[0] + dst * sk[1] + w * skw;
#pragma omp simd
                for (int64_t d = 0; d < D; d++) dxt[d] += gd[d * sgd] * kw[d * skd];
            }
        }
    return LADDER_OK;
}
