/*
 * tests/test_flash_args.c: the bad input only flash has, through ladder_flash_fwd/bwd: heads that do not divide,
 * head dims that disagree, windows below -1, cu_seqlens_q/k out of order, given alone or with different counts,
 * the tensor-core rung on f32, and shapes too large to address or to launch. What every algorithm shares
 * (missing tensors, shapes, strides, contiguity, overlap, ranges, rungs) is tests/test_args.c's.
 *
 * Each case asserts the status from DESIGN.md's table, that ladder_last_error() names the argument, and that
 * nothing was written (the outputs stay NaN).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "engine.h"
#include "flash.h"

extern const ladder_algo ladder_flash_algo;

/* A valid packed case (B = 1, two sequences) with its NaN outputs; p and a hold (possibly altered) copies. */
static ladder_case c;
static ladder_flash_problem p;
static ladder_flash_args a;
static ladder_tensor outs[5]; /* o, lse, dq, dk, dv */
static int32_t cu_q[3], cu_k[3];

static ladder_tensor *field(ladder_flash_args *args, const char *name) {
    const int i = ladder_algo_tensor(&ladder_flash_algo, name);
    return (ladder_tensor *)((char *)args + ladder_flash_algo.tensors[i].offset);
}

static void setup(void) {
    ladder_flash_problem base = {.attn = {.B = 1, .Hq = 4, .Hkv = 2, .D = 8, .Dv = 4, .mask = {.causal = 1,
                                          .window_left = -1, .window_right = -1}}};
    ladder_case_opts o = {.seed = 3, .n_seqs = 2, .seqlens = {3, 4}, .has_seqlens2 = true, .seqlens2 = {5, 2}};
    cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &base, &o), LADDER_OK, "%s", ladder_last_error());
    memcpy(&p, c.problem, sizeof p);
    memset(&a, 0, sizeof a);
    const char *names[] = {"o", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < ladder_flash_algo.n_tensors; i++)
        if (c.t[i].data) *(ladder_tensor *)((char *)&a + ladder_flash_algo.tensors[i].offset) = c.t[i];
    for (int i = 0; i < 5; i++) {
        int64_t shape[LADDER_MAX_RANK];
        int t = ladder_algo_tensor(&ladder_flash_algo, names[i]);
        int rank = ladder_tensor_shape_of(&ladder_flash_algo, c.problem, &c.t[3], t, shape);
        cr_assert_eq(ladder_tensor_alloc(&outs[i], LADDER_F32, rank, shape), LADDER_OK);
        ladder_tensor_poison(&outs[i]);
        *field(&a, names[i]) = outs[i];
    }
    memcpy(cu_q, a.cu_seqlens_q.data, sizeof cu_q);
    memcpy(cu_k, a.cu_seqlens_k.data, sizeof cu_k);
    a.cu_seqlens_q.data = cu_q;
    a.cu_seqlens_k.data = cu_k;
}

static void teardown(void) {
    for (int i = 0; i < 5; i++) ladder_tensor_free(&outs[i]);
    ladder_case_free(&c);
}

TestSuite(flash_args, .init = setup, .fini = teardown);

static void expect_status(const char *call, ladder_status got, ladder_status want, const char *needle) {
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: \"%s\")", call, ladder_status_name(got),
                 ladder_status_name(want), ladder_last_error());
    cr_assert(strstr(ladder_last_error(), needle), "%s: the message \"%s\" does not name \"%s\"", call,
              ladder_last_error(), needle);
    for (int i = 0; i < 5; i++)
        for (int64_t j = 0; j < ladder_tensor_numel(&outs[i]); j++)
            cr_assert(isnan(ladder_tensor_get(&outs[i], j)), "%s failed but wrote output %d [%lld]", call, i,
                      (long long)j);
}

/* Both passes on rung @p r fail with @p want, naming @p needle. */
static void both_fail(ladder_rung r, ladder_status want, const char *needle) {
    char call[64];
    snprintf(call, sizeof call, "ladder_flash_fwd(%s)", ladder_rung_name(r));
    expect_status(call, ladder_flash_fwd(r, &p, &a), want, needle);
    snprintf(call, sizeof call, "ladder_flash_bwd(%s)", ladder_rung_name(r));
    expect_status(call, ladder_flash_bwd(r, &p, &a), want, needle);
}

#define CPU LADDER_RUNG_CPU

Test(flash_args, the_valid_packed_case_passes) {
    cr_assert_eq(ladder_flash_fwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_flash_bwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
}

Test(flash_args, heads_must_divide) {
    p.attn.Hkv = 3;
    both_fail(CPU, LADDER_ERR_ARG, "Hkv is 3 but must divide Hq = 4");
}

Test(flash_args, head_dims_must_agree) {
    a.k.shape[3] = 4; /* k's head dim 4 against q's 8: a view inside the allocation, never read */
    both_fail(CPU, LADDER_ERR_SHAPE, "k has shape [1,2,7,4] but the problem needs [1,2,7,8]");
}

Test(flash_args, windows_below_minus_one) {
    p.attn.mask.window_left = -2;
    both_fail(CPU, LADDER_ERR_ARG, "window_left is -2");
    p.attn.mask.window_left = 3, p.attn.mask.window_right = -7;
    both_fail(CPU, LADDER_ERR_ARG, "window_right is -7");
}

Test(flash_args, scale_and_softcap_must_be_finite_and_not_negative) {
    p.attn.scale = -1;
    both_fail(CPU, LADDER_ERR_ARG, "scale is -1");
    p.attn.scale = 0, p.attn.softcap = NAN;
    both_fail(CPU, LADDER_ERR_ARG, "softcap is nan");
}

/* The kernels compute in float: a double that is finite but not as a float, or that rounds to 0, is refused. */
Test(flash_args, scale_and_softcap_must_be_floats) {
    p.attn.scale = 1e39;
    both_fail(CPU, LADDER_ERR_ARG, "scale is 1e+39");
    p.attn.scale = 0, p.attn.softcap = 1e-50;
    both_fail(CPU, LADDER_ERR_ARG, "softcap is 1e-50");
}

/* A window near INT64_MAX masks nothing: the same outputs as no window (it once overflowed the key range). */
Test(flash_args, windows_near_int64_max_mask_nothing) {
    p.attn.mask.causal = LADDER_CAUSAL_NONE;
    cr_assert_eq(ladder_flash_fwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    ladder_tensor o_ref = {0};
    cr_assert_eq(ladder_tensor_alloc(&o_ref, LADDER_F32, a.o.rank, a.o.shape), LADDER_OK);
    memcpy(o_ref.data, a.o.data, (size_t)ladder_tensor_numel(&o_ref) * sizeof(float));
    p.attn.mask.window_left = INT64_MAX, p.attn.mask.window_right = INT64_MAX - 1;
    ladder_tensor_poison(&a.o);
    cr_assert_eq(ladder_flash_fwd(CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    cr_assert(memcmp(o_ref.data, a.o.data, (size_t)ladder_tensor_numel(&o_ref) * sizeof(float)) == 0,
              "a window of INT64_MAX changed o");
    ladder_tensor_free(&o_ref);
}

Test(flash_args, cu_seqlens_out_of_order) {
    cu_q[1] = 8, cu_q[2] = 7;
    both_fail(CPU, LADDER_ERR_ARG, "cu_seqlens_q decreases at entry 2 (7 after 8)");
}

Test(flash_args, cu_seqlens_must_end_at_the_packed_size) {
    cu_k[2] = 6;
    both_fail(CPU, LADDER_ERR_ARG, "cu_seqlens_k ends at 6 but must end at Sk = 7");
}

Test(flash_args, cu_seqlens_come_in_pairs) {
    a.cu_seqlens_k.data = NULL;
    both_fail(CPU, LADDER_ERR_ARG, "cu_seqlens_q is given but cu_seqlens_k is not");
}

Test(flash_args, cu_seqlens_count_the_same_sequences) {
    a.cu_seqlens_k.shape[0] = 2;
    cu_k[1] = 7;
    both_fail(CPU, LADDER_ERR_SHAPE, "cu_seqlens_q has 3 entries but cu_seqlens_k has 2");
}

Test(flash_args, the_tensor_core_rung_refuses_f32) {
    both_fail(LADDER_RUNG_GPU_TENSORCORE, LADDER_ERR_UNSUPPORTED,
              "rung gpu_tensorcore takes q as bf16 or f16, not f32: flash has no f32 (TF32) kernels");
}

Test(flash_args, lse_stays_f32_at_every_rung) {
    a.lse.dtype = LADDER_BF16;
    both_fail(CPU, LADDER_ERR_UNSUPPORTED, "rung cpu takes lse as f32, not bf16");
}

Test(flash_args, sizes_too_large_to_address) {
    p.attn.Sq = 1LL << 40, p.attn.Hq = 1LL << 24;
    both_fail(CPU, LADDER_ERR_ARG, "too large to address");
}

/* Descriptors over separate regions, never read: the grid check fails before any data is touched. */
Test(flash_args, more_heads_than_a_grid_row_takes) {
    enum { HQ = 70000 };
    static float room[5][HQ];
    const int64_t q[4] = {1, HQ, 1, 1}, kv[4] = {1, 1, 1, 1}, l[3] = {1, HQ, 1};
    ladder_flash_problem big = {.attn = {.B = 1, .Hq = HQ, .Hkv = 1, .Sq = 1, .Sk = 1, .D = 1, .Dv = 1,
                                         .mask = LADDER_ATTN_NO_MASK}};
    ladder_flash_args t = {.q = ladder_tensor_make(room[0], LADDER_F32, 4, q),
                           .k = ladder_tensor_make(room[1], LADDER_F32, 4, kv),
                           .v = ladder_tensor_make(room[2], LADDER_F32, 4, kv),
                           .o = ladder_tensor_make(room[3], LADDER_F32, 4, q),
                           .lse = ladder_tensor_make(room[4], LADDER_F32, 3, l)};
    ladder_status st = ladder_flash_fwd(LADDER_RUNG_GPU_NAIVE, &big, &t);
    cr_assert_eq(st, LADDER_ERR_UNSUPPORTED, "%s", ladder_last_error());
    cr_assert(strstr(ladder_last_error(), "at most 65535"), "%s", ladder_last_error());
}
