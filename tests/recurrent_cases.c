/*
 * tests/recurrent_cases.c: what recurrent adds to the generic suites: its shape grid (issue 7's), its
 * determinism cases, its float64 oracle as the suites call it, and its finite-difference shapes.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "oracle/recurrent_oracle.h"
#include "recurrent.h"

extern const ladder_algo ladder_recurrent_algo;

/* "g,gk,h0" as a with mask of the descriptor's tensors. */
static uint32_t with_of(const char *names) {
    uint32_t with;
    cr_assert(ladder_algo_with(&ladder_recurrent_algo, names, &with) == LADDER_OK, "%s", ladder_last_error());
    return with;
}

/* A case: sizes, the optional tensors present, the gate normalizer, reverse, strided. */
static test_case rc(int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, const char *with, double normalizer,
                    bool reverse, bool strided) {
    ladder_recurrent_problem p = {.B = B, .T = T, .H = H, .K = K, .V = V, .reverse = reverse};
    test_case t = test_case_of(&ladder_recurrent_algo, &p);
    t.opts.with = with_of(with);
    t.opts.gate_normalizer = normalizer;
    t.opts.strided = strided;
    t.opts.seed ^= t.opts.with * 0x9e3779b97f4a7c15ull; /* different gates, different inputs */
    return t;
}

static test_case rc_varlen(int64_t H, int64_t K, int64_t V, const char *with, double normalizer, bool reverse,
                           const int64_t *lens, int n) {
    test_case t = rc(1, 0, H, K, V, with, normalizer, reverse, false);
    test_case_varlen(&t, lens, n);
    return t;
}

/* The gate sets every grid row cycles through: none, each alone, all together (with the states or without). */
static const char *const GATES[] = {
    "ht",          "g,h0,ht,dht",      "g_gamma", "gk,h0,ht,dht", "gv", "g,g_gamma,gk,gv,h0,ht,dht",
    "gk,gv,ht,dht", "g,g_gamma,gk,gv",
};
enum { N_GATES = sizeof GATES / sizeof GATES[0] };

/*
 * dg_gamma[h] sums dg over every token of every sequence, terms of both signs that cancel: the sum can be several
 * times smaller than ||dg[:,h]|| = sqrt(tokens) * rms(dg), and the state's fp32 rounding (about 1e-6 of each dg_t,
 * mostly of one sign, since it reaches every G_t through the reverse cumulative sums) then shows at about 1e-5 of
 * the sum. Measured against the oracle: at most 3.3e-6 up to 130 tokens, but up to 9e-6 (cpu) and 1e-5 (the same
 * arithmetic with fused multiply-adds, as the GPU rungs round) at 300 to 1000 tokens, whatever the sums accumulate
 * in. So the grid takes g_gamma as it is used, a weak constant decay (normalizer 10: about -0.07 per step), and
 * only in rows of at most GAMMA_MAX_TOKENS tokens; its longer rows run g in its place, and test_recurrent_oracle.c
 * holds dg_gamma over long sequences, weak decay and strong, to the bound its terms allow, at every fp32 rung
 * (chapter 2, "What fp32 leaves").
 */
enum { GAMMA_MAX_TOKENS = 130 };

static double normalizer_for(const char *with, double normalizer) {
    return strstr(with, "g_gamma") ? 10 : normalizer;
}

/* @p with without g_gamma, into @p buf; "g_gamma" alone becomes "g", the scalar gate it shares its path with. */
static const char *without_g_gamma(const char *with, char *buf, size_t n) {
    buf[0] = '\0';
    for (const char *p = with; *p;) {
        size_t len = strcspn(p, ","), used = strlen(buf);
        if (!(len == 7 && strncmp(p, "g_gamma", 7) == 0))
            snprintf(buf + used, n - used, "%s%.*s", used ? "," : "", (int)len, p);
        p += len + (p[len] == ',');
    }
    return buf[0] ? buf : "g";
}

static int grid(test_case *out, int max, bool small) {
    int n = 0;
#define ADD(t) \
    if (n < max) out[n++] = (t)
    const char *all = "g,g_gamma,gk,gv,h0,ht,dht", *strong = "g,gk,gv,h0,ht,dht";
    if (small) { /* the shapes that stress the edges, cheap enough for compute-sanitizer */
        ADD(rc(2, 65, 2, 60, 100, all, 10, false, true));
        ADD(rc(1, 15, 1, 256, 256, strong, 0.1, true, false));
        ADD(rc_varlen(2, 64, 128, all, 10, false, (const int64_t[]){0, 16, 1, 30}, 4));
        ADD(rc(1, 1, 3, 1, 1, "gk,gv,h0", 10, false, false));
        /* without gv the tensor-core forward is the split one (states, then every chunk's outputs): K over two
         * row tiles, the last partial, a last chunk of 2 steps; V odd, packed sequences empty and of length 1 */
        ADD(rc(1, 130, 2, 100, 60, "g,g_gamma,gk,h0,ht,dht", 10, true, true));
        ADD(rc_varlen(2, 130, 9, "gk,h0,ht,dht", 0.1, false, (const int64_t[]){0, 1, 70}, 3));
        /* without gv and dht, one column block: the split backward finishes dq, dk, dv in its own kernels
         * (bf16); reverse, packed sequences empty, of length 1 and over two chunks of 64 */
        ADD(rc_varlen(2, 100, 60, "g,gk,h0,ht", 1, true, (const int64_t[]){0, 70, 1, 130}, 4));
        return n;
    }
    /*
     * Every (T, (K,V)) pair of issue 7 whose oracle stays small (its states, T*K*V doubles, under ~160 MB);
     * gates, normalizer, H, reverse and strided cycle with different periods, so each value meets many others.
     */
    static const int64_t Ts[] = {1, 15, 63, 64, 65, 300, 1000};
    static const int64_t KVs[][2] = {{16, 16}, {60, 60}, {64, 128}, {100, 100}, {128, 128}, {256, 256}};
    static const double norms[] = {1, 0.1, 10};
    const int nT = sizeof Ts / sizeof Ts[0], nKV = sizeof KVs / sizeof KVs[0];
    for (int i = 0; i < nT; i++)
        for (int j = 0; j < nKV; j++) {
            int k = i * nKV + j;
            int64_t size = Ts[i] * KVs[j][0] * KVs[j][1];
            if (size > 20000000) continue;
            int64_t H = size > 2000000 ? 1 : (k % 2 ? 4 : 1), B = size > 2000000 ? 1 : 2;
            char buf[64];
            const char *gates = GATES[k % N_GATES];
            if (B * Ts[i] > GAMMA_MAX_TOKENS) gates = without_g_gamma(gates, buf, sizeof buf);
            ADD(rc(B, Ts[i], H, KVs[j][0], KVs[j][1], gates, normalizer_for(gates, norms[k % 3]), k % 3 == 2,
                   k % 4 == 1));
        }
    /* strong decay over a long sequence: nothing may overflow, underflow to NaN, or drift */
    ADD(rc(1, 4096, 2, 16, 16, strong, 0.1, false, false));
    ADD(rc(1, 4096, 1, 64, 64, "gk,h0,ht,dht", 0.1, true, true));
    ADD(rc(1, 4096, 1, 32, 48, "g,gv,ht,dht", 10, false, false));
    /* gv under strong decay at K = 128 (two row tiles) and V = 192 (a second column block of 64), chunks of 64 and a
     * last one of 44, reverse, strided: the column weights' fp32 pairs, o° for dgv, fp16's split operands */
    ADD(rc(1, 300, 2, 128, 192, "g,gk,gv,h0,ht,dht", 0.1, true, true));
    /* packed sequences: one, several long ones, an empty one first, length-1 ones; dht per sequence */
    ADD(rc_varlen(2, 64, 128, all, 10, false, (const int64_t[]){15}, 1));
    ADD(rc_varlen(1, 60, 60, strong, 1, true, (const int64_t[]){256, 244, 500}, 3));
    ADD(rc_varlen(4, 16, 16, "gk,h0,ht,dht", 0.1, false, (const int64_t[]){0, 16}, 2));
    ADD(rc_varlen(2, 100, 100, "g,g_gamma,ht,dht", 10, false, (const int64_t[]){1, 30, 1, 0, 65}, 5));
    ADD(rc_varlen(1, 256, 256, "gv,h0,ht,dht", 10, true, (const int64_t[]){1, 63}, 2));
    return n;
}

static int determinism(test_case *out, int max) {
    int n = 0;
    ADD(rc(2, 300, 4, 64, 128, "g,g_gamma,gk,gv,h0,ht,dht", 10, false, true));
    ADD(rc_varlen(2, 60, 100, "gk,gv,h0,ht,dht", 0.1, true, (const int64_t[]){0, 77, 1, 150}, 4));
    ADD(rc(2, 300, 4, 64, 128, "g,g_gamma,gk,h0,ht", 10, false, true)); /* the split backward, fused finish */
    ADD(rc(1, 200, 2, 256, 256, "gk,h0,ht,dht", 1, true, false)); /* the split backward, finish kernels */
    return n;
}

static int fd_cases(test_case *out, int max) {
    int n = 0;
    const char *all = "g,g_gamma,gk,gv,h0,ht,dht";
    ADD(rc(2, 5, 2, 3, 4, all, 1, false, false));
    ADD(rc(1, 6, 2, 4, 3, all, 1, true, true));
    ADD(rc(2, 4, 1, 2, 2, "", 1, false, false)); /* no gates, no states */
    ADD(rc(1, 3, 3, 5, 2, "gk,ht,dht", 1, false, false));
    ADD(rc_varlen(2, 3, 2, all, 1, false, (const int64_t[]){2, 0, 1, 3}, 4));
    ADD(rc_varlen(1, 2, 3, all, 1, true, (const int64_t[]){3, 2}, 2));
    return n;
}

static int args_case(test_case *out, int max) {
    int n = 0;
    ADD(rc(2, 5, 2, 3, 4, "g,g_gamma,gk,gv,h0,ht,dht", 1, false, false));
    return n;
#undef ADD
}

/* The descriptor's tensors as the oracle's named arrays. */
static recurrent_oracle_tensors named(double *const *t) {
    const ladder_algo *a = &ladder_recurrent_algo;
#define T(name) t[ladder_algo_tensor(a, name)]
    return (recurrent_oracle_tensors){
        .q = T("q"),   .k = T("k"),     .v = T("v"),   .g = T("g"),     .g_gamma = T("g_gamma"),
        .gk = T("gk"), .gv = T("gv"),   .h0 = T("h0"), .o = T("o"),     .ht = T("ht"),
        .do_ = T("do"), .dht = T("dht"), .dq = T("dq"), .dk = T("dk"),  .dv = T("dv"),
        .dg = T("dg"), .dg_gamma = T("dg_gamma"), .dgk = T("dgk"), .dgv = T("dgv"), .dh0 = T("dh0"),
    };
#undef T
}

static void oracle_fwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    recurrent_oracle_tensors x = named(t);
    recurrent_oracle_fwd((const void *)c->problem, cu, n_seqs, &x);
}

static void oracle_bwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    recurrent_oracle_tensors x = named(t);
    recurrent_oracle_bwd((const void *)c->problem, cu, n_seqs, &x);
}

/*
 * The loss is linear in each of q, k, v and h0, but not in the gates (they act through exp), so the central
 * difference has an O(h^2) truncation error there: h = 1e-4 makes it ~1e-9 of the gradient, while rounding in
 * (L(x+h) - L(x-h)) / 2h stays ~1e-16 * |L| / h, ~1e-11. 1e-7 leaves room for both.
 */
const test_algo recurrent_tests = {
    .algo = &ladder_recurrent_algo,
    .grid = grid,
    .determinism = determinism,
    .oracle_fwd = oracle_fwd,
    .oracle_bwd = oracle_bwd,
    .fd_cases = fd_cases,
    .fd_step = 1e-4,
    .fd_tol = 1e-7,
    .args_case = args_case,
};
