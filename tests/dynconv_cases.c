/*
 * tests/dynconv_cases.c: what dynconv adds to the generic suites: its shape grid, its determinism cases, its
 * float64 oracle as the suites call it, and its finite-difference shapes.
 */
#include "harness.h"
#include "dynconv.h"
#include "oracle/dynconv_oracle.h"

extern const ladder_algo ladder_dynconv_algo;

static test_case dc(int64_t B, int64_t T, int64_t D, int W, bool strided) {
    ladder_dynconv_problem p = {.B = B, .T = T, .D = D, .W = W};
    test_case t = test_case_of(&ladder_dynconv_algo, &p);
    t.opts.strided = strided;
    return t;
}

static test_case dc_varlen(int64_t D, int W, bool strided, const int64_t *lens, int n) {
    test_case t = dc(1, 0, D, W, strided);
    test_case_varlen(&t, lens, n);
    return t;
}

static const int64_t EDGE8[8] = {0, 1, 5, 0, 0, 64, 1, 30}; /* empties first and between, length-1, one > 63 */

/*
 * The tensor-core rung's one-k-step kernels (W <= 4) on the 16-byte paths, for the small grid: a partial token tile
 * and a second channel tile 8 channels wide (its output tile read by narrower loads), and sequence starts inside a
 * tile at W = 4.
 */
static int small_one_k_step(test_case *out, int n, int max) {
    if (n < max) out[n++] = dc(2, 130, 64, 2, false);
    if (n < max) out[n++] = dc_varlen(136, 4, false, (const int64_t[]){70, 0, 1, 59}, 4);
    return n;
}

static int grid(test_case *out, int max, bool small) {
    int n = 0;
#define ADD(t) \
    if (n < max) out[n++] = (t)
    if (small) { /* the shapes that stress the edges, cheap enough for compute-sanitizer */
        n = small_one_k_step(out, n, max);
        ADD(dc(2, 65, 129, 64, false));
        ADD(dc_varlen(129, 64, true, (const int64_t[]){32, 0, 1, 32}, 4));
        ADD(dc(3, 1, 7, 3, true));
        ADD(dc_varlen(7, 64, false, EDGE8, 8));
        ADD(dc(3, 64, 128, 5, false));
        ADD(dc(2, 65, 64, 32, true)); /* padded channel slots, staged by elements */
        ADD(dc_varlen(72, 15, false, EDGE8, 8)); /* odd W of 16-tap slots: swizzled forward rows, dkernels' pad tap */
        /* the tensor-core backward's walk: sequence starts inside steps, T not a multiple of the step */
        ADD(dc_varlen(64, 64, false, (const int64_t[]){40, 0, 1, 3, 50}, 5));
        ADD(dc(2, 70, 16, 48, false));
        return n;
    }
    /*
     * Every (T, W) pair once; D, B, strided and varlen cycle with different periods, so each value of each meets
     * many of the others. Varlen rows (every 4th) pack a long, an empty, a length-1 and a last sequence.
     */
    static const int64_t Ts[] = {1, 2, 3, 63, 64, 65, 1000};
    static const int Ws[] = {1, 2, 3, 4, 5, 6, 8, 31, 32, 33, 40, 64};
    static const int64_t Ds[] = {1, 7, 128, 129, 1000};
    const int nT = sizeof Ts / sizeof Ts[0], nW = sizeof Ws / sizeof Ws[0];
    for (int i = 0; i < nT; i++)
        for (int j = 0; j < nW; j++) {
            int k = i * nW + j;
            bool strided = k % 3 == 1;
            if (k % 4 == 2) {
                int64_t a = (Ts[i] - 1) / 2, lens[4] = {a, 0, 1, Ts[i] - 1 - a};
                ADD(dc_varlen(Ds[k % 5], Ws[j], strided, lens, 4));
            } else {
                ADD(dc((i + j) % 2 ? 3 : 1, Ts[i], Ds[k % 5], Ws[j], strided));
            }
        }
    /* beyond the (T, W) product: the varlen and strided corners, and the largest */
    ADD(dc_varlen(7, 64, false, EDGE8, 8));
    ADD(dc_varlen(129, 8, true, EDGE8, 8));
    ADD(dc_varlen(1000, 31, false, (const int64_t[]){1, 0}, 2));
    ADD(dc(3, 65, 129, 64, true));
    ADD(dc(2, 65, 129, 63, false)); /* odd W in the backward's 32-token tiles, the last one token long */
    ADD(dc_varlen(129, 48, false, EDGE8, 8)); /* the same tiles, 16-byte staged, across sequence starts */
    ADD(dc(1, 1000, 1000, 64, false)); /* 64M kernel weights */
    ADD(dc_varlen(129, 16, true, EDGE8, 8)); /* 16-tap slots: the forward's swizzled rows, staged by elements */
    ADD(dc(2, 65, 136, 15, false));          /* ... 16-byte staged; odd W: dkernels' pad tap */
    ADD(dc(2, 65, 129, 50, false)); /* even W in the backward's 32-token tiles, slots not whole 16-byte chunks */
    ADD(dc_varlen(20, 56, false, EDGE8, 8)); /* dkernels straight to global memory: a partial channel tile */
    /* the tensor-core backward's walk (W % 8 == 0, 16-byte paths): walks shorter than W, T not a multiple of the
     * step, sequence starts inside steps and runs, each walkable width, and one long walk whose dx ring wraps */
    ADD(dc(2, 1000, 128, 64, false));
    ADD(dc(3, 20, 64, 64, false));
    ADD(dc_varlen(136, 64, false, (const int64_t[]){300, 0, 1, 7, 180, 33}, 6));
    ADD(dc_varlen(64, 40, false, (const int64_t[]){100, 9, 0, 191}, 4));
    ADD(dc(3, 77, 128, 48, false));
    ADD(dc_varlen(256, 56, false, EDGE8, 8));
    ADD(dc(1, 250, 4000, 64, false));
    /* 657 channel tiles, about one per block slot of an H100: gpu_tiled's backward walks a whole batch row per
     * block, many steps, its rings wrapping (16-byte staged, by elements, and across sequence ends) */
    ADD(dc(3, 200, 7000, 2, false));
    ADD(dc(3, 200, 7000, 5, true));
    ADD(dc_varlen(21000, 4, false, (const int64_t[]){60, 0, 1, 39}, 4));
    return n;
}

static int determinism(test_case *out, int max) {
    int n = 0;
    ADD(dc(3, 300, 129, 31, true));
    ADD(dc_varlen(130, 64, false, EDGE8, 8));
    return n;
}

static int fd_cases(test_case *out, int max) {
    int n = 0;
    ADD(dc(2, 6, 3, 3, false));
    ADD(dc(1, 3, 2, 5, false)); /* W > T */
    ADD(dc(3, 4, 1, 1, false));
    ADD(dc(2, 2, 2, 8, true)); /* W > T with B > 1, strided */
    ADD(dc_varlen(2, 4, false, (const int64_t[]){2, 0, 1, 6}, 4));
    ADD(dc_varlen(2, 8, false, (const int64_t[]){0, 3, 1, 3, 0}, 5)); /* W > every length */
    return n;
}

static int args_case(test_case *out, int max) {
    int n = 0;
    ADD(dc(2, 5, 3, 4, false));
    return n;
#undef ADD
}

/* Tensor @p name of the descriptor, in the oracle's array of arrays. */
static double *T(double *const *t, const char *name) { return t[ladder_algo_tensor(&ladder_dynconv_algo, name)]; }

static void oracle_fwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    dynconv_oracle_fwd((const void *)c->problem, cu, n_seqs, T(t, "x"), T(t, "kernels"), T(t, "out"));
}

static void oracle_bwd(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t) {
    dynconv_oracle_bwd((const void *)c->problem, cu, n_seqs, T(t, "x"), T(t, "kernels"), T(t, "dout"), T(t, "dx"), T(t, "dkernels"));
}

/*
 * The loss is bilinear in x and kernels, so a central difference is exact for any step; h = 0.25 keeps
 * cancellation away and leaves only rounding, far below the tolerance.
 */
const test_algo dynconv_tests = {
    .algo = &ladder_dynconv_algo,
    .grid = grid,
    .determinism = determinism,
    .oracle_fwd = oracle_fwd,
    .oracle_bwd = oracle_bwd,
    .fd_cases = fd_cases,
    .fd_step = 0.25,
    .fd_tol = 1e-9,
    .args_case = args_case,
};
