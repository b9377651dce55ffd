/*
 * cpu/flash.c: FlashAttention-2 forward and backward, the CPU rung.
 *
 * The math, written to be read, a block of query rows at a time: the block's scores S = scale * Q K^T, each
 * row's softmax P (its max m and its sum l), then O = P V (common/attention.h has the mask, the softcap and the
 * fully-masked-row rules). Every product of two matrices is one helper, matmul_acc(), whose inner loop runs along
 * a contiguous row: the compiler turns it into vector instructions, and each element's sum runs in one fixed
 * order. Each task first gathers what it reads into contiguous scratch (inputs may have any strides), K
 * transposed, one block of KB keys at a time, so that the block stays in cache while every row of the query
 * block uses it.
 *
 * OpenMP runs over (sequence, head, block of QB query rows): B = 1 and 8 heads at S = 1024 are 128 tasks, work
 * for 16 threads. The backward recomputes P = exp(S - lse) instead of storing it, and splits the work by what
 * each task writes, so that no two threads ever add into the same element and no sum depends on the thread
 * count (bitwise-repeatable results, no atomics):
 *   - Delta = rowsum(dO * O) - dlse, once per row (the preprocess);
 *   - dQ: a task per (sequence, query head, query block), summing over its key blocks;
 *   - dK, dV: a task per (sequence, key/value head, key block), summing over the query blocks of every query
 *     head of the group that sees the block.
 * Both recompute the tile of S, P, dP and dS they need (tile_grads()): seven block products where a single pass
 * with atomics would do five, the price of writing each output from one task.
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (f32, host pointers, any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run flash --rung cpu
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_rows.h"
#include "flash_rungs.h"
#include "vec_math.h"

enum { QB = 64, KB = 64 }; /* query rows per query block, keys per key block */

/* Pointer to element [b, h, s, 0] of a rank-4 tensor (its last dimension has stride t->strides[3]). */
static const float *at4(const ladder_tensor *t, int64_t b, int64_t h, int64_t s) {
    return (const float *)t->data + b * t->strides[0] + h * t->strides[1] + s * t->strides[2];
}

/* Rows [s0, s0+n) of head h of batch row b of @p t, each of @p d entries, into dst[n][d]. */
static void gather(const ladder_tensor *t, int64_t b, int64_t h, int64_t s0, int64_t n, int64_t d, float *dst) {
    const int64_t se = t->strides[3];
    for (int64_t r = 0; r < n; r++) {
        const float *src = at4(t, b, h, s0 + r);
        for (int64_t e = 0; e < d; e++) dst[r * d + e] = src[e * se];
    }
}

/* The same rows transposed, into dst[d][n]: column r holds row s0 + r. */
static void gather_t(const ladder_tensor *t, int64_t b, int64_t h, int64_t s0, int64_t n, int64_t d, float *dst) {
    const int64_t se = t->strides[3];
    for (int64_t r = 0; r < n; r++) {
        const float *src = at4(t, b, h, s0 + r);
        for (int64_t e = 0; e < d; e++) dst[e * n + r] = src[e * se];
    }
}

/*
 * C += A B, for an n x k matrix A read as A[r * ar + e * ae] (so a transposed A costs nothing: its elements are
 * read one at a time) and a k x m matrix B whose rows are contiguous (row e at B + e * ldb); row r of C is at
 * C + r * ldc. Element (r, j) of C collects A(r, e) B(e, j) for e = 0, 1, ... in that order, one chain of
 * multiply-adds. The block is computed a tile of MR x NR elements of C at a time, held in registers through the
 * whole sum over e: each step of e loads NR elements of a row of B once for MR rows, and broadcasts MR elements of
 * A, so MR x NR multiply-adds cost NR / 8 + MR loads (with 8-float vectors), where a loop that loads and stores its
 * row of C at every step spends two memory instructions per vector of multiply-adds. The rows and columns past
 * the last whole tile take the same sums one element at a time.
 */
enum { MR = 4, NR = 16 }; /* a tile of C in registers: 4 rows of two 8-float vectors */

static void matmul_acc(int64_t n, int64_t k, int64_t m, const float *A, int64_t ar, int64_t ae,
                       const float *restrict B, int64_t ldb, float *restrict C, int64_t ldc) {
    int64_t r = 0;
    for (; r + MR <= n; r += MR) {
        int64_t j = 0;
        for (; j + NR <= m; j += NR) {
            float c[MR][NR];
#pragma GCC unroll 4
            for (int i = 0; i < MR; i++)
#pragma omp simd
                for (int q = 0; q < NR; q++) c[i][q] = C[(r + i) * ldc + j + q];
            for (int64_t e = 0; e < k; e++) {
                const float *restrict b = B + e * ldb + j;
#pragma GCC unroll 4
                for (int i = 0; i < MR; i++) {
                    const float a = A[(r + i) * ar + e * ae];
#pragma omp simd
                    for (int q = 0; q < NR; q++) c[i][q] += a * b[q];
                }
            }
#pragma GCC unroll 4
            for (int i = 0; i < MR; i++)
#pragma omp simd
                for (int q = 0; q < NR; q++) C[(r + i) * ldc + j + q] = c[i][q];
        }
        for (; j < m; j++) /* the last m % NR columns */
            for (int i = 0; i < MR; i++) {
                float sum = C[(r + i) * ldc + j];
                for (int64_t e = 0; e < k; e++) sum += A[(r + i) * ar + e * ae] * B[e * ldb + j];
                C[(r + i) * ldc + j] = sum;
            }
    }
    for (; r < n; r++) /* the last n % MR rows of C */
        for (int64_t e = 0; e < k; e++) ladder_axpy(m, A[r * ar + e * ae], B + e * ldb, C + r * ldc);
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

/* A query block: its sequence, batch row, query head and K/V head, its rows [i0, i0 + n), and the keys [klo,
 * khi) that some row of it sees (ladder_attn_block_range: the first and the last row bound them). */
typedef struct qblock {
    ladder_attn_seq seq;
    int64_t b, h, hk, i0, n, klo, khi;
} qblock;

/* Query block qb of head h of sequence s; false when the block holds no row of its sequence. */
static bool query_block(const ladder_attention_problem *p, const units *u, int64_t s, int64_t h, int64_t qb,
                        qblock *t) {
    t->seq = ladder_attn_sequence(u->cu_q, u->cu_k, s, p->Sq, p->Sk);
    t->b = u->packed ? 0 : s;
    t->h = h;
    t->hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    t->i0 = qb * QB;
    t->n = t->seq.Lq - t->i0 < QB ? t->seq.Lq - t->i0 : QB;
    if (t->n <= 0) return false;
    const ladder_attn_block k = ladder_attn_block_range(&p->mask, t->i0, t->n, t->seq.Lq, t->seq.Lk);
    t->klo = k.lo;
    t->khi = k.hi > k.lo ? k.hi : k.lo;
    return true;
}

/* Row i of the block's sequence: its row along Sq of the [B, Hq, Sq] outputs. */
static int64_t out_row(const ladder_attention_problem *p, const qblock *t, int64_t i) {
    return (t->b * p->Hq + t->h) * p->Sq + t->seq.q0 + i;
}

/* Per-task scratch, one allocation; false (and a message) when there is no memory. */
static bool scratch(float **mem, int64_t floats, const char *pass, ladder_status *st) {
    *mem = malloc((size_t)floats * sizeof **mem);
    if (*mem) return true;
#pragma omp critical
    *st = ladder_fail(LADDER_ERR_NOMEM, "cpu flash %s: no memory for a block's scratch", pass);
    return false;
}

ladder_status flash_fwd_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const float scale = (float)ladder_attention_scale(p), cap = (float)p->softcap;
    const int64_t D = p->D, Dv = p->Dv, n_qblocks = (p->Sq + QB - 1) / QB;
    float *o = a->o.data, *lse = a->lse.data; /* [B,Hq,Sq,Dv] and [B,Hq,Sq], contiguous */
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t qb = 0; qb < n_qblocks; qb++) {
                qblock t;
                if (!query_block(p, &u, s, h, qb, &t)) continue;
                const int64_t n = t.n, nk = t.khi - t.klo, k0 = t.seq.k0;
                const int64_t KVD = D > Dv ? D : Dv;
                float *Q; /* then S [n][nk], the block's scores and then P; a key block of K^T or V; l [n] */
                if (!scratch(&Q, QB * D + QB * nk + KB * KVD + QB, "forward", &st)) continue;
                float *S = Q + QB * D, *KV = S + QB * nk, *l = KV + KB * KVD;
                float *O = o + out_row(p, &t, t.i0) * Dv; /* the block's rows of o, [n][Dv] */
                gather(&a->q, t.b, t.h, t.seq.q0 + t.i0, n, D, Q);
                /* S = Q K^T, a key block at a time: K^T's block is D x KB, row e holding entry e of each key */
                memset(S, 0, (size_t)(n * nk) * sizeof *S);
                for (int64_t j0 = t.klo; j0 < t.khi; j0 += KB) {
                    const int64_t m = t.khi - j0 < KB ? t.khi - j0 : KB;
                    gather_t(&a->k, t.b, t.hk, k0 + j0, m, D, KV);
                    matmul_acc(n, D, m, Q, D, 1, KV, m, S + (j0 - t.klo), nk);
                }
                /* each row's softmax over the keys it sees: m = max_j S_ij, then P_ij = exp(S_ij - m) (every exp
                 * <= 1) and l = sum_j P_ij; a key the row does not see gets P = 0. The loops run along the row in
                 * vector instructions (ladder_expf(), a select for the mask), but for the softcap's tanhf() */
                for (int64_t r = 0; r < n; r++) {
                    int64_t lo, hi;
                    ladder_attn_key_range(&p->mask, t.i0 + r, t.seq.Lq, t.seq.Lk, &lo, &hi);
                    float *Sr = S + r * nk - t.klo, mx = -INFINITY, sum = 0.0f; /* Sr[j]: key j */
                    if (cap > 0.0f)
                        for (int64_t j = lo; j < hi; j++) Sr[j] = ladder_attn_softcap(scale * Sr[j], cap);
                    else
#pragma omp simd
                        for (int64_t j = lo; j < hi; j++) Sr[j] *= scale;
#pragma omp simd reduction(max : mx)
                    for (int64_t j = lo; j < hi; j++) mx = Sr[j] > mx ? Sr[j] : mx;
#pragma omp simd reduction(+ : sum)
                    for (int64_t j = t.klo; j < t.khi; j++) {
                        Sr[j] = j >= lo && j < hi ? ladder_expf(Sr[j] - mx) : 0.0f;
                        sum += Sr[j];
                    }
                    l[r] = sum;
                    lse[out_row(p, &t, t.i0 + r)] = ladder_attn_lse(mx, sum);
                }
                /* O = P V, a key block at a time, then O_i /= l_i; an empty row (l = 0) keeps O_i = 0 */
                memset(O, 0, (size_t)(n * Dv) * sizeof *O);
                for (int64_t j0 = t.klo; j0 < t.khi; j0 += KB) {
                    const int64_t m = t.khi - j0 < KB ? t.khi - j0 : KB;
                    gather(&a->v, t.b, t.hk, k0 + j0, m, Dv, KV);
                    matmul_acc(n, m, Dv, S + (j0 - t.klo), nk, 1, KV, Dv, O, Dv);
                }
                for (int64_t r = 0; r < n; r++)
                    for (int64_t e = 0; l[r] != 0.0f && e < Dv; e++) O[r * Dv + e] /= l[r];
                free(Q);
            }
    return st;
}

/* What the backward's tiles read about a query block: its rows of Q [n][D] and dO [n][Dv], and per row the lse
 * to subtract (L) and Delta. */
typedef struct qrows {
    float *Q, *dO, *L, *Delta;
} qrows;

static void gather_rows(const ladder_attention_problem *p, const ladder_flash_args *a, const qblock *t,
                        const float *delta, qrows *q) {
    gather(&a->q, t->b, t->h, t->seq.q0 + t->i0, t->n, p->D, q->Q);
    gather(&a->dout, t->b, t->h, t->seq.q0 + t->i0, t->n, p->Dv, q->dO);
    for (int64_t r = 0; r < t->n; r++) {
        const int64_t row = out_row(p, t, t->i0 + r);
        q->L[r] = ladder_attn_lse_for_bwd(((const float *)a->lse.data)[row]);
        q->Delta[r] = delta[row];
    }
}

/*
 * The backward's tile: the query block's rows against keys [j0, j0 + m) of its sequence (K^T and V^T of those
 * keys given, D x m and Dv x m). Into P and dS (each [n][m]):
 *     forward: S_ij = softcap(scale * Q_i . K_j), P_ij = exp(S_ij - lse_i), O_i = sum_j P_ij V_j, so
 *     dP_ij = dO_i . V_j, through the softmax dS_ij = P_ij (dP_ij - Delta_i), and through the softcap and the
 *     scale dS'_ij = scale * softcap'(S_ij) * dS_ij, which is what dQ and dK collect.
 * An element the row does not see gets P = dS' = 0.
 */
static void tile_grads(const ladder_attention_problem *p, const qblock *t, const qrows *q, const float *Kt,
                       const float *Vt, int64_t j0, int64_t m, float *P, float *dS) {
    const float scale = (float)ladder_attention_scale(p), cap = (float)p->softcap;
    memset(P, 0, (size_t)(t->n * m) * sizeof *P);
    memset(dS, 0, (size_t)(t->n * m) * sizeof *dS);
    matmul_acc(t->n, p->D, m, q->Q, p->D, 1, Kt, m, P, m);     /* Q K^T, scale and softcap still to come */
    matmul_acc(t->n, p->Dv, m, q->dO, p->Dv, 1, Vt, m, dS, m); /* dP = dO V^T */
    for (int64_t r = 0; r < t->n; r++) {
        int64_t lo, hi;
        ladder_attn_key_range(&p->mask, t->i0 + r, t->seq.Lq, t->seq.Lk, &lo, &hi);
        const float L = q->L[r], Delta = q->Delta[r];
        float *Pr = P + r * m, *dSr = dS + r * m;
        if (cap > 0.0f) { /* tanhf() is a call: this loop stays scalar */
            for (int64_t j = 0; j < m; j++) {
                const bool seen = j0 + j >= lo && j0 + j < hi;
                const float S = ladder_attn_softcap(scale * Pr[j], cap);
                Pr[j] = seen ? ladder_expf(S - L) : 0.0f;
                dSr[j] = seen ? scale * ladder_attn_softcap_grad(S, cap) * Pr[j] * (dSr[j] - Delta) : 0.0f;
            }
            continue;
        }
#pragma omp simd
        for (int64_t j = 0; j < m; j++) { /* the same without the softcap, along the row in vector instructions */
            const bool seen = j0 + j >= lo && j0 + j < hi;
            Pr[j] = seen ? ladder_expf(scale * Pr[j] - L) : 0.0f;
            dSr[j] = seen ? scale * Pr[j] * (dSr[j] - Delta) : 0.0f;
        }
    }
}

/* Scratch of a backward task: the query block's rows, K^T and V^T of a key block, the P and dS tiles. */
static int64_t bwd_scratch_floats(const ladder_attention_problem *p) {
    return QB * (p->D + p->Dv + 2) + KB * (p->D + p->Dv) + 2 * QB * KB;
}

static void bwd_scratch_split(const ladder_attention_problem *p, float *mem, qrows *q, float **Kt, float **Vt,
                              float **P, float **dS) {
    q->Q = mem, q->dO = q->Q + QB * p->D, q->L = q->dO + QB * p->Dv, q->Delta = q->L + QB;
    *Kt = q->Delta + QB, *Vt = *Kt + KB * p->D, *P = *Vt + KB * p->Dv, *dS = *P + QB * KB;
}

/* dQ_i = sum_j dS'_ij K_j, one task per (sequence, query head, query block). */
static ladder_status dq_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a, const float *delta) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const int64_t D = p->D, Dv = p->Dv, n_qblocks = (p->Sq + QB - 1) / QB;
    float *dq = a->dq.data;
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t qb = 0; qb < n_qblocks; qb++) {
                qblock t;
                if (!query_block(p, &u, s, h, qb, &t)) continue;
                float *mem, *Kt, *Vt, *P, *dS;
                qrows q;
                if (!scratch(&mem, bwd_scratch_floats(p) + KB * D, "backward", &st)) continue;
                bwd_scratch_split(p, mem, &q, &Kt, &Vt, &P, &dS);
                float *K = dS + QB * KB; /* the key block again, untransposed: [m][D] */
                float *dQ = dq + out_row(p, &t, t.i0) * D;
                memset(dQ, 0, (size_t)(t.n * D) * sizeof *dQ);
                gather_rows(p, a, &t, delta, &q);
                for (int64_t j0 = t.klo; j0 < t.khi; j0 += KB) {
                    const int64_t m = t.khi - j0 < KB ? t.khi - j0 : KB;
                    gather_t(&a->k, t.b, t.hk, t.seq.k0 + j0, m, D, Kt);
                    gather_t(&a->v, t.b, t.hk, t.seq.k0 + j0, m, Dv, Vt);
                    gather(&a->k, t.b, t.hk, t.seq.k0 + j0, m, D, K);
                    tile_grads(p, &t, &q, Kt, Vt, j0, m, P, dS);
                    matmul_acc(t.n, m, D, dS, m, 1, K, D, dQ, D); /* dQ += dS' K */
                }
                free(mem);
            }
    return st;
}

/* dV_j = sum_i P_ij dO_i and dK_j = sum_i dS'_ij Q_i over the group's query heads, one task per (sequence, K/V
 * head, key block). */
static ladder_status dkdv_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a, const float *delta) {
    const ladder_attention_problem *p = &fp->attn;
    const units u = units_of(fp, a);
    const int64_t D = p->D, Dv = p->Dv, n_kblocks = (p->Sk + KB - 1) / KB, n_qblocks = (p->Sq + QB - 1) / QB;
    const int64_t group = p->Hq / p->Hkv;
    float *dk = a->dk.data, *dv = a->dv.data;
    ladder_status st = LADDER_OK;

#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int64_t s = 0; s < u.n; s++)
        for (int64_t hk = 0; hk < p->Hkv; hk++)
            for (int64_t kb = 0; kb < n_kblocks; kb++) {
                const ladder_attn_seq seq = ladder_attn_sequence(u.cu_q, u.cu_k, s, p->Sq, p->Sk);
                const int64_t b = u.packed ? 0 : s, j0 = kb * KB, m = seq.Lk - j0 < KB ? seq.Lk - j0 : KB;
                if (m <= 0) continue;
                float *mem, *Kt, *Vt, *P, *dS;
                qrows q;
                if (!scratch(&mem, bwd_scratch_floats(p), "backward", &st)) continue;
                bwd_scratch_split(p, mem, &q, &Kt, &Vt, &P, &dS);
                gather_t(&a->k, b, hk, seq.k0 + j0, m, D, Kt);
                gather_t(&a->v, b, hk, seq.k0 + j0, m, Dv, Vt);
                float *dK = dk + ((b * p->Hkv + hk) * p->Sk + seq.k0 + j0) * D;
                float *dV = dv + ((b * p->Hkv + hk) * p->Sk + seq.k0 + j0) * Dv;
                memset(dK, 0, (size_t)(m * D) * sizeof *dK);
                memset(dV, 0, (size_t)(m * Dv) * sizeof *dV);
                for (int64_t h = hk * group; h < (hk + 1) * group; h++)
                    for (int64_t qb = 0; qb < n_qblocks; qb++) {
                        qblock t;
                        if (!query_block(p, &u, s, h, qb, &t)) break;
                        if (t.khi <= j0 || t.klo >= j0 + m) continue; /* no row of it sees this key block */
                        gather_rows(p, a, &t, delta, &q);
                        tile_grads(p, &t, &q, Kt, Vt, j0, m, P, dS);
                        /* forward: O_i += P_ij V_j and S_ij = scale * Q_i . K_j, so V_j collects P_ij dO_i and K_j
                         * collects dS'_ij Q_i, from every query row (and head) that sees it: P^T dO and dS'^T Q */
                        matmul_acc(m, t.n, Dv, P, 1, m, q.dO, Dv, dV, Dv);
                        matmul_acc(m, t.n, D, dS, 1, m, q.Q, D, dK, D);
                    }
                free(mem);
            }
    return st;
}

ladder_status flash_bwd_cpu(const ladder_flash_problem *fp, const ladder_flash_args *a) {
    const ladder_attention_problem *p = &fp->attn;
    const int64_t rows = p->B * p->Hq * p->Sq;
    float *delta = malloc((size_t)rows * sizeof *delta); /* [B,Hq,Sq], like lse */
    if (!delta) return ladder_fail(LADDER_ERR_NOMEM, "cpu flash backward: no memory for Delta of %lld rows",
                                   (long long)rows);
    /* the preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i (a row no sequence owns is never read) */
    const float *o = a->o.data, *dlse = a->dlse.data;
    const int64_t *sl = a->dlse.strides;
#pragma omp parallel for collapse(3) schedule(static)
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const int64_t row = (b * p->Hq + h) * p->Sq + i;
                const float dl = dlse ? dlse[b * sl[0] + h * sl[1] + i * sl[2]] : 0.0f;
                delta[row] = ladder_attn_delta(o + row * p->Dv, at4(&a->dout, b, h, i), a->dout.strides[3], p->Dv, dl);
            }
    ladder_status st = dq_cpu(fp, a, delta);
    if (st == LADDER_OK) st = dkdv_cpu(fp, a, delta);
    free(delta);
    return st;
}
