/*
 * tests/test_dynconv_args.c: bad input through ladder_dynconv_fwd/bwd.
 *
 * Each case asserts the status from DESIGN.md's table, that
 * ladder_last_error() names the argument, and that nothing was written
 * (the outputs stay NaN). The dispatcher checks, in order: the rung number,
 * the problem (null, sizes, W, cu_seqlens with B > 1, x, kernels), the
 * outputs (shape, then contiguity), dtypes, availability, then the contents
 * of cu_seqlens; so dtype cases of the GPU rungs run here without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dynconv.h"
#include "gpu.h"
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

Test(dynconv_args, a_valid_call_succeeds_and_clears_the_error) {
    p.B = 0;
    fwd_fails(CPU, LADDER_ERR_ARG, "B is 0"); /* leaves a message behind */
    p.B = 2;
    cr_assert_eq(ladder_dynconv_fwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_str_empty(ladder_last_error(), "a successful call must clear the last error");
    cr_assert_eq(ladder_dynconv_bwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_str_empty(ladder_last_error());
}

/* ---- null pointers ----------------------------------------------------------------------------------------- */

Test(dynconv_args, null_problem_or_args) {
    expect_status("ladder_dynconv_fwd(problem NULL)", ladder_dynconv_fwd(CPU, NULL, &a), LADDER_ERR_ARG, "problem");
    expect_status("ladder_dynconv_bwd(problem NULL)", ladder_dynconv_bwd(CPU, NULL, &a), LADDER_ERR_ARG, "problem");
    expect_status("ladder_dynconv_fwd(args NULL)", ladder_dynconv_fwd(CPU, &p, NULL), LADDER_ERR_ARG, "args");
    expect_status("ladder_dynconv_bwd(args NULL)", ladder_dynconv_bwd(CPU, &p, NULL), LADDER_ERR_ARG, "args");
}

Test(dynconv_args, null_tensors) {
    a.x.data = NULL;
    fwd_fails(CPU, LADDER_ERR_ARG, "x is null");
    bwd_fails(CPU, LADDER_ERR_ARG, "x is null");
    a.x = x;
    a.kernels.data = NULL;
    fwd_fails(CPU, LADDER_ERR_ARG, "kernels is null");
    bwd_fails(CPU, LADDER_ERR_ARG, "kernels is null");
    a.kernels = kernels;
    a.out.data = NULL;
    fwd_fails(CPU, LADDER_ERR_ARG, "out is null");
    a.out = out;
    a.dout.data = NULL;
    bwd_fails(CPU, LADDER_ERR_ARG, "dout is null");
    a.dout = dout;
    a.dx.data = NULL;
    bwd_fails(CPU, LADDER_ERR_ARG, "dx is null");
    a.dx = dx;
    a.dkernels.data = NULL;
    bwd_fails(CPU, LADDER_ERR_ARG, "dkernels is null");
}

/* ---- sizes and W ------------------------------------------------------------------------------------------- */

Test(dynconv_args, sizes_must_be_positive) {
    p.B = 0;
    fwd_fails(CPU, LADDER_ERR_ARG, "B is 0");
    p.B = -3;
    bwd_fails(CPU, LADDER_ERR_ARG, "B is -3");
    p.B = 2, p.T = 0;
    fwd_fails(CPU, LADDER_ERR_ARG, "T is 0");
    p.T = -1;
    bwd_fails(CPU, LADDER_ERR_ARG, "T is -1");
    p.T = 5, p.D = 0;
    fwd_fails(CPU, LADDER_ERR_ARG, "D is 0");
    p.D = -7;
    bwd_fails(CPU, LADDER_ERR_ARG, "D is -7");
}

Test(dynconv_args, W_must_be_1_to_64) {
    p.W = 0;
    fwd_fails(CPU, LADDER_ERR_ARG, "W is 0");
    bwd_fails(CPU, LADDER_ERR_ARG, "W is 0");
    p.W = 65;
    fwd_fails(CPU, LADDER_ERR_ARG, "W is 65");
    bwd_fails(CPU, LADDER_ERR_ARG, "W is 65");
    p.W = -1;
    fwd_fails(CPU, LADDER_ERR_ARG, "W is -1");
}

/* ---- shapes ------------------------------------------------------------------------------------------------ */

Test(dynconv_args, x_must_match_the_problem) {
    a.x.shape[2] = 4; /* D + 1: still inside the buffer's span, never read */
    fwd_fails(CPU, LADDER_ERR_SHAPE, "x has shape [2,5,4]");
    bwd_fails(CPU, LADDER_ERR_SHAPE, "x has shape [2,5,4]");
    a.x = x;
    a.x.rank = 2;
    fwd_fails(CPU, LADDER_ERR_SHAPE, "x has shape [2,5]");
}

Test(dynconv_args, kernels_width_must_match_W) {
    p.W = 3; /* kernels is [2,5,3,4] */
    fwd_fails(CPU, LADDER_ERR_SHAPE, "kernels has shape [2,5,3,4] but the problem needs [2,5,3,3]");
    bwd_fails(CPU, LADDER_ERR_SHAPE, "kernels has shape [2,5,3,4]");
    p.W = 4;
    a.kernels.shape[1] = 4;
    fwd_fails(CPU, LADDER_ERR_SHAPE, "kernels has shape [2,4,3,4]");
}

Test(dynconv_args, outputs_must_match_the_problem) {
    a.out.shape[1] = 4;
    fwd_fails(CPU, LADDER_ERR_SHAPE, "out has shape [2,4,3]");
    a.dout.shape[0] = 1;
    bwd_fails(CPU, LADDER_ERR_SHAPE, "dout has shape [1,5,3]");
    a.dout = dout;
    a.dx.shape[2] = 2;
    bwd_fails(CPU, LADDER_ERR_SHAPE, "dx has shape [2,5,2]");
    a.dx = dx;
    a.dkernels.shape[3] = 3;
    bwd_fails(CPU, LADDER_ERR_SHAPE, "dkernels has shape [2,5,3,3]");
}

/* ---- strides ----------------------------------------------------------------------------------------------- */

Test(dynconv_args, negative_strides_are_refused) {
    a.x.strides[1] = -3;
    fwd_fails(CPU, LADDER_ERR_ARG, "x has stride -3");
    a.x = x;
    a.kernels.strides[3] = -1;
    bwd_fails(CPU, LADDER_ERR_ARG, "kernels has stride -1");
    a.kernels = kernels;
    a.dout.strides[0] = -15;
    bwd_fails(CPU, LADDER_ERR_ARG, "dout has stride -15");
}

Test(dynconv_args, outputs_must_be_contiguous) {
    /* [2,5,3] with strides [15,1,5]: the same 30 floats, transposed */
    a.out.strides[1] = 1, a.out.strides[2] = 5;
    fwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "out is an output and must be contiguous");
    a.dx.strides[1] = 1, a.dx.strides[2] = 5;
    bwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "dx is an output and must be contiguous");
    a.dx = dx;
    /* [2,5,3,4] with strides [60,12,1,3] */
    a.dkernels.strides[2] = 1, a.dkernels.strides[3] = 3;
    bwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "dkernels is an output and must be contiguous");
}

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

Test(dynconv_args, cpu_takes_f32_only) {
    a.x.dtype = LADDER_F16;
    fwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "rung cpu takes x as f32, not f16");
    a.x = x;
    a.dout.dtype = LADDER_BF16;
    bwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "rung cpu takes dout as f32, not bf16");
    a.dout = dout;
    a.out.dtype = LADDER_F16;
    fwd_fails(CPU, LADDER_ERR_UNSUPPORTED, "rung cpu takes out as f32, not f16");
}

Test(dynconv_args, fp32_gpu_rungs_take_f32_only) {
    const ladder_rung rungs[] = {LADDER_RUNG_GPU_NAIVE, LADDER_RUNG_GPU_TILED};
    for (int i = 0; i < 2; i++) {
        char want[96];
        a.x.dtype = LADDER_BF16;
        snprintf(want, sizeof want, "rung %s takes x as f32, not bf16", ladder_rung_name(rungs[i]));
        fwd_fails(rungs[i], LADDER_ERR_UNSUPPORTED, want);
        a.x = x;
        a.kernels.dtype = LADDER_F16;
        snprintf(want, sizeof want, "rung %s takes kernels as f32, not f16", ladder_rung_name(rungs[i]));
        bwd_fails(rungs[i], LADDER_ERR_UNSUPPORTED, want);
        a.kernels = kernels;
    }
}

/* Relabel every float tensor of the fixture as @p dtype (for dtype checks only: never run). */
static void relabel(ladder_dtype dtype) {
    ladder_tensor *ts[] = {&a.x, &a.kernels, &a.out, &a.dout, &a.dx, &a.dkernels};
    for (int i = 0; i < 6; i++) ts[i]->dtype = dtype;
}

Test(dynconv_args, tensorcore_takes_bf16_or_f16_never_f32) {
    fwd_fails(TC, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes x as bf16 or f16, not f32");
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

/* ---- rungs ------------------------------------------------------------------------------------------------- */

Test(dynconv_args, an_invalid_rung_number_is_an_argument_error) {
    fwd_fails((ladder_rung)LADDER_RUNG_COUNT, LADDER_ERR_ARG, "rung 4 is not a ladder_rung");
    bwd_fails((ladder_rung)7, LADDER_ERR_ARG, "rung 7 is not a ladder_rung");
    fwd_fails((ladder_rung)-1, LADDER_ERR_ARG, "rung -1 is not a ladder_rung");
}

Test(dynconv_args, gpu_rungs_without_a_gpu_are_unavailable) {
    if (ladder_gpu_count() > 0) cr_skip_test("a GPU is present here (this case needs a machine without one)");
    const ladder_rung rungs[] = {LADDER_RUNG_GPU_NAIVE, LADDER_RUNG_GPU_TILED, LADDER_RUNG_GPU_TENSORCORE};
    for (int i = 0; i < 3; i++) {
        if (rungs[i] == LADDER_RUNG_GPU_TENSORCORE) relabel(LADDER_BF16); /* valid dtypes, so availability is next */
        fwd_fails(rungs[i], LADDER_ERR_UNAVAILABLE, ladder_rung_name(rungs[i]));
        bwd_fails(rungs[i], LADDER_ERR_UNAVAILABLE, ladder_rung_name(rungs[i]));
    }
}
