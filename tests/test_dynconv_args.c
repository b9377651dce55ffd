/*
 * tests/test_dynconv_args.c: the bad input only dynconv has (cu_seqlens, sizes whose product overflows, the
 * tensor-core rung's dtype rule), through ladder_dynconv_fwd/bwd; what every algorithm shares (missing tensors,
 * shapes, strides, contiguity, overlap, ranges, rungs) is tests/test_args.c's, from the descriptors.
 *
 * Each case asserts the status from DESIGN.md's table, that
 * ladder_last_error() names the argument, and that nothing was written
 * (the outputs stay NaN). The dispatcher checks, in order: the rung number,
 * the problem (null, sizes, W, cu_seqlens with B > 1, x, kernels), the
 * outputs (shape, contiguity, then overlap with the inputs and each other), dtypes, availability, then the contents
 * of cu_seqlens; so dtype cases of the GPU rungs run here without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dynconv.h"
#include "rng.h"

/* A valid problem: B=2, T=5, D=3, W=4, f32 host tensors; outputs NaN. */
static ladder_dynconv_problem p;
static ladder_dynconv_args a;
static ladder_tensor x, kernels, out, dout, dx, dkernels; /* the allocations; a holds (possibly altered) copies */

static void setup(void) {
    p = (ladder_dynconv_problem){.B = 2, .T = 5, .D = 3, .W = 4};
    int64_t btd[3] = {2, 5, 3}, btdw[4] = {2, 5, 3, 4};
    ladder_tensor *t3[] = {&x, &out, &dout, &dx};
    for (int i = 0; i < 4; i++) cr_assert(ladder_tensor_alloc(t3[i], LADDER_F32, 3, btd) == LADDER_OK);
    cr_assert(ladder_tensor_alloc(&kernels, LADDER_F32, 4, btdw) == LADDER_OK);
    cr_assert(ladder_tensor_alloc(&dkernels, LADDER_F32, 4, btdw) == LADDER_OK);
    ladder_rng rng;
    ladder_rng_seed(&rng, 11);
    ladder_rng_fill_normal(&rng, &x, 1.0);
    ladder_rng_fill_normal(&rng, &kernels, 0.5);
    ladder_rng_fill_normal(&rng, &dout, 1.0);
    ladder_tensor_poison(&out);
    ladder_tensor_poison(&dx);
    ladder_tensor_poison(&dkernels);
    a = (ladder_dynconv_args){.x = x, .kernels = kernels, .out = out, .dout = dout, .dx = dx, .dkernels = dkernels};
}

static void teardown(void) {
    ladder_tensor *all[] = {&x, &kernels, &out, &dout, &dx, &dkernels};
    for (int i = 0; i < 6; i++) ladder_tensor_free(all[i]);
}

TestSuite(dynconv_args, .init = setup, .fini = teardown);

/* Every element of the fixture's outputs is still NaN. */
static void expect_nothing_written(const char *call) {
    const ladder_tensor *outs[] = {&out, &dx, &dkernels};
    const char *names[] = {"out", "dx", "dkernels"};
    for (int i = 0; i < 3; i++)
        for (int64_t j = 0; j < ladder_tensor_numel(outs[i]); j++)
            cr_assert(isnan(ladder_tensor_get(outs[i], j)), "%s failed but wrote %s[%lld] = %g", call, names[i],
                      (long long)j, ladder_tensor_get(outs[i], j));
}

static void expect_status(const char *call, ladder_status got, ladder_status want, const char *needle) {
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: \"%s\")", call, ladder_status_name(got),
                 ladder_status_name(want), ladder_last_error());
    cr_assert(strstr(ladder_last_error(), needle), "%s: the message \"%s\" does not name \"%s\"", call,
              ladder_last_error(), needle);
    expect_nothing_written(call);
}

/* The forward on rung @p r with the current p and a fails with @p want, naming @p needle. */
static void fwd_fails(ladder_rung r, ladder_status want, const char *needle) {
    char call[64];
    snprintf(call, sizeof call, "ladder_dynconv_fwd(%s)", ladder_rung_name(r));
    expect_status(call, ladder_dynconv_fwd(r, &p, &a), want, needle);
}

static void bwd_fails(ladder_rung r, ladder_status want, const char *needle) {
    char call[64];
    snprintf(call, sizeof call, "ladder_dynconv_bwd(%s)", ladder_rung_name(r));
    expect_status(call, ladder_dynconv_bwd(r, &p, &a), want, needle);
}

#define CPU LADDER_RUNG_CPU
#define TC LADDER_RUNG_GPU_TENSORCORE

/* ---- cu_seqlens -------------------------------------------------------------------------------------------- */

/* Make the fixture a batch of one (the first row of every tensor) and give it these offsets. */
static int32_t cu_i32[8];
static int64_t cu_i64[8];
static void packed(const int64_t *offsets, int n, ladder_dtype dtype) {
    p.B = 1;
    ladder_tensor *ts[] = {&a.x, &a.kernels, &a.out, &a.dout, &a.dx, &a.dkernels};
    for (int i = 0; i < 6; i++) ts[i]->shape[0] = 1;
    for (int i = 0; i < n; i++) cu_i32[i] = (int32_t)offsets[i], cu_i64[i] = offsets[i];
    int64_t shape[1] = {n};
    a.cu_seqlens = ladder_tensor_make(dtype == LADDER_I64 ? (void *)cu_i64 : (void *)cu_i32, dtype, 1, shape);
}

Test(dynconv_args, valid_cu_seqlens_with_an_empty_sequence_pass) {
    packed((const int64_t[]){0, 0, 1, 5, 5}, 5, LADDER_I32);
    cr_assert_eq(ladder_dynconv_fwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_dynconv_bwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
}

Test(dynconv_args, cu_seqlens_must_start_at_0) {
    packed((const int64_t[]){1, 2, 5}, 3, LADDER_I32);
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens[0] is 1");
    bwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens[0] is 1");
}

Test(dynconv_args, cu_seqlens_must_not_decrease) {
    packed((const int64_t[]){0, 3, 2, 5}, 4, LADDER_I32);
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens decreases at entry 2");
    bwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens decreases at entry 2");
}

Test(dynconv_args, cu_seqlens_must_end_at_T) {
    packed((const int64_t[]){0, 2, 4}, 3, LADDER_I32);
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens ends at 4 but must end at T = 5");
    packed((const int64_t[]){0, 2, 6}, 3, LADDER_I32);
    bwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens ends at 6");
}

Test(dynconv_args, cu_seqlens_needs_B_1) {
    packed((const int64_t[]){0, 5}, 2, LADDER_I32);
    p.B = 2;
    ladder_tensor *ts[] = {&a.x, &a.kernels, &a.out, &a.dout, &a.dx, &a.dkernels};
    for (int i = 0; i < 6; i++) ts[i]->shape[0] = 2;
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens is given, so B must be 1");
    bwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens is given, so B must be 1");
}

Test(dynconv_args, cu_seqlens_must_be_i32_with_at_least_one_sequence) {
    packed((const int64_t[]){0, 2, 5}, 3, LADDER_I64);
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens must be i32, not i64");
    bwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens must be i32, not i64");
    packed((const int64_t[]){0}, 1, LADDER_I32);
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens must have shape [N+1]");
}

Test(dynconv_args, cu_seqlens_must_be_rank_1_and_contiguous) {
    packed((const int64_t[]){0, 2, 5}, 3, LADDER_I32);
    a.cu_seqlens.rank = 2;
    a.cu_seqlens.shape[1] = 1;
    fwd_fails(CPU, LADDER_ERR_ARG, "cu_seqlens must have shape [N+1]");
    packed((const int64_t[]){0, 0, 2, 0, 5, 0}, 6, LADDER_I32);
    a.cu_seqlens.shape[0] = 3; /* every second entry: 0, 2, 5 */
    a.cu_seqlens.strides[0] = 2;
    fwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "cu_seqlens must be contiguous");
}

Test(dynconv_args, sizes_whose_product_overflows) {
    p.B = (int64_t)1 << 40, p.T = (int64_t)1 << 40, p.D = 16;
    fwd_fails(CPU, LADDER_ERR_ARG, "is too large to address");
    bwd_fails(CPU, LADDER_ERR_ARG, "is too large to address");
}

/* ---- dtypes, rung by rung (the data is never read: dtypes are checked before anything touches it) -------- */

/* Relabel every float tensor of the fixture as @p dtype (for dtype checks only: never run). */
static void relabel(ladder_dtype dtype) {
    ladder_tensor *ts[] = {&a.x, &a.kernels, &a.out, &a.dout, &a.dx, &a.dkernels};
    for (int i = 0; i < 6; i++) ts[i]->dtype = dtype;
}

Test(dynconv_args, tensorcore_takes_bf16_or_f16_never_f32) {
    fwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes x as bf16 or f16, not f32: dynconv has no f32");
    bwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes x as bf16 or f16, not f32");
    relabel(LADDER_I32);
    fwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes x as bf16 or f16, not i32");
}

Test(dynconv_args, tensorcore_refuses_mixed_dtypes) {
    relabel(LADDER_BF16);
    a.kernels.dtype = LADDER_F16;
    fwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes kernels as bf16, not f16");
    relabel(LADDER_F16);
    a.out.dtype = LADDER_F32;
    fwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes out as f16, not f32");
    relabel(LADDER_F16);
    a.dout.dtype = LADDER_BF16;
    bwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes dout as f16, not bf16");
    relabel(LADDER_BF16);
    a.dkernels.dtype = LADDER_F32;
    bwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes dkernels as bf16, not f32");
}

