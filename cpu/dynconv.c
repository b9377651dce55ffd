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
            const float *kt = k + b * sk[0] + t * sk[1];
            /* out[b,t,d] = sum_w kernels[b,t,d,w] * x[b, t+w-W+1, d], x = 0 before the sequence starts. Where
             * every w has its token and the kernels lie contiguous (W = 4, kernels [.., D, 4] with unit strides,
             * x's rows contiguous), one pass along d reads each row of kernels once, in order, and writes each
             * output once, the w sum in registers, in the same order as below */
            if (W == 4 && t - 3 >= start && skw == 1 && skd == 4 && sxd == 1) {
                const float *x0 = x + b * sx[0] + (t - 3) * sx[1], *x1 = x0 + sx[1], *x2 = x1 + sx[1],
                            *x3 = x2 + sx[1];
#pragma omp simd
                for (int64_t d = 0; d < D; d++) {
                    float acc = 0.0f;
                    acc += kt[4 * d] * x0[d];
                    acc += kt[4 * d + 1] * x1[d];
                    acc += kt[4 * d + 2] * x2[d];
                    acc += kt[4 * d + 3] * x3[d];
                    o[d] = acc;
                }
                continue;
            }
            for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
            /* otherwise one w at a time, for every d */
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
            /* ... where every w has its token and the rows are contiguous (W = 4), one pass along d that writes
             * dkernels in order; else element by element */
            const bool whole = W == 4 && sgd == 1 && sxd == 1 && skd == 4 && skw == 1;
            if (whole && t - 3 >= start) {
                const float *x0 = x + b * sx[0] + (t - 3) * sx[1], *x1 = x0 + sx[1], *x2 = x1 + sx[1],
                            *x3 = x2 + sx[1];
#pragma omp simd
                for (int64_t d = 0; d < D; d++) {
                    dkt[4 * d] = g[d] * x0[d];
                    dkt[4 * d + 1] = g[d] * x1[d];
                    dkt[4 * d + 2] = g[d] * x2[d];
                    dkt[4 * d + 3] = g[d] * x3[d];
                }
            } else {
                for (int64_t d = 0; d < D; d++)
                    for (int w = 0; w < W; w++) {
                        const int64_t src = t + w - W + 1;
                        dkt[d * W + w] = src >= start ? g[d * sgd] * x[b * sx[0] + src * sx[1] + d * sxd] : 0.0f;
                    }
            }
            /* forward: x[s] feeds out[s+W-1-w] through kernels[s+W-1-w, w] for every w whose output token is
             * still in s's sequence, so dL/dx[s] = sum_w dout[s+W-1-w] * kernels[s+W-1-w, w], for every d */
            float *restrict dxt = dx + (b * T + t) * D;
            if (whole && t + 3 < end) { /* every w's output token in the sequence: the sum in registers, in order */
                const float *g0 = dout + b * sg[0] + (t + 3) * sg[1], *g1 = g0 - sg[1], *g2 = g1 - sg[1],
                            *g3 = g2 - sg[1];
                const float *k0 = k + b * sk[0] + (t + 3) * sk[1], *k1 = k0 - sk[1], *k2 = k1 - sk[1],
                            *k3 = k2 - sk[1];
#pragma omp simd
                for (int64_t d = 0; d < D; d++) {
                    float acc = 0.0f;
                    acc += g0[d] * k0[4 * d];
                    acc += g1[d] * k1[4 * d + 1];
                    acc += g2[d] * k2[4 * d + 2];
                    acc += g3[d] * k3[4 * d + 3];
                    dxt[d] = acc;
                }
                continue;
            }
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
