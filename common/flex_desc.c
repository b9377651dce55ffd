/* flex as the engine sees it: its tensors, sizes, options and mods by name, dispatcher and costs (see engine.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "flex.h"
#include "flex_magnitudes.h"
#include "flex_rungs.h"
#include "gpu.h"
#include "rng.h"

#define P(field) offsetof(ladder_flex_problem, field)
#define A(field) offsetof(ladder_flex_args, field)
#define HUGE_SIZE (1LL << 40) /* no limit but memory */

extern const ladder_algo ladder_flex_algo;

static ladder_status score_parse(const char *text, double *v) {
    int id;
    LADDER_TRY(ladder_flex_score_parse(text, &id));
    *v = id;
    return LADDER_OK;
}

static void score_format(double v, char *buf, size_t n) {
    const int id = (int)v;
    snprintf(buf, n, "%s", id >= 0 && id < ladder_flex_n_score_mods ? ladder_flex_score_mods[id].name : "?");
}

static ladder_status mask_parse(const char *text, double *v) {
    int set;
    LADDER_TRY(ladder_flex_mask_parse(text, &set));
    *v = set;
    return LADDER_OK;
}

static void mask_format(double v, char *buf, size_t n) { ladder_flex_mask_str((int)v, buf, n); }

static const ladder_param_names named_params[] = {
    {"score_mod", score_parse, score_format, "none softcap alibi rel_bias t5_bias bias_qk"},
    {"mask_mod", mask_parse, mask_format, "none causal window prefix_lm document (joined with '+')"},
};

static const ladder_param params[] = {
    {"B", LADDER_PARAM_I64, P(attn.B), 1, HUGE_SIZE, 2, "batch size"},
    {"Hq", LADDER_PARAM_I64, P(attn.Hq), 1, HUGE_SIZE, 4, "query heads"},
    {"Hkv", LADDER_PARAM_I64, P(attn.Hkv), 1, HUGE_SIZE, 2, "key/value heads (must divide Hq: MQA/GQA)"},
    {"Sq", LADDER_PARAM_I64, P(attn.Sq), 1, HUGE_SIZE, 200, "query rows per batch row"},
    {"Sk", LADDER_PARAM_I64, P(attn.Sk), 1, HUGE_SIZE, 300, "keys per batch row"},
    {"D", LADDER_PARAM_I64, P(attn.D), 1, LADDER_ATTN_MAX_HEAD_DIM, 64, "head dim of q and k"},
    {"Dv", LADDER_PARAM_I64, P(attn.Dv), 1, LADDER_ATTN_MAX_HEAD_DIM, 64, "head dim of v and o"},
    {"scale", LADDER_PARAM_DOUBLE, P(attn.scale), 0, 1e6, 0, "multiplies q.k (0: 1/sqrt(D))"},
    {"score_mod", LADDER_PARAM_INT, P(score_mod), 0, LADDER_FLEX_SCORE_COUNT - 1, LADDER_FLEX_ALIBI,
     "the score mod, by name"},
    {"mask_mod", LADDER_PARAM_INT, P(mask_mods), 0, (1 << LADDER_FLEX_MASK_COUNT) - 1, 1 << LADDER_FLEX_CAUSAL,
     "the mask mods, by name, joined with '+'"},
    {"softcap", LADDER_PARAM_DOUBLE, P(softcap), 0, 1e6, 30, "the softcap score_mod's cap"},
    {"window_left", LADDER_PARAM_I64, P(window_left), -1, HUGE_SIZE, 64, "the window mask_mod's reach to the left"},
    {"num_buckets", LADDER_PARAM_I64, P(num_buckets), 0, INT32_MAX, 32, "t5_bias's buckets (at least 2 with it)"},
};

#define LIST (LADDER_INDEX | LADDER_OPTIONAL | LADDER_BROADCAST)
/* the float buffers and their gradients: f32 at every rung, as the mods read them; a frozen buffer has no gradient */
#define BUFFER (LADDER_IN_FWD | LADDER_OPTIONAL | LADDER_KEEP_F32)
#define BUFFER_GRAD (LADDER_OUT_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32 | LADDER_FREEZABLE)
static const ladder_tensor_spec tensors[] = {
    {"q", "B,Hq,Sq,D", LADDER_IN_FWD, A(q), NULL, LADDER_FILL_NORMAL},
    {"k", "B,Hkv,Sk,D", LADDER_IN_FWD, A(k), NULL, LADDER_FILL_NORMAL},
    {"v", "B,Hkv,Sk,Dv", LADDER_IN_FWD, A(v), NULL, LADDER_FILL_NORMAL},
    {"slopes", "Hq", BUFFER, A(slopes), NULL, LADDER_FILL_FAN_IN},
    {"rel_bias", "Hq,R", BUFFER, A(rel_bias), NULL, LADDER_FILL_NORMAL},
    {"t5_bias", "Hq,num_buckets", BUFFER, A(t5_bias), NULL, LADDER_FILL_NORMAL},
    {"bq", "Hq,Sq", BUFFER, A(bq), NULL, LADDER_FILL_NORMAL},
    {"bk", "Hq,Sk", BUFFER, A(bk), NULL, LADDER_FILL_NORMAL},
    {"prefix", "B", LADDER_INDEX | LADDER_OPTIONAL, A(prefix), NULL, LADDER_FILL_NORMAL},
    {"doc_q", "Sq", LADDER_INDEX | LADDER_OPTIONAL, A(doc_q), NULL, LADDER_FILL_NORMAL},
    {"doc_k", "Sk", LADDER_INDEX | LADDER_OPTIONAL, A(doc_k), NULL, LADDER_FILL_NORMAL},
    {"kv_num_blocks", "B,Hq,Tq", LIST, A(kv_num_blocks), NULL, LADDER_FILL_NORMAL},
    {"kv_indices", "B,Hq,Tq,Tk", LIST, A(kv_indices), NULL, LADDER_FILL_NORMAL},
    {"full_kv_num_blocks", "B,Hq,Tq", LIST, A(full_kv_num_blocks), NULL, LADDER_FILL_NORMAL},
    {"full_kv_indices", "B,Hq,Tq,Tk", LIST, A(full_kv_indices), NULL, LADDER_FILL_NORMAL},
    {"q_num_blocks", "B,Hq,Tk", LIST, A(q_num_blocks), NULL, LADDER_FILL_NORMAL},
    {"q_indices", "B,Hq,Tk,Tq", LIST, A(q_indices), NULL, LADDER_FILL_NORMAL},
    {"full_q_num_blocks", "B,Hq,Tk", LIST, A(full_q_num_blocks), NULL, LADDER_FILL_NORMAL},
    {"full_q_indices", "B,Hq,Tk,Tq", LIST, A(full_q_indices), NULL, LADDER_FILL_NORMAL},
    {"o", "B,Hq,Sq,Dv", LADDER_OUT_FWD | LADDER_READ_BY_BWD, A(o), NULL, LADDER_FILL_NORMAL},
    {"lse", "B,Hq,Sq", LADDER_OUT_FWD | LADDER_READ_BY_BWD | LADDER_KEEP_F32, A(lse), NULL, LADDER_FILL_NORMAL},
    {"do", "B,Hq,Sq,Dv", LADDER_IN_BWD, A(dout), "o", LADDER_FILL_NORMAL},
    {"dlse", "B,Hq,Sq", LADDER_IN_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32, A(dlse), "lse", LADDER_FILL_NORMAL},
    {"dq", "B,Hq,Sq,D", LADDER_OUT_BWD, A(dq), "q", LADDER_FILL_NORMAL},
    {"dk", "B,Hkv,Sk,D", LADDER_OUT_BWD, A(dk), "k", LADDER_FILL_NORMAL},
    {"dv", "B,Hkv,Sk,Dv", LADDER_OUT_BWD, A(dv), "v", LADDER_FILL_NORMAL},
    {"dslopes", "Hq", BUFFER_GRAD, A(dslopes), "slopes", LADDER_FILL_NORMAL},
    {"drel_bias", "Hq,R", BUFFER_GRAD, A(drel_bias), "rel_bias", LADDER_FILL_NORMAL},
    {"dt5_bias", "Hq,num_buckets", BUFFER_GRAD, A(dt5_bias), "t5_bias", LADDER_FILL_NORMAL},
    {"dbq", "Hq,Sq", BUFFER_GRAD, A(dbq), "bq", LADDER_FILL_NORMAL},
    {"dbk", "Hq,Sk", BUFFER_GRAD, A(dbk), "bk", LADDER_FILL_NORMAL},
};
enum { FIRST_LIST = 11 }; /* tensors[FIRST_LIST ..] are the eight block lists */

/* R = Sq + Sk - 1 (rel_bias's relative positions), Tq and Tk (tiles along Sq and Sk). */
static int64_t derived_dim(const void *problem, const ladder_tensor *index, const char *name) {
    (void)index;
    const ladder_flex_problem *p = problem;
    if (strcmp(name, "R") == 0) return p->attn.Sq + p->attn.Sk - 1;
    if (strcmp(name, "Tq") == 0) return ladder_flex_tiles(p->attn.Sq);
    if (strcmp(name, "Tk") == 0) return ladder_flex_tiles(p->attn.Sk);
    return -1;
}

/* The buffers the problem's mods read: a random case includes them. */
static uint32_t needs(const void *problem) {
    uint32_t set = 0;
    for (int i = 0; i < ladder_flex_n_buffers; i++)
        if (ladder_flex_reads(problem, ladder_flex_buffers[i].name))
            set |= 1u << ladder_algo_tensor(&ladder_flex_algo, ladder_flex_buffers[i].name);
    return set;
}

/*
 * A random block mask, the same for every list drawn with @p seed (one batch row and head, MB = MH = 1): each tile
 * empty, partial or full with equal odds, then listed by rows and columns as the builder lists them.
 */
static ladder_status draw_list(const ladder_flex_problem *p, int l, uint64_t seed, ladder_tensor *t) {
    const int64_t Tq = ladder_flex_tiles(p->attn.Sq), Tk = ladder_flex_tiles(p->attn.Sk);
    ladder_flex_args lists = {0};
    ladder_flex_problem one = *p;
    one.mask_mods = 0; /* MB = MH = 1 */
    LADDER_TRY(flex_alloc_lists(&one, false, &lists));
    unsigned char *kind = malloc((size_t)(Tq * Tk));
    ladder_status st = kind ? LADDER_OK : ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld tile kinds",
                                                      (long long)(Tq * Tk));
    ladder_rng rng;
    ladder_rng_seed(&rng, seed ^ 0xb10c4a5c0ffeeull);
    for (int64_t x = 0; kind && x < Tq * Tk; x++) kind[x] = (unsigned char)(ladder_rng_next(&rng) % 3);
    for (int64_t r = 0; kind && r < Tq; r++)
        ladder_flex_list_row(kind + r * Tk, 1, Tk, (int32_t *)lists.kv_indices.data + r * Tk,
                             (int32_t *)lists.kv_num_blocks.data + r, (int32_t *)lists.full_kv_indices.data + r * Tk,
                             (int32_t *)lists.full_kv_num_blocks.data + r);
    for (int64_t c = 0; kind && c < Tk; c++)
        ladder_flex_list_row(kind + c, Tk, Tq, (int32_t *)lists.q_indices.data + c * Tq,
                             (int32_t *)lists.q_num_blocks.data + c, (int32_t *)lists.full_q_indices.data + c * Tq,
                             (int32_t *)lists.full_q_num_blocks.data + c);
    free(kind);
    ladder_tensor *all = &lists.kv_num_blocks;
    for (int x = 0; x < 8; x++)
        if (x != l || st != LADDER_OK) ladder_tensor_free(&all[x]);
    if (st == LADDER_OK) *t = all[l];
    return st;
}

/* prefix: lengths in 0..Sk; doc_q, doc_k: three documents (ids 0, 1, 2 ascending) cut at seeded places, the same
 * fractions of Sq and Sk, so that a query of document d sees the keys of document d. */
static ladder_status draw_index(const void *problem, int i, uint64_t seed, ladder_tensor *t) {
    const ladder_flex_problem *p = problem;
    if (i >= FIRST_LIST) return draw_list(p, i - FIRST_LIST, seed, t);
    const char *name = tensors[i].name;
    const int64_t n = strcmp(name, "prefix") == 0 ? p->attn.B : strcmp(name, "doc_q") == 0 ? p->attn.Sq : p->attn.Sk;
    LADDER_TRY(ladder_tensor_alloc(t, LADDER_I32, 1, &n));
    int32_t *x = t->data;
    ladder_rng rng;
    ladder_rng_seed(&rng, seed ^ 0xd0c5eedull);
    const double cut1 = 0.1 + 0.4 * ladder_rng_uniform(&rng), cut2 = cut1 + 0.5 * ladder_rng_uniform(&rng);
    for (int64_t e = 0; e < n; e++) {
        const double f = (double)e / (double)n;
        x[e] = strcmp(name, "prefix") == 0 ? (int32_t)(ladder_rng_next(&rng) % (uint64_t)(p->attn.Sk + 1))
                                           : (int32_t)((f >= cut1) + (f >= cut2));
    }
    return LADDER_OK;
}

static ladder_status call(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? ladder_flex_fwd(rung, problem, args) : ladder_flex_bwd(rung, problem, args);
}

/* The rung alone, block lists built first when the case gives none (so a timing includes the build then: `ladder
 * bench` gives them, fixed_inputs()). */
static ladder_status call_rung(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return flex_run(rung, pass == LADDER_PASS_BWD, problem, args);
}

/* The tensor-core rung's reference: P (both passes) and dS rounded to @p round where that rung rounds them, o read by
 * the backward as that rung stores it (common/attention_tc_reference.h, with flex's mods, behind common/flex.c's
 * checks). */
static ladder_status call_emulating(ladder_dtype round, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? flex_fwd_emulating(problem, args, round)
                                   : flex_bwd_emulating(problem, args, round);
}

/* Attention's traffic, plus each float buffer read (and its gradient written) once, in f32 at every rung. */
static double bytes(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype) {
    const ladder_flex_problem *p = problem;
    double buffers = 0;
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        int64_t shape[2];
        const int rank = ladder_flex_buffer_shape(p, s, shape);
        if (s->dtype != LADDER_F32 || !((present >> ladder_algo_tensor(&ladder_flex_algo, s->name)) & 1u)) continue;
        buffers += (double)shape[0] * (rank > 1 ? (double)shape[1] : 1.0) * (double)sizeof(float);
    }
    return pass == LADDER_PASS_FWD ? ladder_attention_fwd_bytes(&p->attn, dtype) + buffers
                                   : ladder_attention_bwd_bytes(&p->attn, dtype) + 2 * buffers;
}

/*
 * The (i, j) pairs of one batch row and head that the mask mods let through, counted exactly from the mods, row by
 * row (not from the block lists, whose partial tiles hold masked pairs too): causal keeps j <= i, S(S+1)/2 of a square,
 * as flash causal counts (ladder_attention_visible_pairs()); window keeps i - j <= window_left, with causal
 * (window_left + 1) keys a row past the first window_left rows. prefix_lm and document read buffers whose contents
 * the problem does not hold: they cut nothing here, so with them the count is an upper bound.
 */
static double visible_pairs(const ladder_flex_problem *p) {
    const bool causal = (p->mask_mods >> LADDER_FLEX_CAUSAL) & 1, window = (p->mask_mods >> LADDER_FLEX_WINDOW) & 1;
    double pairs = 0;
    for (int64_t i = 0; i < p->attn.Sq; i++) {
        const int64_t lo = window && i > p->window_left ? i - p->window_left : 0; /* the first j with i - j <= left */
        const int64_t hi = causal && i + 1 < p->attn.Sk ? i + 1 : p->attn.Sk;    /* one past the last j <= i */
        if (hi > lo) pairs += (double)(hi - lo);
    }
    return pairs;
}

/* The useful work, as flash and PyTorch's FlexAttention benchmarks count it: two products over the visible pairs,
 * forward 2*B*Hq*pairs*(D + Dv) (4*B*H*pairs*D), backward 2.5 times that; the mods' own arithmetic is not counted. */
static double flops(const void *problem, ladder_pass pass) {
    const ladder_flex_problem *p = problem;
    const double fwd = ladder_attention_pair_flops(&p->attn, visible_pairs(p));
    return pass == LADDER_PASS_FWD ? fwd : 2.5 * fwd;
}

/* ---- block lists built once, and building them timed alone --------------------------------------------------- */

/* The tensor of @p a that tensors[i] names. */
static ladder_tensor *arg_of(ladder_flex_args *a, int i) { return (ladder_tensor *)((char *)a + tensors[i].offset); }

/*
 * The block lists of the case's mask mods, built once on the host (ladder_flex_block_mask()) as a user with a fixed
 * mask builds them, and given to every call from then on, unless the case has lists already.
 */
static ladder_status fixed_inputs(ladder_case *c) {
    if ((c->present >> FIRST_LIST) & 1u) return LADDER_OK;
    ladder_flex_args a = {0}, lists = {0};
    for (int i = 0; i < FIRST_LIST; i++) /* q, k, v and the buffers: what the mask mods read */
        if ((c->present >> i) & 1u) *arg_of(&a, i) = c->t[i];
    LADDER_TRY(ladder_flex_block_mask((const ladder_flex_problem *)c->problem, &a, &lists));
    for (int l = 0; l < 8; l++) {
        c->buf[FIRST_LIST + l] = c->t[FIRST_LIST + l] = *arg_of(&lists, FIRST_LIST + l);
        c->present |= 1u << (FIRST_LIST + l);
    }
    return LADDER_OK;
}

/* The documents the build row masks: lengths drawn uniformly in 1..2L/32 (L = max(Sq, Sk); about 32 documents of
 * 4096 tokens at 128k, as packed pretraining sequences hold) from a fixed seed, the last cut at L. */
enum { BUILD_DOCS = 32 };
#define BUILD_SEED 0xd0c5b11dull

/* doc_q (@p len = Sq) or doc_k (Sk) of those documents into @p t: both number the same positions; *@p docs: how
 * many documents the first @p len positions hold. */
static ladder_status draw_documents(int64_t L, int64_t len, ladder_tensor *t, int *docs) {
    LADDER_TRY(ladder_tensor_alloc(t, LADDER_I32, 1, &len));
    const int64_t mean = L / BUILD_DOCS > 1 ? L / BUILD_DOCS : 1;
    ladder_rng rng;
    ladder_rng_seed(&rng, BUILD_SEED);
    int32_t *id = t->data, d = 0;
    for (int64_t e = 0; e < len; d++) {
        const int64_t end = e + 1 + (int64_t)(ladder_rng_next(&rng) % (uint64_t)(2 * mean));
        for (; e < end && e < len; e++) id[e] = d;
    }
    *docs = d;
    return LADDER_OK;
}

/* What one timed build runs on: the problem, the rung, and the buffers and lists in the rung's memory. */
typedef struct build_state {
    ladder_flex_problem p;
    ladder_rung rung;
    ladder_flex_args a;
} build_state;

static void build_end(void *state) {
    build_state *s = state;
    if (!s) return;
    const bool on_device = ladder_rung_is_gpu(s->rung);
    flex_free_lists(on_device, &s->a);
    for (int i = 0; i < FIRST_LIST; i++) {
        if (on_device) ladder_gpu_free(arg_of(&s->a, i));
        else ladder_tensor_free(arg_of(&s->a, i));
    }
    free(s);
}

/* The index buffers the mask mods read (the documents above, others as cases draw them) and the eight lists, in
 * the rung's memory; the bytes: those buffers and the lists' arrays. */
static ladder_status build_begin(ladder_rung rung, const void *problem, void **state, double *bytes, char *shape,
                                 size_t n) {
    build_state *s = calloc(1, sizeof *s);
    if (!s) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the build's state");
    *state = s;
    s->p = *(const ladder_flex_problem *)problem;
    s->rung = rung;
    const bool on_device = ladder_rung_is_gpu(rung);
    const int64_t L = s->p.attn.Sq > s->p.attn.Sk ? s->p.attn.Sq : s->p.attn.Sk;
    const uint32_t read = needs(problem);
    int docs = -1;
    *bytes = 0;
    for (int i = 0; i < FIRST_LIST; i++) {
        if (!((read >> i) & 1u) || !(tensors[i].role & LADDER_INDEX)) continue; /* a score mod's: not read here */
        ladder_tensor host = {0};
        const bool doc_q = strcmp(tensors[i].name, "doc_q") == 0, doc_k = strcmp(tensors[i].name, "doc_k") == 0;
        if (doc_q || doc_k) LADDER_TRY(draw_documents(L, doc_q ? s->p.attn.Sq : s->p.attn.Sk, &host, &docs));
        else LADDER_TRY(draw_index(problem, i, BUILD_SEED, &host));
        *bytes += (double)ladder_tensor_numel(&host) * 4;
        ladder_status st = on_device ? ladder_gpu_upload(&host, arg_of(&s->a, i)) : LADDER_OK;
        if (on_device) ladder_tensor_free(&host);
        else *arg_of(&s->a, i) = host;
        LADDER_TRY(st);
    }
    LADDER_TRY(flex_alloc_lists(&s->p, on_device, &s->a));
    for (int l = 0; l < 8; l++) *bytes += (double)ladder_tensor_numel(arg_of(&s->a, FIRST_LIST + l)) * 4;
    if (docs >= 0) {
        const size_t used = strlen(shape);
        snprintf(shape + used, n - used, " docs=%d", docs);
    }
    return LADDER_OK;
}

static ladder_status build_run(void *state) {
    const build_state *s = state;
    return flex_build_rungs[s->rung](&s->p, &s->a);
}

/* The document mask at 128k tokens, one batch row and head (a mask that reads neither b nor h is built once for all
 * of them), built by the cpu builder and the GPU one (flex_build_gpu, shared by every GPU rung). */
static const ladder_flex_problem build_problem = {
    .attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = 131072, .Sk = 131072, .D = 64, .Dv = 64, .mask = {0, -1, -1}},
    .mask_mods = 1 << LADDER_FLEX_DOCUMENT, .window_left = -1};
static const ladder_bench_build bench_build = {
    .problem = &build_problem,
    .rungs = (1u << LADDER_RUNG_CPU) | (1u << LADDER_RUNG_GPU_NAIVE),
    .begin = build_begin,
    .run = build_run,
    .end = build_end,
};

/*
 * First, a small size at which every rung runs (the cpu rung is the reference): ALiBi with learnable slopes under a
 * causal mask. Then the sizes of the issue's targets, at the tensor-core rung alone (the cpu rung would take minutes
 * there, and the tensor-core rung takes no f32 inputs, so these have no reference rung: `ladder bench` times them
 * unchecked, and the test suites check that rung): B=4, H=16, S=4096, D=128 without a mod and with the causal mask,
 * flash's cells of that size; the 1024-token causal sliding window with ALiBi at B=2, S=8192, slopes frozen and
 * learnable (the frozen one is the case docs/results/peers.md has PyTorch's numbers of); and each mod with buffers
 * under the causal mask, frozen and learnable, so that a buffer gradient's cost is the difference of two rows.
 */
#define BENCH(b, s, mod, masks, left)                                                                                  \
    {.attn = {.B = (b), .Hq = 16, .Hkv = 16, .Sq = (s), .Sk = (s), .D = 128, .Dv = 128, .mask = {0, -1, -1}},          \
     .score_mod = (mod), .mask_mods = (masks), .window_left = (left), .num_buckets = 32}
#define CAUSAL (1 << LADDER_FLEX_CAUSAL)
#define WINDOW (CAUSAL | 1 << LADDER_FLEX_WINDOW)
static const ladder_flex_problem bench_problems[] = {
    {.attn = {.B = 1, .Hq = 8, .Hkv = 8, .Sq = 512, .Sk = 512, .D = 64, .Dv = 64, .mask = {0, -1, -1}},
     .score_mod = LADDER_FLEX_ALIBI, .mask_mods = CAUSAL, .window_left = -1, .num_buckets = 32},
    BENCH(4, 4096, LADDER_FLEX_SCORE_NONE, 0, -1),
    BENCH(4, 4096, LADDER_FLEX_SCORE_NONE, CAUSAL, -1),
    BENCH(2, 8192, LADDER_FLEX_ALIBI, WINDOW, 1024),
    BENCH(2, 8192, LADDER_FLEX_ALIBI, WINDOW, 1024),
    BENCH(4, 4096, LADDER_FLEX_ALIBI, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_ALIBI, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_REL_BIAS, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_REL_BIAS, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_T5_BIAS, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_T5_BIAS, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_BIAS_QK, CAUSAL, -1),
    BENCH(4, 4096, LADDER_FLEX_BIAS_QK, CAUSAL, -1),
};
#define TC (1u << LADDER_RUNG_GPU_TENSORCORE)
static const uint32_t bench_rungs[] = {LADDER_RUNGS_ALL, TC, TC, TC, TC, TC, TC, TC, TC, TC, TC, TC, TC};
enum { SLOPES = 3, REL_BIAS, T5, BQ, BK }; /* tensors[SLOPES ..]: the float buffers */
#define FROZEN(t) (1u << (t))
static const uint32_t bench_frozen[] = {
    0, 0, 0, FROZEN(SLOPES), 0, FROZEN(SLOPES), 0, FROZEN(REL_BIAS), 0, FROZEN(T5), 0, FROZEN(BQ) | FROZEN(BK), 0};
_Static_assert(sizeof bench_rungs / sizeof bench_rungs[0] == sizeof bench_problems / sizeof bench_problems[0] &&
                   sizeof bench_frozen / sizeof bench_frozen[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one rung set and one frozen set per bench problem");

const ladder_algo ladder_flex_algo = {
    .name = "flex",
    .summary = "flex attention: score_mod with gradients (buffers too), mask_mods as block-sparse masks",
    .problem_size = sizeof(ladder_flex_problem),
    .args_size = sizeof(ladder_flex_args),
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .derived_dim = derived_dim,
    .call = call,
    .call_rung = call_rung,
    .call_emulating = call_emulating,
    .bytes = bytes,
    .flops = flops,
    .bench_problems = bench_problems,
    .n_bench_problems = sizeof bench_problems / sizeof bench_problems[0],
    .bench_rungs = bench_rungs,
    .bench_frozen = bench_frozen,
    .needs = needs,
    .named_params = named_params,
    .n_named_params = sizeof named_params / sizeof named_params[0],
    .draw_index = draw_index,
    .fixed_inputs = fixed_inputs,
    .bench_build = &bench_build,
    .magnitudes = flex_magnitudes,
};
