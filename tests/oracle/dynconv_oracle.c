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

double *dynconv_oracle_read(const ladder_tensor *t) {
    int64_t n = 1;
    for (int r = 0; r < t->rank; r++) n *= t->shape[r];
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        /* decode the C-order index i into coordinates, last dimension fastest */
        int64_t rest = i, off = 0;
        for (int r = t->rank - 1; r >= 0; r--) {
            off += (rest % t->shape[r]) * t->strides[r];
            rest /= t->shape[r];
        }
        v[i] = ladder_tensor_get(t, off);
    }
    return v;
}

/* The offsets as a plain int32 array (NULL without cu_seqlens); sets *n_seqs. */
static int32_t *read_cu_seqlens(const ladder_dynconv_args *a, int *n_seqs, int *failed) {
    *n_seqs = 0;
    *failed = 0;
    if (!a->cu_seqlens.data) return NULL;
    int n = (int)a->cu_seqlens.shape[0];
    int32_t *cu = malloc((size_t)n * sizeof *cu);
    if (!cu) {
        *failed = 1;
        return NULL;
    }
    for (int i = 0; i < n; i++) cu[i] = (int32_t)ladder_tensor_get(&a->cu_seqlens, i * a->cu_seqlens.strides[0]);
    *n_seqs = n - 1;
    return cu;
}

double *dynconv_oracle_fwd_tensors(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    int n_seqs, failed;
    int32_t *cu = read_cu_seqlens(a, &n_seqs, &failed);
    double *x = dynconv_oracle_read(&a->x), *k = dynconv_oracle_read(&a->kernels);
    double *out = malloc((size_t)(p->B * p->T * p->D) * sizeof *out);
    if (!failed && x && k && out) {
        dynconv_oracle_fwd(p, cu, n_seqs, x, k, out);
    } else {
        free(out);
        out = NULL;
    }
    free(cu);
    free(x);
    free(k);
    return out;
}

int dynconv_oracle_bwd_tensors(const ladder_dynconv_problem *p, const ladder_dynconv_args *a, double **dx,
                               double **dkernels) {
    int n_seqs, failed;
    int32_t *cu = read_cu_seqlens(a, &n_seqs, &failed);
    double *x = dynconv_oracle_read(&a->x), *k = dynconv_oracle_read(&a->kernels), *g = dynconv_oracle_read(&a->dout);
    *dx = malloc((size_t)(p->B * p->T * p->D) * sizeof **dx);
    *dkernels = malloc((size_t)(p->B * p->T * p->D * p->W) * sizeof **dkernels);
    int ok = !failed && x && k && g && *dx && *dkernels;
    if (ok) dynconv_oracle_bwd(p, cu, n_seqs, x, k, g, *dx, *dkernels);
    else {
        free(*dx);
        free(*dkernels);
        *dx = *dkernels = NULL;
    }
    free(cu);
    free(x);
    free(k);
    free(g);
    return ok ? 0 : -1;
}
