/*
 * tests/oracle/dynconv_oracle.c: dynconv in float64, one loop per index.
 *
 * Forward (common/dynconv.h):
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d],  x = 0 before t's sequence starts
 *
 * The backward is written as the adjoint of that loop, statement by
 * statement: every multiply-add the forward did,
 *     out[b,t,d] += kernels[b,t,d,w] * x[b,src,d]      (src = t+w-W+1 inside t's sequence)
 * sends dout[b,t,d] back to both of its factors,
 *     dkernels[b,t,d,w] = dout[b,t,d] * x[b,src,d]
 *     dx[b,src,d]      += dout[b,t,d] * kernels[b,t,d,w]
 * This scatter form is on purpose not the gather form the rungs use
 * (dx[s] = sum_w dout[s+W-1-w] * kernels[s+W-1-w, w], skipping tokens past the
 * end of s's sequence): the two are checked against each other. Since src and
 * t always lie in the same sequence, the dx sum never reaches past its end.
 */
#include "dynconv_oracle.h"

#include <stdlib.h>

/* The sequence [*start, *end) that holds token t: a plain linear scan over the offsets. */
static void sequence_of(const ladder_dynconv_problem *p, const int32_t *cu_seqlens, int n_seqs, int64_t t,
                        int64_t *start, int64_t *end) {
    *start = 0;
    *end = p->T;
    if (!cu_seqlens) return;
    for (int i = 0; i < n_seqs; i++)
        if (cu_seqlens[i] <= t && t < cu_seqlens[i + 1]) {
            *start = cu_seqlens[i];
            *end = cu_seqlens[i + 1];
            return;
        }
}

/* C-order indices: x, out, dout, dx are [B,T,D]; kernels, dkernels [B,T,D,W]. */
#define I3(b, t, d) (((b) * p->T + (t)) * p->D + (d))
#define I4(b, t, d, w) ((((b) * p->T + (t)) * p->D + (d)) * p->W + (w))

void dynconv_oracle_fwd(const ladder_dynconv_problem *p, const int32_t *cu_seqlens, int n_seqs, const double *x,
                        const double *kernels, double *out) {
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < p->T; t++) {
            int64_t start, end;
            sequence_of(p, cu_seqlens, n_seqs, t, &start, &end);
            for (int64_t d = 0; d < p->D; d++) {
                double sum = 0;
                for (int64_t w = 0; w < p->W; w++) {
                    int64_t src = t + w - p->W + 1;
                    if (src >= start) sum += kernels[I4(b, t, d, w)] * x[I3(b, src, d)];
                }
                out[I3(b, t, d)] = sum;
            }
        }
}

void dynconv_oracle_bwd(const ladder_dynconv_problem *p, const int32_t *cu_seqlens, int n_seqs, const double *x,
                        const double *kernels, const double *dout, double *dx, double *dkernels) {
    for (int64_t i = 0; i < p->B * p->T * p->D; i++) dx[i] = 0;
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t t = 0; t < p->T; t++) {
            int64_t start, end;
            sequence_of(p, cu_seqlens, n_seqs, t, &start, &end);
            for (int64_t d = 0; d < p->D; d++)
                for (int64_t w = 0; w < p->W; w++) {
                    int64_t src = t + w - p->W + 1;
                    if (src < start) {
                        dkernels[I4(b, t, d, w)] = 0; /* this weight met the zero padding */
                        continue;
                    }
                    /* forward: out[b,t,d] += kernels[b,t,d,w] * x[b,src,d] */
                    dkernels[I4(b, t, d, w)] = dout[I3(b, t, d)] * x[I3(b, src, d)];
                    dx[I3(b, src, d)] += dout[I3(b, t, d)] * kernels[I4(b, t, d, w)];
                }
        }
}
