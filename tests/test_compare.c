/*
 * tests/test_compare.c: the comparator can fail, and says where.
 *
 * Every other suite trusts ladder_compare(); here it must catch one wrong
 * element among a million (which the relative L2 error alone averages away)
 * and a NaN or Inf against a finite value, and report the first bad element's
 * coordinates. Held to magnitudes (an output whose elements are sums that cancel), an element passes inside its
 * bound and fails just beyond it, however far beyond tol of its value it is.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "compare.h"
#include "rng.h"

/* want: [8,125,1000] = 1,000,000 normals; got: a copy of it */
static ladder_tensor want, got;
static const int64_t shape[3] = {8, 125, 1000};

static void setup(void) {
    cr_assert(ladder_tensor_alloc(&want, LADDER_F32, 3, shape) == LADDER_OK);
    cr_assert(ladder_tensor_alloc(&got, LADDER_F32, 3, shape) == LADDER_OK);
    ladder_rng rng;
    ladder_rng_seed(&rng, 5);
    ladder_rng_fill_normal(&rng, &want, 1.0);
    memcpy(got.data, want.data, (size_t)ladder_tensor_numel(&want) * sizeof(float));
}

static void teardown(void) {
    ladder_tensor_free(&want);
    ladder_tensor_free(&got);
}

TestSuite(compare, .init = setup, .fini = teardown);

static int64_t flat(int64_t i, int64_t j, int64_t k) { return (i * shape[1] + j) * shape[2] + k; }

static void expect_first_bad(const ladder_cmp *c, int64_t i, int64_t j, int64_t k) {
    char text[256];
    ladder_cmp_describe(c, text, sizeof text);
    cr_assert_not(c->ok, "the comparison passed: %s", text);
    cr_assert_eq(c->first_bad, flat(i, j, k), "first_bad is %lld, expected %lld (%s)", (long long)c->first_bad,
                 (long long)flat(i, j, k), text);
    cr_assert_eq(c->rank, 3);
    cr_assert(c->first_bad_at[0] == i && c->first_bad_at[1] == j && c->first_bad_at[2] == k,
              "first_bad_at is [%lld,%lld,%lld], expected [%lld,%lld,%lld]", (long long)c->first_bad_at[0],
              (long long)c->first_bad_at[1], (long long)c->first_bad_at[2], (long long)i, (long long)j, (long long)k);
    char where[64];
    snprintf(where, sizeof where, "first bad [%lld,%lld,%lld]", (long long)i, (long long)j, (long long)k);
    cr_assert(strstr(text, where), "the description \"%s\" does not say \"%s\"", text, where);
}

Test(compare, equal_tensors_pass) {
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    cr_assert(c.ok);
    cr_assert_eq(c.n, 1000000);
    cr_assert_eq(c.first_bad, -1);
    cr_assert_eq(c.rel_l2, 0.0);
}

Test(compare, rounding_noise_inside_the_tolerance_passes) {
    float *g = got.data;
    for (int64_t i = 0; i < 1000000; i++) g[i] *= (i % 2 ? 1.0f + 1e-6f : 1.0f - 1e-6f);
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    char text[256];
    ladder_cmp_describe(&c, text, sizeof text);
    cr_assert(c.ok, "%s", text);
}

Test(compare, one_wrong_element_in_a_million_fails) {
    float *g = got.data;
    g[flat(5, 77, 321)] += 0.005f; /* alone it moves the relative L2 error by only ~5e-6 < 1e-5 */
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    cr_assert_lt(c.rel_l2, LADDER_TOL_F32, "this case is about the element test, so the L2 error must pass alone");
    expect_first_bad(&c, 5, 77, 321);
    cr_assert_float_eq(c.got_at_bad - c.want_at_bad, 0.005, 1e-6);
}

Test(compare, the_first_of_two_wrong_elements_is_reported) {
    float *g = got.data;
    g[flat(7, 0, 1)] += 1.0f;
    g[flat(2, 100, 999)] -= 1.0f;
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    expect_first_bad(&c, 2, 100, 999);
}

Test(compare, nan_against_a_finite_value_fails) {
    float *g = got.data;
    g[flat(3, 124, 0)] = NAN;
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    cr_assert_eq(c.nonfinite_mismatches, 1);
    expect_first_bad(&c, 3, 124, 0);
    cr_assert(isnan(c.got_at_bad));
}

Test(compare, a_finite_value_against_nan_and_inf_fail) {
    float *w = want.data, *g = got.data;
    w[flat(0, 0, 7)] = NAN; /* the reference is NaN where got is finite */
    g[flat(6, 50, 500)] = INFINITY;
    w[flat(6, 50, 501)] = -INFINITY;
    g[flat(6, 50, 501)] = INFINITY; /* opposite infinities */
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    cr_assert_eq(c.nonfinite_mismatches, 3);
    expect_first_bad(&c, 0, 0, 7);
}

Test(compare, matching_nans_do_not_count) {
    float *w = want.data, *g = got.data;
    w[flat(1, 1, 1)] = g[flat(1, 1, 1)] = NAN;
    ladder_cmp c = ladder_compare(&got, &want, LADDER_TOL_F32);
    cr_assert(c.ok);
}

Test(compare, strided_views_compare_by_coordinates) {
    /* got as the transpose of a [1000,125,8] copy of want: same values, other strides */
    ladder_tensor t;
    int64_t tshape[3] = {1000, 125, 8};
    cr_assert(ladder_tensor_alloc(&t, LADDER_F32, 3, tshape) == LADDER_OK);
    for (int64_t i = 0; i < 8; i++)
        for (int64_t j = 0; j < 125; j++)
            for (int64_t k = 0; k < 1000; k++)
                ((float *)t.data)[(k * 125 + j) * 8 + i] = ((float *)want.data)[flat(i, j, k)];
    ladder_tensor view = t;
    view.shape[0] = 8, view.shape[1] = 125, view.shape[2] = 1000;
    view.strides[0] = 1, view.strides[1] = 8, view.strides[2] = 125 * 8;
    ladder_cmp c = ladder_compare(&view, &want, LADDER_TOL_F32);
    cr_assert(c.ok, "a transposed view of the same values must compare equal");
    ((float *)t.data)[(321 * 125 + 77) * 8 + 5] += 1.0f;
    c = ladder_compare(&view, &want, LADDER_TOL_F32);
    expect_first_bad(&c, 5, 77, 321);
    ladder_tensor_free(&t);
}

Test(compare, different_shapes_fail) {
    ladder_tensor small = got;
    small.shape[2] = 999;
    ladder_cmp c = ladder_compare(&small, &want, LADDER_TOL_F32);
    char text[256];
    ladder_cmp_describe(&c, text, sizeof text);
    cr_assert_not(c.ok);
    cr_assert(strstr(text, "shapes differ"), "%s", text);
}

Test(compare, named_tolerances) {
    cr_assert_eq(ladder_tolerance(LADDER_F32), LADDER_TOL_F32);
    cr_assert_eq(ladder_tolerance(LADDER_F16), LADDER_TOL_F16);
    cr_assert_eq(ladder_tolerance(LADDER_BF16), LADDER_TOL_BF16);
}

/* Magnitudes of elements that cancel: each the sum of terms 1000 times its value, with a rounding coefficient. */
static ladder_magnitude cancelling(double **terms, double **rounding) {
    const int64_t n = ladder_tensor_numel(&want);
    *terms = malloc((size_t)n * sizeof(double));
    *rounding = malloc((size_t)n * sizeof(double));
    cr_assert(*terms && *rounding);
    for (int64_t i = 0; i < n; i++) (*terms)[i] = 1000 * fabs(((float *)want.data)[i]) + 1, (*rounding)[i] = 1e3;
    return (ladder_magnitude){*terms, *rounding};
}

static double bound_at(const ladder_magnitude *m, int64_t i) {
    return LADDER_TOL_F32 * m->terms[i] + LADDER_F32_ROUNDING * m->rounding[i];
}

Test(compare, held_to_magnitudes_an_element_passes_inside_its_bound_and_fails_beyond) {
    double *terms, *rounding;
    const ladder_magnitude m = cancelling(&terms, &rounding);
    float *g = got.data;
    const int64_t in = flat(1, 2, 3), out = flat(4, 5, 6);
    g[in] = (float)(((float *)want.data)[in] + 0.9 * bound_at(&m, in));
    ladder_cmp c = ladder_compare_magnitude(&got, &want, &m, LADDER_TOL_F32);
    char text[256];
    ladder_cmp_describe(&c, text, sizeof text);
    cr_assert(c.ok && c.by_magnitude, "0.9 of its bound must pass: %s", text);
    cr_assert(c.worst_share > 0.85 && c.worst_share < 0.95, "the worst element used %g of its bound", c.worst_share);
    cr_assert(strstr(text, "of its magnitudes"), "%s", text);
    g[out] = (float)(((float *)want.data)[out] - 1.1 * bound_at(&m, out));
    c = ladder_compare_magnitude(&got, &want, &m, LADDER_TOL_F32);
    expect_first_bad(&c, 4, 5, 6);
    cr_assert_float_eq(c.bound_at_bad, bound_at(&m, out), 1e-12);
    ladder_cmp_describe(&c, text, sizeof text);
    cr_assert(strstr(text, ", bound "), "the failure must say the bound: %s", text);
    free(terms), free(rounding);
}

Test(compare, held_to_magnitudes_the_l2_rule_does_not_apply) {
    double *terms, *rounding;
    const ladder_magnitude m = cancelling(&terms, &rounding);
    float *g = got.data, *w = want.data;
    for (int64_t i = 0; i < ladder_tensor_numel(&want); i++)
        g[i] = (float)(w[i] + (i % 2 ? 0.5 : -0.5) * bound_at(&m, i));
    ladder_cmp c = ladder_compare_magnitude(&got, &want, &m, LADDER_TOL_F32);
    cr_assert_gt(c.rel_l2, 100 * LADDER_TOL_F32, "every element is far beyond tol of its value (rel_l2 %g)", c.rel_l2);
    cr_assert(c.ok, "yet inside its bound: a cancelling sum is judged by its terms");
    cr_assert_not(ladder_compare(&got, &want, LADDER_TOL_F32).ok, "the plain rule fails it");
    free(terms), free(rounding);
}

/* Near zero, where the magnitudes bound an element by less than a normal float, bf16 and f32 sides may still differ
 * by the smallest normal float (a flushed subnormal), and by no more. */
Test(compare, held_to_magnitudes_subnormals_may_differ_by_the_smallest_normal_float) {
    const int64_t n = 1;
    ladder_tensor g16, w16;
    cr_assert(ladder_tensor_alloc(&g16, LADDER_BF16, 1, &n) == LADDER_OK);
    cr_assert(ladder_tensor_alloc(&w16, LADDER_BF16, 1, &n) == LADDER_OK);
    double terms = 1e-36; /* a bound of tol * 1e-36, far below 2^-126 */
    const ladder_magnitude m = {&terms, NULL};
    ladder_tensor_set(&g16, 0, 5.1e-39);
    ladder_tensor_set(&w16, 0, -1.1e-38);
    cr_assert(ladder_compare_magnitude(&g16, &w16, &m, LADDER_TOL_BF16).ok, "a flushed subnormal's difference passes");
    ladder_tensor_set(&g16, 0, 1.5e-38);
    cr_assert_not(ladder_compare_magnitude(&g16, &w16, &m, LADDER_TOL_BF16).ok, "2.6e-38 apart must fail");
    ladder_tensor_free(&g16);
    ladder_tensor_free(&w16);
}

Test(compare, held_to_magnitudes_nan_still_fails_and_rounding_may_be_absent) {
    double *terms, *rounding;
    ladder_magnitude m = cancelling(&terms, &rounding);
    m.rounding = NULL; /* tol * terms alone */
    float *g = got.data;
    const int64_t at = flat(2, 3, 4);
    g[at] = (float)(((float *)want.data)[at] + 0.9 * LADDER_TOL_F32 * terms[at]);
    cr_assert(ladder_compare_magnitude(&got, &want, &m, LADDER_TOL_F32).ok);
    g[flat(7, 7, 7)] = NAN;
    ladder_cmp c = ladder_compare_magnitude(&got, &want, &m, LADDER_TOL_F32);
    cr_assert_eq(c.nonfinite_mismatches, 1);
    expect_first_bad(&c, 7, 7, 7);
    free(terms), free(rounding);
}
