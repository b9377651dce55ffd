#include "compare.h"

#include <math.h>
#include <stdio.h>

double ladder_tolerance(ladder_dtype dtype) {
    switch (dtype) {
    case LADDER_F16: return LADDER_TOL_F16;
    case LADDER_BF16: return LADDER_TOL_BF16;
    default: return LADDER_TOL_F32;
    }
}

static bool finite_pair_mismatch(double a, double b) {
    if (isfinite(a) && isfinite(b)) return false;
    if (isnan(a) && isnan(b)) return false;
    if (isinf(a) && isinf(b) && (a > 0) == (b > 0)) return false;
    return true;
}

/* Element i of one side: C-order doubles, or a host tensor of any float dtype and strides. */
typedef struct side {
    const double *f64;
    const ladder_tensor *t;
    bool contiguous;
} side;

static double at(const side *s, int64_t i) {
    if (s->f64) return s->f64[i];
    return ladder_tensor_get(s->t, s->contiguous ? i : ladder_tensor_offset_of_flat(s->t, i));
}

/* What element i may be off by under magnitudes @p m (ladder_compare_magnitude()), @p underflow added. */
static double bound_of(const ladder_magnitude *m, int64_t i, double tol, double underflow) {
    return tol * m->terms[i] + (m->rounding ? LADDER_F32_ROUNDING * m->rounding[i] : 0.0) + underflow;
}

/*
 * What a side may be off by near zero, where no share of the value bounds it. fp16: half the spacing of its
 * subnormals, the most that rounding to it moves a value (an fp16 dq of 1.4e-7 is stored as 1.2e-7). bf16 and f32,
 * which share fp32's exponents: the smallest normal float, 2^-126, since the GPU rungs compute in fp32 and flush
 * subnormal values to zero in places (the exponential's ex2.approx.ftz), so that two of them met at a dK element of
 * 5.1e-39 against -1.1e-38 (docs/results/h200-2026-11-29-run-11.md, call 12). 0 for doubles.
 */
static double underflow_of(const side *s) {
    if (!s->t) return 0;
    switch (s->t->dtype) {
    case LADDER_F16: return ldexp(1.0, -25);
    case LADDER_BF16:
    case LADDER_F32: return ldexp(1.0, -126);
    default: return 0;
    }
}

/* Whether element i fails: the plain element rule, or (with @p m) its magnitudes' bound. */
static bool bad_at(double g, double w, const ladder_magnitude *m, int64_t i, double tol, double rms, double underflow) {
    if (finite_pair_mismatch(g, w)) return true;
    if (!isfinite(w)) return false;
    return fabs(g - w) > (m ? bound_of(m, i, tol, underflow) : 4 * tol * (fabs(w) + rms));
}

/*
 * The comparison itself, reading both sides element by element (no copies: outputs can be gigabytes); with @p m,
 * each element is held to its magnitudes' bound and the L2 rule is not applied.
 */
static ladder_cmp compare(const side *got, const side *want, int rank, const int64_t *shape, double tol,
                          const ladder_magnitude *m) {
    ladder_cmp c = {0};
    c.tol = tol;
    c.rank = rank;
    c.first_bad = -1;
    c.by_magnitude = m != NULL;
    c.n = 1;
    for (int i = 0; i < rank; i++) c.n *= shape[i];

    /* OpenMP reductions: a benchmark-sized output has hundreds of millions of elements */
    double diff2 = 0, want2 = 0, max_abs = 0;
    int64_t finite = 0, mismatches = 0;
#pragma omp parallel for reduction(+ : diff2, want2, finite, mismatches) reduction(max : max_abs)
    for (int64_t i = 0; i < c.n; i++) {
        double g = at(got, i), w = at(want, i);
        if (finite_pair_mismatch(g, w)) {
            mismatches++;
        } else if (isfinite(w)) {
            double d = g - w;
            diff2 += d * d;
            want2 += w * w;
            if (fabs(d) > max_abs) max_abs = fabs(d);
            finite++;
        }
    }
    c.nonfinite_mismatches = mismatches;
    c.max_abs = max_abs;
    double rms = finite ? sqrt(want2 / (double)finite) : 0;
    c.rel_l2 = want2 > 0 ? sqrt(diff2 / want2) : sqrt(diff2);
    int64_t first_bad = c.n;
    double share = 0;
    const double underflow = fmax(underflow_of(got), underflow_of(want));
#pragma omp parallel for reduction(min : first_bad) reduction(max : share)
    for (int64_t i = 0; i < c.n; i++) {
        double g = at(got, i), w = at(want, i);
        if (bad_at(g, w, m, i, tol, rms, underflow) && i < first_bad) first_bad = i;
        if (m && isfinite(g) && isfinite(w) && g != w) {
            const double bound = bound_of(m, i, tol, underflow);
            share = fmax(share, bound > 0 ? fabs(g - w) / bound : INFINITY);
        }
    }
    c.worst_share = share;
    c.first_bad = first_bad < c.n ? first_bad : -1;
    c.ok = c.nonfinite_mismatches == 0 && (m || c.rel_l2 <= tol) && c.first_bad < 0;
    if (!c.ok && c.first_bad < 0) {
        /* the L2 test failed with every element inside its own bound: point at the largest error */
        double worst = -1;
        for (int64_t i = 0; i < c.n; i++) {
            double g = at(got, i), w = at(want, i);
            if (isfinite(w) && fabs(g - w) > worst) worst = fabs(g - w), c.first_bad = i;
        }
    }
    if (c.first_bad >= 0) {
        int64_t flat = c.first_bad;
        for (int i = rank - 1; i >= 0; i--) {
            c.first_bad_at[i] = flat % shape[i];
            flat /= shape[i];
        }
        c.got_at_bad = at(got, c.first_bad);
        c.want_at_bad = at(want, c.first_bad);
        if (m) c.bound_at_bad = bound_of(m, c.first_bad, tol, underflow);
    }
    return c;
}

ladder_cmp ladder_compare_f64(const double *got, const double *want, int rank, const int64_t *shape, double tol) {
    side g = {.f64 = got}, w = {.f64 = want};
    return compare(&g, &w, rank, shape, tol, NULL);
}

ladder_cmp ladder_compare_f64_magnitude(const double *got, const double *want, int rank, const int64_t *shape,
                                        const ladder_magnitude *m, double tol) {
    side g = {.f64 = got}, w = {.f64 = want};
    return compare(&g, &w, rank, shape, tol, m);
}

/* Two host tensors, by the plain rule or (@p m set) by magnitudes. */
static ladder_cmp compare_tensors(const ladder_tensor *got, const ladder_tensor *want, double tol,
                                  const ladder_magnitude *m) {
    ladder_cmp c = {0};
    c.first_bad = -1;
    c.tol = tol;
    c.by_magnitude = m != NULL;
    bool same_shape = got->rank == want->rank && ladder_tensor_numel(got) >= 0;
    for (int i = 0; same_shape && i < got->rank; i++) same_shape = got->shape[i] == want->shape[i];
    if (!same_shape) return c; /* ok = false; n = 0 marks the shape mismatch */
    side g = {.t = got, .contiguous = ladder_tensor_is_contiguous(got)};
    side w = {.t = want, .contiguous = ladder_tensor_is_contiguous(want)};
    return compare(&g, &w, want->rank, want->shape, tol, m);
}

ladder_cmp ladder_compare(const ladder_tensor *got, const ladder_tensor *want, double tol) {
    return compare_tensors(got, want, tol, NULL);
}

ladder_cmp ladder_compare_magnitude(const ladder_tensor *got, const ladder_tensor *want, const ladder_magnitude *m,
                                    double tol) {
    return compare_tensors(got, want, tol, m);
}

void ladder_cmp_describe(const ladder_cmp *c, char *buf, size_t n) {
    if (c->n == 0 && !c->ok) {
        snprintf(buf, n, "shapes differ");
        return;
    }
    int used = snprintf(buf, n, "rel_l2 %.2e max_abs %.2e (tol %.0e", c->rel_l2, c->max_abs, c->tol);
    if (c->by_magnitude && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, " of its magnitudes, worst element at %.2g%% of its bound",
                         100 * c->worst_share);
    if (used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, ")");
    if (c->nonfinite_mismatches && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ", %lld NaN/Inf mismatches", (long long)c->nonfinite_mismatches);
    if (c->first_bad >= 0 && used > 0 && (size_t)used < n) {
        used += snprintf(buf + used, n - (size_t)used, ", first bad [");
        for (int i = 0; i < c->rank && used > 0 && (size_t)used < n; i++)
            used += snprintf(buf + used, n - (size_t)used, i ? ",%lld" : "%lld", (long long)c->first_bad_at[i]);
        if (used > 0 && (size_t)used < n)
            used += snprintf(buf + used, n - (size_t)used, "]: got %.6g want %.6g", c->got_at_bad, c->want_at_bad);
        if (c->by_magnitude && used > 0 && (size_t)used < n)
            snprintf(buf + used, n - (size_t)used, ", bound %.3g", c->bound_at_bad);
    }
}
