/*
 * tests/test_attention_tc_reference.c: the tensor-core rung's reference (common/attention_tc_reference.h) is
 * attention itself, apart from the roundings it is there for. Everything here runs on the CPU:
 *   - with nothing rounded (f32) it gives the cpu rung's outputs within fp32 tolerance, every element of every
 *     output (they are NaN-poisoned first, so an unwritten one fails), on shapes that cover GQA, both causal
 *     alignments, windows, softcap, dlse, strided inputs, rows that see no key, packed sequences, and both key-tile
 *     sizes of the forward (D <= 128 and above): flash's cpu rung, and memeff's with a bias (full, broadcast, a
 *     stride-0 view) and its gradient, and dropout; and flex's with each score mod (buffer gradients included), mask
 *     mods, given block lists and rows that see no key;
 *   - rounding to bf16 moves those outputs well past that tolerance, so the comparison above would see a rounding
 *     that leaked into the f32 path.
 */
#include <math.h>

#include "compare.h"
#include "flash.h"
#include "flex.h"
#include "harness.h"
#include "memeff.h"

extern const ladder_algo ladder_flash_algo, ladder_memeff_algo, ladder_flex_algo;

/* The algorithm whose reference runs: the engine's call has no context argument. */
static const ladder_algo *reference_of;

/* The reference with nothing rounded, called as the dispatcher would be (the engine poisons, runs, copies back). */
static ladder_status call_f32_reference(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    (void)rung;
    return reference_of->call_emulating(LADDER_F32, pass, problem, args);
}

/* The reference on @p c at @p round (f32: nothing rounded) into @p r, through the engine. */
static void run_reference(const test_case *t, const ladder_case *c, ladder_dtype round, ladder_result *r) {
    char what[256];
    test_case_str(t, what, sizeof what);
    cr_assert(c->algo->call_emulating, "%s has no tensor-core reference", c->algo->name);
    if (round != LADDER_F32) {
        const ladder_run_opts once = {.emulate = round};
        cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, c, &once, r), LADDER_OK, "%s: %s", what,
                     ladder_last_error());
        return;
    }
    ladder_algo algo = *c->algo;
    algo.call = call_f32_reference;
    reference_of = c->algo;
    ladder_case with_reference = *c; /* the same tensors, owned by c */
    with_reference.algo = &algo;
    const ladder_run_opts once = {0};
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &with_reference, &once, r), LADDER_OK, "%s: %s", what,
                 ladder_last_error());
}

/* Each of the @p n_outputs outputs of @p t's case: the f32 reference equals the cpu rung; the bf16 one does not (o
 * and dk). */
static void expect_reference_is_attention(const test_case *t, int n_outputs) {
    ladder_case c;
    test_make(t, &c);
    ladder_result cpu, ref, ref_bf16;
    test_run(t, LADDER_RUNG_CPU, LADDER_F32, &c, &cpu);
    run_reference(t, &c, LADDER_F32, &ref);
    run_reference(t, &c, LADDER_BF16, &ref_bf16);
    char what[256];
    test_case_str(t, what, sizeof what);
    int compared = 0;
    for (int i = 0; i < c.algo->n_tensors; i++) {
        if (!cpu.t[i].data) continue;
        const char *name = c.algo->tensors[i].name;
        cr_assert(ref.t[i].data, "%s: the reference did not return %s", what, name);
        ladder_cmp cmp = ladder_compare(&ref.t[i], &cpu.t[i], LADDER_TOL_F32);
        test_expect_close("the f32 tensor-core reference", t, name, &cmp);
        compared++;
    }
    cr_expect_eq(compared, n_outputs, "%s: compared %d outputs, expected %d", what, compared, n_outputs);
    const char *rounded[] = {"o", "dk"};
    for (int k = 0; k < 2; k++) {
        const int i = ladder_algo_tensor(c.algo, rounded[k]);
        ladder_cmp cmp = ladder_compare(&ref_bf16.t[i], &cpu.t[i], LADDER_TOL_F32);
        cr_expect(!cmp.ok && cmp.rel_l2 > 10 * LADDER_TOL_F32,
                  "%s: the bf16 reference's %s is within fp32 tolerance of the cpu rung (rel_l2 %.3g): nothing "
                  "was rounded",
                  what, rounded[k], cmp.rel_l2);
    }
    ladder_result_free(&cpu);
    ladder_result_free(&ref);
    ladder_result_free(&ref_bf16);
    ladder_case_free(&c);
}

/* A flash case: sizes, causal kind, window (-1: none), softcap, strided inputs, dlse. */
static test_case flash_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                            int causal, int64_t wl, int64_t wr, double softcap, bool strided, bool dlse) {
    ladder_flash_problem p = {.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                       .softcap = softcap,
                                       .mask = {.causal = causal, .window_left = wl, .window_right = wr}}};
    test_case t = test_case_of(&ladder_flash_algo, &p);
    t.opts.strided = strided;
    if (dlse) t.opts.with = 1u << ladder_algo_tensor(&ladder_flash_algo, "dlse");
    return t;
}

enum { NONE = LADDER_CAUSAL_NONE, BR = LADDER_CAUSAL_BOTTOM_RIGHT, TL = LADDER_CAUSAL_TOP_LEFT };

Test(attention_tc_reference, flash_gqa_bottom_right_strided_dlse) {
    test_case t = flash_case(2, 6, 2, 113, 203, 59, 59, BR, -1, -1, 0, true, true);
    expect_reference_is_attention(&t, 5);
}

/* D > 128: the forward's key tiles are 32 wide; a window on both sides and softcap */
Test(attention_tc_reference, flash_wide_heads_top_left_window_softcap) {
    test_case t = flash_case(1, 4, 1, 130, 97, 192, 128, TL, 16, 40, 5, false, false);
    expect_reference_is_attention(&t, 5);
}

/* Sq > Sk with bottom-right causal: the first 64 rows see no key (o = 0, lse = -inf, zero gradients) */
Test(attention_tc_reference, flash_rows_that_see_no_key) {
    test_case t = flash_case(1, 3, 3, 160, 96, 64, 40, BR, -1, -1, 0, false, true);
    expect_reference_is_attention(&t, 5);
}

/* packed sequences: an empty one, one of one row, Lq != Lk, one whose rows see no key */
Test(attention_tc_reference, flash_packed_sequences) {
    test_case t = flash_case(1, 6, 2, 0, 0, 40, 40, BR, -1, -1, 5, true, true);
    test_case_varlen(&t, (const int64_t[]){1, 0, 70, 3}, 4);
    test_case_varlen2(&t, (const int64_t[]){9, 4, 65, 0});
    expect_reference_is_attention(&t, 5);
}

/* A memeff case: sizes, causal kind, softcap, the bias (ladder_case_opts::broadcast and ::stride0: bit d, size 1 or
 * stride 0 on dimension d of [B,Hq,Sq,Sk]) with its gradient, dropout p, strided inputs, dlse. */
static test_case memeff_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                             int causal, double softcap, unsigned broadcast, unsigned stride0, double dropout,
                             bool strided, bool dlse) {
    ladder_memeff_problem p = {.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                        .softcap = softcap,
                                        .mask = {.causal = causal, .window_left = -1, .window_right = -1}},
                               .dropout_p = dropout, .philox_seed = 0x5eed1234u, .philox_offset = 77};
    test_case t = test_case_of(&ladder_memeff_algo, &p);
    t.opts.strided = strided;
    t.opts.with = 1u << ladder_algo_tensor(&ladder_memeff_algo, "bias");
    if (dlse) t.opts.with |= 1u << ladder_algo_tensor(&ladder_memeff_algo, "dlse");
    t.opts.broadcast = broadcast;
    t.opts.stride0 = stride0;
    return t;
}

Test(attention_tc_reference, memeff_full_bias_dropout_gqa_strided_dlse) {
    test_case t = memeff_case(2, 4, 2, 97, 130, 64, 64, BR, 0, 0, 0, 0.1, true, true);
    expect_reference_is_attention(&t, 6);
}

/* a [B,1,1,Sk] bias, half the elements dropped, D > 128 (key tiles of 32), softcap */
Test(attention_tc_reference, memeff_broadcast_bias_wide_heads_softcap) {
    test_case t = memeff_case(2, 3, 1, 70, 101, 160, 96, TL, 5, 6u, 0, 0.5, false, false);
    expect_reference_is_attention(&t, 6);
}

/* a stride-0 view of one [Sk] vector; Sq > Sk with bottom-right causal: the first 40 rows see no key */
Test(attention_tc_reference, memeff_stride0_bias_rows_that_see_no_key) {
    test_case t = memeff_case(1, 2, 2, 120, 80, 48, 48, BR, 0, 0, 7u, 0.1, false, true);
    expect_reference_is_attention(&t, 6);
}

/* a [1,1,Sq,Sk] bias over packed sequences, dropout */
Test(attention_tc_reference, memeff_packed_sequences) {
    test_case t = memeff_case(1, 4, 2, 0, 0, 40, 40, BR, 5, 3u, 0, 0.1, true, false);
    test_case_varlen(&t, (const int64_t[]){1, 0, 70, 3}, 4);
    test_case_varlen2(&t, (const int64_t[]){9, 4, 65, 0});
    expect_reference_is_attention(&t, 6);
}

/* A flex case: sizes, the score mod, the mask mods (with window_left and num_buckets), strided inputs, dlse, and
 * (lists) random block lists in place of the ones built from the mask mods. */
static test_case flex_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, int mod,
                           int masks, bool strided, bool dlse, bool lists) {
    ladder_flex_problem p = {.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                      .mask = LADDER_ATTN_NO_MASK},
                             .score_mod = mod, .mask_mods = masks, .softcap = 3, .window_left = 40,
                             .num_buckets = 16};
    test_case t = test_case_of(&ladder_flex_algo, &p);
    t.opts.strided = strided;
    if (dlse) t.opts.with = 1u << ladder_algo_tensor(&ladder_flex_algo, "dlse");
    const int first_list = ladder_algo_tensor(&ladder_flex_algo, "kv_num_blocks");
    for (int l = 0; lists && l < 8; l++) t.opts.with |= 1u << (first_list + l);
    return t;
}

enum { FX_CAUSAL = 1 << LADDER_FLEX_CAUSAL, FX_WINDOW = 1 << LADDER_FLEX_WINDOW, FX_PREFIX = 1 << LADDER_FLEX_PREFIX_LM,
       FX_DOC = 1 << LADDER_FLEX_DOCUMENT };

/* alibi's slopes and their gradient, document+causal masks (partial and full tiles), GQA, strided, dlse */
Test(attention_tc_reference, flex_alibi_document_causal_gqa_strided_dlse) {
    test_case t = flex_case(2, 4, 2, 200, 300, 40, 24, LADDER_FLEX_ALIBI, FX_DOC | FX_CAUSAL, true, true, false);
    expect_reference_is_attention(&t, 6);
}

/* two buffers read by one score (bq, bk), a prefix-LM mask, Sq > Sk */
Test(attention_tc_reference, flex_bias_qk_prefix_lm) {
    test_case t = flex_case(2, 2, 1, 260, 150, 16, 16, LADDER_FLEX_BIAS_QK, FX_PREFIX, false, true, false);
    expect_reference_is_attention(&t, 7);
}

/* rel_bias under a window, random block lists (empty, partial and full tiles as drawn), the widest head dims the
 * rung takes */
Test(attention_tc_reference, flex_rel_bias_window_random_lists) {
    test_case t = flex_case(1, 2, 2, 300, 260, 128, 96, LADDER_FLEX_REL_BIAS, FX_WINDOW, false, false, true);
    expect_reference_is_attention(&t, 6);
}

/* t5_bias's buckets; the softcap mod under a window of 40 keys, where rows past Sk + 40 see no key */
Test(attention_tc_reference, flex_t5_bias_and_softcap) {
    test_case t5 = flex_case(1, 2, 1, 140, 150, 8, 8, LADDER_FLEX_T5_BIAS, FX_CAUSAL, true, false, false);
    expect_reference_is_attention(&t5, 6);
    test_case cap = flex_case(1, 2, 2, 300, 150, 16, 16, LADDER_FLEX_SOFTCAP, FX_WINDOW, false, true, false);
    expect_reference_is_attention(&cap, 5);
}
