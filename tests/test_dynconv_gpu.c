/*
 * tests/test_dynconv_gpu.c: every GPU rung against the cpu rung, on the same inputs.
 *
 * gpu_naive and gpu_tiled are fp32 and must match the cpu rung to
 * LADDER_TOL_F32. gpu_tensorcore takes bf16 or fp16: its inputs are rounded
 * to that dtype first, the cpu rung runs on the rounded values in fp32, the
 * tensor-core rung on the same values converted to the dtype (strides kept),
 * and its outputs (in that dtype) must match to ladder_tolerance(dtype).
 * Outputs are NaN-poisoned on the device before every call.
 *
 * The grid is harness.c's (strided and varlen shapes included);
 * LADDER_TEST_SMALL=1 shrinks it for compute-sanitizer. Without a usable GPU
 * every case here is skipped with the reason.
 */
#include <stdio.h>

#include "harness.h"

/* Run the cpu rung and @p rung on one case and compare out, dx and dkernels. */
static void check_against_cpu(ladder_rung rung, ladder_dtype dtype, const dc_shape *s) {
    harness_require_rung(rung);
    char who[96], label[64];
    dc_rung_label(rung, dtype, label, sizeof label);
    snprintf(who, sizeof who, "%s vs cpu", label);

    dc_case c;
    dc_case_make(&c, s, 0);
    if (rung == LADDER_RUNG_GPU_TENSORCORE) dc_case_round_inputs(&c, dtype);
    dc_result want, got;
    dc_run(LADDER_RUNG_CPU, LADDER_F32, &c, &want);
    dc_run(rung, dtype, &c, &got);

    double tol = ladder_tolerance(rung == LADDER_RUNG_GPU_TENSORCORE ? dtype : LADDER_F32);
    ladder_cmp cmp = ladder_compare(&got.out, &want.out, tol);
    dc_expect_close(who, s, "out", &cmp);
    cmp = ladder_compare(&got.dx, &want.dx, tol);
    dc_expect_close(who, s, "dx", &cmp);
    cmp = ladder_compare(&got.dkernels, &want.dkernels, tol);
    dc_expect_close(who, s, "dkernels", &cmp);

    dc_result_free(&want);
    dc_result_free(&got);
    dc_case_free(&c);
}

ParameterizedTestParameters(dynconv_gpu_naive, matches_cpu) { return dc_grid_params(); }
ParameterizedTest(const dc_shape *s, dynconv_gpu_naive, matches_cpu) {
    check_against_cpu(LADDER_RUNG_GPU_NAIVE, LADDER_F32, s);
}

ParameterizedTestParameters(dynconv_gpu_tiled, matches_cpu) { return dc_grid_params(); }
ParameterizedTest(const dc_shape *s, dynconv_gpu_tiled, matches_cpu) {
    check_against_cpu(LADDER_RUNG_GPU_TILED, LADDER_F32, s);
}

ParameterizedTestParameters(dynconv_gpu_tensorcore, bf16_matches_cpu) { return dc_grid_params(); }
ParameterizedTest(const dc_shape *s, dynconv_gpu_tensorcore, bf16_matches_cpu) {
    check_against_cpu(LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16, s);
}

ParameterizedTestParameters(dynconv_gpu_tensorcore, fp16_matches_cpu) { return dc_grid_params(); }
ParameterizedTest(const dc_shape *s, dynconv_gpu_tensorcore, fp16_matches_cpu) {
    check_against_cpu(LADDER_RUNG_GPU_TENSORCORE, LADDER_F16, s);
}

/* ---- determinism: 10 repeats, bitwise-equal outputs -------------------------------------------------------- */

typedef struct rung_case {
    ladder_rung rung;
    ladder_dtype dtype;
    dc_shape shape;
} rung_case;

#define VARLEN_EDGE .n_seqs = 8, .seqlens = {0, 1, 5, 0, 0, 64, 1, 30}
static const rung_case determinism_cases[] = {
    {LADDER_RUNG_GPU_NAIVE, LADDER_F32, {.B = 3, .T = 300, .D = 129, .W = 31, .strided = true}},
    {LADDER_RUNG_GPU_NAIVE, LADDER_F32, {.B = 1, .T = 101, .D = 130, .W = 64, VARLEN_EDGE}},
    {LADDER_RUNG_GPU_TILED, LADDER_F32, {.B = 3, .T = 300, .D = 129, .W = 31, .strided = true}},
    {LADDER_RUNG_GPU_TILED, LADDER_F32, {.B = 1, .T = 101, .D = 130, .W = 64, VARLEN_EDGE}},
    {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16, {.B = 3, .T = 300, .D = 129, .W = 31, .strided = true}},
    {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16, {.B = 1, .T = 101, .D = 130, .W = 64, VARLEN_EDGE}},
    {LADDER_RUNG_GPU_TENSORCORE, LADDER_F16, {.B = 3, .T = 300, .D = 129, .W = 31, .strided = true}},
    {LADDER_RUNG_GPU_TENSORCORE, LADDER_F16, {.B = 1, .T = 101, .D = 130, .W = 64, VARLEN_EDGE}},
};

ParameterizedTestParameters(dynconv_gpu, deterministic) {
    return cr_make_param_array(rung_case, (void *)determinism_cases,
                               sizeof determinism_cases / sizeof determinism_cases[0]);
}

ParameterizedTest(const rung_case *rc, dynconv_gpu, deterministic) {
    harness_require_rung(rc->rung);
    dc_expect_deterministic(rc->rung, rc->dtype, &rc->shape);
}
