/*
 * tests/test_dynconv_oracle.c: what only dynconv's float64 oracle is checked for: its forward and backward
 * match sums written out by hand, and varlen packing equals running each sequence on its own. (Its backward
 * against finite differences, and the cpu rung against it, are the generic suites' work: test_oracle.c and
 * test_rungs.c, with the shapes of dynconv_cases.c.)
 */
#include <criterion/criterion.h>

#include "oracle/dynconv_oracle.h"
#include "rng.h"

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
