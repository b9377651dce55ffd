/*
 * tests/test_rungs.c: every rung of every algorithm against the one below it in trust.
 *
 * 1. The cpu rung against the float64 oracle, over each algorithm's grid (tests/<algo>_cases.c).
 * 2. Every GPU rung against the cpu rung on the same inputs. gpu_naive and gpu_tiled are fp32 and must match to
 *    LADDER_TOL_F32. gpu_tensorcore takes bf16 or fp16: the inputs are rounded to that dtype first, the cpu rung
 *    runs on the rounded values in fp32 (rounding, where the algorithm says so, the intermediates the tensor-core
 *    rung rounds: flash's P and dS, ladder_run_tc_reference()), the tensor-core rung on the same values converted
 *    to the dtype (strides kept), and its outputs must match to ladder_tolerance(dtype). Outputs are NaN-poisoned
 *    before every call.
 * 3. Determinism: 20 runs of every rung, bitwise equal; and the cpu rung bitwise equal at 1, 2, 3 and 7 threads.
 * In 1 and 2, outputs whose elements are sums of terms that cancel (flex's dq, dk, dv and buffer gradients, memeff's
 * dbias) are held to their magnitudes (common/compare.h, ladder_case_magnitudes()) rather than to a share of their
 * value.
 * LADDER_TEST_SMALL=1 shrinks the grids for compute-sanitizer. Without a usable GPU the GPU cases skip.
 */
#include <stdio.h>

#include "harness.h"

/* ---- 1. cpu vs the oracle ----------------------------------------------------------------------------------- */

ParameterizedTestParameters(cpu, matches_oracle) { return test_all(TEST_GRID, LADDER_RUNG_CPU, LADDER_F32); }

ParameterizedTest(const test_case *t, cpu, matches_oracle) {
    ladder_case c;
    test_make(t, &c);
    ladder_result got;
    test_run(t, LADDER_RUNG_CPU, LADDER_F32, &c, &got);
    double *want[LADDER_MAX_TENSORS];
    test_oracle_run(&c, want);
    ladder_magnitudes m; /* outputs that are sums of cancelling terms are held to their magnitudes (compare.h) */
    test_magnitudes(&c, &m);
    for (int i = 0; i < c.algo->n_tensors; i++) {
        if (!got.t[i].data) continue;
        ladder_cmp cmp = test_compare_output_to_f64(&m, i, &got.t[i], want[i], LADDER_TOL_F32);
        test_expect_close("cpu vs oracle", t, c.algo->tensors[i].name, &cmp);
    }
    ladder_magnitudes_free(&m);
    test_oracle_free(want);
    ladder_result_free(&got);
    ladder_case_free(&c);
}

/* ---- 2. every GPU rung vs cpu ------------------------------------------------------------------------------- */

static void check_against_cpu(const test_case *t) {
    harness_require_rung(t);
    char who[96], label[64];
    test_rung_label(t->rung, t->dtype, label, sizeof label);
    snprintf(who, sizeof who, "%s vs cpu", label);
    ladder_case c, rounded = {0};
    test_make(t, &c);
    const ladder_case *in = &c;
    ladder_result want, got;
    if (t->dtype != LADDER_F32) { /* the cpu rung rounds what the tensor-core rung rounds (ladder_run_tc_reference) */
        cr_assert_eq(ladder_case_rounded(&c, t->dtype, &rounded), LADDER_OK, "%s", ladder_last_error());
        in = &rounded;
        cr_assert_eq(ladder_run_tc_reference(&c, t->dtype, &want), LADDER_OK, "%s", ladder_last_error());
    } else {
        test_run(t, LADDER_RUNG_CPU, LADDER_F32, in, &want);
    }
    test_run(t, t->rung, t->dtype, in, &got);
    test_expect_results_close(who, t, &c, &got, &want, ladder_tolerance(t->dtype));
    ladder_result_free(&want);
    ladder_result_free(&got);
    ladder_case_free(&rounded);
    ladder_case_free(&c);
}

ParameterizedTestParameters(gpu_naive, matches_cpu) { return test_all(TEST_GRID, LADDER_RUNG_GPU_NAIVE, LADDER_F32); }
ParameterizedTest(const test_case *t, gpu_naive, matches_cpu) { check_against_cpu(t); }

ParameterizedTestParameters(gpu_tiled, matches_cpu) { return test_all(TEST_GRID, LADDER_RUNG_GPU_TILED, LADDER_F32); }
ParameterizedTest(const test_case *t, gpu_tiled, matches_cpu) { check_against_cpu(t); }

ParameterizedTestParameters(gpu_tensorcore, bf16_matches_cpu) {
    return test_all(TEST_GRID, LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16);
}
ParameterizedTest(const test_case *t, gpu_tensorcore, bf16_matches_cpu) { check_against_cpu(t); }

ParameterizedTestParameters(gpu_tensorcore, fp16_matches_cpu) {
    return test_all(TEST_GRID, LADDER_RUNG_GPU_TENSORCORE, LADDER_F16);
}
ParameterizedTest(const test_case *t, gpu_tensorcore, fp16_matches_cpu) { check_against_cpu(t); }

/* ---- 3. determinism: 20 runs, bitwise-equal outputs --------------------------------------------------------- */

ParameterizedTestParameters(cpu, deterministic) { return test_all(TEST_DETERMINISM, LADDER_RUNG_CPU, LADDER_F32); }
ParameterizedTest(const test_case *t, cpu, deterministic) { test_expect_deterministic(t); }

ParameterizedTestParameters(cpu, thread_count_independent) {
    return test_all(TEST_DETERMINISM, LADDER_RUNG_CPU, LADDER_F32);
}
ParameterizedTest(const test_case *t, cpu, thread_count_independent) { test_expect_thread_count_independent(t); }

ParameterizedTestParameters(gpu, deterministic) { return test_all_gpu_rungs(TEST_DETERMINISM); }
ParameterizedTest(const test_case *t, gpu, deterministic) {
    harness_require_rung(t);
    test_expect_deterministic(t);
}
