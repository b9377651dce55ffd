/*
 * cpu/memeff.c: memory-efficient attention forward and backward (bias, its gradient, dropout), the CPU rung.
 *
 * The math, written to be read, one element of S at a time (common/memeff.h has the formulas; common/attention.h
 * the mask and the fully-masked-row rules; common/philox.h the dropout mask). Every quantity of element (b, h, i,
 * j) comes from one function, so that each pass reads as the sum it is:
 *   - score():   S = softcap(scale * q_i . k_j) + bias[b,h,i,j]
 *   - element(): P = exp(S - lse_i), the kept and scaled P~, dP = dO_i . v_j * keep / (1 - p), dS = P * (dP - Delta_i)
 * With packed sequences (cu_seqlens), b = 0 and i, j are packed positions: row i sees the keys of its own sequence
 * that the mask leaves it (rows_of()), and the bias and the dropout counter are indexed by those positions too.
 *
 * Each pass is split by what it writes, so that no two threads add into the same element and every sum runs in
 * one fixed order (bitwise-repeatable, no atomics); OpenMP runs over the independent outputs:
 *   - forward: a row i of O and lse per task: the max of S, then sum exp(S - m) and the weighted V;
 *   - dQ: a row per task, summing dS' k over its keys;
 *   - dK, dV: a key per task, summing over every query row of every query head of its group that sees it;
 *   - dbias: an element of dbias per task, summing dS over every (b, h, i, j) that the broadcast maps onto it.
 * The backward recomputes P (and regenerates the mask) rather than storing them, three times: a reference, not a
 * fast path; but every sum along a head dim runs over contiguous copies of the inputs (common/cpu_rows.h: they
 * may have any strides), in vector instructions. splits and deterministic change nothing here: a task already owns
 * all of its row's keys, and every sum already runs in one order.
 *
 * Preconditions: validated by ladder_memeff_fwd/bwd (f32, host pointers, any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run memeff --rung cpu
 */
#include <math.h>
#include <stdlib.h>

#include "cpu_rows.h"
#include "memeff_rungs.h"
#include "philox.h"

/* The problem, its tensors and its options as the kernels use them (floats), for the element functions. */
typedef struct ctx {
    const ladder_attention_problem *p;
    const ladder_memeff_args *a;
    memeff_bias bias;
    float scale, softcap, drop_p, drop_scale;
    uint64_t seed, offset;
    int64_t *jlo, *jhi; /* row i (packed position, or position in every batch row) sees keys [jlo[i], jhi[i]) */
    float *delta;       /* backward: Delta of row (b, h, i) at (b*Hq + h)*Sq + i */
    ladder_rows q, k, v, dout; /* the inputs in contiguous rows (dout: the backward's) */
} ctx;

/* The keys each row sees, as absolute positions along Sk: its sequence's keys cut by the mask. */
static ladder_status rows_of(ctx *c) {
    const ladder_attention_problem *p = c->p;
    const int32_t *cu_q = c->a->cu_seqlens_q.data, *cu_k = c->a->cu_seqlens_k.data;
    const int64_t n_seqs = cu_q ? c->a->cu_seqlens_q.shape[0] - 1 : 1;
    c->jlo = malloc((size_t)p->Sq * sizeof *c->jlo);
    c->jhi = malloc((size_t)p->Sq * sizeof *c->jhi);
    if (!c->jlo || !c->jhi) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the key ranges of %lld rows",
                                               (long long)p->Sq);
    for (int64_t i = 0; i < p->Sq; i++)
        ladder_attn_row_keys(&p->mask, cu_q, cu_k, n_seqs, i, p->Sq, p->Sk, &c->jlo[i], &c->jhi[i]);
    return LADDER_OK;
}

static ladder_status ctx_of(const ladder_memeff_problem *mp, const ladder_memeff_args *a, ctx *c) {
    *c = (ctx){.p = &mp->attn, .a = a, .bias = memeff_bias_of(a), .scale = (float)ladder_attention_scale(&mp->attn),
               .softcap = (float)mp->attn.softcap, .drop_p = (float)mp->dropout_p,
               .drop_scale = ladder_dropout_scale((float)mp->dropout_p), .seed = mp->philox_seed,
               .offset = mp->philox_offset};
    if (!ladder_rows_of(&a->q, &c->q) || !ladder_rows_of(&a->k, &c->k) || !ladder_rows_of(&a->v, &c->v) ||
        !ladder_rows_of(&a->dout, &c->dout))
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate contiguous copies of the inputs");
    return rows_of(c);
}

static void ctx_free(ctx *c) {
    free(c->q.p), free(c->k.p), free(c->v.p), free(c->dout.p);
    free(c->jlo);
    free(c->jhi);
    free(c->delta);
}

/* S of element (b, h, i, j) = softcap(scale * q_i . k_j) + bias; *Sc: the softcapped part alone (for its slope). */
static float score(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t j, float *Sc) {
    const ladder_attention_problem *p = c->p;
    const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    const float x = ladder_dot(ladder_row(&c->q, b, h, i), ladder_row(&c->k, b, hk, j), p->D);
    *Sc = ladder_attn_softcap(c->scale * x, c->softcap);
    const float *bias = c->bias.data;
    return bias ? *Sc + bias[b * c->bias.s[0] + h * c->bias.s[1] + i * c->bias.s[2] + j * c->bias.s[3]] : *Sc;
}

/* What dropout multiplies P of element (b, h, i, j) by: 1/(1 - p) when kept, 0 when dropped (1 without dropout). */
static float keep_scale(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (c->drop_p == 0.0f) return 1.0f;
    const ladder_attention_problem *p = c->p;
    const uint64_t n = ladder_dropout_counter(c->offset, b, h, i, j, p->Hq, p->Sq, p->Sk);
    return ladder_dropout_keep(c->seed, n, c->drop_p) ? c->drop_scale : 0.0f;
}

ladder_status memeff_fwd_cpu(const ladder_memeff_problem *mp, const ladder_memeff_args *a) {
    ctx c;
    const ladder_status st = ctx_of(mp, a, &c);
    if (st != LADDER_OK) {
        ctx_free(&c);
        return st;
    }
    const ladder_attention_problem *p = &mp->attn;
    const int64_t rows = p->B * p->Hq * p->Sq, Dv = p->Dv;
    float *o = a->o.data, *lse = a->lse.data; /* [B,Hq,Sq,Dv] and [B,Hq,Sq], contiguous */
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
        const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
        float *oi = o + r * Dv, Sc;
        /* m = max_j S_ij, then l = sum_j exp(S_ij - m) and O_i = sum_j exp(S_ij - m) * keep * v_j / l */
        float m = -INFINITY, l = 0.0f;
        for (int64_t j = c.jlo[i]; j < c.jhi[i]; j++) {
            const float S = score(&c, b, h, i, j, &Sc);
            if (S > m || S != S) m = S; /* not fmaxf: a NaN score must not vanish (a NaN row is no masked row) */
        }
        for (int64_t e = 0; e < Dv; e++) oi[e] = 0.0f;
        for (int64_t j = c.jlo[i]; j < c.jhi[i] && m != -INFINITY; j++) {
            const float w = expf(score(&c, b, h, i, j, &Sc) - m);
            l += w;
            const float kept = w * keep_scale(&c, b, h, i, j);
            ladder_axpy(Dv, kept, ladder_row(&c.v, b, hk, j), oi);
        }
        for (int64_t e = 0; e < Dv; e++) oi[e] = l > 0.0f || l != l ? oi[e] / l : 0.0f;
        lse[r] = ladder_attn_lse(m, l);
    }
    ctx_free(&c);
    return st;
}

/* Element (b, h, i, j) of the backward: P, the dropped P~ = P * keep/(1-p), dS = P * (dP - Delta), and
 * dS' = dS * the softcap's slope (what dQ and dK take; dbias takes dS: the bias is added after the softcap). */
typedef struct grads {
    float P, Pd, dS, dSc;
} grads;

static grads element(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    const ladder_attention_problem *p = c->p;
    const int64_t r = (b * p->Hq + h) * p->Sq + i, hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    float Sc;
    const float S = score(c, b, h, i, j, &Sc), ks = keep_scale(c, b, h, i, j);
    grads g;
    g.P = expf(S - ladder_attn_lse_for_bwd(((const float *)c->a->lse.data)[r]));
    g.Pd = g.P * ks;
    /* in the forward, O_i = sum_j P_ij * keep_ij/(1-p) * v_j: so dP_ij = dO_i . v_j * keep_ij/(1-p) */
    const float dP = ladder_dot(ladder_row(&c->dout, b, h, i), ladder_row(&c->v, b, hk, j), p->Dv) * ks;
    g.dS = g.P * (dP - c->delta[r]);
    g.dSc = g.dS * ladder_attn_softcap_grad(Sc, c->softcap);
    return g;
}

/* Does row i see key j? (Packed sequences: only keys of its own sequence.) */
static bool sees(const ctx *c, int64_t i, int64_t j) { return j >= c->jlo[i] && j < c->jhi[i]; }

/* dbias element @p e (C order over the bias's shape): dS summed over every element the broadcast maps onto it,
 * in a fixed order (b, h, i, j ascending). No scale: S = softcap(scale * q.k) + bias, so dS/dbias = 1. */
static float dbias_element(const ctx *c, const ladder_tensor *dbias, int64_t e) {
    const ladder_attention_problem *p = c->p;
    const int64_t full[4] = {p->B, p->Hq, p->Sq, p->Sk};
    int64_t lo[4], hi[4];
    for (int d = 3; d >= 0; d--) {
        const int64_t n = dbias->shape[d], x = e % n;
        e /= n;
        lo[d] = n == 1 ? 0 : x; /* a broadcast dimension sums over all of the problem's, else one index */
        hi[d] = n == 1 ? full[d] : x + 1;
    }
    float acc = 0.0f;
    for (int64_t b = lo[0]; b < hi[0]; b++)
        for (int64_t h = lo[1]; h < hi[1]; h++)
            for (int64_t i = lo[2]; i < hi[2]; i++)
                for (int64_t j = lo[3]; j < hi[3]; j++)
                    if (sees(c, i, j)) acc += element(c, b, h, i, j).dS;
    return acc;
}

ladder_status memeff_bwd_cpu(const ladder_memeff_problem *mp, const ladder_memeff_args *a) {
    ctx c;
    const ladder_attention_problem *p = &mp->attn;
    const int64_t rows = p->B * p->Hq * p->Sq, D = p->D, Dv = p->Dv, group = p->Hq / p->Hkv;
    ladder_status st = ctx_of(mp, a, &c);
    if (st == LADDER_OK && !(c.delta = malloc((size_t)rows * sizeof *c.delta)))
        st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate Delta for %lld rows", (long long)rows);
    if (st != LADDER_OK) {
        ctx_free(&c);
        return st;
    }
    const float *o = a->o.data, *dlse = a->dlse.data;
    /* Delta_i = rowsum(dO_i * O_i) - dlse_i: O already holds the dropped P~, so dropout leaves it as flash's */
#pragma omp parallel for
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
        const float *dout = (const float *)a->dout.data + b * a->dout.strides[0] + h * a->dout.strides[1] +
                            i * a->dout.strides[2];
        const float dl = dlse ? dlse[b * a->dlse.strides[0] + h * a->dlse.strides[1] + i * a->dlse.strides[2]] : 0;
        c.delta[r] = ladder_attn_delta(o + r * Dv, dout, a->dout.strides[3], Dv, dl);
    }
    /* dQ_i = scale * sum_j dS'_ij k_j */
    float *dq = a->dq.data, *dk = a->dk.data, *dv = a->dv.data;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
        const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
        float *dqi = dq + r * D;
        for (int64_t e = 0; e < D; e++) dqi[e] = 0.0f;
        for (int64_t j = c.jlo[i]; j < c.jhi[i]; j++) {
            const float w = c.scale * element(&c, b, h, i, j).dSc;
            ladder_axpy(D, w, ladder_row(&c.k, b, hk, j), dqi);
        }
    }
    /* dK_j = scale * sum_{h in the group, i} dS'_ij q_i,  dV_j = sum_{h in the group, i} P~_ij dO_i */
    const int64_t keys = p->B * p->Hkv * p->Sk;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t r = 0; r < keys; r++) {
        const int64_t b = r / (p->Hkv * p->Sk), hk = r / p->Sk % p->Hkv, j = r % p->Sk;
        float *dkj = dk + r * D, *dvj = dv + r * Dv;
        for (int64_t e = 0; e < D; e++) dkj[e] = 0.0f;
        for (int64_t e = 0; e < Dv; e++) dvj[e] = 0.0f;
        for (int64_t h = hk * group; h < (hk + 1) * group; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                if (!sees(&c, i, j)) continue;
                const grads g = element(&c, b, h, i, j);
                ladder_axpy(D, c.scale * g.dSc, ladder_row(&c.q, b, h, i), dkj);
                ladder_axpy(Dv, g.Pd, ladder_row(&c.dout, b, h, i), dvj);
            }
    }
    if (a->dbias.data) {
        float *dbias = a->dbias.data; /* the bias's shape, contiguous */
        const int64_t n = ladder_tensor_numel(&a->dbias);
        /* guided: a full bias has millions of one-element sums (large chunks, few trips to the shared counter), a
         * broadcast one a few long ones (chunks down to one element, so that every thread gets one) */
#pragma omp parallel for schedule(guided)
        for (int64_t e = 0; e < n; e++) dbias[e] = dbias_element(&c, &a->dbias, e);
    }
    ctx_free(&c);
    return LADDER_OK;
}
