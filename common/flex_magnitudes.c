/*
 * common/flex_magnitudes.c: the magnitudes flex's dq, dk, dv and buffer gradients are checked against, wherever a rung's
 * result is compared with another's or with the oracle (ladder_algo::magnitudes, ladder_compare_magnitude()).
 *
 * Why they need more than the plain rule: each of those outputs is a sum over scores of dS = P (dP - Delta) times
 * something (a key, a query, dS/dx), and a row's dS sums to zero (without dlse), so the sums cancel. ALiBi's slope
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
 * Everything is computed in double from the case's inputs (P and O afresh, no rung's result), over the scores the
 * block lists let through (the case's lists when it has them, else the mask mods, which the lists built from them
 * reproduce). Tasks are (batch row, kv head) pairs: each owns its dq, dk and dv rows, and sums its buffer terms into
 * its own partial, added in task order.
 */
#include "flex_magnitudes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "compare.h"
#include "flex_rungs.h"

/* 2^-126, the most a flush to zero moves a value, in units of LADDER_F32_ROUNDING (2^-22) */
#define FLUSH 0x1p-104

/* Element [b, h, s, e] of a rank-3 or rank-4 f32 tensor, through its strides. */
static double el(const ladder_tensor *t, int64_t b, int64_t h, int64_t s, int64_t e) {
    return ((const float *)t->data)[b * t->strides[0] + h * t->strides[1] + s * t->strides[2] +
                                    (t->rank > 3 ? e * t->strides[3] : 0)];
}

/* The magnitudes of one output: both arrays, and how many elements. */
typedef struct out {
    double *terms, *rounding;
    int64_t n;
} out;

/* What every row reads. */
typedef struct job {
    const ladder_flex_problem *fp;
    const ladder_flex_args *a;
    ladder_flex_env env;
    bool lists;        /* the case gives block lists (else the mask mods alone decide) */
    flex_blocks k;
    double scale;
    out dq, dk, dv;
    int slot[LADDER_FLEX_MAX_READS]; /* read r adds into buffer output slot[r] (-1: its gradient is not asked for) */
    out buf[LADDER_FLEX_MAX_READS];
    int n_buf;
    int64_t width;                   /* a task's partial: every buffer output's terms, then their rounding */
} job;

/* Whether row i of head h in batch row b sees key j: its tile in the forward's lists (full: yes; partial: the mask
 * mods; neither: no), or without lists the mask mods alone. */
static bool sees(const job *w, int64_t b, int64_t h, int64_t i, int64_t j) {
    const unsigned masks = (unsigned)w->fp->mask_mods;
    if (!w->lists) return ladder_flex_masks(masks, &w->env, b, h, i, j);
    const flex_blocks *k = &w->k;
    const int64_t row = flex_list_row(k, b, h, i / LADDER_FLEX_BLOCK, k->Tq), tk = j / LADDER_FLEX_BLOCK;
    for (int32_t e = 0; e < k->full_kv_num[row]; e++)
        if (k->full_kv_idx[row * k->Tk + e] == tk) return true;
    for (int32_t e = 0; e < k->kv_num[row]; e++)
        if (k->kv_idx[row * k->Tk + e] == tk) return ladder_flex_masks(masks, &w->env, b, h, i, j);
    return false;
}

/* Per-thread room for one row: its visible keys, with s, S, P, a, dP and dP's magnitude of each. */
typedef struct row_buf {
    int64_t *keys;
    double *S, *P, *a, *s, *dP, *dP_mag;
} row_buf;

/* Row (b, h, i): its terms into dq, dk and @p partial (this task's buffer terms). */
static void one_row(const job *w, const row_buf *r, int64_t b, int64_t h, int64_t i, double *partial) {
    const ladder_attention_problem *p = &w->fp->attn;
    const ladder_flex_args *a = w->a;
    const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    int64_t n = 0;
    double m = -INFINITY;
    for (int64_t j = 0; j < p->Sk; j++) {
        if (!sees(w, b, h, i, j)) continue;
        double dot = 0, mag = 0;
        for (int64_t d = 0; d < p->D; d++) {
            const double x = el(&a->q, b, h, i, d) * el(&a->k, b, hk, j, d);
            dot += x, mag += fabs(x);
        }
        r->keys[n] = j;
        r->s[n] = w->scale * dot;
        r->S[n] = ladder_flex_score(w->fp->score_mod, (float)r->s[n], &w->env, b, h, i, j);
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
    /* dP_ij = dO_i . v_j and its magnitude; O_i = sum_j P_ij v_j; Delta_i = dO_i . O_i - dlse_i */
    const double dl = a->dlse.data ? el(&a->dlse, b, h, i, 0) : 0;
    double delta = -dl, delta_rounding = fabs(dl);
    for (int64_t x = 0; x < n; x++) {
        double dP = 0, dP_mag = 0;
        for (int64_t e = 0; e < p->Dv; e++) {
            const double y = el(&a->dout, b, h, i, e) * el(&a->v, b, hk, r->keys[x], e);
            dP += y, dP_mag += fabs(y);
        }
        r->dP[x] = dP, r->dP_mag[x] = dP_mag;
        /* O's sums round at sum_j P_ij |v_j| and carry each P's relative error a_ij: through dO . O, that is
         * sum_j P_ij (dP_mag_ij + a_ij |dP_ij|) */
        delta_rounding += r->P[x] * (dP_mag + r->a[x] * fabs(dP));
    }
    double delta_stored = 0; /* sum_e |dO_ie O_ie|: what O's rounding to its dtype can move Delta by, per unit */
    for (int64_t e = 0; e < p->Dv; e++) {
        double o = 0;
        for (int64_t x = 0; x < n; x++) o += r->P[x] * el(&a->v, b, hk, r->keys[x], e);
        delta += el(&a->dout, b, h, i, e) * o;
        delta_stored += fabs(el(&a->dout, b, h, i, e) * o);
    }
    delta_rounding += delta_stored;
    const int64_t qrow = (b * p->Hq + h) * p->Sq + i;
    for (int64_t x = 0; x < n; x++) {
        const int64_t j = r->keys[x], krow = (b * p->Hkv + hk) * p->Sk + j;
        const double dP = r->dP[x], dP_mag = r->dP_mag[x];
        const double P = r->P[x], dS = P * (dP - delta);
        const double dS_rounding = fabs(dS) * r->a[x] + P * (dP_mag + delta_rounding) + FLUSH * (1 + fabs(dP - delta));
        const ladder_flex_grad g = ladder_flex_score_grad(w->fp->score_mod, (float)r->s[x], &w->env, b, h, i, j);
        const double dS_terms = fabs(dS) + P * delta_stored;
        const double dscore = g.dscore, ds = dS_terms * fabs(dscore);
        const double ds_rounding = dS_rounding * fmax(1, fabs(dscore)) + fabs(dS) * fabs(1 - dscore) * r->a[x];
        for (int64_t d = 0; d < p->D; d++) {
            const double kd = w->scale * fabs(el(&a->k, b, hk, j, d)), qd = w->scale * fabs(el(&a->q, b, h, i, d));
            w->dq.terms[qrow * p->D + d] += ds * kd;
            w->dq.rounding[qrow * p->D + d] += ds_rounding * kd;
            w->dk.terms[krow * p->D + d] += ds * qd;
            w->dk.rounding[krow * p->D + d] += ds_rounding * qd;
        }
        for (int64_t e = 0; e < p->Dv; e++) {
            const double pd = P * fabs(el(&a->dout, b, h, i, e));
            w->dv.terms[krow * p->Dv + e] += pd;
            w->dv.rounding[krow * p->Dv + e] += pd * r->a[x] + FLUSH * fabs(el(&a->dout, b, h, i, e));
        }
        for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
            if (w->slot[rd] < 0) continue;
            int64_t off = 0;
            for (int s = 0; s < w->slot[rd]; s++) off += w->buf[s].n;
            partial[off + g.at[rd]] += dS_terms * fabs(g.d[rd]);
            partial[w->width / 2 + off + g.at[rd]] += dS_rounding * fabs(g.d[rd]);
        }
    }
}

/* Both arrays of output @p i of the case, zeroed, into @p m and @p o. */
static ladder_status alloc_out(const ladder_case *c, int i, ladder_magnitudes *m, out *o) {
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

ladder_status flex_magnitudes(const ladder_case *c, ladder_magnitudes *m) {
    const ladder_algo *algo = c->algo;
    const ladder_flex_problem *fp = (const ladder_flex_problem *)c->problem;
    const ladder_attention_problem *p = &fp->attn;
    ladder_flex_args a = {0};
    for (int i = 0; i < algo->n_tensors; i++)
        if (c->t[i].data) *(ladder_tensor *)((char *)&a + algo->tensors[i].offset) = c->t[i];
    job w = {.fp = fp, .a = &a, .env = ladder_flex_env_of(fp, &a), .lists = a.kv_num_blocks.data != NULL,
             .scale = ladder_attention_scale(p)};
    if (w.lists) w.k = flex_blocks_of(&a);
    LADDER_TRY(alloc_out(c, ladder_algo_tensor(algo, "dq"), m, &w.dq));
    LADDER_TRY(alloc_out(c, ladder_algo_tensor(algo, "dk"), m, &w.dk));
    LADDER_TRY(alloc_out(c, ladder_algo_tensor(algo, "dv"), m, &w.dv));
    /* the buffer gradients the case writes, one output per distinct buffer the score mod reads */
    const ladder_flex_score_spec *mod = &ladder_flex_score_mods[fp->score_mod];
    int of[LADDER_FLEX_MAX_READS];
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) w.slot[r] = -1;
    for (int r = 0; r < mod->n_reads; r++) {
        char name[64];
        snprintf(name, sizeof name, "d%s", mod->reads[r]);
        const int i = ladder_algo_tensor(algo, name);
        if (i < 0 || !((c->present >> i) & 1u)) continue;
        for (int s = 0; s < w.n_buf; s++)
            if (of[s] == i) w.slot[r] = s; /* a buffer read twice: both reads add into one gradient */
        if (w.slot[r] >= 0) continue;
        of[w.n_buf] = i, w.slot[r] = w.n_buf;
        LADDER_TRY(alloc_out(c, i, m, &w.buf[w.n_buf]));
        w.width += 2 * w.buf[w.n_buf++].n;
    }
    const int64_t tasks = p->B * p->Hkv, group = p->Hq / p->Hkv;
    double *partial = calloc((size_t)(tasks * w.width > 0 ? tasks * w.width : 1), sizeof(double));
    if (!partial)
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld partial buffer magnitudes", (long long)tasks);
    ladder_status st = LADDER_OK;
#pragma omp parallel
    {
        const size_t row = (size_t)p->Sk * sizeof(double);
        row_buf r = {malloc((size_t)p->Sk * sizeof(int64_t)), malloc(row), malloc(row), malloc(row), malloc(row),
                     malloc(row), malloc(row)};
        const bool ok = r.keys && r.S && r.P && r.a && r.s && r.dP && r.dP_mag;
        if (!ok) {
#pragma omp critical
            st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a row of %lld keys", (long long)p->Sk);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) {
            const int64_t b = t / p->Hkv, hk = t % p->Hkv;
            for (int64_t h = hk * group; ok && h < (hk + 1) * group; h++)
                for (int64_t i = 0; i < p->Sq; i++) one_row(&w, &r, b, h, i, partial + t * w.width);
        }
        free(r.keys), free(r.S), free(r.P), free(r.a), free(r.s), free(r.dP), free(r.dP_mag);
    }
    int64_t off = 0;
    for (int s = 0; s < w.n_buf && st == LADDER_OK; off += w.buf[s++].n) {
#pragma omp parallel for schedule(static)
        for (int64_t x = 0; x < w.buf[s].n; x++)
            for (int64_t t = 0; t < tasks; t++) {
                w.buf[s].terms[x] += partial[t * w.width + off + x];
                w.buf[s].rounding[x] += partial[t * w.width + w.width / 2 + off + x];
            }
    }
    free(partial);
    return st;
}
