/*
 * tests/test_dynconv_oracle.c: the float64 oracle, then the cpu rung against it.
 *
 * 1. The oracle forward matches sums written out by hand, and varlen packing
 *    equals running each sequence on its own.
 * 2. The oracle backward matches central finite differences of the oracle
 *    forward, for loss = sum(out * dout), at every input coordinate.
 * 3. The cpu rung (through the dispatchers) matches the oracle to
 *    LADDER_TOL_F32 over the shape grid of harness.c, and repeats bitwise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "oracle/dynconv_oracle.h"
#include "rng.h"

/* ---- 1. the oracle forward, by hand ------------------------------------------------------------------------- */

Test(dynconv_oracle, forward_and_backward_match_hand_written_sums) {
    /* B=1, T=3, D=1, W=2: out[t] = k[t,0] * x[t-1] + k[t,1] * x[t] */
    ladder_dynconv_problem p = {.B = 1, .T = 3, .D = 1, .W = 2};
    const double x[3] = {0.3, -1.7, 2.9};
    const double k[6] = {0.11, -0.5, 1.3, 0.7, -2.1, 0.45}; /* k[t*2 + w] */
    const double g[3] = {0.9, -0.25, 1.6};                  /* dout */
    double out[3], dx[3], dk[6];

    dynconv_oracle_fwd(&p, NULL, 0, x, k, out);
    cr_expect_float_eq(out[0], k[1] * x[0], 1e-15, "out[0] sees only x[0]: x[-1] is zero padding");
    cr_expect_float_eq(out[1], k[2] * x[0] + k[3] * x[1], 1e-15);
    cr_expect_float_eq(out[2], k[4] * x[1] + k[5] * x[2], 1e-15);

    dynconv_oracle_bwd(&p, NULL, 0, x, k, g, dx, dk);
    cr_expect_float_eq(dx[0], g[0] * k[1] + g[1] * k[2], 1e-15);
    cr_expect_float_eq(dx[1], g[1] * k[3] + g[2] * k[4], 1e-15);
    cr_expect_float_eq(dx[2], g[2] * k[5], 1e-15);
    cr_expect_eq(dk[0], 0.0, "dk[0,0] multiplies padding, so it is exactly 0");
    cr_expect_float_eq(dk[1], g[0] * x[0], 1e-15);
    cr_expect_float_eq(dk[2], g[1] * x[0], 1e-15);
    cr_expect_float_eq(dk[3], g[1] * x[1], 1e-15);
    cr_expect_float_eq(dk[4], g[2] * x[1], 1e-15);
    cr_expect_float_eq(dk[5], g[2] * x[2], 1e-15);

    /* the same tokens packed as sequences [0,1) and [1,3): token 1 no longer sees token 0 */
    const int32_t cu[3] = {0, 1, 3};
    dynconv_oracle_fwd(&p, cu, 2, x, k, out);
    cr_expect_float_eq(out[0], k[1] * x[0], 1e-15);
    cr_expect_float_eq(out[1], k[3] * x[1], 1e-15, "token 1 starts a sequence: x[0] is not in its window");
    cr_expect_float_eq(out[2], k[4] * x[1] + k[5] * x[2], 1e-15);
    dynconv_oracle_bwd(&p, cu, 2, x, k, g, dx, dk);
    cr_expect_float_eq(dx[0], g[0] * k[1], 1e-15, "dx[0] must not reach token 1 in the next sequence");
    cr_expect_eq(dk[2], 0.0, "dk[1,0] multiplies padding in the packed case");
}

/* Packing sequences along T with cu_seqlens equals running each sequence as its own batch of one. */
Test(dynconv_oracle, varlen_equals_each_sequence_alone) {
    const int32_t lens[6] = {0, 4, 1, 0, 7, 3}; /* empty first, a length-1 one, two empties */
    int32_t cu[7] = {0};
    for (int i = 0; i < 6; i++) cu[i + 1] = cu[i] + lens[i];
    const int64_t T = cu[6], D = 3;
    const int W = 5;
    ladder_dynconv_problem packed = {.B = 1, .T = T, .D = D, .W = W};
    double x[15 * 3], k[15 * 3 * 5], g[15 * 3], out[15 * 3], dx[15 * 3], dk[15 * 3 * 5];
    ladder_rng rng;
    ladder_rng_seed(&rng, 7);
    for (int i = 0; i < T * D; i++) x[i] = ladder_rng_normal(&rng), g[i] = ladder_rng_normal(&rng);
    for (int i = 0; i < T * D * W; i++) k[i] = ladder_rng_normal(&rng);
    dynconv_oracle_fwd(&packed, cu, 6, x, k, out);
    dynconv_oracle_bwd(&packed, cu, 6, x, k, g, dx, dk);
    for (int i = 0; i < 6; i++) {
        if (lens[i] == 0) continue;
        ladder_dynconv_problem alone = {.B = 1, .T = lens[i], .D = D, .W = W};
        int64_t t0 = cu[i];
        double o1[7 * 3], dx1[7 * 3], dk1[7 * 3 * 5];
        dynconv_oracle_fwd(&alone, NULL, 0, x + t0 * D, k + t0 * D * W, o1);
        dynconv_oracle_bwd(&alone, NULL, 0, x + t0 * D, k + t0 * D * W, g + t0 * D, dx1, dk1);
        for (int64_t j = 0; j < lens[i] * D; j++) {
            cr_assert_eq(out[t0 * D + j], o1[j], "sequence %d, element %lld: out differs packed vs alone", i,
                         (long long)j);
            cr_assert_eq(dx[t0 * D + j], dx1[j], "sequence %d, element %lld: dx differs packed vs alone", i,
                         (long long)j);
        }
        for (int64_t j = 0; j < lens[i] * D * W; j++)
            cr_assert_eq(dk[t0 * D * W + j], dk1[j], "sequence %d, element %lld: dkernels differs packed vs alone", i,
                         (long long)j);
    }
}

/* ---- 2. the oracle backward against finite differences ------------------------------------------------------ */

static const dc_shape fd_shapes[] = {
    {.B = 2, .T = 6, .D = 3, .W = 3},
    {.B = 1, .T = 3, .D = 2, .W = 5}, /* W > T */
    {.B = 3, .T = 4, .D = 1, .W = 1},
    {.B = 2, .T = 2, .D = 2, .W = 8}, /* W > T with B > 1 */
    {.B = 1, .T = 9, .D = 2, .W = 4, .n_seqs = 4, .seqlens = {2, 0, 1, 6}},
    {.B = 1, .T = 7, .D = 2, .W = 8, .n_seqs = 5, .seqlens = {0, 3, 1, 3, 0}}, /* varlen, W > every length */
};

/* loss = sum(out * dout), from the oracle forward */
static double loss(const ladder_dynconv_problem *p, const int32_t *cu, int n_seqs, const double *x, const double *k,
                   const double *g, double *scratch) {
    dynconv_oracle_fwd(p, cu, n_seqs, x, k, scratch);
    double sum = 0;
    for (int64_t i = 0; i < p->B * p->T * p->D; i++) sum += scratch[i] * g[i];
    return sum;
}

/*
 * Central difference of the loss in every coordinate of v. The loss is
 * linear in each single coordinate (bilinear in x and kernels), so the
 * central difference is exact for any step; h = 0.25 keeps cancellation
 * away and leaves only rounding, far below the 1e-9 tolerance.
 */
static void central_differences(const ladder_dynconv_problem *p, const int32_t *cu, int n_seqs, double *x, double *k,
                                const double *g, double *v, int64_t n, double *grad) {
    const double h = 0.25;
    double *scratch = malloc((size_t)(p->B * p->T * p->D) * sizeof *scratch);
    cr_assert(scratch);
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + h;
        double up = loss(p, cu, n_seqs, x, k, g, scratch);
        v[i] = keep - h;
        double down = loss(p, cu, n_seqs, x, k, g, scratch);
        v[i] = keep;
        grad[i] = (up - down) / (2 * h);
    }
    free(scratch);
}

ParameterizedTestParameters(dynconv_oracle, backward_matches_finite_differences) {
    return cr_make_param_array(dc_shape, (void *)fd_shapes, sizeof fd_shapes / sizeof fd_shapes[0]);
}

ParameterizedTest(const dc_shape *s, dynconv_oracle, backward_matches_finite_differences) {
    ladder_dynconv_problem p = {.B = s->B, .T = s->T, .D = s->D, .W = s->W};
    const int64_t n3 = s->B * s->T * s->D, n4 = n3 * s->W;
    int32_t cu[DC_MAX_SEQS + 1] = {0};
    for (int i = 0; i < s->n_seqs; i++) cu[i + 1] = cu[i] + s->seqlens[i];
    double *x = malloc(n3 * sizeof *x), *k = malloc(n4 * sizeof *k), *g = malloc(n3 * sizeof *g);
    double *dx = malloc(n3 * sizeof *dx), *dk = malloc(n4 * sizeof *dk);
    double *fdx = malloc(n3 * sizeof *fdx), *fdk = malloc(n4 * sizeof *fdk);
    cr_assert(x && k && g && dx && dk && fdx && fdk);
    ladder_rng rng;
    ladder_rng_seed(&rng, 1234 + (uint64_t)s->T);
    for (int64_t i = 0; i < n3; i++) x[i] = ladder_rng_normal(&rng), g[i] = ladder_rng_normal(&rng);
    for (int64_t i = 0; i < n4; i++) k[i] = ladder_rng_normal(&rng);
    const int32_t *cup = s->n_seqs ? cu : NULL;

    dynconv_oracle_bwd(&p, cup, s->n_seqs, x, k, g, dx, dk);
    central_differences(&p, cup, s->n_seqs, x, k, g, x, n3, fdx);
    central_differences(&p, cup, s->n_seqs, x, k, g, k, n4, fdk);

    int64_t s3[3] = {s->B, s->T, s->D}, s4[4] = {s->B, s->T, s->D, s->W};
    ladder_cmp cx = ladder_compare_f64(dx, fdx, 3, s3, 1e-9);
    ladder_cmp ck = ladder_compare_f64(dk, fdk, 4, s4, 1e-9);
    dc_expect_close("oracle backward vs finite differences", s, "dx", &cx);
    dc_expect_close("oracle backward vs finite differences", s, "dkernels", &ck);
    free(x), free(k), free(g), free(dx), free(dk), free(fdx), free(fdk);
}

/* ---- 3. the cpu rung against the oracle --------------------------------------------------------------------- */

ParameterizedTestParameters(dynconv_cpu, matches_oracle) { return dc_grid_params(); }

ParameterizedTest(const dc_shape *s, dynconv_cpu, matches_oracle) {
    dc_case c;
    dc_case_make(&c, s, 0);
    dc_result got;
    dc_run(LADDER_RUNG_CPU, LADDER_F32, &c, &got);

    ladder_dynconv_args a = {.x = c.x, .kernels = c.kernels, .dout = c.dout, .cu_seqlens = c.cu_seqlens};
    double *out = dynconv_oracle_fwd_tensors(&c.problem, &a);
    cr_assert(out, "out of memory in the oracle forward");
    ladder_cmp cmp = dc_compare_to_f64(&got.out, out, LADDER_TOL_F32);
    free(out);
    dc_expect_close("cpu vs oracle", s, "out", &cmp);

    double *dx, *dk;
    cr_assert(dynconv_oracle_bwd_tensors(&c.problem, &a, &dx, &dk) == 0, "out of memory in the oracle backward");
    cmp = dc_compare_to_f64(&got.dx, dx, LADDER_TOL_F32);
    free(dx);
    dc_expect_close("cpu vs oracle", s, "dx", &cmp);
    cmp = dc_compare_to_f64(&got.dkernels, dk, LADDER_TOL_F32);
    free(dk);
    dc_expect_close("cpu vs oracle", s, "dkernels", &cmp);

    dc_result_free(&got);
    dc_case_free(&c);
}

static const dc_shape determinism_shapes[] = {
    {.B = 3, .T = 300, .D = 129, .W = 31, .strided = true},
    {.B = 1, .T = 101, .D = 130, .W = 64, .n_seqs = 8, .seqlens = {0, 1, 5, 0, 0, 64, 1, 30}},
};

ParameterizedTestParameters(dynconv_cpu, deterministic) {
    return cr_make_param_array(dc_shape, (void *)determinism_shapes,
                               sizeof determinism_shapes / sizeof determinism_shapes[0]);
}

ParameterizedTest(const dc_shape *s, dynconv_cpu, deterministic) {
    dc_expect_deterministic(LADDER_RUNG_CPU, LADDER_F32, s);
}
