/*
 * cpu/flash.c: FlashAttention-2 forward and backward, the CPU rung.
 *
 * The math, written to be read, one query row at a time: the scores of the row, their softmax, the weighted
 * sum of V (common/attention.h has the mask, the softcap and the fully-masked-row rules). OpenMP runs over
 * (sequence, head, block of QB query rows); each task first gathers the rows it reads into contiguous scratch
 * (inputs may have any strides), so the inner loops are plain dot products.
 *
 * The backward recomputes P = exp(S - lse) instead of storing it, and splits the work by what each task
 * writes, so that no two threads ever add into the same element and every sum runs in one fixed order
 * (bitwise-repeatable results, no atomics):
 *   - dQ: a task per (sequence, query head, query block), summing over the keys of each row;
 *   - dK, dV: a task per (sequence, key/value head, key block), summing over every query row of every
 *     query head of the group that sees the block.
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (f32, host pointers, any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run flash --rung cpu
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flash_rungs.h"

enum { QB = 64, KB = 64 }; /* query rows and keys per task */

/* Pointer to element [b, h, s, 0] of a rank-4 tensor (its last dimension has stride t->strides[3]). */
static const float *at4(const ladder_tensor *t, int64_t b, int64_t h, int64_t s) {
    return (const float *)t->data + b * t->strides[0] + h * t->strides[1] + s * t->strides[2];
}

/* Rows [s0, s0+n) of head h of batch row b of @p t, each of @p d entries, into dst[n][d]. */
static void gather(const ladder_tensor *t, int64_t b, int64_t h, int64_t s0, int64_t n, int64_t d, float *dst) {
    for (int64_t r = 0; r < n; r++) {
        const float *src = at4(t, b, h, s0 + r);
        for (int64_t e = 0; e < d; e++) dst[r * d + e] = src[e * t->strides[3]];
    }
}

/* a . b with 8 partial sums, added in a fixed order: the compiler may keep them in one SIMD register (it
 * may not reorder a single running sum), and the result does not depend on the thread count */
static float dot(const float *a, const float *b, int64_t n) {
    float part[8] = {0};
    int64_t e = 0;
    for (; e + 8 <= n; e += 8)
        for (int k = 0; k < 8; k++) part[k] += a[e + k] * b[e + k];
    float acc = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; e < n; e++) acc += a[e] * b[e];
    return acc;
}

/* How a task finds its sequence: units are batch rows, or packed sequences (then the batch row is 0). */
typedef struct units {
    const int32_t *cu_q, *cu_k;
    int64_t n; /* batch rows, or sequences */
    bool packed;
} units;

static units units_of(const ladder_flash_problem *p, const ladder_flash_args *a) {
    units u = {a->cu_seqlens_q.data, a->cu_seqlens_k.data, p->attn.B, a->cu_seqlens_q.data != NULL};
    if (u.packed) u.n = a->cu_seqlens_q.shape[0] - 1;
    return u;
}

/* S for query row q (D entries) and key row k: scale * q.k, softcapped. */
static float score(const ladder_attention_problem *p, float scale, const float *q, const float *k) {
    return ladder_attn_softcap(scale * dot(q, k, p->D), (float)p->softcap);
}

/* A query-block task: its sequence, batch row and K/V head, its rows [i0, i1), and the keys [klo, khi) any of
 * them sees (the ranges only move right as i grows, so the first and last rows bound them). */
typedef struct qblock {
    ladder_attn_seq seq;
    int64_t b, hk, i0, i1, klo, khi;
} qblock;

/* Task (s, h, qb) of the forward and of dQ; false when the block holds no row of its sequence. */
static bool query_block(const ladder_attention_problem *p, const units *u, int64_t s, int64_t h, int64_t qb,
                        qblock *t) {
    t->seq = ladder_attn_sequence(u->cu_q, u->cu_k, s, p->Sq, p->Sk);
    t->b = u->packed ? 0 : s;
    t->hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    t->i0 = qb * QB;
    t->i1 = t->i0 + QB < t->seq.Lq ? t->i0 + QB : t->seq.Lq;
    if (t->i0 >= t->i1) return false;
    int64_t lo, hi;
    ladder_attn_key_range(&p->mask, t->i0, t->seq.Lq, t->seq.Lk, &t->klo, &hi);
    ladder_attn_key_range(&p->mask, t->i1 - 1, t->seq.Lq, t->seq.Lk, &lo, &t->khi);
    if (t->khi < t->klo) t->khi = t->klo;
    return true;
}

ladder_status flash_fwd_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const float scale = (float)ladder_attention_scale(p);
    const int64_t D = p->D, Dv = p->Dv, n_qblocks = (p->Sq + QB - 1) / QB;
    float *o = a->o.data, *lse = a->lse.data; /* [B,Hq,Sq,Dv] and [B,Hq,Sq], contiguous */
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t qb = 0; qb < n_qblocks; qb++) {
                qblock t;
                if (!query_block(p, &u, s, h, qb, &t)) continue;
                const ladder_attn_seq seq = t.seq;
                const int64_t b = t.b, hk = t.hk, i0 = t.i0, i1 = t.i1, klo = t.klo, nk = t.khi - t.klo;
                int64_t lo, hi;
                float *K = malloc((size_t)(nk * D + nk * Dv + QB * D + nk + 1) * sizeof(float));
                if (!K) {
#pragma omp critical
                    st = ladder_fail(LADDER_ERR_NOMEM, "cpu flash forward: no memory for a block's scratch");
                    continue;
                }
                float *V = K + nk * D, *Q = V + nk * Dv, *S = Q + QB * D; /* S: the scores of one row */
                gather(&a->k, b, hk, seq.k0 + klo, nk, D, K);
                gather(&a->v, b, hk, seq.k0 + klo, nk, Dv, V);
                gather(&a->q, b, h, seq.q0 + i0, i1 - i0, D, Q);
                for (int64_t i = i0; i < i1; i++) {
                    ladder_attn_key_range(&p->mask, i, seq.Lq, seq.Lk, &lo, &hi);
                    const int64_t row = (b * p->Hq + h) * p->Sq + seq.q0 + i;
                    /* m = max_j S_ij, l = sum_j exp(S_ij - m): subtracting m keeps every exp <= 1 */
                    float m = -INFINITY, l = 0.0f;
                    for (int64_t j = lo; j < hi; j++) {
                        S[j - klo] = score(p, scale, Q + (i - i0) * D, K + (j - klo) * D);
                        if (S[j - klo] > m) m = S[j - klo];
                    }
                    for (int64_t j = lo; j < hi; j++) l += S[j - klo] = expf(S[j - klo] - m);
                    /* O_i = sum_j P_ij V_j with P_ij = exp(S_ij - m) / l; an empty row (l = 0) gives O_i = 0 */
                    float *oi = o + row * Dv;
                    for (int64_t e = 0; e < Dv; e++) oi[e] = 0.0f;
                    for (int64_t j = lo; j < hi; j++) {
                        const float pj = S[j - klo] / l;
                        for (int64_t e = 0; e < Dv; e++) oi[e] += pj * V[(j - klo) * Dv + e];
                    }
                    lse[row] = ladder_attn_lse(m, l);
                }
                free(K);
            }
    return st;
}

/* Delta_i = rowsum(dO_i * O_i) - dlse_i for row i of head h of batch row b (the preprocess, one row). */
static float delta_of(const ladder_attention_problem *p, const ladder_flash_args *a, int64_t b, int64_t h, int64_t i) {
    const int64_t row = (b * p->Hq + h) * p->Sq + i;
    const float *dlse = a->dlse.data;
    const int64_t *sl = a->dlse.strides;
    const float dl = dlse ? dlse[b * sl[0] + h * sl[1] + i * sl[2]] : 0.0f;
    return ladder_attn_delta((const float *)a->o.data + row * p->Dv, at4(&a->dout, b, h, i), a->dout.strides[3],
                             p->Dv, dl);
}

/* dQ_i = scale * sum_j dS'_ij K_j, one task per (sequence, query head, query block). */
static ladder_status dq_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const float scale = (float)ladder_attention_scale(p), cap = (float)p->softcap;
    const int64_t D = p->D, Dv = p->Dv, n_qblocks = (p->Sq + QB - 1) / QB;
    const float *lse = a->lse.data;
    float *dq = a->dq.data;
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t qb = 0; qb < n_qblocks; qb++) {
                qblock t;
                if (!query_block(p, &u, s, h, qb, &t)) continue;
                const ladder_attn_seq seq = t.seq;
                const int64_t b = t.b, hk = t.hk, i0 = t.i0, i1 = t.i1, klo = t.klo, nk = t.khi - t.klo;
                int64_t lo, hi;
                float *K = malloc((size_t)(nk * D + nk * Dv + D + Dv) * sizeof(float));
                if (!K) {
#pragma omp critical
                    st = ladder_fail(LADDER_ERR_NOMEM, "cpu flash backward: no memory for a block's scratch");
                    continue;
                }
                float *V = K + nk * D, *q = V + nk * Dv, *dO = q + D;
                gather(&a->k, b, hk, seq.k0 + klo, nk, D, K);
                gather(&a->v, b, hk, seq.k0 + klo, nk, Dv, V);
                for (int64_t i = i0; i < i1; i++) {
                    const int64_t row = (b * p->Hq + h) * p->Sq + seq.q0 + i;
                    float *dqi = dq + row * D;
                    for (int64_t e = 0; e < D; e++) dqi[e] = 0.0f;
                    ladder_attn_key_range(&p->mask, i, seq.Lq, seq.Lk, &lo, &hi);
                    if (lo >= hi) continue; /* fully masked: zero gradient */
                    gather(&a->q, b, h, seq.q0 + i, 1, D, q);
                    gather(&a->dout, b, h, seq.q0 + i, 1, Dv, dO);
                    const float L = ladder_attn_lse_for_bwd(lse[row]), Delta = delta_of(p, a, b, h, seq.q0 + i);
                    for (int64_t j = lo; j < hi; j++) {
                        const float *kj = K + (j - klo) * D;
                        /* forward: P_ij = exp(S_ij - lse_i) and O_i = sum_j P_ij V_j, so dP_ij = dO_i . V_j, and
                         * through the softmax dS_ij = P_ij (dP_ij - Delta_i); through the softcap and the scale,
                         * dQ_i += scale * dS'_ij K_j */
                        const float S = score(p, scale, q, kj), P = expf(S - L);
                        const float dP = dot(dO, V + (j - klo) * Dv, Dv);
                        const float dS = P * (dP - Delta) * ladder_attn_softcap_grad(S, cap);
                        for (int64_t e = 0; e < D; e++) dqi[e] += scale * dS * kj[e];
                    }
                }
                free(K);
            }
    return st;
}

/* dV_j = sum_i P_ij dO_i and dK_j = scale * sum_i dS'_ij Q_i over the group's query heads, per key block. */
static ladder_status dkdv_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const float scale = (float)ladder_attention_scale(p), cap = (float)p->softcap;
    const int64_t D = p->D, Dv = p->Dv, n_kblocks = (p->Sk + KB - 1) / KB, group = p->Hq / p->Hkv;
    const float *lse = a->lse.data;
    float *dk = a->dk.data, *dv = a->dv.data;
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t hk = 0; hk < p->Hkv; hk++)
            for (int64_t kb = 0; kb < n_kblocks; kb++) {
                const ladder_attn_seq seq = ladder_attn_sequence(u.cu_q, u.cu_k, s, p->Sq, p->Sk);
                const int64_t b = u.packed ? 0 : s;
                const int64_t j0 = kb * KB, j1 = j0 + KB < seq.Lk ? j0 + KB : seq.Lk;
                if (j0 >= j1) continue;
                const int64_t nk = j1 - j0;
                float *K = malloc((size_t)(nk * D + nk * Dv + D + Dv) * sizeof(float));
                if (!K) {
#pragma omp critical
                    st = ladder_fail(LADDER_ERR_NOMEM, "cpu flash backward: no memory for a block's scratch");
                    continue;
                }
                float *V = K + nk * D, *q = V + nk * Dv, *dO = q + D;
                gather(&a->k, b, hk, seq.k0 + j0, nk, D, K);
                gather(&a->v, b, hk, seq.k0 + j0, nk, Dv, V);
                float *dkb = dk + ((b * p->Hkv + hk) * p->Sk + seq.k0 + j0) * D;
                float *dvb = dv + ((b * p->Hkv + hk) * p->Sk + seq.k0 + j0) * Dv;
                memset(dkb, 0, (size_t)(nk * D) * sizeof(float));
                memset(dvb, 0, (size_t)(nk * Dv) * sizeof(float));
                for (int64_t h = hk * group; h < (hk + 1) * group; h++)
                    for (int64_t i = 0; i < seq.Lq; i++) {
                        int64_t lo, hi;
                        ladder_attn_key_range(&p->mask, i, seq.Lq, seq.Lk, &lo, &hi);
                        if (lo < j0) lo = j0;
                        if (hi > j1) hi = j1;
                        if (lo >= hi) continue; /* row i sees no key of this block */
                        const int64_t row = (b * p->Hq + h) * p->Sq + seq.q0 + i;
                        gather(&a->q, b, h, seq.q0 + i, 1, D, q);
                        gather(&a->dout, b, h, seq.q0 + i, 1, Dv, dO);
                        const float L = ladder_attn_lse_for_bwd(lse[row]), Delta = delta_of(p, a, b, h, seq.q0 + i);
                        for (int64_t j = lo; j < hi; j++) {
                            const float *kj = K + (j - j0) * D;
                            const float S = score(p, scale, q, kj), P = expf(S - L);
                            const float dP = dot(dO, V + (j - j0) * Dv, Dv);
                            const float dS = P * (dP - Delta) * ladder_attn_softcap_grad(S, cap);
                            /* forward: O_i += P_ij V_j and S_ij = scale * Q_i . K_j, so V_j collects P_ij dO_i and
                             * K_j collects scale * dS'_ij Q_i, from every query row (and head) that sees it */
                            for (int64_t e = 0; e < Dv; e++) dvb[(j - j0) * Dv + e] += P * dO[e];
                            for (int64_t e = 0; e < D; e++) dkb[(j - j0) * D + e] += scale * dS * q[e];
                        }
                    }
                free(K);
            }
    return st;
}

ladder_status flash_bwd_cpu(const ladder_flash_problem *p, const ladder_flash_args *a) {
    LADDER_TRY(dq_cpu(p, a));
    return dkdv_cpu(p, a);
}
