/*
 * tests/test_flash_rules.c: what only flash promises, at every rung that runs here (the GPU rungs skip
 * without a GPU):
 *   - a fully masked row gives o = 0, lse = -inf and zero gradients, never NaN;
 *   - a NaN in a query row gives that row NaN, never the masked row's -inf;
 *   - the causal alignments mean what they say (one query row against five keys, by hand);
 *   - deterministic mode repeats bitwise 20 times (the generic suite does 10);
 *   - a [B,S,H,D] layout, read through permuted strides, gives the [B,H,S,D] results;
 *   - the FLOP count is of the pairs the mask lets through: its predicate summed over every pair.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flash.h"
#include "harness.h"

extern const ladder_algo ladder_flash_algo;

static ladder_flash_problem problem(int64_t Sq, int64_t Sk, int causal) {
    return (ladder_flash_problem){.attn = {.B = 1, .Hq = 2, .Hkv = 1, .Sq = Sq, .Sk = Sk, .D = 16, .Dv = 8,
                                           .mask = {.causal = causal, .window_left = -1, .window_right = -1}}};
}

static float at(const ladder_result *r, const char *name, int64_t i) {
    const ladder_tensor *t = &r->t[ladder_algo_tensor(&ladder_flash_algo, name)];
    return (float)ladder_tensor_get(t, i);
}

/* Run rung @p i on @p c (rounded to its dtype first); false, running nothing, when the rung cannot run here. */
static bool run(int i, const ladder_case *c, ladder_result *r) {
    const test_rung t = test_rungs[i];
    if (ladder_algo_rung_available(&ladder_flash_algo, t.rung) != LADDER_OK) return false;
    ladder_case rounded = {0};
    const ladder_run_opts once = {0};
    if (t.dtype != LADDER_F32) cr_assert_eq(ladder_case_rounded(c, t.dtype, &rounded), LADDER_OK);
    ladder_status st = ladder_run(t.rung, t.dtype, t.dtype != LADDER_F32 ? &rounded : c, &once, r);
    ladder_case_free(&rounded);
    if (st == LADDER_ERR_UNAVAILABLE) return false; /* a rung this build does not have */
    cr_assert_eq(st, LADDER_OK, "%s: %s", ladder_rung_name(t.rung), ladder_last_error());
    return true;
}

Test(flash_rules, fully_masked_rows_give_zero_output_minus_inf_lse_and_zero_gradients) {
    /* Sq = 6 > Sk = 3 with bottom-right causal: rows 0..2 lie above the first diagonal and see no key */
    ladder_flash_problem p = problem(6, 3, LADDER_CAUSAL_BOTTOM_RIGHT);
    ladder_case c;
    ladder_case_opts o = {.seed = 5, .with = 1u << ladder_algo_tensor(&ladder_flash_algo, "dlse")};
    cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &p, &o), LADDER_OK);
    for (int i = 0; i < TEST_N_RUNGS; i++) {
        ladder_result r;
        if (!run(i, &c, &r)) continue;
        const char *who = ladder_rung_name(test_rungs[i].rung);
        for (int h = 0; h < 2; h++)
            for (int64_t row = 0; row < 6; row++) {
                const int64_t at_row = h * 6 + row;
                const float lse = at(&r, "lse", at_row);
                cr_assert(row < 3 ? lse == -INFINITY : isfinite(lse), "%s: lse[%d,%lld] = %g", who, h,
                          (long long)row, lse);
                for (int e = 0; e < 8; e++) {
                    float v = at(&r, "o", at_row * 8 + e);
                    cr_assert(row < 3 ? v == 0.0f : isfinite(v), "%s: o[%d,%lld,%d] = %g", who, h, (long long)row,
                              e, v);
                }
                for (int e = 0; e < 16; e++) {
                    float v = at(&r, "dq", at_row * 16 + e);
                    cr_assert(row < 3 ? v == 0.0f : isfinite(v), "%s: dq[%d,%lld,%d] = %g", who, h, (long long)row,
                              e, v);
                }
            }
        ladder_result_free(&r);
    }
    ladder_case_free(&c);
}

/* A NaN in q's row 1 of head 0 must stay visible in that row's lse and o (it once came out as lse = -inf, the
 * marker of a fully masked row), and leave the other rows alone. */
Test(flash_rules, a_nan_input_row_stays_nan) {
    ladder_flash_problem p = problem(4, 70, LADDER_CAUSAL_NONE);
    ladder_case c;
    ladder_case_opts o = {.seed = 9};
    cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &p, &o), LADDER_OK);
    ladder_tensor *q = &c.t[ladder_algo_tensor(&ladder_flash_algo, "q")];
    ((float *)q->data)[1 * q->strides[2] + 3 * q->strides[3]] = NAN; /* q[0, 0, 1, 3] */
    for (int i = 0; i < TEST_N_RUNGS; i++) {
        ladder_result r;
        if (!run(i, &c, &r)) continue;
        const char *who = ladder_rung_name(test_rungs[i].rung);
        for (int64_t row = 0; row < 8; row++) { /* rows 0..3 of head 0, then of head 1 */
            const float lse = at(&r, "lse", row), o0 = at(&r, "o", row * 8);
            if (row == 1) cr_assert(isnan(lse) && isnan(o0), "%s: row 1 has lse %g, o %g: NaN expected", who, lse, o0);
            else cr_assert(isfinite(lse) && isfinite(o0), "%s: row %lld has lse %g, o %g", who, (long long)row, lse, o0);
        }
        ladder_result_free(&r);
    }
    ladder_case_free(&c);
}

Test(flash_rules, causal_alignment_by_hand) {
    /* one query row, five keys: bottom-right puts the row on the last key (it sees all five), top-left on key 0 */
    for (int causal = LADDER_CAUSAL_BOTTOM_RIGHT; causal <= LADDER_CAUSAL_TOP_LEFT; causal++) {
        ladder_flash_problem p = problem(1, 5, causal), none = problem(1, 5, LADDER_CAUSAL_NONE);
        ladder_case c, c_none;
        ladder_case_opts o = {.seed = 9};
        cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &p, &o), LADDER_OK);
        cr_assert_eq(ladder_case_make(&c_none, &ladder_flash_algo, &none, &o), LADDER_OK);
        for (int i = 0; i < TEST_N_RUNGS; i++) {
            ladder_result r, r_none;
            if (!run(i, &c, &r)) continue;
            cr_assert(run(i, &c_none, &r_none));
            const double tol = ladder_tolerance(test_rungs[i].dtype);
            for (int e = 0; e < 8; e++) {
                /* top-left: o = v[key 0] exactly (one key, P = 1); bottom-right: the same as no mask */
                const int64_t v0e[4] = {0, 0, 0, e}; /* v[b=0, head 0, key 0, e] */
                double want = causal == LADDER_CAUSAL_TOP_LEFT
                                  ? ladder_tensor_get(&c.t[2], ladder_tensor_offset(&c.t[2], v0e))
                                  : at(&r_none, "o", e);
                cr_assert(fabs(at(&r, "o", e) - want) <= 4 * tol * (fabs(want) + 1),
                          "%s causal %d: o[%d] = %g, want %g", ladder_rung_name(test_rungs[i].rung), causal, e,
                          at(&r, "o", e), want);
            }
            ladder_result_free(&r);
            ladder_result_free(&r_none);
        }
        ladder_case_free(&c);
        ladder_case_free(&c_none);
    }
}

Test(flash_rules, deterministic_mode_repeats_bitwise_20_times) {
    enum { REPEATS = 20 };
    ladder_flash_problem p = problem(0, 0, LADDER_CAUSAL_BOTTOM_RIGHT);
    p.attn.Hq = 6, p.attn.Hkv = 2, p.attn.D = 64, p.attn.Dv = 40, p.deterministic = true;
    ladder_case c;
    ladder_case_opts o = {.seed = 21, .strided = true, .n_seqs = 3, .seqlens = {100, 1, 77}, .has_seqlens2 = true,
                          .seqlens2 = {130, 0, 77}};
    cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &p, &o), LADDER_OK, "%s", ladder_last_error());
    for (int i = 0; i < TEST_N_RUNGS; i++) {
        ladder_result first, again;
        if (!run(i, &c, &first)) continue;
        for (int rep = 1; rep < REPEATS; rep++) {
            cr_assert(run(i, &c, &again));
            for (int t = 0; t < ladder_flash_algo.n_tensors; t++) {
                if (!first.t[t].data) continue;
                size_t bytes = (size_t)ladder_tensor_numel(&first.t[t]) * ladder_dtype_size(first.t[t].dtype);
                cr_assert(memcmp(first.t[t].data, again.t[t].data, bytes) == 0, "%s: %s of run %d differs from run 1",
                          ladder_rung_name(test_rungs[i].rung), ladder_flash_algo.tensors[t].name, rep + 1);
            }
            ladder_result_free(&again);
        }
        ladder_result_free(&first);
    }
    ladder_case_free(&c);
}

Test(flash_rules, a_bshd_layout_gives_the_bhsd_results) {
    ladder_flash_problem p = problem(33, 47, LADDER_CAUSAL_NONE);
    p.attn.B = 2, p.attn.Hq = 4, p.attn.Hkv = 2;
    ladder_case c, bshd;
    ladder_case_opts o = {.seed = 8};
    cr_assert_eq(ladder_case_make(&c, &ladder_flash_algo, &p, &o), LADDER_OK);
    bshd = c;
    memset(bshd.buf, 0, sizeof bshd.buf);
    for (int i = 0; i < ladder_flash_algo.n_tensors; i++) {
        if (!c.t[i].data) continue;
        /* the same values in [B,S,H,D] memory, seen as [B,H,S,D] through permuted strides */
        const int64_t *s = c.t[i].shape, mem[4] = {s[0], s[2], s[1], s[3]};
        cr_assert_eq(ladder_tensor_alloc(&bshd.buf[i], LADDER_F32, 4, mem), LADDER_OK);
        ladder_tensor *v = &bshd.t[i];
        *v = bshd.buf[i];
        v->shape[1] = s[1], v->shape[2] = s[2];
        v->strides[1] = s[3], v->strides[2] = s[1] * s[3];
        for (int64_t e = 0; e < ladder_tensor_numel(v); e++)
            ladder_tensor_set(v, ladder_tensor_offset_of_flat(v, e),
                              ladder_tensor_get(&c.t[i], ladder_tensor_offset_of_flat(&c.t[i], e)));
    }
    for (int i = 0; i < TEST_N_RUNGS; i++) {
        ladder_result want, got;
        if (!run(i, &c, &want)) continue;
        cr_assert(run(i, &bshd, &got));
        ladder_check k = ladder_result_check(&c, &got, &want, ladder_tolerance(test_rungs[i].dtype));
        cr_assert(k.ok, "%s: [B,S,H,D] differs from [B,H,S,D]: %s", ladder_rung_name(test_rungs[i].rung), k.why);
        ladder_result_free(&want);
        ladder_result_free(&got);
    }
    ladder_case_free(&bshd);
    ladder_case_free(&c);
}

/* FLOPs count the (row, key) pairs the mask lets through, exactly (a causal square: S(S+1)/2, about half; windows
 * too), two products of D + Dv per pair: the predicate summed over every pair, at Sq < Sk, Sq > Sk and Sq = Sk. */
Test(flash_rules, flops_count_the_pairs_the_mask_lets_through) {
    const int64_t shapes[][2] = {{40, 40}, {23, 61}, {61, 23}};
    const ladder_attn_mask masks[] = {{LADDER_CAUSAL_NONE, -1, -1},       {LADDER_CAUSAL_BOTTOM_RIGHT, -1, -1},
                                      {LADDER_CAUSAL_TOP_LEFT, -1, -1},   {LADDER_CAUSAL_NONE, 7, 3},
                                      {LADDER_CAUSAL_BOTTOM_RIGHT, 5, -1}, {LADDER_CAUSAL_TOP_LEFT, 0, -1}};
    for (int s = 0; s < 3; s++)
        for (int m = 0; m < 6; m++) {
            ladder_flash_problem p = problem(shapes[s][0], shapes[s][1], 0);
            p.attn.mask = masks[m];
            double pairs = 0;
            for (int64_t i = 0; i < p.attn.Sq; i++)
                for (int64_t j = 0; j < p.attn.Sk; j++)
                    pairs += ladder_attn_allowed(&p.attn.mask, i, j, p.attn.Sq, p.attn.Sk) ? 1 : 0;
            const double want = 2.0 * (double)(p.attn.B * p.attn.Hq) * pairs * (double)(p.attn.D + p.attn.Dv);
            cr_expect_eq(ladder_flash_algo.flops(&p, LADDER_PASS_FWD), want,
                         "Sq=%lld Sk=%lld mask %d: %.0f FLOPs counted, %.0f pairs let through", (long long)p.attn.Sq,
                         (long long)p.attn.Sk, m, ladder_flash_algo.flops(&p, LADDER_PASS_FWD), pairs);
            cr_expect_eq(ladder_flash_algo.flops(&p, LADDER_PASS_BWD), 2.5 * want);
        }
}
