/*
 * cpu/flex.c: flex attention forward and backward (score_mod with its gradients, mask_mods through block lists),
 * the CPU rung.
 *
 * The math, written to be read, one element of S at a time (common/flex.h has the formulas, common/flex_mods.h the
 * mods). Every quantity of element (b, h, i, j) comes from one function, so that each pass reads as the sum it is:
 *   - score():   s = scale * q_i . k_j and S = score_mod(s)
 *   - element(): P = exp(S - lse_i), dS = P * (dP - Delta_i), ds = dS * dS/ds, and the mod's buffer derivatives
 * Which keys a row sees comes from the block lists, as every faster rung reads them: keys_of() visits the query
 * tile's partial key tiles (checking the mask_mods element by element), then its full ones (no mask at all); the
 * backward's rows_of() walks a key tile's query lists, the transpose.
 *
 * Each pass is split by what it writes, so that no two threads add into the same element and every sum runs in one
 * fixed order (bitwise-repeatable, no atomics); OpenMP runs over the independent outputs:
 *   - forward: a row i of O and lse per task;
 *   - dQ: a row per task; dK, dV: a key per task, over every query row of every query head of its group;
 *   - buffer gradients: a reduction over every score that read an element. One task per (b, h) sums its scores'
 *     contributions into its own partial gradient, rows and keys in order; then every element adds the partials of
 *     the (b, h) tasks in order. The partition is fixed by the problem, not by the thread count, so the result is
 *     the same bits whatever the threads.
 * The backward recomputes P rather than storing it, several times: a reference, not a fast path; but every sum
 * along a head dim runs over contiguous copies of the inputs (common/cpu_rows.h: they may have any strides), in
 * vector instructions.
 *
 * Preconditions: validated by ladder_flex_fwd/bwd, block lists present (f32, host pointers, any input strides,
 * contiguous outputs). Run it:  build/bin/ladder run flex --rung cpu --score_mod alibi --mask_mod causal
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_rows.h"
#include "flex_rungs.h"

/* The problem, its tensors, the mods' view of them and the block lists. */
typedef struct ctx {
    const ladder_attention_problem *p;
    const ladder_flex_args *a;
    ladder_flex_env env;
    flex_blocks k;
    int mod;         /* the score mod */
    unsigned masks;  /* the mask mods */
    float scale;
    float *delta;    /* backward: Delta of row (b, h, i) at (b*Hq + h)*Sq + i */
    ladder_rows rq, rk, rv, rdo; /* q, k, v and dO in contiguous rows (dO: the backward's) */
} ctx;

static ladder_status ctx_of(const ladder_flex_problem *fp, const ladder_flex_args *a, ctx *c) {
    *c = (ctx){.p = &fp->attn, .a = a, .env = ladder_flex_env_of(fp, a), .k = flex_blocks_of(a),
               .mod = fp->score_mod, .masks = (unsigned)fp->mask_mods,
               .scale = (float)ladder_attention_scale(&fp->attn)};
    if (!ladder_rows_of(&a->q, &c->rq) || !ladder_rows_of(&a->k, &c->rk) || !ladder_rows_of(&a->v, &c->rv) ||
        !ladder_rows_of(&a->dout, &c->rdo))
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate contiguous copies of the inputs");
    return LADDER_OK;
}

static void ctx_free(ctx *c) {
    free(c->rq.p), free(c->rk.p), free(c->rv.p), free(c->rdo.p);
    free(c->delta);
}

/*
 * The keys row i of head h in batch row b sees, in visiting order, into @p keys; returns how many. The row's query
 * tile lists its partial key tiles (each key checked against the mask mods) and its full ones (every key inside
 * Sk, unchecked: the builder proved the mask true on all of them); a tile in neither list is never visited.
 */
static int64_t keys_of(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t *keys) {
    const flex_blocks *k = &c->k;
    const int64_t tq = i / LADDER_FLEX_BLOCK, row = flex_list_row(k, b, h, tq, k->Tq);
    int64_t n = 0;
    for (int full = 0; full < 2; full++) {
        const int32_t count = (full ? k->full_kv_num : k->kv_num)[row];
        const int32_t *tiles = (full ? k->full_kv_idx : k->kv_idx) + row * k->Tk;
        for (int32_t e = 0; e < count; e++) {
            const int64_t j0 = (int64_t)tiles[e] * LADDER_FLEX_BLOCK;
            for (int64_t j = j0; j < j0 + LADDER_FLEX_BLOCK && j < c->p->Sk; j++)
                if (full || ladder_flex_masks(c->masks, &c->env, b, h, i, j)) keys[n++] = j;
        }
    }
    return n;
}

/* The rows of head h in batch row b that see key j, from the key tile's query lists (the transpose), into @p rows. */
static int64_t rows_of(const ctx *c, int64_t b, int64_t h, int64_t j, int64_t *rows) {
    const flex_blocks *k = &c->k;
    const int64_t tk = j / LADDER_FLEX_BLOCK, col = flex_list_row(k, b, h, tk, k->Tk);
    int64_t n = 0;
    for (int full = 0; full < 2; full++) {
        const int32_t count = (full ? k->full_q_num : k->q_num)[col];
        const int32_t *tiles = (full ? k->full_q_idx : k->q_idx) + col * k->Tq;
        for (int32_t e = 0; e < count; e++) {
            const int64_t i0 = (int64_t)tiles[e] * LADDER_FLEX_BLOCK;
            for (int64_t i = i0; i < i0 + LADDER_FLEX_BLOCK && i < c->p->Sq; i++)
                if (full || ladder_flex_masks(c->masks, &c->env, b, h, i, j)) rows[n++] = i;
        }
    }
    return n;
}

/* S of element (b, h, i, j) = score_mod(s), s = scale * q_i . k_j (into *s, for the mod's derivatives). */
static float score(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t j, float *s) {
    const int64_t hk = ladder_attn_kv_head(h, c->p->Hq, c->p->Hkv);
    *s = c->scale * ladder_dot(ladder_row(&c->rq, b, h, i), ladder_row(&c->rk, b, hk, j), c->p->D);
    return ladder_flex_score(c->mod, *s, &c->env, b, h, i, j);
}

ladder_status flex_fwd_cpu(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    ctx c;
    ladder_status st = ctx_of(fp, a, &c);
    if (st != LADDER_OK) {
        ctx_free(&c);
        return st;
    }
    const ladder_attention_problem *p = &fp->attn;
    const int64_t rows = p->B * p->Hq * p->Sq, Dv = p->Dv;
    float *o = a->o.data, *lse = a->lse.data; /* [B,Hq,Sq,Dv] and [B,Hq,Sq], contiguous */
#pragma omp parallel
    {
        int64_t *keys = malloc((size_t)p->Sk * sizeof *keys);
        if (!keys) {
#pragma omp critical
            st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a row of %lld keys", (long long)p->Sk);
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < rows; r++) {
            if (!keys) continue;
            const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
            const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv), n = keys_of(&c, b, h, i, keys);
            float *oi = o + r * Dv, s;
            /* m = max_j S_ij, then l = sum_j exp(S_ij - m) and O_i = sum_j exp(S_ij - m) v_j / l */
            float m = -INFINITY, l = 0.0f;
            for (int64_t e = 0; e < n; e++) {
                const float S = score(&c, b, h, i, keys[e], &s);
                if (S > m || S != S) m = S; /* not fmaxf: a NaN score must not vanish (a NaN row is no masked row) */
            }
            for (int64_t d = 0; d < Dv; d++) oi[d] = 0.0f;
            for (int64_t e = 0; e < n && m != -INFINITY; e++) {
                const float w = expf(score(&c, b, h, i, keys[e], &s) - m);
                l += w;
                ladder_axpy(Dv, w, ladder_row(&c.rv, b, hk, keys[e]), oi);
            }
            for (int64_t d = 0; d < Dv; d++) oi[d] = l > 0.0f || l != l ? oi[d] / l : 0.0f;
            lse[r] = ladder_attn_lse(m, l);
        }
        free(keys);
    }
    ctx_free(&c);
    return st;
}

/* Element (b, h, i, j) of the backward: P, dS = P * (dP - Delta), ds = dS * dS/ds (what dQ and dK take), and the
 * mod's derivatives (the buffer elements it read, with dS/d(element): what the buffer gradients take). */
typedef struct grads {
    float P, dS, ds;
    ladder_flex_grad g;
} grads;

static grads element(const ctx *c, int64_t b, int64_t h, int64_t i, int64_t j) {
    const ladder_attention_problem *p = c->p;
    const int64_t r = (b * p->Hq + h) * p->Sq + i, hk = ladder_attn_kv_head(h, p->Hq, p->Hkv);
    float s;
    const float S = score(c, b, h, i, j, &s);
    grads e;
    e.P = expf(S - ladder_attn_lse_for_bwd(((const float *)c->a->lse.data)[r]));
    /* in the forward, O_i = sum_j P_ij v_j: so dP_ij = dO_i . v_j */
    const float dP = ladder_dot(ladder_row(&c->rdo, b, h, i), ladder_row(&c->rv, b, hk, j), p->Dv);
    e.dS = e.P * (dP - c->delta[r]);
    /* in the forward, S = score_mod(s): so dL/ds = dL/dS * dS/ds, and dL/dx += dL/dS * dS/dx per buffer element x */
    e.g = ladder_flex_score_grad(c->mod, s, &c->env, b, h, i, j);
    e.ds = e.dS * e.g.dscore;
    return e;
}

/* The buffer gradients the caller asked for: per distinct buffer of the score mod's reads, its gradient tensor. */
typedef struct dbufs {
    int n;                                  /* distinct buffers read (0: no gradient asked for) */
    int slot[LADDER_FLEX_MAX_READS];        /* read r adds into buffer slot[r] (-1: its gradient is not asked for) */
    ladder_tensor *grad[LADDER_FLEX_MAX_READS];
    int64_t numel[LADDER_FLEX_MAX_READS];
} dbufs;

static dbufs dbufs_of(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    const ladder_flex_score_spec *mod = &ladder_flex_score_mods[fp->score_mod];
    dbufs d = {0};
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) d.slot[r] = -1;
    for (int r = 0; r < mod->n_reads; r++) {
        const ladder_flex_buffer_spec *buf = ladder_flex_buffer(mod->reads[r]);
        ladder_tensor *g = (ladder_tensor *)((const char *)a + buf->grad);
        for (int s = 0; s < d.n && g->data; s++)
            if (d.grad[s] == g) d.slot[r] = s; /* a second read of the same buffer adds into the same gradient */
        if (d.slot[r] < 0 && g->data) d.slot[r] = d.n, d.grad[d.n] = g, d.numel[d.n++] = ladder_tensor_numel(g);
    }
    return d;
}

/*
 * d<buffer>[x] = sum over every (b, h, i, j) whose score read x of dS_ij * dS_ij/dx. Task t, a block of `rows`
 * rows of one (b, h), sums its scores into partial[t] (rows ascending, keys in visiting order); then element x adds
 * the tasks' partials in task order: the same bits at any thread count, since the blocks depend on the problem
 * alone. Blocks of 64 rows give every thread work where B * Hq is below the thread count (a task per (b, h) left 8
 * of 16 threads idle at B = 1, Hq = 8), as far as their partials fit 64 MB (one block of all the rows where a
 * (b, h)'s partial alone does not). The sums are kept in double: a buffer element gathers up to Sq * Sk terms,
 * and since a row's dS sums to zero they cancel (in float, the difference of two orders of summing reached 5e-5 of
 * the result at Sq = Sk = 256).
 */
static ladder_status buffer_grads(const ctx *c, const dbufs *d) {
    const ladder_attention_problem *p = c->p;
    int64_t width = 0, off[LADDER_FLEX_MAX_READS];
    for (int s = 0; s < d->n; s++) off[s] = width, width += d->numel[s];
    const int64_t heads = p->B * p->Hq, most = ((int64_t)64 << 20) / (int64_t)sizeof(double) / (heads * width + 1);
    int64_t blocks = (p->Sq + 63) / 64; /* a (b, h)'s row blocks */
    if (blocks > most) blocks = most > 1 ? most : 1;
    const int64_t rows = (p->Sq + blocks - 1) / blocks, tasks = heads * blocks;
    double *partial = calloc((size_t)(tasks * width), sizeof *partial);
    if (!partial) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld partial buffer gradients of %lld elements",
                                     (long long)tasks, (long long)width);
    ladder_status st = LADDER_OK;
#pragma omp parallel
    {
        int64_t *keys = malloc((size_t)p->Sk * sizeof *keys);
        if (!keys) {
#pragma omp critical
            st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a row of %lld keys", (long long)p->Sk);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) {
            if (!keys) continue;
            const int64_t b = t / blocks / p->Hq, h = t / blocks % p->Hq, i0 = t % blocks * rows;
            double *mine = partial + t * width;
            for (int64_t i = i0; i < i0 + rows && i < p->Sq; i++) {
                const int64_t n = keys_of(c, b, h, i, keys);
                for (int64_t e = 0; e < n; e++) {
                    const grads g = element(c, b, h, i, keys[e]);
                    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++)
                        if (d->slot[r] >= 0) mine[off[d->slot[r]] + g.g.at[r]] += (double)g.dS * g.g.d[r];
                }
            }
        }
        free(keys);
    }
    for (int s = 0; s < d->n && st == LADDER_OK; s++) {
        float *out = d->grad[s]->data;
#pragma omp parallel for schedule(static)
        for (int64_t x = 0; x < d->numel[s]; x++) {
            double acc = 0.0;
            for (int64_t t = 0; t < tasks; t++) acc += partial[t * width + off[s] + x];
            out[x] = (float)acc;
        }
    }
    free(partial);
    return st;
}

ladder_status flex_bwd_cpu(const ladder_flex_problem *fp, const ladder_flex_args *a) {
    ctx c;
    ladder_status st = ctx_of(fp, a, &c);
    const ladder_attention_problem *p = &fp->attn;
    const int64_t rows = p->B * p->Hq * p->Sq, D = p->D, Dv = p->Dv, group = p->Hq / p->Hkv;
    if (st == LADDER_OK && !(c.delta = malloc((size_t)rows * sizeof *c.delta)))
        st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate Delta for %lld rows", (long long)rows);
    if (st != LADDER_OK) {
        ctx_free(&c);
        return st;
    }
    const float *o = a->o.data, *dlse = a->dlse.data;
    /* Delta_i = rowsum(dO_i * O_i) - dlse_i */
#pragma omp parallel for
    for (int64_t r = 0; r < rows; r++) {
        const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
        const float *dout = (const float *)a->dout.data + b * a->dout.strides[0] + h * a->dout.strides[1] +
                            i * a->dout.strides[2];
        const float dl = dlse ? dlse[b * a->dlse.strides[0] + h * a->dlse.strides[1] + i * a->dlse.strides[2]] : 0;
        c.delta[r] = ladder_attn_delta(o + r * Dv, dout, a->dout.strides[3], Dv, dl);
    }
    float *dq = a->dq.data, *dk = a->dk.data, *dv = a->dv.data;
    const int64_t keys_total = p->B * p->Hkv * p->Sk, longest = p->Sq > p->Sk ? p->Sq : p->Sk;
#pragma omp parallel
    {
        int64_t *list = malloc((size_t)longest * sizeof *list);
        if (!list) {
#pragma omp critical
            st = ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a list of %lld rows or keys", (long long)longest);
        }
        /* dQ_i = scale * sum_j ds_ij k_j */
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < rows; r++) {
            if (!list) continue;
            const int64_t b = r / (p->Hq * p->Sq), h = r / p->Sq % p->Hq, i = r % p->Sq;
            const int64_t hk = ladder_attn_kv_head(h, p->Hq, p->Hkv), n = keys_of(&c, b, h, i, list);
            float *dqi = dq + r * D;
            for (int64_t e = 0; e < D; e++) dqi[e] = 0.0f;
            for (int64_t e = 0; e < n; e++) {
                const float w = c.scale * element(&c, b, h, i, list[e]).ds;
                ladder_axpy(D, w, ladder_row(&c.rk, b, hk, list[e]), dqi);
            }
        }
        /* dK_j = scale * sum_{h in the group, i} ds_ij q_i,  dV_j = sum_{h in the group, i} P_ij dO_i */
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < keys_total; r++) {
            if (!list) continue;
            const int64_t b = r / (p->Hkv * p->Sk), hk = r / p->Sk % p->Hkv, j = r % p->Sk;
            float *dkj = dk + r * D, *dvj = dv + r * Dv;
            for (int64_t e = 0; e < D; e++) dkj[e] = 0.0f;
            for (int64_t e = 0; e < Dv; e++) dvj[e] = 0.0f;
            for (int64_t h = hk * group; h < (hk + 1) * group; h++) {
                const int64_t n = rows_of(&c, b, h, j, list);
                for (int64_t e = 0; e < n; e++) {
                    const grads g = element(&c, b, h, list[e], j);
                    ladder_axpy(D, c.scale * g.ds, ladder_row(&c.rq, b, h, list[e]), dkj);
                    ladder_axpy(Dv, g.P, ladder_row(&c.rdo, b, h, list[e]), dvj);
                }
            }
        }
        free(list);
    }
    const dbufs d = dbufs_of(fp, a);
    if (st == LADDER_OK && d.n > 0) st = buffer_grads(&c, &d);
    for (int i = 0; i < ladder_flex_n_buffers; i++) { /* a buffer no mod reads: S does not move with it */
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        ladder_tensor *g = s->grad ? (ladder_tensor *)((const char *)a + s->grad) : NULL;
        if (g && g->data && !ladder_flex_reads(fp, s->name))
            memset(g->data, 0, (size_t)ladder_tensor_numel(g) * sizeof(float));
    }
    ctx_free(&c);
    return st;
}
