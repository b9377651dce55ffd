/*
 * cpu/dynconv.c: dynamic causal convolution, the CPU rung.
 *
 * The math, written to be read. Every output element is independent, so one
 * OpenMP loop over (batch, token) covers the forward and each half of the
 * backward; no thread ever writes where another writes, and each sum runs
 * in the same order every time, so results are bitwise repeatable.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, host pointers,
 * any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run dynconv --rung cpu
 */
#include <stddef.h>

#include "dynconv_rungs.h"
#include "varlen.h"

/* Strided element access: x is [B,T,D], kernels [B,T,D,W]. */
#define X(b, t, d) x[(b) * sx[0] + (t) * sx[1] + (d) * sx[2]]
#define K(b, t, d, w) k[(b) * sk[0] + (t) * sk[1] + (d) * sk[2] + (w) * sk[3]]
#define DOUT(b, t, d) dout[(b) * sg[0] + (t) * sg[1] + (d) * sg[2]]

ladder_status dynconv_fwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    const float *x = a->x.data, *k = a->kernels.data;
    const int64_t *sx = a->x.strides, *sk = a->kernels.strides;
    float *out = a->out.data; /* [B,T,D], contiguous */
    const int32_t *cu = a->cu_seqlens.data; /* NULL: every batch row is one sequence */
    const int n_seqs = cu ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    const int64_t T = p->T, D = p->D;
    const int W = p->W;

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t start, end;
            ladder_sequence_bounds(cu, n_seqs, T, t, &start, &end);
            for (int64_t d = 0; d < D; d++) {
                /* out[b,t,d] = sum_w kernels[b,t,d,w] * x[b, t+w-W+1, d], x = 0 before the sequence starts */
                float acc = 0.0f;
                for (int w = 0; w < W; w++) {
                    int64_t src = t + w - W + 1;
                    if (src >= start) acc += K(b, t, d, w) * X(b, src, d);
                }
                out[(b * T + t) * D + d] = acc;
            }
        }
    return LADDER_OK;
}

ladder_status dynconv_bwd_cpu(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    const float *x = a->x.data, *k = a->kernels.data, *dout = a->dout.data;
    const int64_t *sx = a->x.strides, *sk = a->kernels.strides, *sg = a->dout.strides;
    float *dx = a->dx.data, *dk = a->dkernels.data; /* contiguous */
    const int32_t *cu = a->cu_seqlens.data; /* NULL: every batch row is one sequence */
    const int n_seqs = cu ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    const int64_t T = p->T, D = p->D;
    const int W = p->W;

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t start, end;
            ladder_sequence_bounds(cu, n_seqs, T, t, &start, &end);
            for (int64_t d = 0; d < D; d++) {
                /* forward: out[t] += kernels[t,w] * x[t+w-W+1], so dL/dkernels[t,w] = dout[t] * x[t+w-W+1] */
                for (int w = 0; w < W; w++) {
                    int64_t src = t + w - W + 1;
                    dk[((b * T + t) * D + d) * W + w] = src >= start ? DOUT(b, t, d) * X(b, src, d) : 0.0f;
                }
                /* forward: x[s] feeds out[s+W-1-w] through kernels[s+W-1-w, w] for every w whose
                 * output token is still in s's sequence, so dL/dx[s] = sum_w dout[s+W-1-w] * kernels[s+W-1-w, w] */
                float acc = 0.0f;
                for (int w = 0; w < W; w++) {
                    int64_t dst = t + W - 1 - w;
                    if (dst < end) acc += DOUT(b, dst, d) * K(b, dst, d, w);
                }
                dx[(b * T + t) * D + d] = acc;
            }
        }
    return LADDER_OK;
}
