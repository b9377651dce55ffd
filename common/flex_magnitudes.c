/*
 * common/flex_magnitudes.c: the magnitudes flex's dq, dk, dv and buffer gradients are checked against (what they are
 * and why: common/attention_magnitudes.c). flex's view of its scores: a row sees the keys its block lists let through
 * (the case's lists when it has them, else the mask mods, which the lists built from them reproduce), S is the score
 * mod of s, dS/ds the mod's slope, and a buffer element x that the mod read gains dS times dS/dx (ALiBi's slope
 * gradient, sum_ij dS_ij (j - i), keeps about i times the rounding residue of every row's sum, however small the
 * gradient: the reason the magnitudes exist).
 */
#include "flex_magnitudes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attention_magnitudes.h"
#include "flex_rungs.h"

/* What the model's functions read. */
typedef struct flex_view {
    const ladder_flex_problem *fp;
    ladder_flex_env env;
    bool lists; /* the case gives block lists (else the mask mods alone decide) */
    flex_blocks k;
    int slot[LADDER_FLEX_MAX_READS]; /* read r adds into buffer output slot[r] (-1: its gradient is not asked for) */
    int64_t at[LADDER_FLEX_MAX_READS]; /* and there from this offset of a task's partial */
    int64_t width;                     /* a task's partial: every buffer output's terms, then their rounding */
} flex_view;

/* Whether row i of head h in batch row b sees key j: its tile in the forward's lists (full: yes; partial: the mask
 * mods; neither: no), or without lists the mask mods alone. */
static bool sees(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j) {
    const flex_view *w = ctx;
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

static attn_mag_score score(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j) {
    const flex_view *w = ctx;
    const int mod = w->fp->score_mod;
    return (attn_mag_score){.S = ladder_flex_score(mod, (float)s, &w->env, b, h, i, j),
                            .dscore = ladder_flex_score_grad(mod, (float)s, &w->env, b, h, i, j).dscore, .keep = 1};
}

/* Each read whose gradient is asked: dS dS/dx into the element it read. */
static void buffers(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j, double terms,
                    double rounding, double *partial) {
    const flex_view *w = ctx;
    const ladder_flex_grad g = ladder_flex_score_grad(w->fp->score_mod, (float)s, &w->env, b, h, i, j);
    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) {
        if (w->slot[rd] < 0) continue;
        partial[w->at[rd] + g.at[rd]] += terms * fabs(g.d[rd]);
        partial[w->width / 2 + w->at[rd] + g.at[rd]] += rounding * fabs(g.d[rd]);
    }
}

ladder_status flex_magnitudes(const ladder_case *c, ladder_magnitudes *m) {
    const ladder_algo *algo = c->algo;
    const ladder_flex_problem *fp = (const ladder_flex_problem *)c->problem;
    const ladder_attention_problem *p = &fp->attn;
    ladder_flex_args a = {0};
    for (int i = 0; i < algo->n_tensors; i++)
        if (c->t[i].data) *(ladder_tensor *)((char *)&a + algo->tensors[i].offset) = c->t[i];
    flex_view v = {.fp = fp, .env = ladder_flex_env_of(fp, &a), .lists = a.kv_num_blocks.data != NULL};
    if (v.lists) v.k = flex_blocks_of(&a);
    attn_mag_model w = {.p = p, .q = &a.q, .k = &a.k, .v = &a.v, .dout = &a.dout, .dlse = &a.dlse,
                        .scale = ladder_attention_scale(p), .ctx = &v, .sees = sees, .score = score};
    LADDER_TRY(attn_mag_alloc(c, ladder_algo_tensor(algo, "dq"), m, &w.dq));
    LADDER_TRY(attn_mag_alloc(c, ladder_algo_tensor(algo, "dk"), m, &w.dk));
    LADDER_TRY(attn_mag_alloc(c, ladder_algo_tensor(algo, "dv"), m, &w.dv));
    /* the buffer gradients the case writes, one output per distinct buffer the score mod reads */
    const ladder_flex_score_spec *mod = &ladder_flex_score_mods[fp->score_mod];
    int of[LADDER_FLEX_MAX_READS], n_buf = 0;
    attn_mag_out buf[LADDER_FLEX_MAX_READS];
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) v.slot[r] = -1;
    for (int r = 0; r < mod->n_reads; r++) {
        char name[64];
        snprintf(name, sizeof name, "d%s", mod->reads[r]);
        const int i = ladder_algo_tensor(algo, name);
        if (i < 0 || !((c->present >> i) & 1u)) continue;
        for (int s = 0; s < n_buf; s++)
            if (of[s] == i) v.slot[r] = s; /* a buffer read twice: both reads add into one gradient */
        if (v.slot[r] >= 0) continue;
        of[n_buf] = i, v.slot[r] = n_buf;
        LADDER_TRY(attn_mag_alloc(c, i, m, &buf[n_buf]));
        v.width += 2 * buf[n_buf++].n;
    }
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++)
        for (int s = 0; s < v.slot[r]; s++) v.at[r] += buf[s].n;
    if (n_buf > 0) w.buffers = buffers, w.width = v.width;
    const int64_t tasks = p->B * p->Hkv;
    double *partial = calloc((size_t)(tasks * v.width > 0 ? tasks * v.width : 1), sizeof(double));
    if (!partial)
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld partial buffer magnitudes", (long long)tasks);
    const ladder_status st = attn_magnitudes(&w, partial);
    int64_t off = 0;
    for (int s = 0; s < n_buf && st == LADDER_OK; off += buf[s++].n) {
#pragma omp parallel for schedule(static)
        for (int64_t x = 0; x < buf[s].n; x++)
            for (int64_t t = 0; t < tasks; t++) {
                buf[s].terms[x] += partial[t * v.width + off + x];
                buf[s].rounding[x] += partial[t * v.width + v.width / 2 + off + x];
            }
    }
    free(partial);
    return st;
}
