/*
 * tests/test_flash_emulation.c: the reference of flash's tensor-core rung rounds P and dS as that rung does
 * (chapter 3, "Comparing the tensor-core rung"), and the comparison against it still catches a wrong element.
 * Everything here runs on the CPU:
 *   - at the case that failed on the H100 (bf16, D = 40: dk's element rule broke, got 0.00463867 want 0.0212039),
 *     the reference (common/attention_tc_reference.h) gives the H100's value, and the plain cpu rung, checked
 *     against it, breaks the element rule exactly as the tensor-core rung did: rounding P and dS explains that
 *     failure, with rel_l2 well inside;
 *   - the emulation rounds measurably (every output moves) and only by rounding (rel_l2 well inside tol), in bf16
 *     and fp16;
 *   - one wrong element in a result that matches the emulated reference is caught, at the element it is;
 *   - an algorithm without an emulation (dynconv, recurrent) gets the plain cpu rung as its reference, bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flash.h"
#include "harness.h"

extern const ladder_algo ladder_flash_algo;

/* The gpu_tensorcore bf16 case that failed on the H100 (tests/flash_cases.c: same problem, same seed). */
static test_case h100_case(void) {
    ladder_flash_problem p = {.attn = {.B = 1, .Hq = 6, .Hkv = 1, .Sq = 1024, .Sk = 1023, .D = 40, .Dv = 40,
                                       .mask = {.causal = 1, .window_left = -1, .window_right = -1}}};
    test_case t = test_case_of(&ladder_flash_algo, &p);
    t.opts.strided = true;
    return t;
}

/* The plain cpu rung on @p c rounded to @p dt: the tensor-core rung's reference before the emulation. */
static void plain_reference(const test_case *t, const ladder_case *c, ladder_dtype dt, ladder_result *r) {
    ladder_case rounded;
    cr_assert_eq(ladder_case_rounded(c, dt, &rounded), LADDER_OK, "%s", ladder_last_error());
    test_run(t, LADDER_RUNG_CPU, LADDER_F32, &rounded, r);
    ladder_case_free(&rounded);
}

static void emulated_reference(const ladder_case *c, ladder_dtype dt, ladder_result *r) {
    cr_assert_eq(ladder_run_tc_reference(c, dt, r), LADDER_OK, "%s", ladder_last_error());
}

static ladder_tensor *tensor(ladder_result *r, const char *name) {
    return &r->t[ladder_algo_tensor(&ladder_flash_algo, name)];
}

Test(flash_emulation, explains_the_h100_failure) {
    test_case t = h100_case();
    ladder_case c;
    test_make(&t, &c);
    ladder_result plain, emulated;
    plain_reference(&t, &c, LADDER_BF16, &plain);
    emulated_reference(&c, LADDER_BF16, &emulated);
    const int64_t at = 2 * 40 + 25; /* dk[0,0,2,25] */
    const double want_plain = ladder_tensor_get(tensor(&plain, "dk"), at);
    const double got_emulated = ladder_tensor_get(tensor(&emulated, "dk"), at);
    cr_expect(fabs(want_plain - 0.0212039) < 1e-6, "not the H100 case's inputs: plain dk %.6g", want_plain);
    /* the H100 gave 0.00463867 (bf16: one unit in the last place there is 3e-5) */
    cr_expect(fabs(got_emulated - 0.00463867) < 1e-4, "emulated dk[0,0,2,25] %.6g, the H100 gave 0.00463867",
              got_emulated);
    /* the plain reference fails the emulated one the way the tensor-core rung failed it, inside the L2 rule */
    ladder_cmp cmp = ladder_compare(tensor(&emulated, "dk"), tensor(&plain, "dk"), LADDER_TOL_BF16);
    cr_expect(!cmp.ok && cmp.rel_l2 < LADDER_TOL_BF16 / 2 && cmp.first_bad >= 0,
              "emulated vs plain dk: expected only the element rule to break: rel_l2 %.3g first_bad %lld",
              cmp.rel_l2, (long long)cmp.first_bad);
    ladder_result_free(&plain);
    ladder_result_free(&emulated);
    ladder_case_free(&c);
}

/* Every output moves (the rounding happens) by no more than rounding does (rel_l2 a fraction of tol). */
static void rounds_every_output(ladder_dtype dt) {
    test_case t = h100_case();
    ladder_case c;
    test_make(&t, &c);
    ladder_result plain, emulated;
    plain_reference(&t, &c, dt, &plain);
    emulated_reference(&c, dt, &emulated);
    const double tol = ladder_tolerance(dt);
    const char *names[] = {"o", "dq", "dk", "dv"};
    for (int k = 0; k < 4; k++) {
        ladder_cmp cmp = ladder_compare(tensor(&emulated, names[k]), tensor(&plain, names[k]), tol);
        cr_expect(cmp.nonfinite_mismatches == 0 && cmp.rel_l2 > tol / 100 && cmp.rel_l2 < tol / 2,
                  "%s: emulated vs plain %s: rel_l2 %.3g, expected between tol/100 and tol/2 (tol %.0e)",
                  ladder_dtype_name(dt), names[k], cmp.rel_l2, tol);
    }
    ladder_result_free(&plain);
    ladder_result_free(&emulated);
    ladder_case_free(&c);
}

Test(flash_emulation, bf16_rounds_every_output_by_rounding_only) { rounds_every_output(LADDER_BF16); }
Test(flash_emulation, f16_rounds_every_output_by_rounding_only) { rounds_every_output(LADDER_F16); }

Test(flash_emulation, a_wrong_element_is_still_caught) {
    test_case t = h100_case();
    ladder_case c;
    test_make(&t, &c);
    ladder_result want, got;
    emulated_reference(&c, LADDER_BF16, &want);
    emulated_reference(&c, LADDER_BF16, &got);
    ladder_check k = ladder_result_check(&c, &got, &want, LADDER_TOL_BF16);
    cr_assert(k.ok, "the emulated reference against itself: %s", k.why);
    /* one dq element, the smallest in size, off by twice what the element rule allows: 8 tol (|b| + rms(b)) */
    ladder_tensor *dq = tensor(&got, "dq");
    const int64_t n = ladder_tensor_numel(dq);
    double sum2 = 0, smallest = INFINITY;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const double v = ladder_tensor_get(dq, i);
        sum2 += v * v;
        if (fabs(v) < smallest) smallest = fabs(v), at = i;
    }
    const double rms = sqrt(sum2 / (double)n);
    ladder_tensor_set(dq, at, ladder_tensor_get(dq, at) + 8 * LADDER_TOL_BF16 * (smallest + rms));
    ladder_cmp cmp = ladder_compare(dq, tensor(&want, "dq"), LADDER_TOL_BF16);
    cr_expect(!cmp.ok && cmp.first_bad == at, "a wrong dq[%lld] went unseen (first bad %lld, rel_l2 %.3g)",
              (long long)at, (long long)cmp.first_bad, cmp.rel_l2);
    cr_expect(cmp.rel_l2 < LADDER_TOL_BF16, "the L2 rule alone would catch it: no test of the element rule");
    ladder_result_free(&want);
    ladder_result_free(&got);
    ladder_case_free(&c);
}

/* Algorithms without an emulation keep the plain cpu rung as the tensor-core reference, bit for bit. */
Test(flash_emulation, other_algorithms_keep_the_plain_reference) {
    for (int a = 0; a < test_n_algos; a++) {
        const test_algo *ta = test_algos[a];
        if (ta->algo->call_emulating) continue;
        test_case cases[64];
        const int n = ta->grid(cases, 64, true);
        cr_assert(n > 0);
        ladder_case c;
        test_make(&cases[0], &c);
        ladder_result plain, ref;
        plain_reference(&cases[0], &c, LADDER_BF16, &plain);
        emulated_reference(&c, LADDER_BF16, &ref);
        for (int i = 0; i < ta->algo->n_tensors; i++) {
            if (!plain.t[i].data) continue;
            ladder_cmp cmp = ladder_compare(&ref.t[i], &plain.t[i], 0);
            cr_expect(cmp.max_abs == 0 && cmp.nonfinite_mismatches == 0, "%s: %s: reference differs (max_abs %.3g)",
                      ta->algo->name, ta->algo->tensors[i].name, cmp.max_abs);
        }
        ladder_result_free(&plain);
        ladder_result_free(&ref);
        ladder_case_free(&c);
    }
}
