/*
 * common/attention_tc_reference.c: the tensor-core attention rung's reference, float32 with that rung's roundings
 * (attention_tc_reference.h says which and why).
 *
 * The forward runs one query row at a time, over the key tiles the rung uses; the backward first finds Delta for
 * every row, then dQ one query row at a time (handing dS to dbias and to the mods' sink on the way), then dK and dV
 * one key at a time, summing over every query row and head of the group that sees the key. Each pass recomputes S
 * and P from q and k, as the rung does.
 */
#include "attention_tc_reference.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "half.h"
#include "philox.h"

/* The call as the loops read it: the problem, contiguous copies of the inputs, the hooks. */
typedef struct ref {
    const ladder_attention_problem *p;
    float scale, softcap;
    ladder_dtype round;
    const int32_t *cu_q, *cu_k; /* NULL: every batch row is one sequence */
    int64_t n_seqs;             /* batch rows, or packed sequences */
    ladder_tensor q, k, v, dout; /* contiguous f32 copies (dout: the backward's only) */
    const float *bias;           /* NULL: none */
    int64_t sbias[4];            /* its strides over b, h, i, j: 0 where it broadcasts */
    float dropout_p, keep_scale; /* dropout_p 0: none (keep_scale 1) */
    uint64_t seed, offset;
    ladder_attn_tc_reference_mods mods; /* flex's functions; zeroed: none */
} ref;

static void ref_close(ref *r) {
    ladder_tensor_free(&r->q);
    ladder_tensor_free(&r->k);
    ladder_tensor_free(&r->v);
    ladder_tensor_free(&r->dout);
}

static ladder_status ref_open(ref *r, const ladder_attention_problem *p, const ladder_attn_tc_reference_args *a,
                              ladder_dtype round, bool backward) {
    *r = (ref){.p = p,
               .scale = (float)ladder_attention_scale(p),
               .softcap = (float)p->softcap,
               .round = round,
               .cu_q = a->cu_seqlens_q.data,
               .cu_k = a->cu_seqlens_k.data,
               .n_seqs = a->cu_seqlens_q.data ? a->cu_seqlens_q.shape[0] - 1 : p->B,
               .bias = a->bias.data,
               .dropout_p = (float)a->dropout_p,
               .keep_scale = ladder_dropout_scale((float)a->dropout_p),
               .seed = a->philox_seed,
               .offset = a->philox_offset,
               .mods = a->mods};
    for (int d = 0; d < 4 && r->bias; d++) r->sbias[d] = a->bias.shape[d] == 1 ? 0 : a->bias.strides[d];
    ladder_status st = ladder_tensor_convert(&a->q, &r->q, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&a->k, &r->k, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&a->v, &r->v, LADDER_F32);
    if (st == LADDER_OK && backward) st = ladder_tensor_convert(&a->dout, &r->dout, LADDER_F32);
    if (st != LADDER_OK) ref_close(r);
    return st;
}

/* The row of query position @p qi of head @p h of batch row @p b in [B,Hq,Sq,...] (q, o, dO, lse, Delta). */
static int64_t query_row(const ref *r, int64_t b, int64_t h, int64_t qi) { return (b * r->p->Hq + h) * r->p->Sq + qi; }

/* The row of key position @p kj of the key/value head that query head @p h reads, in [B,Hkv,Sk,...] (k, v). */
static int64_t key_row(const ref *r, int64_t b, int64_t h, int64_t kj) {
    return (b * r->p->Hkv + ladder_attn_kv_head(h, r->p->Hq, r->p->Hkv)) * r->p->Sk + kj;
}

/* What the rung keeps of @p x when it stores it as a 16-bit operand (round f32: all of it). */
static float rounded(const ref *r, float x) { return ladder_round_float(x, r->round); }

/*
 * S at query position @p qi and key position @p kj of head @p h, batch row @p b, from s = scale * q.k (into *s):
 * softcap(s) plus the bias, or the mods' score of s; *slope: dS/ds (the softcap's, or the score function's).
 */
static float score(const ref *r, int64_t b, int64_t h, int64_t qi, int64_t kj, float *s, float *slope) {
    const int64_t D = r->p->D;
    const float *q = (const float *)r->q.data + query_row(r, b, h, qi) * D;
    const float *k = (const float *)r->k.data + key_row(r, b, h, kj) * D;
    float qk = 0.0f;
    for (int64_t e = 0; e < D; e++) qk += q[e] * k[e];
    *s = r->scale * qk;
    if (r->mods.score) return r->mods.score(r->mods.ctx, *s, b, h, qi, kj, slope);
    const float capped = ladder_attn_softcap(*s, r->softcap);
    *slope = ladder_attn_softcap_grad(capped, r->softcap);
    if (!r->bias) return capped;
    return capped + r->bias[b * r->sbias[0] + h * r->sbias[1] + qi * r->sbias[2] + kj * r->sbias[3]];
}

/* Do the mods let row @p qi see key @p kj (the problem's mask having allowed it)? */
static bool mods_allow(const ref *r, int64_t b, int64_t h, int64_t qi, int64_t kj) {
    return !r->mods.allowed || r->mods.allowed(r->mods.ctx, b, h, qi, kj);
}

/* Does dropout keep element (b, h, qi, kj)? Philox decides (always, without dropout). */
static bool kept(const ref *r, int64_t b, int64_t h, int64_t qi, int64_t kj) {
    if (!(r->dropout_p > 0.0f)) return true;
    const ladder_attention_problem *p = r->p;
    return ladder_dropout_keep(r->seed, ladder_dropout_counter(r->offset, b, h, qi, kj, p->Hq, p->Sq, p->Sk),
                               r->dropout_p);
}

/* ---- forward --------------------------------------------------------------------------------------------------- */

/*
 * Query row @p i of sequence @p seq, head @p h, batch row @p b: its O (@p o, Dv entries) and lse as the tensor-core
 * forward computes them. The keys the row sees, [lo, hi), are visited in the rung's key tiles [t0, t0 + BC), t0 a
 * multiple of BC; after each tile the running max m and sum l are those of every key so far:
 *     m_new = max(m, max_j S_j),  alpha = exp(m - m_new),  P~_j = exp(S_j - m_new),
 *     l = alpha l + sum_j P~_j,  O = alpha O + sum_j keep_j round(P~_j) V_j
 * over the tile's keys j. At the end O / (1 - p) / l and lse = m + log l (O = 0 and lse = -inf when l = 0).
 */
static void forward_row(const ref *r, int64_t b, int64_t h, const ladder_attn_seq *seq, int64_t i, float *o,
                        float *lse) {
    const ladder_attention_problem *p = r->p;
    enum { MAX_BC = LADDER_ATTN_TC_FWD_KEYS(1, 1) }; /* the widest key tile, at small head dims */
    const int64_t BC = LADDER_ATTN_TC_FWD_KEYS(p->D, p->Dv), Dv = p->Dv, qi = seq->q0 + i;
    int64_t lo, hi;
    ladder_attn_key_range(&p->mask, i, seq->Lq, seq->Lk, &lo, &hi);
    float m = -INFINITY, l = 0.0f, S[MAX_BC], s, slope;
    for (int64_t e = 0; e < Dv; e++) o[e] = 0.0f;
    for (int64_t t0 = lo / BC * BC; t0 < hi; t0 += BC) {
        const int64_t j0 = t0 > lo ? t0 : lo, j1 = t0 + BC < hi ? t0 + BC : hi; /* the row's keys in the tile */
        float m_new = m;
        for (int64_t j = j0; j < j1; j++) {
            /* a key the mods mask is a score of -inf, as the rung's mask leaves it in the tile */
            const bool seen = mods_allow(r, b, h, qi, seq->k0 + j);
            S[j - t0] = seen ? score(r, b, h, qi, seq->k0 + j, &s, &slope) : -INFINITY;
            m_new = fmaxf(m_new, S[j - t0]);
        }
        /* no key above -inf yet: subtract 0 instead, so that P~ = exp(-inf) = 0, not exp(-inf - -inf) = NaN (a NaN
         * score still gives NaN) */
        const float ms = m_new == -INFINITY ? 0.0f : m_new, alpha = expf(m - ms);
        float sum = 0.0f;
        for (int64_t e = 0; e < Dv; e++) o[e] *= alpha;
        for (int64_t j = j0; j < j1; j++) {
            const float pt = expf(S[j - t0] - ms);
            sum += pt; /* the row sum counts P~ undropped and unrounded */
            if (!kept(r, b, h, qi, seq->k0 + j)) continue;
            /* V meets P~ rounded: in the rung it is the 16-bit A operand of O += P V */
            const float pv = rounded(r, pt);
            const float *vj = (const float *)r->v.data + key_row(r, b, h, seq->k0 + j) * Dv;
            for (int64_t e = 0; e < Dv; e++) o[e] += pv * vj[e];
        }
        l = alpha * l + sum;
        m = m_new;
    }
    /* the kept P~'s 1 / (1 - p), once, with the division by l */
    const float inv = l == 0.0f ? 0.0f : r->keep_scale / l; /* a NaN l stays NaN */
    for (int64_t e = 0; e < Dv; e++) o[e] *= inv;
    *lse = ladder_attn_lse(m, l);
}

ladder_status ladder_attn_tc_reference_fwd(const ladder_attention_problem *p, const ladder_attn_tc_reference_args *a,
                                           ladder_dtype round) {
    ref r;
    LADDER_TRY(ref_open(&r, p, a, round, false));
    float *o = a->o.data, *lse = a->lse.data; /* [B,Hq,Sq,Dv] and [B,Hq,Sq], contiguous */
#pragma omp parallel for collapse(3) schedule(dynamic, 16)
    for (int64_t s = 0; s < r.n_seqs; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const ladder_attn_seq seq = ladder_attn_sequence(r.cu_q, r.cu_k, s, p->Sq, p->Sk);
                if (i >= seq.Lq) continue;
                const int64_t b = r.cu_q ? 0 : s, row = query_row(&r, b, h, seq.q0 + i);
                forward_row(&r, b, h, &seq, i, o + row * p->Dv, &lse[row]);
            }
    ref_close(&r);
    return LADDER_OK;
}

/* ---- backward -------------------------------------------------------------------------------------------------- */

/* What the tensor-core backward forms at one element (query row i, key j) of the score matrix. */
typedef struct element_grads {
    float s;    /* scale * q.k, what the mods' score took */
    float pv;   /* P rounded where kept, 0 where dropped: the dV product's operand */
    float dS;   /* P (dP f - Delta): the bias's gradient (and the mods' sink's) */
    float dS_c; /* dS times the score's slope, rounded: the dQ and dK products' operand */
} element_grads;

/*
 * The element at query position @p qi and key position @p kj of head @p h, batch row @p b, given its row's lse
 * (@p L, as ladder_attn_lse_for_bwd() turns it) and @p Delta. In the forward, O_i = sum_j P_ij f_ij V_j with
 * P_ij = exp(S_ij - lse_i) and f_ij = keep_ij / (1 - p), so V_j collects P_ij f_ij dO_i (the 1 / (1 - p) is
 * applied to dV's sum), dP_ij = f_ij dO_i . V_j, and through the softmax dS_ij = P_ij (dP_ij - Delta_i); through
 * the softcap dS'_ij = dS_ij (1 - (S_ij / softcap)^2), through the mods' score dS'_ij = dS_ij dS_ij/ds_ij.
 */
static element_grads element(const ref *r, int64_t b, int64_t h, int64_t qi, int64_t kj, float L, float Delta) {
    const int64_t Dv = r->p->Dv;
    element_grads g;
    float slope;
    const bool keep = kept(r, b, h, qi, kj);
    const float P = expf(score(r, b, h, qi, kj, &g.s, &slope) - L), f = keep ? r->keep_scale : 0.0f;
    const float *dO = (const float *)r->dout.data + query_row(r, b, h, qi) * Dv;
    const float *vj = (const float *)r->v.data + key_row(r, b, h, kj) * Dv;
    float dOv = 0.0f;
    for (int64_t e = 0; e < Dv; e++) dOv += dO[e] * vj[e];
    g.pv = keep ? rounded(r, P) : 0.0f;
    g.dS = P * (dOv * f - Delta);
    g.dS_c = rounded(r, g.dS * slope);
    return g;
}

/* Delta_i = rowsum(dO_i * round(O_i)) - dlse_i for every row: the rung reads o as its forward stored it. */
static void deltas(const ref *r, const ladder_attn_tc_reference_args *a, float *delta) {
    const ladder_attention_problem *p = r->p;
    const float *o = a->o.data, *dO = r->dout.data, *dlse = a->dlse.data;
    const int64_t *sl = a->dlse.strides;
#pragma omp parallel for collapse(3)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const int64_t row = query_row(r, b, h, i);
                float acc = 0.0f;
                for (int64_t e = 0; e < p->Dv; e++) acc += dO[row * p->Dv + e] * rounded(r, o[row * p->Dv + e]);
                delta[row] = acc - (dlse ? dlse[b * sl[0] + h * sl[1] + i * sl[2]] : 0.0f);
            }
}

/* dQ_i = scale * sum_j round(dS'_ij) K_j, one query row at a time; dS into @p ds ([B,Hq,Sq,Sk]) when not NULL, and
 * to the mods' sink when it is set. */
static void dq_pass(const ref *r, const ladder_attn_tc_reference_args *a, const float *delta, float *ds) {
    const ladder_attention_problem *p = r->p;
    const float *lse = a->lse.data;
    float *dq = a->dq.data;
#pragma omp parallel for collapse(3) schedule(dynamic, 16)
    for (int64_t s = 0; s < r->n_seqs; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const ladder_attn_seq seq = ladder_attn_sequence(r->cu_q, r->cu_k, s, p->Sq, p->Sk);
                if (i >= seq.Lq) continue;
                const int64_t b = r->cu_q ? 0 : s, qi = seq.q0 + i, row = query_row(r, b, h, qi);
                const float L = ladder_attn_lse_for_bwd(lse[row]);
                float *dqi = dq + row * p->D;
                for (int64_t e = 0; e < p->D; e++) dqi[e] = 0.0f;
                int64_t lo, hi;
                ladder_attn_key_range(&p->mask, i, seq.Lq, seq.Lk, &lo, &hi);
                for (int64_t j = lo; j < hi; j++) {
                    const int64_t kj = seq.k0 + j;
                    if (!mods_allow(r, b, h, qi, kj)) continue;
                    const element_grads g = element(r, b, h, qi, kj, L, delta[row]);
                    if (ds) ds[row * p->Sk + kj] = g.dS;
                    if (r->mods.sink) r->mods.sink(r->mods.ctx, b, h, qi, kj, g.s, g.dS);
                    const float *k = (const float *)r->k.data + key_row(r, b, h, kj) * p->D;
                    for (int64_t e = 0; e < p->D; e++) dqi[e] += g.dS_c * k[e];
                }
                for (int64_t e = 0; e < p->D; e++) dqi[e] *= r->scale;
            }
}

/*
 * dV_j = 1 / (1 - p) sum_i keep_ij round(P_ij) dO_i and dK_j = scale * sum_i round(dS'_ij) Q_i, one key at a
 * time, over every query row of every query head of the group that reads key/value head hk.
 */
static void dkdv_pass(const ref *r, const ladder_attn_tc_reference_args *a, const float *delta) {
    const ladder_attention_problem *p = r->p;
    const int64_t D = p->D, Dv = p->Dv, group = p->Hq / p->Hkv;
    const float *lse = a->lse.data, *q = r->q.data, *dO = r->dout.data;
    float *dk = a->dk.data, *dv = a->dv.data;
#pragma omp parallel for collapse(3) schedule(dynamic, 16)
    for (int64_t s = 0; s < r->n_seqs; s++)
        for (int64_t hk = 0; hk < p->Hkv; hk++)
            for (int64_t j = 0; j < p->Sk; j++) {
                const ladder_attn_seq seq = ladder_attn_sequence(r->cu_q, r->cu_k, s, p->Sq, p->Sk);
                if (j >= seq.Lk) continue;
                const int64_t b = r->cu_q ? 0 : s, kj = seq.k0 + j, at = (b * p->Hkv + hk) * p->Sk + kj;
                float *dkj = dk + at * D, *dvj = dv + at * Dv;
                for (int64_t e = 0; e < D; e++) dkj[e] = 0.0f;
                for (int64_t e = 0; e < Dv; e++) dvj[e] = 0.0f;
                for (int64_t h = hk * group; h < (hk + 1) * group; h++)
                    for (int64_t i = 0; i < seq.Lq; i++) {
                        if (!ladder_attn_allowed(&p->mask, i, j, seq.Lq, seq.Lk)) continue;
                        if (!mods_allow(r, b, h, seq.q0 + i, kj)) continue;
                        const int64_t row = query_row(r, b, h, seq.q0 + i);
                        const element_grads g =
                            element(r, b, h, seq.q0 + i, kj, ladder_attn_lse_for_bwd(lse[row]), delta[row]);
                        for (int64_t e = 0; e < Dv; e++) dvj[e] += g.pv * dO[row * Dv + e];
                        for (int64_t e = 0; e < D; e++) dkj[e] += g.dS_c * q[row * D + e];
                    }
                for (int64_t e = 0; e < D; e++) dkj[e] *= r->scale;
                for (int64_t e = 0; e < Dv; e++) dvj[e] *= r->keep_scale;
            }
}

/*
 * dbias[b', h', i', j'] = sum of dS[b, h, i, j] over every element that reads that bias element: along each axis
 * where the bias has size 1 and the problem more, all of them; along the others, the one at the same index. One
 * thread per dbias element, each sum in one fixed order. @p ds is [B,Hq,Sq,Sk], zero where nothing is seen.
 */
static void reduce_dbias(const ladder_attention_problem *p, const float *ds, const ladder_tensor *dbias) {
    const int64_t *n = dbias->shape, full[4] = {p->B, p->Hq, p->Sq, p->Sk};
    const int64_t total = n[0] * n[1] * n[2] * n[3];
    float *out = dbias->data;
#pragma omp parallel for
    for (int64_t x = 0; x < total; x++) {
        const int64_t idx[4] = {x / (n[1] * n[2] * n[3]), x / (n[2] * n[3]) % n[1], x / n[3] % n[2], x % n[3]};
        int64_t lo[4], hi[4];
        for (int d = 0; d < 4; d++) {
            const bool broadcast = n[d] == 1 && full[d] > 1;
            lo[d] = broadcast ? 0 : idx[d];
            hi[d] = broadcast ? full[d] : idx[d] + 1;
        }
        float acc = 0.0f;
        for (int64_t b = lo[0]; b < hi[0]; b++)
            for (int64_t h = lo[1]; h < hi[1]; h++)
                for (int64_t i = lo[2]; i < hi[2]; i++)
                    for (int64_t j = lo[3]; j < hi[3]; j++) acc += ds[((b * p->Hq + h) * p->Sq + i) * p->Sk + j];
        out[x] = acc;
    }
}

ladder_status ladder_attn_tc_reference_bwd(const ladder_attention_problem *p, const ladder_attn_tc_reference_args *a,
                                           ladder_dtype round) {
    ref r;
    LADDER_TRY(ref_open(&r, p, a, round, true));
    const int64_t rows = p->B * p->Hq * p->Sq;
    float *delta = malloc((size_t)rows * sizeof(float));
    /* dS of every element, for dbias: zero where no row sees the key (masked, or another packed sequence) */
    float *ds = a->dbias.data ? calloc((size_t)(rows * p->Sk), sizeof(float)) : NULL;
    ladder_status st = LADDER_OK;
    if (!delta || (a->dbias.data && !ds)) {
        st = ladder_fail(LADDER_ERR_NOMEM, "tensor-core reference backward: no memory for Delta or dS");
    } else {
        deltas(&r, a, delta);
        dq_pass(&r, a, delta, ds);
        dkdv_pass(&r, a, delta);
        if (ds) reduce_dbias(p, ds, &a->dbias);
    }
    free(ds);
    free(delta);
    ref_close(&r);
    return st;
}
