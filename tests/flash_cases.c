/*
 * tests/flash_cases.c: what flash adds to the generic suites: its shape grid (a fixed sample of
 * FlashAttention's own test grid), its determinism cases, its float64 oracle as the suites call it, and its
 * finite-difference shapes.
 */
#include "harness.h"
#include "flash.h"
#include "oracle/flash_oracle.h"

extern const ladder_algo ladder_flash_algo;

/* One case: sizes, then the options; window -1 = unbounded. */
typedef struct fc {
    int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
    int causal;
    int64_t wl, wr;
    double softcap;
    bool strided, dlse, deterministic;
} fc;

static test_case make(fc c) {
    ladder_flash_problem p = {.attn = {.B = c.B, .Hq = c.Hq, .Hkv = c.Hkv, .Sq = c.Sq, .Sk = c.Sk, .D = c.D,
                                       .Dv = c.Dv, .softcap = c.softcap, .mask = {.causal = c.causal,
                                       .window_left = c.wl, .window_right = c.wr}},
                              .deterministic = c.deterministic};
    test_case t = test_case_of(&ladder_flash_algo, &p);
    t.opts.strided = c.strided;
    if (c.dlse) t.opts.with = 1u << ladder_algo_tensor(&ladder_flash_algo, "dlse");
    return t;
}

/* Packed sequences: @p lq query rows and @p lk keys per sequence (B = 1, Sq and Sk their sums). */
static test_case make_varlen(fc c, const int64_t *lq, const int64_t *lk, int n) {
    test_case t = make(c);
    test_case_varlen(&t, lq, n);
    test_case_varlen2(&t, lk);
    return t;
}

#define NO -1 /* no window limit */
enum { NONE = LADDER_CAUSAL_NONE, BR = LADDER_CAUSAL_BOTTOM_RIGHT, TL = LADDER_CAUSAL_TOP_LEFT };

static int grid(test_case *out, int max, bool small) {
    int n = 0;
#define ADD(t) \
    if (n < max) out[n++] = (t)
    if (small) { /* the edges, cheap enough for compute-sanitizer */
        ADD(make((fc){2, 6, 2, 113, 203, 59, 59, BR, NO, NO, 0, true, true, false}));
        ADD(make((fc){1, 6, 1, 130, 65, 192, 128, TL, 16, 4, 0, false, false, true}));
        ADD(make_varlen((fc){1, 6, 2, 0, 0, 40, 40, BR, NO, NO, 5, true, false, false},
                        (const int64_t[]){1, 0, 70, 3}, (const int64_t[]){9, 4, 65, 0}, 4));
        return n;
    }
    /*
     * FlashAttention's grid is (Sq, Sk) x D x (Hq, Hkv) x options, far too many cases for 2 cores. This fixed
     * sample meets every (Sq, Sk) pair, every D, every head grouping, both causal alignments, windows (alone
     * and with causal), softcap, dlse, Dv != D, strided views and packed sequences at least once, keeping
     * the largest score matrices to small head dims.
     */
    /* one key per row makes P = 1 and dS = P (dP - Delta) exactly 0 but for rounding: dlse keeps the gradients
     * away from an all-zero reference, which no rounded rung could match element by element */
    ADD(make((fc){2, 6, 6, 1, 1, 32, 32, NONE, NO, NO, 0, false, true, false}));
    ADD(make((fc){1, 6, 2, 1, 239, 40, 40, BR, NO, NO, 0, true, true, false}));
    ADD(make((fc){1, 6, 1, 113, 203, 59, 59, TL, NO, NO, 0, true, false, false}));
    ADD(make((fc){1, 6, 6, 128, 217, 64, 64, NONE, 32, 8, 5, false, false, false}));
    ADD(make((fc){1, 6, 2, 256, 512, 96, 64, BR, 64, NO, 0, false, false, false}));
    ADD(make((fc){1, 6, 1, 512, 256, 111, 111, BR, NO, NO, 0, true, true, false})); /* 256 rows see no key */
    ADD(make((fc){1, 6, 2, 1023, 1024, 32, 32, NONE, NO, NO, 0, false, false, false}));
    ADD(make((fc){1, 6, 1, 1024, 1023, 40, 40, BR, NO, NO, 0, true, false, false}));
    ADD(make((fc){1, 6, 6, 113, 203, 128, 128, NONE, NO, NO, 30, false, true, false}));
    ADD(make((fc){1, 6, 2, 128, 217, 192, 128, TL, NO, NO, 0, false, false, false}));
    ADD(make((fc){1, 6, 1, 256, 512, 256, 256, NONE, NO, 16, 0, false, false, false}));
    ADD(make((fc){2, 6, 6, 1, 239, 256, 32, NONE, NO, NO, 2, true, false, false}));
    ADD(make((fc){1, 6, 2, 512, 256, 59, 59, TL, 100, NO, 0, false, false, true}));
    ADD(make((fc){2, 6, 2, 256, 512, 128, 128, NONE, NO, NO, 0, false, false, true}));
    ADD(make((fc){1, 6, 2, 700, 520, 64, 64, BR, 100, 30, 0, false, true, true})); /* 180 rows see no key */
    ADD(make((fc){3, 6, 6, 128, 217, 32, 32, BR, NO, NO, 0, true, false, false}));
    ADD(make((fc){1, 6, 1, 217, 128, 64, 96, NONE, 0, 0, 0, false, true, false})); /* the diagonal alone, dlse */
    /* packed sequences: empty ones, length 1, Lq != Lk, sequences whose rows see no key */
    ADD(make_varlen((fc){1, 6, 2, 0, 0, 64, 64, BR, NO, NO, 0, false, false, false},
                    (const int64_t[]){113, 0, 1, 200}, (const int64_t[]){203, 5, 1, 0}, 4));
    ADD(make_varlen((fc){1, 6, 1, 0, 0, 40, 40, NONE, 16, 16, 0, true, true, false},
                    (const int64_t[]){1, 128, 0, 31}, (const int64_t[]){239, 128, 7, 1}, 4));
    ADD(make_varlen((fc){1, 6, 6, 0, 0, 111, 111, TL, NO, NO, 10, false, false, true},
                    (const int64_t[]){64, 0, 1, 100}, (const int64_t[]){64, 0, 1, 100}, 4));
    return n;
}

static int determinism(test_case *out, int max) {
    int n = 0;
    /* the first (the one under compute-sanitizer): on Hopper the dK/dV pass's ordered adds; strided, the mma.sync
     * dQ pass (a tensor map cannot describe the view) */
    ADD(make((fc){2, 6, 2, 128, 217, 64, 64, BR, NO, NO, 0, false, false, true}));
    ADD(make((fc){2, 6, 2, 128, 217, 64, 64, BR, NO, NO, 0, true, false, true}));
    /* many key tiles adding into each query tile's dQ, every one at its turn (on Hopper: attention_bwd.sm90a.cu),
     * without a mask and with a causal one and a window */
    ADD(make((fc){1, 2, 1, 520, 600, 128, 128, NONE, NO, NO, 0, false, false, true}));
    ADD(make((fc){1, 2, 2, 700, 520, 64, 64, BR, 100, 30, 0, false, true, true}));
    ADD(make_varlen((fc){1, 6, 1, 0, 0, 40, 32, NONE, 8, NO, 3, false, true, true},
                    (const int64_t[]){1, 0, 70, 3}, (const int64_t[]){9, 4, 65, 0}, 4));
    return n;
}

static int fd_cases(test_case *out, int max) {
    int n = 0;
    ADD(make((fc){1, 2, 1, 3, 4, 3, 2, NONE, NO, NO, 0, false, true, false}));
    ADD(make((fc){2, 2, 2, 4, 3, 2, 2, BR, NO, NO, 0, false, false, false})); /* row 0 sees no key */
    ADD(make((fc){1, 2, 1, 3, 5, 2, 3, TL, NO, NO, 2, false, true, false}));
    ADD(make((fc){1, 2, 2, 4, 4, 3, 2, NONE, 1, 0, 0, true, true, false}));
    ADD(make((fc){1, 4, 2, 3, 3, 2, 2, NONE, NO, 1, 1.5, false, false, false}));
    ADD(make_varlen((fc){1, 2, 1, 0, 0, 2, 3, BR, NO, NO, 0, false, false, false},
                    (const int64_t[]){2, 0, 3}, (const int64_t[]){3, 2, 1}, 3));
    return n;
}

static int args_case(test_case *out, int max) {
    int n = 0;
    ADD(make((fc){2, 4, 2, 5, 7, 3, 4, BR, NO, NO, 0, false, false, false}));
    return n;
#undef ADD
}

/* Tensor @p name of the descriptor, in the oracle's array of arrays. */
static double *T(double *const *t, const char *name) { return t[ladder_algo_tensor(&ladder_flash_algo, name)]; }

static void oracle_fwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu; /* both offset tensors come as doubles in t */
    flash_oracle_fwd((const void *)c->problem, T(t, "cu_seqlens_q"), T(t, "cu_seqlens_k"), n_seqs, T(t, "q"), T(t, "k"), T(t, "v"),
                     T(t, "o"), T(t, "lse"));
}

static void oracle_bwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    (void)cu;
    flash_oracle_bwd((const void *)c->problem, T(t, "cu_seqlens_q"), T(t, "cu_seqlens_k"), n_seqs, T(t, "q"), T(t, "k"), T(t, "v"),
                     T(t, "o"), T(t, "lse"), T(t, "do"), T(t, "dlse"), T(t, "dq"), T(t, "dk"), T(t, "dv"));
}

/*
 * Softmax is not bilinear, so a central difference carries an error of order h^2 times the third derivative:
 * h = 1e-4 makes that about 1e-8 of the gradient, while cancellation costs about 1e-16 / h = 1e-12 of the
 * loss; 1e-6 leaves room for both and still catches any wrong term.
 */
const test_algo flash_tests = {
    .algo = &ladder_flash_algo,
    .grid = grid,
    .determinism = determinism,
    .oracle_fwd = oracle_fwd,
    .oracle_bwd = oracle_bwd,
    .fd_cases = fd_cases,
    .fd_step = 1e-4,
    .fd_tol = 1e-6,
    .args_case = args_case,
};
