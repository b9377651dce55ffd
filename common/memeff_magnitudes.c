/*
 * common/memeff_magnitudes.c: the magnitudes memeff's bias gradient is checked against (what magnitudes are and why:
 * common/attention_magnitudes.c). An element of dbias is dS, or over a broadcast axis a sum of dS, and dS = P (dP -
 * Delta) is itself a difference that cancels: in a row that sees one key, P = 1 and dP = Delta, so dS is the rounding
 * residue of two dot products of size |dP|, however small it is. Such an element of a correct gpu_tiled dbias
 * (-7.6e-6, top-left causal row 0, dropout 0.5, D = 192) met the cpu rung's 3.8e-6, past the plain rule's 4 tol
 * (|want| + rms) (docs/results/h200-2026-11-29-run-13.md, call 1). dq, dk and dv stay with the plain rule, which has
 * held them on every grid.
 *
 * memeff's view of its scores: row i sees the keys of its sequence that the mask leaves it (packed positions with
 * cu_seqlens, b = 0), S = softcap(s) + bias, dS/ds the softcap's slope, dropout's factor from its Philox mask, and
 * dS/dbias = 1, so an element's dS goes whole into the dbias element the broadcast maps it onto. A task (batch row
 * b, kv head hk) adds into its own partial: the dbias elements its rows can reach (its batch row's, or the one over
 * a broadcast batch; its group's heads, or the one over broadcast heads), added over the tasks in order. The
 * partials take two doubles an element of the bias at full size; past MAX_PARTIAL doubles (a full bias of 64M
 * elements: none of the tests', the bench's largest problems) dbias is held to the plain rule.
 */
#include "memeff_magnitudes.h"

#include <stdlib.h>

#include "attention_magnitudes.h"
#include "memeff_rungs.h"
#include "philox.h"

/* The most doubles the tasks' partials may take (1 GiB). */
#define MAX_PARTIAL ((int64_t)1 << 27)

typedef struct memeff_view {
    const ladder_memeff_problem *mp;
    memeff_bias bias;
    float scale, softcap, drop_p, drop_scale;
    int64_t *jlo, *jhi; /* row i sees keys [jlo[i], jhi[i]) */
    int64_t shape[4];   /* dbias's shape */
    int64_t heads;      /* the heads a task's partial spans: the group's, or 1 over a broadcast head */
    int64_t width;      /* a task's partial: its elements' terms, then their rounding */
} memeff_view;

static bool sees(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j) {
    (void)b, (void)h;
    const memeff_view *w = ctx;
    return j >= w->jlo[i] && j < w->jhi[i];
}

static attn_mag_score score(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j) {
    const memeff_view *w = ctx;
    const ladder_attention_problem *p = &w->mp->attn;
    const float Sc = ladder_attn_softcap((float)s, w->softcap);
    const float *bias = w->bias.data;
    const double add = bias ? bias[b * w->bias.s[0] + h * w->bias.s[1] + i * w->bias.s[2] + j * w->bias.s[3]] : 0;
    double keep = 1;
    if (w->drop_p > 0.0f) {
        const uint64_t n = ladder_dropout_counter(w->mp->philox_offset, b, h, i, j, p->Hq, p->Sq, p->Sk);
        keep = ladder_dropout_keep(w->mp->philox_seed, n, w->drop_p) ? w->drop_scale : 0;
    }
    return (attn_mag_score){.S = Sc + add, .dscore = ladder_attn_softcap_grad(Sc, w->softcap), .keep = keep};
}

/* dS whole into the task's element of dbias at (b, h, i, j): its head within the task's group (or the one), i, j. */
static void buffers(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j, double terms,
                    double rounding, double *partial) {
    (void)s, (void)b;
    const memeff_view *w = ctx;
    const int64_t hl = w->heads == 1 ? 0 : h % w->heads, il = w->shape[2] == 1 ? 0 : i, jl = w->shape[3] == 1 ? 0 : j;
    const int64_t x = (hl * w->shape[2] + il) * w->shape[3] + jl;
    partial[x] += terms;
    partial[w->width / 2 + x] += rounding;
}

/* Row i's keys (ladder_attn_row_keys(), as cpu/memeff.c finds them). */
static ladder_status key_ranges(memeff_view *w, const ladder_memeff_args *a) {
    const ladder_attention_problem *p = &w->mp->attn;
    const int32_t *cu_q = a->cu_seqlens_q.data, *cu_k = a->cu_seqlens_k.data;
    w->jlo = malloc((size_t)p->Sq * sizeof *w->jlo);
    w->jhi = malloc((size_t)p->Sq * sizeof *w->jhi);
    if (!w->jlo || !w->jhi)
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the key ranges of %lld rows", (long long)p->Sq);
    for (int64_t i = 0; i < p->Sq; i++)
        ladder_attn_row_keys(&p->mask, cu_q, cu_k, cu_q ? a->cu_seqlens_q.shape[0] - 1 : 1, i, p->Sq, p->Sk,
                             &w->jlo[i], &w->jhi[i]);
    return LADDER_OK;
}

ladder_status memeff_magnitudes(const ladder_case *c, ladder_magnitudes *m) {
    const ladder_algo *algo = c->algo;
    const ladder_memeff_problem *mp = (const ladder_memeff_problem *)c->problem;
    const ladder_attention_problem *p = &mp->attn;
    const int i_dbias = ladder_algo_tensor(algo, "dbias");
    if (!((c->present >> i_dbias) & 1u)) return LADDER_OK;
    memeff_view v = {.mp = mp, .scale = (float)ladder_attention_scale(p), .softcap = (float)p->softcap,
                     .drop_p = (float)mp->dropout_p, .drop_scale = ladder_dropout_scale((float)mp->dropout_p)};
    const int rank = ladder_case_shape(c, i_dbias, v.shape);
    const int64_t group = p->Hq / p->Hkv, tasks = p->B * p->Hkv;
    v.heads = v.shape[1] == 1 ? 1 : group;
    v.width = 2 * v.heads * v.shape[2] * v.shape[3];
    if (rank != 4 || v.width > MAX_PARTIAL / tasks) return LADDER_OK;
    ladder_memeff_args a = {0};
    for (int i = 0; i < algo->n_tensors; i++)
        if (c->t[i].data) *(ladder_tensor *)((char *)&a + algo->tensors[i].offset) = c->t[i];
    v.bias = memeff_bias_of(&a);
    attn_mag_out dbias;
    double *partial = NULL;
    ladder_status st = key_ranges(&v, &a);
    if (st == LADDER_OK) st = attn_mag_alloc(c, i_dbias, m, &dbias);
    if (st == LADDER_OK && !(partial = calloc((size_t)(tasks * v.width), sizeof(double))))
        st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld partial dbias magnitudes", (long long)tasks);
    const attn_mag_model w = {.p = p, .q = &a.q, .k = &a.k, .v = &a.v, .dout = &a.dout, .dlse = &a.dlse,
                              .scale = v.scale, .ctx = &v, .sees = sees, .score = score, .buffers = buffers,
                              .width = v.width};
    if (st == LADDER_OK) st = attn_magnitudes(&w, partial);
    if (st == LADDER_OK) {
        /* element (b, h, i, j) of dbias: the partials of the tasks that reach it, in task order */
        const int64_t per_b = v.shape[1] * v.shape[2] * v.shape[3], per_h = v.shape[2] * v.shape[3];
#pragma omp parallel for schedule(static)
        for (int64_t x = 0; x < dbias.n; x++) {
            const int64_t b = x / per_b, h = x / per_h % v.shape[1], il = x % per_h;
            const int64_t hl = v.heads == 1 ? 0 : h % group;
            for (int64_t t = 0; t < tasks; t++) {
                const int64_t tb = t / p->Hkv, thk = t % p->Hkv;
                if ((v.shape[0] > 1 && tb != b) || (v.shape[1] > 1 && thk != h / group)) continue;
                dbias.terms[x] += partial[t * v.width + hl * per_h + il];
                dbias.rounding[x] += partial[t * v.width + v.width / 2 + hl * per_h + il];
            }
        }
    }
    free(partial), free(v.jlo), free(v.jhi);
    return st;
}
