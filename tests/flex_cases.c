/*
 * tests/flex_cases.c: what flex adds to the generic suites: its grid (every score mod, every mask mod and
 * conjunctions, random block lists, Sq != Sk, lengths that are not multiples of the block, fully masked rows, GQA,
 * strided views), its determinism cases, its float64 oracle as the suites call it, and its finite-difference
 * shapes (every score mod with its buffers, every mask mod, a random block list).
 */
#include "flex.h"
#include "harness.h"
#include "oracle/flex_oracle.h"

extern const ladder_algo ladder_flex_algo;

enum { NONE = 0, CAUSAL = 1 << LADDER_FLEX_CAUSAL, WINDOW = 1 << LADDER_FLEX_WINDOW,
       PREFIX = 1 << LADDER_FLEX_PREFIX_LM, DOC = 1 << LADDER_FLEX_DOCUMENT };

/* One case: sizes, the mods and their options, then the case's options (lists: random block lists). */
typedef struct xc {
    int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
    int score, masks;
    double softcap;
    int64_t window_left, num_buckets;
    bool strided, dlse, lists;
} xc;

static test_case make(xc c) {
    ladder_flex_problem p = {.attn = {.B = c.B, .Hq = c.Hq, .Hkv = c.Hkv, .Sq = c.Sq, .Sk = c.Sk, .D = c.D,
                                      .Dv = c.Dv, .mask = LADDER_ATTN_NO_MASK},
                             .score_mod = c.score, .mask_mods = c.masks, .softcap = c.softcap,
                             .window_left = c.window_left, .num_buckets = c.num_buckets};
    test_case t = test_case_of(&ladder_flex_algo, &p);
    t.opts.strided = c.strided;
    if (c.dlse) t.opts.with |= 1u << ladder_algo_tensor(&ladder_flex_algo, "dlse");
    if (c.lists) test_case_with(&t, "kv_num_blocks", 8);
    return t;
}

/* The case with the buffers @p names ("bq,bk") frozen: read, their gradient not asked for. */
static test_case frozen(xc c, const char *names) {
    test_case t = make(c);
    test_case_freeze(&t, names);
    return t;
}

/* `ladder run flex`'s problem at its seed (every default, seed 1): what `make run` checks, here on every rung too. */
static test_case run_default(void) {
    ladder_flex_problem p;
    ladder_problem_defaults(&ladder_flex_algo, &p);
    test_case t = test_case_of(&ladder_flex_algo, &p);
    t.opts.seed = 1;
    return t;
}

#define ADD(t) \
    if (n < max) out[n++] = (t)
#define S LADDER_FLEX_SOFTCAP
#define AL LADDER_FLEX_ALIBI
#define RB LADDER_FLEX_REL_BIAS
#define T5 LADDER_FLEX_T5_BIAS
#define QK LADDER_FLEX_BIAS_QK

/*
 * bias_qk cases carry dlse: bq[h, i] adds one constant to a whole row of S, which the softmax ignores, so its
 * gradient is sum_j dS_ij = dlse_i, zero without dlse (and a relative error of zero against zero means nothing). A
 * T5 bucket that gathers whole rows is the same; the cases keep buckets that split the rows.
 */
static int grid(test_case *out, int max, bool small) {
    int n = 0;
    if (small) { /* the edges, cheap enough for compute-sanitizer */
        ADD(make((xc){2, 4, 2, 130, 200, 33, 17, AL, CAUSAL | DOC, 0, -1, 0, true, true, false}));
        ADD(make((xc){1, 2, 1, 257, 129, 16, 16, QK, NONE, 0, -1, 0, false, true, true}));
        ADD(make((xc){2, 2, 2, 100, 140, 8, 8, T5, PREFIX | WINDOW, 0, 20, 8, false, false, false}));
        /* no buffer's gradient: the tensor-core rung's Hopper backward, dQ's adds in turns, on sm_90 */
        ADD(frozen((xc){1, 4, 2, 200, 300, 64, 64, AL, CAUSAL | DOC, 0, -1, 0, false, true, false}, "slopes"));
        /* and at a head dim of 128, an additive mod's terms from the tile the producer's spare warps fill */
        ADD(frozen((xc){1, 2, 1, 130, 200, 128, 128, RB, CAUSAL, 0, -1, 0, false, false, false}, "rel_bias"));
        return n;
    }
    ADD(make((xc){2, 4, 2, 1, 1, 16, 16, NONE, NONE, 0, -1, 0, false, true, false}));
    ADD(make((xc){1, 4, 2, 200, 300, 32, 24, S, CAUSAL, 2.5, -1, 0, false, true, false}));     /* Sq != Sk */
    ADD(make((xc){1, 2, 2, 130, 130, 40, 40, AL, CAUSAL, 0, -1, 0, true, false, false}));
    ADD(make((xc){1, 4, 1, 257, 129, 16, 20, RB, WINDOW, 0, 40, 0, false, false, false}));
    ADD(make((xc){1, 2, 2, 300, 300, 24, 24, T5, DOC, 0, -1, 16, false, true, false}));
    ADD(make((xc){2, 2, 1, 150, 260, 16, 16, QK, PREFIX, 0, -1, 0, true, true, false}));
    ADD(make((xc){1, 4, 1, 256, 256, 32, 32, AL, CAUSAL | DOC, 0, -1, 0, false, false, false})); /* block-aligned */
    ADD(make((xc){1, 2, 2, 300, 400, 16, 16, RB, CAUSAL, 0, -1, 0, false, false, true}));  /* random lists */
    ADD(make((xc){1, 2, 1, 129, 2, 8, 8, NONE, NONE, 0, -1, 0, false, false, true})); /* random, two keys (with one, dS is rounding noise) */
    ADD(make((xc){1, 2, 2, 140, 150, 1, 3, T5, WINDOW | CAUSAL, 0, 5, 4, false, false, false}));
    ADD(make((xc){1, 2, 2, 300, 3, 16, 16, S, DOC, 30, -1, 0, false, true, false}));       /* masked rows */
    ADD(make((xc){2, 2, 2, 200, 130, 16, 16, QK, CAUSAL | PREFIX | DOC, 0, -1, 0, true, true, false}));
    /* frozen buffers (read, no gradient asked for): the bench's window with ALiBi, and one of bias_qk's two reads */
    ADD(frozen((xc){1, 4, 2, 300, 260, 32, 32, AL, CAUSAL | WINDOW, 0, 70, 0, false, true, false}, "slopes"));
    ADD(frozen((xc){1, 2, 2, 150, 170, 16, 16, QK, CAUSAL, 0, -1, 0, true, true, false}, "bq"));
    ADD(frozen((xc){1, 4, 2, 260, 300, 128, 128, T5, CAUSAL | WINDOW, 0, 90, 16, false, true, false}, "t5_bias"));
    ADD(run_default());
    return n;
}

static int determinism(test_case *out, int max) {
    int n = 0;
    ADD(make((xc){2, 4, 2, 200, 300, 32, 32, AL, CAUSAL, 0, -1, 0, true, false, false}));
    ADD(make((xc){1, 2, 1, 257, 300, 16, 16, QK, DOC, 0, -1, 0, false, true, true}));
    /* no buffer's gradient: the Hopper backward's turns (on sm_90) */
    ADD(make((xc){2, 4, 2, 300, 520, 64, 64, NONE, CAUSAL | DOC, 0, -1, 0, false, false, true}));
    ADD(make((xc){1, 4, 4, 400, 400, 128, 128, S, WINDOW, 20, 150, 0, false, true, false}));
    ADD(frozen((xc){1, 2, 2, 300, 300, 128, 128, QK, DOC, 0, -1, 0, false, true, true}, "bq,bk")); /* the term tile */
    return n;
}

/* Tiny shapes: every score mod with its buffers, every mask mod, a random block list (one tile: empty, partial or
 * full by the seed). */
static int fd_cases(test_case *out, int max) {
    int n = 0;
    ADD(make((xc){1, 2, 1, 3, 4, 3, 2, S, CAUSAL, 1.5, -1, 0, false, true, false}));
    ADD(make((xc){2, 2, 2, 4, 3, 2, 2, AL, WINDOW, 0, 1, 0, false, false, false}));
    ADD(make((xc){2, 2, 1, 3, 4, 2, 3, RB, PREFIX, 0, -1, 0, false, true, false}));
    ADD(make((xc){1, 2, 2, 5, 5, 2, 2, T5, DOC, 0, -1, 4, false, false, false}));
    ADD(make((xc){1, 2, 1, 4, 3, 3, 2, QK, NONE, 0, -1, 0, false, true, false}));
    ADD(make((xc){1, 2, 2, 4, 4, 2, 2, AL, CAUSAL, 0, -1, 0, false, false, true}));
    return n;
}

static int args_case(test_case *out, int max) {
    int n = 0;
    ADD(make((xc){2, 4, 2, 5, 7, 3, 4, AL, DOC, 0, -1, 0, false, false, false}));
    return n;
}
#undef ADD

/* The descriptor's tensors as the oracle's named arrays, with the lists' batch and head sizes. */
static flex_oracle_tensors named(const ladder_case *c, double *const *t) {
    const ladder_algo *a = &ladder_flex_algo;
#define T(name) t[ladder_algo_tensor(a, name)]
    flex_oracle_tensors x = {.q = T("q"), .k = T("k"), .v = T("v"), .slopes = T("slopes"),
                             .rel_bias = T("rel_bias"), .t5_bias = T("t5_bias"), .bq = T("bq"), .bk = T("bk"),
                             .prefix = T("prefix"), .doc_q = T("doc_q"), .doc_k = T("doc_k"),
                             .kv_num = T("kv_num_blocks"), .kv_idx = T("kv_indices"),
                             .full_kv_num = T("full_kv_num_blocks"), .full_kv_idx = T("full_kv_indices"),
                             .o = T("o"), .lse = T("lse"), .dout = T("do"), .dlse = T("dlse"), .dq = T("dq"),
                             .dk = T("dk"), .dv = T("dv"), .dslopes = T("dslopes"), .drel_bias = T("drel_bias"),
                             .dt5_bias = T("dt5_bias"), .dbq = T("dbq"), .dbk = T("dbk")};
#undef T
    const ladder_tensor *lists = &c->t[ladder_algo_tensor(a, "kv_indices")];
    x.MB = lists->data ? lists->shape[0] : 1;
    x.MH = lists->data ? lists->shape[1] : 1;
    return x;
}

static void oracle_fwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu, (void)n_seqs; /* flex packs no sequences: its documents are a mask mod */
    flex_oracle_tensors x = named(c, t);
    flex_oracle_fwd((const ladder_flex_problem *)c->problem, &x);
}

static void oracle_bwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu, (void)n_seqs;
    flex_oracle_tensors x = named(c, t);
    flex_oracle_bwd((const ladder_flex_problem *)c->problem, &x);
}

/* flash's step and tolerance: the buffers enter S linearly (softcap through tanh, smooth at these scales). */
const test_algo flex_tests = {
    .algo = &ladder_flex_algo,
    .grid = grid,
    .determinism = determinism,
    .oracle_fwd = oracle_fwd,
    .oracle_bwd = oracle_bwd,
    .fd_cases = fd_cases,
    .fd_step = 1e-4,
    .fd_tol = 1e-6,
    .args_case = args_case,
};
