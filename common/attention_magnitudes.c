/*
 * common/attention_magnitudes.c: the magnitudes an attention backward's gradients are checked against, wherever a
 * rung's result is compared with another's or with the oracle (ladder_algo::magnitudes, ladder_compare_magnitude()),
 * for any algorithm of the family that describes its scores (attn_mag_model: flex's, memeff's).
 *
 * Why they need more than the plain rule: each of those outputs is a sum over scores of dS = P (dP - Delta) times
 * something (a key, a query, dS/dx for a buffer element x: a bias's is 1), and a row's dS sums to zero (without
 * dlse), so the sums cancel. ALiBi's slope
 * gradient, sum_ij dS_ij (j - i), keeps about i times the rounding residue of every row's sum, however small the
 * gradient; a row that sees one key has dS = P (dP - Delta) = rounding noise, and so has its dq. Two correct fp32
 * rungs then differ by far more than tol of the value (or of |value| + rms), and the difference is set by the terms
 * and by how each term was computed, which is what is summed here, per output element:
 *
 *   terms     sum of |term|: |ds| |k| scale for dq, |ds| |q| scale for dk, |dS dS/dx| for a buffer element x, each
 *             dS taken as |dS| + P_ij sum_e |dO_ie O_ie|: a rung forms Delta = dO . O from the O its forward stored,
 *             which two correct 16-bit rungs may round one unit apart in any element, and dS = P (dP - Delta) keeps
 *             that difference however much dP and Delta cancel (a bf16 dq off by 1.1% of its other terms).
 *   rounding  sum of each term's first-order rounding coefficient, the term's factor dS taken as
 *                 |dS| a_ij + P_ij (dP_mag_ij + Delta_mag_i),
 *             a_ij = 1 + scale sum_d |q_id k_jd| + |s| + |S| + |lse_i|, the magnitude of the exponent S - lse: each
 *                 rounding on the way to it is relative to one of these, and exp turns its argument's absolute error
 *                 into a relative error of P (ALiBi's far keys have |S| and lse in the hundreds);
 *             dP_mag_ij = sum_e |dO_ie v_je|: the difference dP - Delta keeps the absolute errors of both dot
 *                 products, however small it is;
 *             Delta_mag_i = sum_e |dO_ie O_ie| + sum_j P_ij (dP_mag_ij + a_ij |dP_ij|) + |dlse_i|: Delta = dO . O,
 *                 with O's sums rounding at sum_j P_ij |v_j| and carrying each P's relative error a_ij.
 *             For dq and dk, dS/ds multiplies it too, taken as at least 1 (softcap's 1 - tanh^2 is itself a
 *             difference: |dS| |1 - dS/ds| a more).
 *   dv        sums P_ij dO_i: nothing cancels, but each P carries the relative error a_ij of its exponent, so terms
 *             sum_i P_ij |dO_ie| and rounding sum_i P_ij a_ij |dO_ie| (a key that every row sees, ALiBi's far rows
 *             among them, differed between two correct fp32 rungs by 1.5e-4 of its value).
 *   flush     the GPU rungs' exponential flushes a P below the smallest normal float to zero (ex2.approx.ftz), an
 *             absolute error of up to 2^-126 in P and so of 2^-126 |dP - Delta| in dS, and a dS below it is flushed
 *             as a 16-bit operand of the matrix units, 2^-126 more: FLUSH rounding units each. One element's
 *             allowance near zero (ladder_compare_magnitude()) does not cover a sum of hundreds of them (`ladder
 *             bench flex`'s checked dK had elements near 1e-37 off by 1.7e-37: docs/results/h200-2026-11-29-run-12.md,
 *             call 2). Added to dS's and dv's rounding, per term.
 *
 * Dropout (memeff) multiplies P by its factor f (0 or 1 / (1 - p)) in O and in dP = f dO . v, and so in every term
 * above that P weighs through them (O, Delta, dv); dS = P (dP - Delta) keeps P itself.
 *
 * Everything is computed in double from the case's inputs (P and O afresh, no rung's result), over the scores the
 * model lets through. Tasks are (batch row, kv head) pairs: each owns its dq, dk and dv rows, and sums its buffer
 * terms into its own partial, which the caller adds in task order.
 */
#include "attention_magnitudes.h"

#include <math.h>
#include <stdlib.h>

#include "compare.h"

/* 2^-126, the most a flush to zero moves a value, in units of LADDER_F32_ROUNDING (2^-22) */
#define FLUSH 0x1p-104

/* Element [b, h, s, e] of a rank-3 or rank-4 f32 tensor, through its strides. */
static double el(const ladder_tensor *t, int64_t b, int64_t h, int64_t s, int64_t e) {
    return ((const float *)t->data)[b * t->strides[0] + h * t->strides[1] + s * t->strides[2] +
                                    (t->rank > 3 ? e * t->strides[3] : 0)];
}

/* Per-thread room for one row: its visible keys, with s, S, dS/ds, P, a, f, dP and dP's magnitude of each. */
typedef struct row_buf {
    int64_t *keys;
    double *S, *dscore, *P, *a, *s, *f, *dP, *dP_mag;
} row_buf;

/* Add @p v to element @p x of output @p o's terms and @p r to its rounding, where the output is asked. */
static void add(const attn_mag_out *o, int64_t x, double v, double r) {
    if (!o->terms) return;
    o->terms[x] += v;
    o->rounding[x] += r;
}

/* Row (b, h, i): its terms into dq, dk, dv and @p partial (this task's buffer terms). */
static void one_row(const attn_mag_model *w, const row_buf *r, int64_t b, int64_t h, int64_t i, double *partial) {
    const ladder_attention_problem *p = w->p;
    const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    int64_t n = 0;
    double m = -INFINITY;
    for (int64_t j = 0; j < p->Sk; j++) {
        if (!w->sees(w->ctx, b, h, i, j)) continue;
        double dot = 0, mag = 0;
        for (int64_t d = 0; d < p->D; d++) {
            const double x = el(w->q, b, h, i, d) * el(w->k, b, hk, j, d);
            dot += x, mag += fabs(x);
        }
        r->keys[n] = j;
        r->s[n] = w->scale * dot;
        const attn_mag_score sc = w->score(w->ctx, r->s[n], b, h, i, j);
        r->S[n] = sc.S;
        r->dscore[n] = sc.dscore;
        r->f[n] = sc.keep;
        r->a[n] = 1 + w->scale * mag + fabs(r->s[n]) + fabs(r->S[n]);
        m = fmax(m, r->S[n++]);
    }
    if (n == 0 || m == -INFINITY) return; /* a fully masked row: zero gradients, exactly */
    double l = 0;
    for (int64_t x = 0; x < n; x++) l += exp(r->S[x] - m);
    const double lse = m + log(l);
    for (int64_t x = 0; x < n; x++) {
        r->P[x] = exp(r->S[x] - lse);
        r->a[x] += fabs(lse);
    }
    /* dP_ij = f_ij dO_i . v_j and its magnitude; O_i = sum_j P_ij f_ij v_j; Delta_i = dO_i . O_i - dlse_i */
    const double dl = w->dlse->data ? el(w->dlse, b, h, i, 0) : 0;
    double delta = -dl, delta_rounding = fabs(dl);
    for (int64_t x = 0; x < n; x++) {
        double dP = 0, dP_mag = 0;
        for (int64_t e = 0; e < p->Dv; e++) {
            const double y = el(w->dout, b, h, i, e) * el(w->v, b, hk, r->keys[x], e);
            dP += y, dP_mag += fabs(y);
        }
        r->dP[x] = r->f[x] * dP, r->dP_mag[x] = r->f[x] * dP_mag;
        /* O's sums round at sum_j P_ij f_ij |v_j| and carry each P's relative error a_ij: through dO . O, that is
         * sum_j P_ij (dP_mag_ij + a_ij |dP_ij|) */
        delta_rounding += r->P[x] * (r->dP_mag[x] + r->a[x] * fabs(r->dP[x]));
    }
    double delta_stored = 0; /* sum_e |dO_ie O_ie|: what O's rounding to its dtype can move Delta by, per unit */
    for (int64_t e = 0; e < p->Dv; e++) {
        double o = 0;
        for (int64_t x = 0; x < n; x++) o += r->P[x] * r->f[x] * el(w->v, b, hk, r->keys[x], e);
        delta += el(w->dout, b, h, i, e) * o;
        delta_stored += fabs(el(w->dout, b, h, i, e) * o);
    }
    delta_rounding += delta_stored;
    const int64_t qrow = (b * p->Hq + h) * p->Sq + i;
    for (int64_t x = 0; x < n; x++) {
        const int64_t j = r->keys[x], krow = (b * p->Hkv + hk) * p->Sk + j;
        const double dP = r->dP[x], dP_mag = r->dP_mag[x];
        const double P = r->P[x], dS = P * (dP - delta);
        const double dS_rounding = fabs(dS) * r->a[x] + P * (dP_mag + delta_rounding) + FLUSH * (1 + fabs(dP - delta));
        const double dscore = r->dscore[x];
        const double dS_terms = fabs(dS) + P * delta_stored;
        const double ds = dS_terms * fabs(dscore);
        const double ds_rounding = dS_rounding * fmax(1, fabs(dscore)) + fabs(dS) * fabs(1 - dscore) * r->a[x];
        for (int64_t d = 0; d < p->D; d++) {
            const double kd = w->scale * fabs(el(w->k, b, hk, j, d)), qd = w->scale * fabs(el(w->q, b, h, i, d));
            add(&w->dq, qrow * p->D + d, ds * kd, ds_rounding * kd);
            add(&w->dk, krow * p->D + d, ds * qd, ds_rounding * qd);
        }
        for (int64_t e = 0; e < p->Dv; e++) {
            const double dO = fabs(el(w->dout, b, h, i, e)), pd = P * r->f[x] * dO;
            add(&w->dv, krow * p->Dv + e, pd, pd * r->a[x] + FLUSH * r->f[x] * dO);
        }
        if (w->buffers) w->buffers(w->ctx, r->s[x], b, h, i, j, dS_terms, dS_rounding, partial);
    }
}

ladder_status attn_magnitudes(const attn_mag_model *m, double *partial) {
    const ladder_attention_problem *p = m->p;
    const int64_t tasks = p->B * p->Hkv, group = p->Hq / p->Hkv;
    ladder_status st = LADDER_OK;
#pragma omp parallel
    {
        const size_t row = (size_t)p->Sk * sizeof(double);
        row_buf r = {malloc((size_t)p->Sk * sizeof(int64_t)), malloc(row), malloc(row), malloc(row), malloc(row),
                     malloc(row), malloc(row), malloc(row), malloc(row)};
        const bool ok = r.keys && r.S && r.dscore && r.P && r.a && r.s && r.f && r.dP && r.dP_mag;
        if (!ok) {
#pragma omp critical
            st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a row of %lld keys", (long long)p->Sk);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) {
            const int64_t b = t / p->Hkv, hk = t % p->Hkv;
            for (int64_t h = hk * group; ok && h < (hk + 1) * group; h++)
                for (int64_t i = 0; i < p->Sq; i++) one_row(m, &r, b, h, i, partial + t * m->width);
        }
        free(r.keys), free(r.S), free(r.dscore), free(r.P), free(r.a), free(r.s), free(r.f), free(r.dP),
            free(r.dP_mag);
    }
    return st;
}

ladder_status attn_mag_alloc(const ladder_case *c, int i, ladder_magnitudes *m, attn_mag_out *o) {
    int64_t shape[LADDER_MAX_RANK];
    const int rank = ladder_case_shape(c, i, shape);
    o->n = 1;
    for (int d = 0; d < rank; d++) o->n *= shape[d];
    m->terms[i] = o->terms = calloc((size_t)(o->n > 0 ? o->n : 1), sizeof(double));
    m->rounding[i] = o->rounding = calloc((size_t)(o->n > 0 ? o->n : 1), sizeof(double));
    if (!o->terms || !o->rounding)
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the magnitudes of %lld elements of %s", (long long)o->n,
                           c->algo->tensors[i].name);
    return LADDER_OK;
}
