/*
 * tests/test_memeff_tf32.c: memeff's fp32 inputs at the tensor-core rung (TF32 products, attention_tf32.cuh).
 *
 * On a GPU (suite gpu_tensorcore_f32; LADDER_TEST_ALGO and LADDER_TEST_SMALL pick the cases as for every suite):
 * 1. memeff's grid, f32 inputs, against the cpu rung on the same inputs: three TF32 products at LADDER_TOL_3XTF32
 *    on the inputs as drawn (the products' small parts are what is tested), one (allow_tf32) at LADDER_TOL_TF32 on
 *    inputs rounded to TF32 first, for both sides (round_to_tf32), as the 16-bit tests round theirs (the
 *    tolerances are argued in common/compare.h). The grid's head dims above 128 must be refused, naming the limit.
 * 2. Its determinism cases repeat bitwise, with one product and with three.
 * The bias shapes, dropout's Philox mask, split keys, -inf biases, NaN rows and the 20 deterministic repeats are
 * test_memeff.c's, which runs the tensor-core rung in f32 too.
 *
 * Here and everywhere (suite memeff_f32_args): which algorithms take f32 at the tensor-core rung, the refusals
 * naming the algorithm and the dtype, the head-dim limit, and the tolerance each precision is held to.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "memeff.h"

extern const ladder_algo ladder_memeff_algo;

#define TC LADDER_RUNG_GPU_TENSORCORE

/* Every selected algorithm's cases of @p list that have an f32 tensor-core path, at that rung in f32, with
 * allow_tf32 = @p one_product. */
static struct criterion_test_params f32_cases(test_list list, bool one_product) {
    struct criterion_test_params all = test_all(list, TC, LADDER_F32);
    test_case *c = all.params;
    size_t n = 0;
    for (size_t i = 0; i < all.length; i++) {
        const ladder_algo *a = test_case_algo(&c[i]);
        if (!a->tc_f32) continue;
        c[n] = c[i];
        ladder_param_set(a, c[n].problem, ladder_algo_param(a, "allow_tf32"), one_product);
        n++;
    }
    all.length = n;
    return all;
}

static bool one_product(const test_case *t) {
    const ladder_algo *a = test_case_algo(t);
    return ladder_param_get(a, t->problem, ladder_algo_param(a, "allow_tf32")) != 0;
}

/* ---- 1. the grid against the cpu rung -------------------------------------------------------------------------- */

/* x rounded to TF32's 10 explicit mantissa bits (to nearest, ties away from zero, as cvt.rna.tf32.f32 rounds). */
static float tf32_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu; /* Inf and NaN stay */
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Every f32 input and output buffer of @p c, except those that stay f32 at every rung (lse, dlse), rounded to
 * TF32 in place: the one-product kernels then round nothing on the way in, and where a row sees one key, dS =
 * P (dP - Delta) is a difference of equal terms on both sides again (rounded on one side only, it was that
 * rounding, 2^-11 of dO.v, against dbias's small elements). */
static void round_to_tf32(ladder_case *c) {
    for (int i = 0; i < c->algo->n_tensors; i++) {
        ladder_tensor *b = &c->buf[i];
        if (!b->data || b->dtype != LADDER_F32 || (c->algo->tensors[i].role & LADDER_KEEP_F32)) continue;
        float *x = (float *)b->data;
        for (int64_t e = 0, n = ladder_tensor_numel(b); e < n; e++) x[e] = tf32_of(x[e]);
    }
}

static void check_f32_against_cpu(const test_case *t) {
    harness_require_rung(t);
    const ladder_memeff_problem *p = (const ladder_memeff_problem *)(const void *)t->problem;
    char who[96], what[512];
    snprintf(who, sizeof who, "gpu_tensorcore (f32, %s) vs cpu", one_product(t) ? "one TF32 product" : "three");
    test_case_str(t, what, sizeof what);
    ladder_case c;
    test_make(t, &c);
    ladder_result want, got;
    if (p->attn.D > LADDER_MEMEFF_TF32_MAX_HEAD_DIM || p->attn.Dv > LADDER_MEMEFF_TF32_MAX_HEAD_DIM) {
        const ladder_run_opts once = {0};
        const ladder_status st = ladder_run(t->rung, t->dtype, &c, &once, &got);
        cr_assert_eq(st, LADDER_ERR_UNSUPPORTED, "%s on %s returned %s, not LADDER_ERR_UNSUPPORTED (%s)", who, what,
                     ladder_status_name(st), ladder_last_error());
        cr_assert_not_null(strstr(ladder_last_error(), "head dims up to 128"), "%s on %s: the refusal \"%s\" does "
                           "not name the limit", who, what, ladder_last_error());
        ladder_case_free(&c);
        return;
    }
    if (one_product(t)) round_to_tf32(&c);
    test_run(t, LADDER_RUNG_CPU, LADDER_F32, &c, &want);
    test_run(t, t->rung, t->dtype, &c, &got);
    test_expect_results_close(who, t, &c, &got, &want, ladder_run_tolerance(&c, t->rung, t->dtype));
    ladder_result_free(&want);
    ladder_result_free(&got);
    ladder_case_free(&c);
}

ParameterizedTestParameters(gpu_tensorcore_f32, three_products_match_cpu) { return f32_cases(TEST_GRID, false); }
ParameterizedTest(const test_case *t, gpu_tensorcore_f32, three_products_match_cpu) { check_f32_against_cpu(t); }

ParameterizedTestParameters(gpu_tensorcore_f32, one_product_matches_cpu) { return f32_cases(TEST_GRID, true); }
ParameterizedTest(const test_case *t, gpu_tensorcore_f32, one_product_matches_cpu) { check_f32_against_cpu(t); }

/* ---- 2. determinism --------------------------------------------------------------------------------------------- */

ParameterizedTestParameters(gpu_tensorcore_f32, three_products_deterministic) {
    return f32_cases(TEST_DETERMINISM, false);
}
ParameterizedTest(const test_case *t, gpu_tensorcore_f32, three_products_deterministic) {
    harness_require_rung(t);
    test_expect_deterministic(t);
}

ParameterizedTestParameters(gpu_tensorcore_f32, one_product_deterministic) {
    return f32_cases(TEST_DETERMINISM, true);
}
ParameterizedTest(const test_case *t, gpu_tensorcore_f32, one_product_deterministic) {
    harness_require_rung(t);
    test_expect_deterministic(t);
}

/* ---- everywhere: who takes f32 at the tensor-core rung, and how closely it must match ------------------------ */

/* memeff's tensors for a problem of head dims @p D, @p Dv as host views (a full bias), outputs allocated: the
 * dispatchers' checks run on them, and the refusals tested here come before any data is read. */
static ladder_case c;
static ladder_memeff_args a;
static ladder_tensor outs[6];
static const char *const out_names[6] = {"o", "lse", "dq", "dk", "dv", "dbias"};

static void make_args(int64_t D, int64_t Dv) {
    const ladder_memeff_problem p = {.attn = {.B = 1, .Hq = 2, .Hkv = 1, .Sq = 5, .Sk = 7, .D = D, .Dv = Dv,
                                              .mask = {.causal = 0, .window_left = -1, .window_right = -1}},
                                     .dropout_p = 0.1, .philox_seed = 3};
    const ladder_case_opts o = {.seed = 5, .with = 1u << ladder_algo_tensor(&ladder_memeff_algo, "bias")};
    cr_assert_eq(ladder_case_make(&c, &ladder_memeff_algo, &p, &o), LADDER_OK, "%s", ladder_last_error());
    memset(&a, 0, sizeof a);
    for (int i = 0; i < ladder_memeff_algo.n_tensors; i++)
        if (c.t[i].data) *(ladder_tensor *)((char *)&a + ladder_memeff_algo.tensors[i].offset) = c.t[i];
    for (int i = 0; i < 6; i++) {
        const int k = ladder_algo_tensor(&ladder_memeff_algo, out_names[i]);
        int64_t shape[LADDER_MAX_RANK];
        const int rank = ladder_case_shape(&c, k, shape);
        cr_assert_eq(ladder_tensor_alloc(&outs[i], LADDER_F32, rank, shape), LADDER_OK);
        *(ladder_tensor *)((char *)&a + ladder_memeff_algo.tensors[k].offset) = outs[i];
    }
}

static void free_args(void) {
    for (int i = 0; i < 6; i++) ladder_tensor_free(&outs[i]);
    ladder_case_free(&c);
}


Test(memeff_f32_args, head_dims_over_128_are_refused_at_the_tensor_core_rung) {
    const int64_t dims[2][2] = {{129, 64}, {64, 192}};
    for (int i = 0; i < 2; i++) {
        make_args(dims[i][0], dims[i][1]);
        const ladder_memeff_problem *p = (const ladder_memeff_problem *)(const void *)c.problem;
        ladder_status st = ladder_memeff_fwd(TC, p, &a);
        cr_assert_eq(st, LADDER_ERR_UNSUPPORTED, "D = %lld, Dv = %lld: the forward returned %s (%s)",
                     (long long)dims[i][0], (long long)dims[i][1], ladder_status_name(st), ladder_last_error());
        cr_assert_not_null(strstr(ladder_last_error(), "takes f32 inputs (its TF32 kernels) at head dims up to 128"),
                           "%s", ladder_last_error());
        st = ladder_memeff_bwd(TC, p, &a);
        cr_assert_eq(st, LADDER_ERR_UNSUPPORTED, "the backward returned %s (%s)", ladder_status_name(st),
                     ladder_last_error());
        /* the cpu rung takes these head dims in f32 (validation only: a NaN-free run is the suites' business) */
        cr_assert_eq(ladder_memeff_fwd(LADDER_RUNG_CPU, p, &a), LADDER_OK, "%s", ladder_last_error());
        free_args();
    }
}

/* Without a GPU the rung cannot run, but an f32 call gets past every dtype and head-dim check to say so. */
Test(memeff_f32_args, f32_passes_the_tensor_core_rungs_checks) {
    if (ladder_rung_available(TC) == LADDER_OK) cr_skip_test("a GPU is here: suite gpu_tensorcore_f32 runs it");
    make_args(128, 40);
    const ladder_memeff_problem *p = (const ladder_memeff_problem *)(const void *)c.problem;
    ladder_status st = ladder_memeff_fwd(TC, p, &a);
    cr_assert_eq(st, LADDER_ERR_UNAVAILABLE, "%s: %s", ladder_status_name(st), ladder_last_error());
    st = ladder_memeff_bwd(TC, p, &a);
    cr_assert_eq(st, LADDER_ERR_UNAVAILABLE, "%s: %s", ladder_status_name(st), ladder_last_error());
    free_args();
}

Test(memeff_f32_args, only_memeff_takes_f32_at_the_tensor_core_rung) {
    for (int i = 0; i < ladder_n_algos; i++) {
        const ladder_algo *algo = ladder_algos[i];
        const ladder_status st = ladder_algo_takes(algo, TC, LADDER_F32);
        if (algo == &ladder_memeff_algo) {
            cr_assert_eq(st, LADDER_OK, "memeff: %s", ladder_last_error());
            continue;
        }
        cr_assert_eq(st, LADDER_ERR_UNSUPPORTED, "%s takes f32 at the tensor-core rung?", algo->name);
        char want[128];
        snprintf(want, sizeof want, "%s has no f32 inputs at rung gpu_tensorcore", algo->name);
        cr_assert_not_null(strstr(ladder_last_error(), want), "\"%s\" should say \"%s\"", ladder_last_error(), want);
        /* and every engine run of it refuses, before any data moves */
        ladder_case other;
        _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX];
        ladder_problem_defaults(algo, problem);
        const ladder_case_opts o = {.seed = 1};
        cr_assert_eq(ladder_case_make(&other, algo, problem, &o), LADDER_OK, "%s", ladder_last_error());
        ladder_result r;
        const ladder_run_opts once = {0};
        cr_assert_eq(ladder_run(TC, LADDER_F32, &other, &once, &r), LADDER_ERR_UNSUPPORTED, "%s", algo->name);
        cr_assert_not_null(strstr(ladder_last_error(), want), "%s", ladder_last_error());
        ladder_case_free(&other);
    }
    cr_assert_eq(ladder_algo_takes(&ladder_memeff_algo, LADDER_RUNG_CPU, LADDER_BF16), LADDER_ERR_UNSUPPORTED);
    cr_assert_eq(ladder_algo_takes(&ladder_memeff_algo, TC, LADDER_I32), LADDER_ERR_UNSUPPORTED);
}

Test(memeff_f32_args, the_tolerance_follows_allow_tf32) {
    make_args(8, 8);
    ladder_memeff_problem *p = (ladder_memeff_problem *)(void *)c.problem;
    cr_assert_eq(ladder_run_tolerance(&c, TC, LADDER_F32), LADDER_TOL_3XTF32, "three products: their own tolerance");
    cr_assert_eq(ladder_run_tolerance(&c, TC, LADDER_BF16), LADDER_TOL_BF16);
    p->allow_tf32 = true;
    cr_assert_eq(ladder_run_tolerance(&c, TC, LADDER_F32), LADDER_TOL_TF32, "one product: TF32's tolerance");
    cr_assert_eq(ladder_run_tolerance(&c, TC, LADDER_F16), LADDER_TOL_F16, "allow_tf32 leaves 16-bit inputs alone");
    cr_assert_eq(ladder_run_tolerance(&c, LADDER_RUNG_GPU_TILED, LADDER_F32), LADDER_TOL_F32,
                 "allow_tf32 leaves the fp32 rungs alone");
    /* compare.h: one product is looser than fp32's and no tighter than bf16's; three are fp32's within 2x */
    cr_assert(LADDER_TOL_TF32 > LADDER_TOL_F32 && LADDER_TOL_TF32 <= LADDER_TOL_BF16);
    cr_assert(LADDER_TOL_3XTF32 >= LADDER_TOL_F32 && LADDER_TOL_3XTF32 <= 8 * LADDER_TOL_F32);
    free_args();
}
