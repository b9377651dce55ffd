/*
 * tests/memeff_cases.c: what memeff adds to the generic suites: its grid (flash's sample, crossed with the bias
 * shapes and dropout probabilities), its determinism cases, its float64 oracle as the suites call it, and its
 * finite-difference shapes (full and broadcast biases, a fixed dropout mask).
 */
#include "harness.h"
#include "memeff.h"
#include "oracle/memeff_oracle.h"

extern const ladder_algo ladder_memeff_algo;

/* The bias a case draws: none, full [B,Hq,Sq,Sk], or broadcast (ladder_case_opts::broadcast, bit d: size 1 on
 * dimension d; ::stride0, bit d: stride 0 on dimension d). */
typedef enum bias_kind {
    NOB,  /* no bias */
    FULL, /* [B,Hq,Sq,Sk] */
    B1,   /* [1,Hq,Sq,Sk] */
    BK,   /* [B,1,1,Sk] */
    QK,   /* [1,1,Sq,Sk] */
    VEC   /* a stride-0 view [B,Hq,Sq,Sk] of one [Sk] vector */
} bias_kind;

/* One case: sizes, then the options; window -1 = unbounded. */
typedef struct mc {
    int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
    int causal;
    int64_t wl, wr;
    double softcap;
    bias_kind bias;
    double p; /* dropout */
    bool strided, dlse, deterministic;
    bool aligned; /* the Philox offset a multiple of 4: with Sk one too, each row's draws start on a block's first
                     word, and the tensor-core lanes share blocks; else each lane draws its own pairs */
} mc;

static test_case make(mc c) {
    ladder_memeff_problem p = {.attn = {.B = c.B, .Hq = c.Hq, .Hkv = c.Hkv, .Sq = c.Sq, .Sk = c.Sk, .D = c.D,
                                        .Dv = c.Dv, .softcap = c.softcap, .mask = {.causal = c.causal,
                                        .window_left = c.wl, .window_right = c.wr}},
                               .dropout_p = c.p, .philox_seed = 0x5eed0000u + (uint64_t)c.Sq * 31u + (uint64_t)c.Sk,
                               .philox_offset = (uint64_t)c.D * 1000u + (c.aligned ? 0u : 3u),
                               .deterministic = c.deterministic};
    test_case t = test_case_of(&ladder_memeff_algo, &p);
    t.opts.strided = c.strided;
    if (c.dlse) t.opts.with |= 1u << ladder_algo_tensor(&ladder_memeff_algo, "dlse");
    if (c.bias != NOB) t.opts.with |= 1u << ladder_algo_tensor(&ladder_memeff_algo, "bias");
    static const unsigned broadcast[] = {[B1] = 1u, [BK] = 6u, [QK] = 3u}, stride0[] = {[VEC] = 7u};
    t.opts.broadcast = c.bias < sizeof broadcast / sizeof broadcast[0] ? broadcast[c.bias] : 0;
    t.opts.stride0 = c.bias < sizeof stride0 / sizeof stride0[0] ? stride0[c.bias] : 0;
    return t;
}

/* Packed sequences: @p lq query rows and @p lk keys per sequence (B = 1, Sq and Sk their sums). */
static test_case make_varlen(mc c, const int64_t *lq, const int64_t *lk, int n) {
    test_case t = make(c);
    test_case_varlen(&t, lq, n);
    test_case_varlen2(&t, lk);
    return t;
}

#define NO -1 /* no window limit */
enum { NONE = LADDER_CAUSAL_NONE, BR = LADDER_CAUSAL_BOTTOM_RIGHT, TL = LADDER_CAUSAL_TOP_LEFT };

#define ADD(t) \
    if (n < max) out[n++] = (t)

static int grid(test_case *out, int max, bool small) {
    int n = 0;
    if (small) { /* the edges, cheap enough for compute-sanitizer: a broadcast bias, dropout, varlen with bias */
        ADD(make((mc){2, 6, 2, 113, 203, 59, 59, BR, NO, NO, 0, BK, 0.1, true, true, false, false}));
        ADD(make((mc){1, 6, 1, 130, 65, 192, 128, TL, 16, 4, 0, FULL, 0.5, false, false, true, false}));
        ADD(make_varlen((mc){1, 6, 2, 0, 0, 40, 40, BR, NO, NO, 5, QK, 0.1, true, false, false, false},
                        (const int64_t[]){1, 0, 70, 3}, (const int64_t[]){9, 4, 65, 0}, 4));
        /* decoding: query heads packed as rows of a key/value head, split keys, lanes sharing Philox blocks */
        ADD(make((mc){1, 8, 2, 1, 1100, 64, 64, NONE, NO, NO, 0, FULL, 0.1, false, false, false, true}));
        return n;
    }
    /*
     * flash's sample of FlashAttention's grid (every (Sq, Sk) pair, head dims, head groupings, both causal
     * alignments, windows, softcap, dlse, Dv != D, strided views, packed sequences), each case given one bias
     * shape and one dropout probability so that every shape meets p = 0, 0.1 and 0.5, and the sizes kept small
     * enough for the float64 oracle on 2 cores.
     */
    ADD(make((mc){2, 6, 6, 1, 1, 32, 32, NONE, NO, NO, 0, FULL, 0, false, true, false, false}));
    ADD(make((mc){1, 6, 2, 1, 239, 40, 40, BR, NO, NO, 0, BK, 0.1, true, true, false, false}));
    ADD(make((mc){1, 6, 1, 113, 203, 59, 59, TL, NO, NO, 0, QK, 0.5, true, false, false, false}));
    ADD(make((mc){1, 6, 6, 128, 217, 64, 64, NONE, 32, 8, 5, VEC, 0.1, false, false, false, false}));
    ADD(make((mc){1, 6, 2, 256, 200, 96, 64, BR, 64, NO, 0, B1, 0, false, false, false, false}));
    ADD(make((mc){1, 6, 1, 250, 128, 111, 111, BR, NO, NO, 0, FULL, 0.5, true, true, false, false})); /* rows see no key */
    ADD(make((mc){2, 4, 2, 255, 256, 32, 32, NONE, NO, NO, 0, NOB, 0.1, false, false, false, false}));
    ADD(make((mc){1, 6, 6, 113, 203, 128, 128, NONE, NO, NO, 30, BK, 0, false, true, false, false}));
    ADD(make((mc){1, 6, 2, 128, 217, 192, 128, TL, NO, NO, 0, VEC, 0.5, false, false, false, false}));
    ADD(make((mc){1, 3, 1, 100, 130, 256, 256, NONE, NO, 16, 0, QK, 0.1, false, false, false, false}));
    ADD(make((mc){2, 6, 6, 1, 239, 256, 32, NONE, NO, NO, 2, B1, 0.5, true, false, false, false}));
    ADD(make((mc){3, 6, 6, 128, 217, 32, 32, BR, NO, NO, 0, FULL, 0.1, true, false, true, false}));
    ADD(make((mc){1, 6, 1, 217, 128, 64, 96, NONE, 0, 0, 0, NOB, 0, false, true, false, false})); /* the diagonal alone */
    /* decoding steps: the query heads of a key/value head packed as rows of one tile (no mask, or bottom-right
     * causal, which leaves the row every key), with split keys where the keys are many; a window is not packed.
     * Then lanes sharing Philox blocks with a full bias and its gradient */
    ADD(make((mc){2, 8, 2, 1, 256, 64, 64, BR, NO, NO, 0, FULL, 0.1, false, false, false, true}));
    ADD(make((mc){1, 8, 2, 1, 1100, 128, 128, NONE, NO, NO, 0, B1, 0.5, true, false, false, true}));
    ADD(make((mc){2, 4, 1, 1, 300, 64, 64, BR, 100, NO, 0, BK, 0.1, false, false, false, true})); /* a window */
    ADD(make((mc){2, 4, 2, 128, 256, 64, 64, BR, NO, NO, 0, FULL, 0.1, false, true, false, true}));
    /* packed sequences with a bias indexed by packed positions: empty ones, length 1, Lq != Lk, unseen rows */
    ADD(make_varlen((mc){1, 6, 2, 0, 0, 64, 64, BR, NO, NO, 0, FULL, 0.1, false, false, false, false},
                    (const int64_t[]){113, 0, 1, 100}, (const int64_t[]){103, 5, 1, 0}, 4));
    ADD(make_varlen((mc){1, 6, 1, 0, 0, 40, 40, NONE, 16, 16, 0, VEC, 0.5, true, true, false, false},
                    (const int64_t[]){1, 128, 0, 31}, (const int64_t[]){139, 128, 7, 1}, 4));
    ADD(make_varlen((mc){1, 6, 6, 0, 0, 111, 111, TL, NO, NO, 10, B1, 0, false, false, true, false},
                    (const int64_t[]){64, 0, 1, 100}, (const int64_t[]){64, 0, 1, 100}, 4));
    return n;
}

static int determinism(test_case *out, int max) {
    int n = 0;
    ADD(make((mc){2, 6, 2, 128, 217, 64, 64, BR, NO, NO, 0, BK, 0.1, true, false, true, false}));
    ADD(make_varlen((mc){1, 6, 1, 0, 0, 40, 32, NONE, 8, NO, 3, QK, 0.5, false, true, true, false},
                    (const int64_t[]){1, 0, 70, 3}, (const int64_t[]){9, 4, 65, 0}, 4));
    return n;
}

/* Tiny shapes: every bias shape, dropout at a fixed mask (it depends on the positions alone, not on the inputs the
 * differences move), softcap, GQA, packed sequences with a bias. */
static int fd_cases(test_case *out, int max) {
    int n = 0;
    ADD(make((mc){1, 2, 1, 3, 4, 3, 2, NONE, NO, NO, 0, FULL, 0, false, true, false, false}));
    ADD(make((mc){2, 2, 2, 4, 3, 2, 2, BR, NO, NO, 0, B1, 0.3, false, false, false, false})); /* row 0 sees no key */
    ADD(make((mc){2, 2, 1, 3, 5, 2, 3, TL, NO, NO, 2, BK, 0.5, false, true, false, false}));
    ADD(make((mc){2, 2, 2, 4, 4, 3, 2, NONE, 1, 0, 0, QK, 0.3, true, true, false, false}));
    ADD(make((mc){1, 4, 2, 3, 3, 2, 2, NONE, NO, 1, 1.5, VEC, 0.3, false, false, false, false}));
    ADD(make_varlen((mc){1, 2, 1, 0, 0, 2, 3, BR, NO, NO, 0, FULL, 0.3, false, false, false, false},
                    (const int64_t[]){2, 0, 3}, (const int64_t[]){3, 2, 1}, 3));
    return n;
}

static int args_case(test_case *out, int max) {
    int n = 0;
    ADD(make((mc){2, 4, 2, 5, 7, 3, 4, BR, NO, NO, 0, FULL, 0.1, false, false, false, false}));
    return n;
}
#undef ADD

/* The descriptor's tensors as the oracle's named arrays; the bias in the shape this case gave it. */
static memeff_oracle_tensors named(const ladder_case *c, int n_seqs, double *const *t) {
    const ladder_algo *a = &ladder_memeff_algo;
#define T(name) t[ladder_algo_tensor(a, name)]
    memeff_oracle_tensors x = {.cu_q = T("cu_seqlens_q"), .cu_k = T("cu_seqlens_k"), .n_seqs = n_seqs,
                               .q = T("q"), .k = T("k"), .v = T("v"), .bias = T("bias"), .o = T("o"),
                               .lse = T("lse"), .dout = T("do"), .dlse = T("dlse"), .dq = T("dq"), .dk = T("dk"),
                               .dv = T("dv"), .dbias = T("dbias")};
#undef T
    const ladder_tensor *bias = &c->t[ladder_algo_tensor(a, "bias")];
    for (int d = 0; d < 4 && bias->data; d++) x.bias_shape[d] = bias->shape[d];
    return x;
}

static void oracle_fwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu; /* both offset tensors come as doubles in t */
    memeff_oracle_tensors x = named(c, n_seqs, t);
    memeff_oracle_fwd((const ladder_memeff_problem *)c->problem, &x);
}

static void oracle_bwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu;
    memeff_oracle_tensors x = named(c, n_seqs, t);
    memeff_oracle_bwd((const ladder_memeff_problem *)c->problem, &x);
}

/* The step and tolerance are flash's (tests/flash_cases.c says why): the bias enters S linearly, and the dropout
 * mask is a constant of the differences. */
const test_algo memeff_tests = {
    .algo = &ladder_memeff_algo,
    .grid = grid,
    .determinism = determinism,
    .oracle_fwd = oracle_fwd,
    .oracle_bwd = oracle_bwd,
    .fd_cases = fd_cases,
    .fd_step = 1e-4,
    .fd_tol = 1e-6,
    .args_case = args_case,
};
