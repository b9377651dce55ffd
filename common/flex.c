/* flex dispatcher: validate once, here, build the block lists when none are given, then call the rung (see flex.h). */
#include "flex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_check.h"
#include "attention_tc_reference.h"
#include "check.h"
#include "flex_rungs.h"
#include "gpu.h"

/* The tensor of @p a at offset @p off (a registry's arg or grad field). */
static const ladder_tensor *field(const ladder_flex_args *a, size_t off) {
    return (const ladder_tensor *)((const char *)a + off);
}

/* The block lists of @p a, in args order, with their names. */
enum { N_LISTS = 8 };
static const char *const list_names[N_LISTS] = {"kv_num_blocks", "kv_indices", "full_kv_num_blocks",
                                                "full_kv_indices", "q_num_blocks", "q_indices",
                                                "full_q_num_blocks", "full_q_indices"};
static const ladder_tensor *list_of(const ladder_flex_args *a, int l) { return &a->kv_num_blocks + l; }

/* The mods and their options: registered ids, and each option in range where a mod uses it. */
static ladder_status check_mods(const ladder_flex_problem *p) {
    const ladder_attention_problem *t = &p->attn;
    if (t->mask.causal != LADDER_CAUSAL_NONE)
        return ladder_fail(LADDER_ERR_ARG, "attn.mask.causal is %d but must be 0: flex masks through its mask_mods "
                                           "(causal, window, ...)", t->mask.causal);
    if (t->softcap != 0)
        return ladder_fail(LADDER_ERR_ARG, "attn.softcap is %g but must be 0: flex caps scores through the softcap "
                                           "score_mod (and its softcap field)", t->softcap);
    if (p->score_mod < 0 || p->score_mod >= LADDER_FLEX_SCORE_COUNT)
        return ladder_fail(LADDER_ERR_ARG, "score_mod is %d but must be a registered score mod, 0..%d",
                           p->score_mod, LADDER_FLEX_SCORE_COUNT - 1);
    if (p->mask_mods < 0 || p->mask_mods >= (1 << LADDER_FLEX_MASK_COUNT))
        return ladder_fail(LADDER_ERR_ARG, "mask_mod is %d but must be a set of registered mask mods, 0..%d",
                           p->mask_mods, (1 << LADDER_FLEX_MASK_COUNT) - 1);
    const float cap = (float)p->softcap;
    if (p->score_mod == LADDER_FLEX_SOFTCAP && !(cap > 0 && cap <= 1e30f))
        return ladder_fail(LADDER_ERR_ARG, "softcap is %g but the softcap score_mod needs it in (0, 1e30]", p->softcap);
    const bool window = (p->mask_mods >> LADDER_FLEX_WINDOW) & 1, t5 = p->score_mod == LADDER_FLEX_T5_BIAS;
    if (p->window_left < (window ? 0 : -1))
        return ladder_fail(LADDER_ERR_ARG, "window_left is %lld but must be >= %d%s", (long long)p->window_left,
                           window ? 0 : -1, window ? " with the window mask_mod" : "");
    if (p->num_buckets < (t5 ? 2 : 0) || p->num_buckets > INT32_MAX)
        return ladder_fail(LADDER_ERR_ARG, "num_buckets is %lld but must be in %d..%d%s", (long long)p->num_buckets,
                           t5 ? 2 : 0, INT32_MAX, t5 ? " with the t5_bias score_mod" : " (0: no t5_bias)");
    return LADDER_OK;
}

/* Each buffer: present when a mod of the problem reads it (one no mod reads may be given too: its gradient is 0), of
 * its shape and dtype; its gradient (optional) only with it, of its shape, contiguous, in the rung's dtype. */
static ladder_status check_buffers(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a,
                                   bool backward) {
    char mods[96];
    ladder_flex_mask_str(p->mask_mods, mods, sizeof mods);
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *t = field(a, s->arg), *g = s->grad ? field(a, s->grad) : NULL;
        const bool read = ladder_flex_reads(p, s->name);
        if (read && !t->data)
            return ladder_fail(LADDER_ERR_ARG, "%s [%s] is missing: the problem's mods (score_mod %s, mask_mod %s) "
                               "read it", s->name, s->dims, ladder_flex_score_mods[p->score_mod].name, mods);
        if (backward && g && g->data && !t->data)
            return ladder_fail(LADDER_ERR_ARG, "d%s is given but %s is not: there is no buffer to take the gradient "
                               "of", s->name, s->name);
        if (!t->data) continue;
        int64_t shape[2];
        const int rank = ladder_flex_buffer_shape(p, s, shape);
        char dims[48];
        snprintf(dims, sizeof dims, "[%s]", s->dims);
        LADDER_TRY(ladder_check_tensor(t, s->name, rank, shape, dims));
        /* an index buffer is i32 at every rung; a float one takes the rung's dtype (check_dtypes() sees it) */
        if (s->dtype == LADDER_I32) LADDER_TRY(ladder_check_dtype(t, s->name, LADDER_I32, rung));
        if (!backward || !g || !g->data) continue;
        char name[48];
        snprintf(name, sizeof name, "d%s", s->name);
        LADDER_TRY(ladder_check_tensor(g, name, rank, shape, dims));
        LADDER_TRY(ladder_check_contiguous(g, name));
    }
    return LADDER_OK;
}

/* The given lists' contents on the host (a copy from the device at a GPU rung), into @p host (freed by the caller). */
static ladder_status lists_on_host(const ladder_flex_args *a, bool on_device, ladder_flex_args *host) {
    memset(host, 0, sizeof *host);
    for (int l = 0; l < N_LISTS; l++) {
        const ladder_tensor *t = list_of(a, l);
        ladder_tensor *h = (ladder_tensor *)list_of(host, l);
        if (!on_device) {
            *h = *t;
            continue;
        }
        LADDER_TRY(ladder_tensor_alloc(h, LADDER_I32, t->rank, t->shape));
        LADDER_TRY(ladder_gpu_read_i32(t->data, ladder_tensor_numel(t), h->data));
    }
    return LADDER_OK;
}

/* The block lists: all eight or none; i32, contiguous, [MB,MH,T] and [MB,MH,T,T'] with MB 1 or B and MH 1 or Hq,
 * the same in all; then their contents (flex_blocks.c). */
static ladder_status check_lists(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a) {
    int given = 0;
    for (int l = 0; l < N_LISTS; l++) given += list_of(a, l)->data != NULL;
    if (given == 0) return LADDER_OK;
    for (int l = 0; l < N_LISTS && given < N_LISTS; l++)
        if (!list_of(a, l)->data)
            return ladder_fail(LADDER_ERR_ARG, "%s is missing: block lists come all eight together (or none, and the "
                               "dispatcher builds them from the mask mods)", list_names[l]);
    const ladder_tensor *first = &a->kv_indices;
    const int64_t MB = first->rank == 4 ? first->shape[0] : -1, MH = first->rank == 4 ? first->shape[1] : -1;
    if (!(MB == 1 || MB == p->attn.B) || !(MH == 1 || MH == p->attn.Hq)) {
        char got[96];
        ladder_tensor_shape_str(first, got, sizeof got);
        return ladder_fail(LADDER_ERR_SHAPE, "kv_indices has shape %s but must be [MB,MH,Tq,Tk] with MB 1 or B = %lld "
                           "and MH 1 or Hq = %lld", got, (long long)p->attn.B, (long long)p->attn.Hq);
    }
    const int64_t Tq = ladder_flex_tiles(p->attn.Sq), Tk = ladder_flex_tiles(p->attn.Sk);
    for (int l = 0; l < N_LISTS; l++) {
        const bool bwd = l >= 4, indices = l % 2 == 1;
        const int64_t shape[4] = {MB, MH, bwd ? Tk : Tq, bwd ? Tq : Tk};
        char dims[64];
        snprintf(dims, sizeof dims, "[MB,MH,%s%s] (MB, MH of kv_indices)", bwd ? "Tk" : "Tq",
                 indices ? (bwd ? ",Tq" : ",Tk") : "");
        LADDER_TRY(ladder_check_tensor(list_of(a, l), list_names[l], indices ? 4 : 3, shape, dims));
        LADDER_TRY(ladder_check_dtype(list_of(a, l), list_names[l], LADDER_I32, rung));
        LADDER_TRY(ladder_check_contiguous(list_of(a, l), list_names[l]));
    }
    return LADDER_OK;
}

/* The lists' contents, read where they live (once the rung is known to run here). */
static ladder_status check_list_contents(ladder_rung rung, const ladder_flex_args *a) {
    if (!a->kv_num_blocks.data) return LADDER_OK;
    ladder_flex_args host;
    const bool on_device = ladder_rung_is_gpu(rung);
    ladder_status st = lists_on_host(a, on_device, &host);
    if (st == LADDER_OK) st = flex_check_lists(&host);
    for (int l = 0; l < N_LISTS && on_device; l++) ladder_tensor_free((ladder_tensor *)list_of(&host, l));
    return st;
}

/* Everything both passes check, forward outputs included. */
static ladder_status check_common(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a,
                                  bool backward) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    if (!p) return ladder_fail(LADDER_ERR_ARG, "problem is null");
    if (!a) return ladder_fail(LADDER_ERR_ARG, "args is null");
    LADDER_TRY(ladder_attention_check_problem(&p->attn));
    LADDER_TRY(check_mods(p));
    const ladder_tensor none = {0};
    LADDER_TRY(ladder_attention_check_inputs(&p->attn, &a->q, &a->k, &a->v, &none, &none));
    LADDER_TRY(check_buffers(rung, p, a, backward));
    LADDER_TRY(check_lists(rung, p, a));
    LADDER_TRY(ladder_attention_check_o_lse(&p->attn, &a->o, &a->lse));
    return LADDER_OK;
}

/* Every input of a pass, named, for the overlap checks: q, k, v, the buffers, the lists, then do and dlse. */
enum { MAX_INS = 3 + LADDER_FLEX_MAX_BUFFERS + N_LISTS + 2 };
static int inputs_of(const ladder_flex_args *a, const ladder_tensor **ins, const char **names) {
    int n = 0;
    ins[n] = &a->q, names[n++] = "q";
    ins[n] = &a->k, names[n++] = "k";
    ins[n] = &a->v, names[n++] = "v";
    for (int i = 0; i < ladder_flex_n_buffers; i++)
        ins[n] = field(a, ladder_flex_buffers[i].arg), names[n++] = ladder_flex_buffers[i].name;
    for (int l = 0; l < N_LISTS; l++) ins[n] = list_of(a, l), names[n++] = list_names[l];
    ins[n] = &a->dout, names[n++] = "do";
    ins[n] = &a->dlse, names[n++] = "dlse";
    return n;
}

/* q, k, v, o (and do, dq, dk, dv) take the rung's dtype; lse, dlse, the float buffers and their gradients stay f32
 * at every rung, as the mods read and the buffer gradients' sums write them. */
static ladder_status check_dtypes(ladder_rung rung, const ladder_flex_args *a, bool backward) {
    const ladder_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o, &a->dout, &a->dq, &a->dk, &a->dv};
    const char *names[] = {"q", "k", "v", "o", "do", "dq", "dk", "dv"};
    const ladder_tensor *f32s[2 + 2 * LADDER_FLEX_MAX_BUFFERS] = {&a->lse, &a->dlse};
    const char *f32_names[2 + 2 * LADDER_FLEX_MAX_BUFFERS] = {"lse", "dlse"};
    char grad_names[LADDER_FLEX_MAX_BUFFERS][48];
    int n = backward ? 2 : 1;
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        if (s->dtype != LADDER_F32) continue;
        f32s[n] = field(a, s->arg), f32_names[n++] = s->name;
        if (!backward) continue;
        snprintf(grad_names[i], sizeof grad_names[i], "d%s", s->name);
        f32s[n] = field(a, s->grad), f32_names[n++] = grad_names[i];
    }
    return ladder_attention_check_dtypes("flex", false, rung, ts, names, backward ? 8 : 4, f32s, f32_names, n);
}

/* The tensor-core rung's kernels are compiled for head dims up to LADDER_FLEX_TC_MAX_HEAD_DIM. */
static ladder_status check_tc_head_dims(ladder_rung rung, const ladder_attention_problem *t) {
    const int64_t most = LADDER_FLEX_TC_MAX_HEAD_DIM;
    if (rung != LADDER_RUNG_GPU_TENSORCORE || (t->D <= most && t->Dv <= most)) return LADDER_OK;
    return ladder_fail(LADDER_ERR_UNSUPPORTED,
                       "D = %lld and Dv = %lld, but rung gpu_tensorcore runs flex at head dims up to %d (its kernels, "
                       "one per score mod, are compiled for 64 and 128); rung gpu_tiled takes up to %d",
                       (long long)t->D, (long long)t->Dv, LADDER_FLEX_TC_MAX_HEAD_DIM, LADDER_ATTN_MAX_HEAD_DIM);
}

/* Last, once the arguments are sound: the GPU grid limits, whether the rung exists and runs here, the lists. */
static ladder_status check_rung(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a,
                                const flex_fn *table) {
    const ladder_tensor none = {0};
    LADDER_TRY(ladder_attention_check_rung(rung, &p->attn, table[rung] != NULL, &none, &none));
    return check_list_contents(rung, a);
}

static ladder_status check_fwd(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a) {
    LADDER_TRY(check_common(rung, p, a, false));
    const ladder_tensor *ins[MAX_INS];
    const char *in_names[MAX_INS];
    const int n_in = inputs_of(a, ins, in_names) - 2; /* no do, dlse */
    const ladder_tensor *outs[] = {&a->o, &a->lse};
    const char *out_names[] = {"o", "lse"};
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 2, ins, in_names, n_in));
    LADDER_TRY(check_dtypes(rung, a, false));
    LADDER_TRY(check_tc_head_dims(rung, &p->attn));
    LADDER_TRY(check_rung(rung, p, a, flex_fwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

static ladder_status check_bwd(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a) {
    LADDER_TRY(check_common(rung, p, a, true));
    LADDER_TRY(ladder_attention_check_grads(&p->attn, &a->dout, &a->dlse, &a->dq, &a->dk, &a->dv));
    const ladder_tensor *ins[MAX_INS + 2];
    const char *in_names[MAX_INS + 2];
    int n_in = inputs_of(a, ins, in_names);
    ins[n_in] = &a->lse, in_names[n_in++] = "lse";
    ins[n_in] = &a->o, in_names[n_in++] = "o";
    const ladder_tensor *fwd_outs[] = {&a->lse, &a->o};
    const char *fwd_out_names[] = {"lse", "o"};
    LADDER_TRY(ladder_check_outputs_disjoint(fwd_outs, fwd_out_names, 2, ins, in_names, n_in - 2));
    const ladder_tensor *outs[3 + LADDER_FLEX_MAX_BUFFERS];
    const char *out_names[3 + LADDER_FLEX_MAX_BUFFERS];
    char grad_names[LADDER_FLEX_MAX_BUFFERS][48];
    int n_out = 0;
    outs[n_out] = &a->dq, out_names[n_out++] = "dq";
    outs[n_out] = &a->dk, out_names[n_out++] = "dk";
    outs[n_out] = &a->dv, out_names[n_out++] = "dv";
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        if (!ladder_flex_buffers[i].grad) continue;
        snprintf(grad_names[n_out - 3], sizeof grad_names[0], "d%s", ladder_flex_buffers[i].name);
        outs[n_out] = field(a, ladder_flex_buffers[i].grad), out_names[n_out] = grad_names[n_out - 3], n_out++;
    }
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, n_out, ins, in_names, n_in));
    LADDER_TRY(check_dtypes(rung, a, true));
    LADDER_TRY(check_tc_head_dims(rung, &p->attn));
    LADDER_TRY(check_rung(rung, p, a, flex_bwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status flex_run(ladder_rung rung, bool backward, const ladder_flex_problem *p, const ladder_flex_args *a) {
    const flex_fn fn = (backward ? flex_bwd_rungs : flex_fwd_rungs)[rung];
    if (a->kv_num_blocks.data) return fn(p, a);
    /* no lists given: build them from the mask mods, in the rung's memory, for this call alone */
    ladder_flex_args full = *a;
    ladder_status st = flex_alloc_lists(p, ladder_rung_is_gpu(rung), &full);
    if (st == LADDER_OK) st = flex_build_rungs[rung](p, &full);
    if (st == LADDER_OK) st = fn(p, &full);
    flex_free_lists(ladder_rung_is_gpu(rung), &full);
    return st;
}

ladder_status ladder_flex_fwd(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a) {
    LADDER_TRY(check_fwd(rung, p, a));
    return flex_run(rung, false, p, a);
}

ladder_status ladder_flex_bwd(ladder_rung rung, const ladder_flex_problem *p, const ladder_flex_args *a) {
    LADDER_TRY(check_bwd(rung, p, a));
    return flex_run(rung, true, p, a);
}

/* ---- the tensor-core rung's reference ------------------------------------------------------------------------- */

/* What the reference's mods read: the problem, the mods' view of the buffers, each tile's kind (from the block lists)
 * and, in the backward, each buffer read's share dS * dS/dx of every element, as the rung writes them. */
typedef struct emulation {
    const ladder_flex_problem *p;
    ladder_flex_env env;
    flex_blocks k;
    unsigned char *kind;                 /* [MB, MH, Tq, Tk] */
    float *share[LADDER_FLEX_MAX_READS]; /* [B, Hq, Sq, Sk]; NULL: that read's gradient is not asked for */
} emulation;

static float emulated_score(const void *ctx, float s, int64_t b, int64_t h, int64_t i, int64_t j, float *slope) {
    const emulation *e = ctx;
    *slope = ladder_flex_score_grad(e->p->score_mod, s, &e->env, b, h, i, j).dscore;
    return ladder_flex_score(e->p->score_mod, s, &e->env, b, h, i, j);
}

/* The block mask: a full tile allows every key, a partial one what the mask mods allow, any other tile none. */
static bool emulated_allowed(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j) {
    const emulation *e = ctx;
    const int64_t row = flex_list_row(&e->k, b, h, i / LADDER_FLEX_BLOCK, e->k.Tq);
    const int kind = e->kind[row * e->k.Tk + j / LADDER_FLEX_BLOCK];
    if (kind != LADDER_FLEX_TILE_PARTIAL) return kind == LADDER_FLEX_TILE_FULL;
    return ladder_flex_masks((unsigned)e->p->mask_mods, &e->env, b, h, i, j);
}

static void emulated_sink(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j, float s, float dS) {
    const emulation *e = ctx;
    const ladder_attention_problem *t = &e->p->attn;
    const ladder_flex_grad g = ladder_flex_score_grad(e->p->score_mod, s, &e->env, b, h, i, j);
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++)
        if (e->share[r]) e->share[r][((b * t->Hq + h) * t->Sq + i) * t->Sk + j] = dS * g.d[r];
}

static void emulation_close(emulation *e) {
    free(e->kind);
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) free(e->share[r]);
}

/* Each tile's kind from the forward's lists of @p lists; with @p backward, a cleared share plane for each read whose
 * buffer's gradient @p a asks for. */
static ladder_status emulation_open(emulation *e, const ladder_flex_args *lists, const ladder_flex_args *a,
                                    bool backward) {
    e->k = flex_blocks_of(lists);
    const flex_blocks *k = &e->k;
    const int64_t rows = k->MB * k->MH * k->Tq;
    if (!(e->kind = calloc((size_t)(rows * k->Tk), 1)))
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the kinds of %lld tiles", (long long)(rows * k->Tk));
    for (int64_t r = 0; r < rows; r++) {
        unsigned char *kinds = e->kind + r * k->Tk;
        for (int32_t x = 0; x < k->kv_num[r]; x++) kinds[k->kv_idx[r * k->Tk + x]] = LADDER_FLEX_TILE_PARTIAL;
        for (int32_t x = 0; x < k->full_kv_num[r]; x++) kinds[k->full_kv_idx[r * k->Tk + x]] = LADDER_FLEX_TILE_FULL;
    }
    const ladder_attention_problem *t = &e->p->attn;
    const ladder_flex_score_spec *spec = &ladder_flex_score_mods[e->p->score_mod];
    const int64_t plane = t->B * t->Hq * t->Sq * t->Sk;
    for (int r = 0; backward && r < spec->n_reads; r++) {
        if (!field(a, ladder_flex_buffer(spec->reads[r])->grad)->data) continue;
        if (!(e->share[r] = calloc((size_t)plane, sizeof(float))))
            return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the shares of %lld scores", (long long)plane);
    }
    return LADDER_OK;
}

/*
 * The buffer gradients from the shares, as every rung defines them: each float gradient @p a gives starts at 0, then
 * each read's shares, summed in double over (b, h, i, j) in order, are added into the elements they read, the first
 * read's first (a buffer read twice gets both sums).
 */
static ladder_status emulated_buffer_grads(const emulation *e, const ladder_flex_args *a) {
    const ladder_attention_problem *t = &e->p->attn;
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        const ladder_tensor *g = s->grad ? field(a, s->grad) : NULL;
        if (g && g->data) memset(g->data, 0, (size_t)ladder_tensor_numel(g) * sizeof(float));
    }
    const ladder_flex_score_spec *spec = &ladder_flex_score_mods[e->p->score_mod];
    for (int r = 0; r < spec->n_reads; r++) {
        if (!e->share[r]) continue;
        const ladder_tensor *g = field(a, ladder_flex_buffer(spec->reads[r])->grad);
        const int64_t n = ladder_tensor_numel(g);
        double *acc = calloc((size_t)n, sizeof *acc);
        if (!acc) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld sums", (long long)n);
        const float *share = e->share[r];
        for (int64_t b = 0; b < t->B; b++)
            for (int64_t h = 0; h < t->Hq; h++)
                for (int64_t i = 0; i < t->Sq; i++)
                    for (int64_t j = 0; j < t->Sk; j++, share++)
                        acc[ladder_flex_score_grad(e->p->score_mod, 0.0f, &e->env, b, h, i, j).at[r]] += *share;
        for (int64_t x = 0; x < n; x++) ((float *)g->data)[x] += (float)acc[x];
        free(acc);
    }
    return LADDER_OK;
}

/* The reference behind the dispatcher's checks at the cpu rung, with the block lists of @p a or, when it has none,
 * lists built on the host from the mask mods. */
static ladder_status emulate(bool backward, const ladder_flex_problem *p, const ladder_flex_args *a,
                             ladder_dtype round) {
    LADDER_TRY(backward ? check_bwd(LADDER_RUNG_CPU, p, a) : check_fwd(LADDER_RUNG_CPU, p, a));
    ladder_flex_args lists = *a;
    const bool build = !a->kv_num_blocks.data;
    ladder_status st = build ? flex_alloc_lists(p, false, &lists) : LADDER_OK;
    if (st == LADDER_OK && build) st = flex_build_cpu(p, &lists);
    emulation e = {.p = p, .env = ladder_flex_env_of(p, a)};
    if (st == LADDER_OK) st = emulation_open(&e, &lists, a, backward);
    if (st == LADDER_OK) {
        ladder_attention_problem attn = p->attn;
        attn.mask = LADDER_ATTN_NO_MASK; /* flex masks through its lists and mask mods alone */
        const bool sink = e.share[0] || e.share[1];
        const ladder_attn_tc_reference_args ra = {
            .q = a->q, .k = a->k, .v = a->v, .o = a->o, .lse = a->lse, .dout = a->dout, .dlse = a->dlse,
            .dq = a->dq, .dk = a->dk, .dv = a->dv,
            .mods = {.ctx = &e, .score = emulated_score, .allowed = emulated_allowed,
                     .sink = sink ? emulated_sink : NULL}};
        st = backward ? ladder_attn_tc_reference_bwd(&attn, &ra, round)
                      : ladder_attn_tc_reference_fwd(&attn, &ra, round);
        if (st == LADDER_OK && backward) st = emulated_buffer_grads(&e, a);
    }
    emulation_close(&e);
    if (build) flex_free_lists(false, &lists);
    return st;
}

ladder_status flex_fwd_emulating(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_dtype round) {
    return emulate(false, p, a, round);
}

ladder_status flex_bwd_emulating(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_dtype round) {
    return emulate(true, p, a, round);
}
