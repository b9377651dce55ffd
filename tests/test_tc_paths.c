/*
 * tests/test_tc_paths.c: the tensor-core rung's two generations against each other (suite gpu_tensorcore_paths):
 * flash at that rung with each Hopper forward (gpu_tensorcore/attention_fwd.sm90a.cu: LADDER_TC_PATH=wgmma-1, the
 * first idea's kernel, wgmma-2, the second's, and wgmma-3, the third's, which takes the second's kernel where TMA
 * cannot describe the tensors) and with LADDER_TC_PATH=mma (the mma.sync kernels), on the same
 * inputs, bf16 and fp16, at the head-dim pairs the Hopper forward is compiled for (64 and 128, and smaller dims
 * padded to them; 256 and dims from 193 padded to it, the third kernel's alone: the first two take the mma.sync
 * kernels there) with each option it takes: causal masks of both alignments, windows, softcap, grouped heads,
 * packed sequences, strided views, one query row, and key ranges of one, two, three and many tiles (the second and
 * third kernels' loops have a first tile, a last tile and the turns between; the third's ring of two buffers ends on
 * either of them). Then memeff (a bias with its gradient and dropout; dropout alone; a broadcast bias; no hook) and flex
 * (every score mod, frozen and learnable; every mask mod; random block lists) with the third kernel and their policies
 * against their mma.sync kernels: flex's backward runs the Hopper pass where no buffer's gradient is asked. All round P per 64-key tile
 * against the same running max, so only the order of the products' sums differs: every output (the backward's
 * too, which reads the forward's o and lse) is held to the rung's tolerance. Under every Hopper path flash's and
 * memeff's backwards run the Hopper dK/dV pass where it covers the problem (gpu_tensorcore/attention_bwd.sm90a.cu;
 * the same roundings of P and dS), so these cases compare it with the mma.sync pass as well.
 *
 * The generic suites (test_rungs.c) run the Hopper forward against the cpu rung on sm_90 GPUs (LADDER_TC_PATH
 * unset, auto), and the mma.sync one elsewhere or with LADDER_TC_PATH=mma set for the whole run. Without a GPU these
 * cases skip as every GPU case does; on a GPU other than sm_90 each says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash.h"
#include "flex.h"
#include "harness.h"
#include "memeff.h"

extern const ladder_algo ladder_flash_algo, ladder_memeff_algo, ladder_flex_algo;

typedef struct pc {
    int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
    int causal;
    int64_t wl, wr;
    double softcap;
    bool strided;
} pc;

static test_case make(pc c, ladder_dtype dtype) {
    ladder_flash_problem p = {.attn = {.B = c.B, .Hq = c.Hq, .Hkv = c.Hkv, .Sq = c.Sq, .Sk = c.Sk, .D = c.D,
                                       .Dv = c.Dv, .softcap = c.softcap,
                                       .mask = {.causal = c.causal, .window_left = c.wl, .window_right = c.wr}}};
    test_case t = test_case_of(&ladder_flash_algo, &p);
    t.opts.strided = c.strided;
    t.rung = LADDER_RUNG_GPU_TENSORCORE, t.dtype = dtype;
    return t;
}

/* @p t with dQ in deterministic mode. */
static test_case deterministic(test_case t) {
    ((ladder_flash_problem *)t.problem)->deterministic = true;
    return t;
}

#define NO -1
enum { NONE = LADDER_CAUSAL_NONE, BR = LADDER_CAUSAL_BOTTOM_RIGHT, TL = LADDER_CAUSAL_TOP_LEFT };

/* The cases both Hopper kernels are compared on. */
static struct criterion_test_params path_cases(void) {
    static const ladder_dtype dtypes[] = {LADDER_BF16, LADDER_F16};
    static const int64_t lq[] = {113, 0, 1, 200}, lk[] = {203, 5, 1, 0};
    static const int64_t lq2[] = {300, 64, 129}, lk2[] = {517, 1, 200};
    test_case cases[40];
    int n = 0;
    for (int d = 0; d < 2; d++) {
        const ladder_dtype dt = dtypes[d];
        cases[n++] = make((pc){2, 6, 2, 300, 517, 64, 64, BR, NO, NO, 0, true}, dt);
        cases[n++] = make((pc){1, 4, 4, 1000, 1000, 128, 128, NONE, NO, NO, 30, false}, dt);
        cases[n++] = make((pc){1, 4, 2, 200, 300, 256, 256, BR, NO, NO, 0, false}, dt); /* 32-key tiles, GQA */
        if (harness_small()) continue; /* compute-sanitizer: every head dim, once each */
        cases[n++] = make((pc){2, 3, 3, 150, 97, 200, 224, TL, 40, 8, 0, false}, dt); /* padded to 256, a window */
        cases[n++] = make((pc){1, 2, 1, 64, 1000, 256, 256, NONE, NO, NO, 50, false}, dt); /* softcap, many tiles */
        cases[n++] = make((pc){1, 2, 2, 100, 90, 256, 256, BR, NO, NO, 0, true}, dt); /* no tensor map: mma.sync */
        cases[n++] = make((pc){1, 6, 1, 130, 203, 59, 59, TL, 32, 8, 0, false}, dt);  /* padded to 64, element loads */
        cases[n++] = make((pc){1, 6, 2, 217, 128, 64, 96, NONE, NO, NO, 0, true}, dt); /* Dv != D, on (128, 128) */
        cases[n++] = make((pc){2, 8, 2, 1, 700, 128, 128, BR, NO, NO, 0, false}, dt);  /* one query row, GQA */
        cases[n++] = make((pc){1, 4, 2, 70, 64, 128, 128, NONE, NO, NO, 0, false}, dt); /* one key tile: no turn */
        cases[n++] = make((pc){1, 4, 4, 64, 100, 64, 64, NONE, NO, NO, 0, true}, dt);   /* two key tiles: one turn */
        /* contiguous, as TMA copies them (the third kernel): rows of 64 and 32 columns (zeros past D), windows and
         * both causal alignments, three key tiles (the last at ring position 0), GQA */
        cases[n++] = make((pc){2, 6, 3, 300, 517, 64, 64, TL, 100, 20, 0, false}, dt);
        cases[n++] = make((pc){1, 3, 1, 129, 333, 32, 32, BR, NO, NO, 0, false}, dt);
        cases[n++] = make((pc){1, 4, 2, 150, 150, 128, 128, NONE, NO, NO, 0, false}, dt);
        cases[n++] = make((pc){2, 4, 4, 640, 2000, 128, 128, BR, NO, NO, 0, false}, dt);
        test_case v = make((pc){1, 6, 2, 0, 0, 128, 128, BR, NO, NO, 0, false}, dt);
        test_case_varlen(&v, lq, 4);
        test_case_varlen2(&v, lk);
        cases[n++] = v;
        /* packed sequences at 64 (128 rows a step of the Hopper backward), GQA, a window */
        test_case w = make((pc){1, 4, 2, 0, 0, 64, 64, TL, 50, 10, 0, false}, dt);
        test_case_varlen(&w, lq2, 3);
        test_case_varlen2(&w, lk2);
        cases[n++] = w;
        /* the same, deterministic: each packed sequence's query tiles take their own turns (a counter per row) */
        test_case x = deterministic(make((pc){1, 4, 2, 0, 0, 64, 64, TL, 50, 10, 0, false}, dt));
        test_case_varlen(&x, lq2, 3);
        test_case_varlen2(&x, lk2);
        cases[n++] = x;
        test_case y = deterministic(make((pc){1, 6, 2, 0, 0, 128, 128, BR, NO, NO, 0, false}, dt));
        test_case_varlen(&y, lq, 4);
        test_case_varlen2(&y, lk);
        cases[n++] = y;
    }
    return test_params(cases, n);
}

/* memeff at the tensor-core rung: causal 0 or bottom-right 1, dropout probability p, and a bias: none (0), full (1)
 * or broadcast over the batch rows (2). */
static test_case memeff_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t S, int64_t Sk, int64_t D, int causal, double p,
                             int bias, ladder_dtype dtype) {
    ladder_memeff_problem m = {.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = S, .Sk = Sk, .D = D, .Dv = D,
                                        .mask = {.causal = causal ? BR : NONE, .window_left = NO, .window_right = NO}},
                               .dropout_p = p, .philox_seed = 0x5eed, .philox_offset = 12};
    test_case t = test_case_of(&ladder_memeff_algo, &m);
    t.rung = LADDER_RUNG_GPU_TENSORCORE, t.dtype = dtype;
    if (bias) t.opts.with |= 1u << ladder_algo_tensor(&ladder_memeff_algo, "bias");
    if (bias == 2) t.opts.broadcast = 1u;
    return t;
}

/* flex at the tensor-core rung with score mod @p score and the mask mods @p masks (window_left @p wl for a window),
 * the buffers @p frozen names ("bq,bk") read with no gradient asked (NULL: none), with random block lists
 * where @p lists. */
static test_case flex_case(int64_t B, int64_t Hq, int64_t Hkv, int64_t S, int64_t Sk, int64_t D, int score, int masks,
                           int64_t wl, const char *frozen, bool lists, ladder_dtype dtype) {
    ladder_flex_problem f = {.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = S, .Sk = Sk, .D = D, .Dv = D,
                                      .mask = LADDER_ATTN_NO_MASK},
                             .score_mod = score, .mask_mods = masks, .softcap = 30.0, .window_left = wl,
                             .num_buckets = 16};
    test_case t = test_case_of(&ladder_flex_algo, &f);
    t.rung = LADDER_RUNG_GPU_TENSORCORE, t.dtype = dtype;
    if (frozen) test_case_freeze(&t, frozen);
    if (lists) test_case_with(&t, "kv_num_blocks", 8);
    return t;
}

/* The memeff and flex cases the Hopper forward (idea 3's kernel with their policies) is compared on. */
static struct criterion_test_params policy_cases(void) {
    static const ladder_dtype dtypes[] = {LADDER_BF16, LADDER_F16};
    const int causal = 1 << LADDER_FLEX_CAUSAL, window = 1 << LADDER_FLEX_WINDOW;
    const int doc = 1 << LADDER_FLEX_DOCUMENT, prefix = 1 << LADDER_FLEX_PREFIX_LM;
    test_case cases[56];
    int n = 0;
    for (int d = 0; d < 2; d++) {
        const ladder_dtype dt = dtypes[d];
        /* a full bias and its gradient with dropout, GQA: the Hopper forward and backward with every hook */
        cases[n++] = memeff_case(2, 4, 2, 300, 520, 64, 1, 0.1, 1, dt);
        /* frozen slopes: flex's Hopper backward, dQ's adds in turns */
        cases[n++] = flex_case(1, 4, 2, 300, 517, 64, LADDER_FLEX_ALIBI, causal, -1, "slopes", false, dt);
        /* frozen rel_bias at 128: its terms from the tile that the producer's spare warps fill */
        cases[n++] = flex_case(1, 2, 1, 200, 300, 128, LADDER_FLEX_REL_BIAS, causal, -1, "rel_bias", false, dt);
        /* learnable slopes at 128: the term tile, and the slopes' gradient summed per head by the consumers (two
         * heads a block) */
        cases[n++] = flex_case(1, 2, 1, 300, 517, 128, LADDER_FLEX_ALIBI, causal, -1, NULL, false, dt);
        if (harness_small()) continue; /* compute-sanitizer: one case of each algorithm and dtype */
        cases[n++] = memeff_case(2, 4, 2, 300, 517, 64, 1, 0.1, 0, dt);    /* dropout, keys not a multiple of 4 */
        cases[n++] = memeff_case(1, 4, 4, 1000, 1000, 128, 0, 0.0, 0, dt); /* no hook: the plain policy */
        cases[n++] = memeff_case(2, 4, 4, 200, 384, 128, 0, 0.2, 1, dt);   /* bias and dropout at 128 */
        cases[n++] = memeff_case(2, 4, 2, 256, 384, 128, 1, 0.0, 2, dt);   /* a broadcast bias: the forward's */
        cases[n++] = memeff_case(1, 4, 2, 300, 517, 256, 1, 0.2, 0, dt);   /* 32-key tiles */
        /* a buffer's gradient asked: alibi's slopes summed per head in the Hopper pass (with the bench's window at
         * 128), the other additive mods' buffers along the lines at 128 (the share tile), by the mma.sync dQ pass at
         * 64 */
        cases[n++] = flex_case(1, 4, 2, 300, 517, 64, LADDER_FLEX_ALIBI, causal, -1, NULL, false, dt);
        cases[n++] = flex_case(2, 4, 2, 400, 400, 128, LADDER_FLEX_ALIBI, causal | window, 100, NULL, false, dt);
        cases[n++] = flex_case(2, 4, 4, 640, 700, 128, LADDER_FLEX_REL_BIAS, causal | window, 200, NULL, false, dt);
        cases[n++] = flex_case(1, 4, 4, 1000, 1000, 128, LADDER_FLEX_SCORE_NONE, 0, -1, NULL, false, dt);
        cases[n++] = flex_case(1, 2, 1, 129, 333, 64, LADDER_FLEX_SOFTCAP, 0, -1, NULL, false, dt);
        /* flex's Hopper backward: each mask mod, conjunctions, random lists, Sq != Sk, GQA, lengths off the block */
        cases[n++] = flex_case(2, 4, 2, 700, 520, 128, LADDER_FLEX_SCORE_NONE, causal | doc, -1, NULL, false, dt);
        cases[n++] = flex_case(1, 4, 1, 333, 600, 128, LADDER_FLEX_SOFTCAP, window, 100, NULL, true, dt);
        cases[n++] = flex_case(2, 2, 2, 260, 390, 64, LADDER_FLEX_T5_BIAS, prefix | window, 50, "t5_bias", false, dt);
        cases[n++] = flex_case(1, 4, 2, 384, 384, 64, LADDER_FLEX_REL_BIAS, causal, -1, "rel_bias", true, dt);
        cases[n++] = flex_case(2, 2, 1, 300, 257, 64, LADDER_FLEX_BIAS_QK, doc | prefix, -1, "bq,bk", false, dt);
        /* the line tile: the additive mods at 128 (rel_bias above), the bench's window with ALiBi */
        cases[n++] = flex_case(1, 2, 2, 400, 400, 128, LADDER_FLEX_ALIBI, causal | window, 100, "slopes", false, dt);
        cases[n++] = flex_case(1, 2, 1, 333, 200, 128, LADDER_FLEX_T5_BIAS, causal, -1, "t5_bias", false, dt);
        cases[n++] = flex_case(1, 4, 2, 300, 517, 128, LADDER_FLEX_REL_BIAS, causal, -1, "rel_bias", true, dt);
        cases[n++] = flex_case(2, 2, 1, 300, 257, 128, LADDER_FLEX_BIAS_QK, doc | prefix, -1, "bq,bk", false, dt);
        /* their gradients at 128, summed along the lines in the Hopper pass: a bucket table, a row and a column */
        cases[n++] = flex_case(1, 2, 1, 333, 200, 128, LADDER_FLEX_T5_BIAS, causal, -1, NULL, false, dt);
        cases[n++] = flex_case(2, 2, 1, 300, 257, 128, LADDER_FLEX_BIAS_QK, doc | prefix, -1, NULL, false, dt);
    }
    return test_params(cases, n);
}

/* flash at the tensor-core rung with LADDER_TC_PATH=path against LADDER_TC_PATH=mma on the same inputs; skipped on a
 * GPU that is not sm_90. */
static void hopper_matches_mma(const test_case *t, const char *path) {
    harness_require_rung(t);
    ladder_case c, rounded = {0};
    test_make(t, &c);
    cr_assert_eq(ladder_case_rounded(&c, t->dtype, &rounded), LADDER_OK, "%s", ladder_last_error());
    ladder_result hopper, mma;
    const ladder_run_opts once = {0};
    setenv("LADDER_TC_PATH", path, 1);
    const ladder_status st = ladder_run(t->rung, t->dtype, &rounded, &once, &hopper);
    if (st == LADDER_ERR_UNAVAILABLE) { /* not an sm_90 GPU: the message says which one it is */
        ladder_case_free(&rounded);
        ladder_case_free(&c);
        cr_skip_test("%s", ladder_last_error());
    }
    char what[512], label[64];
    test_case_str(t, what, sizeof what);
    cr_assert_eq(st, LADDER_OK, "gpu_tensorcore (%s) with LADDER_TC_PATH=%s on %s returned %s: %s",
                 ladder_dtype_name(t->dtype), path, what, ladder_status_name(st), ladder_last_error());
    setenv("LADDER_TC_PATH", "mma", 1);
    test_run(t, t->rung, t->dtype, &rounded, &mma);
    snprintf(label, sizeof label, "gpu_tensorcore %s vs mma.sync", path);
    test_expect_results_close(label, t, &c, &hopper, &mma, ladder_tolerance(t->dtype));
    ladder_result_free(&hopper);
    ladder_result_free(&mma);
    ladder_case_free(&rounded);
    ladder_case_free(&c);
}

/* The first Hopper idea: wgmma from shared memory, each product waited on at once. */
ParameterizedTestParameters(gpu_tensorcore_paths, flash_wgmma1_matches_mma) {
    return path_cases();
}
ParameterizedTest(const test_case *t, gpu_tensorcore_paths, flash_wgmma1_matches_mma) {
    hopper_matches_mma(t, "wgmma-1");
}

/* The second: the softmax of one key tile beside the P V of the tile before it. */
ParameterizedTestParameters(gpu_tensorcore_paths, flash_wgmma2_matches_mma) {
    return path_cases();
}
ParameterizedTest(const test_case *t, gpu_tensorcore_paths, flash_wgmma2_matches_mma) {
    hopper_matches_mma(t, "wgmma-2");
}

/* The third: a producer warpgroup copies by TMA, two consumer warpgroups multiply. */
ParameterizedTestParameters(gpu_tensorcore_paths, flash_wgmma3_matches_mma) {
    return path_cases();
}
ParameterizedTest(const test_case *t, gpu_tensorcore_paths, flash_wgmma3_matches_mma) {
    hopper_matches_mma(t, "wgmma-3");
}

/* memeff's and flex's forwards on the Hopper kernel (every idea: LADDER_TC_PATH=wgmma) against the mma.sync ones. */
ParameterizedTestParameters(gpu_tensorcore_paths, memeff_and_flex_wgmma_match_mma) {
    return policy_cases();
}
ParameterizedTest(const test_case *t, gpu_tensorcore_paths, memeff_and_flex_wgmma_match_mma) {
    hopper_matches_mma(t, "wgmma");
}

/* A value the switch does not know is refused, naming the variable and what it takes (any GPU). */
Test(gpu_tensorcore_paths, an_unknown_path_is_refused) {
    test_case t = make((pc){1, 2, 1, 5, 7, 64, 64, NONE, NO, NO, 0, false}, LADDER_BF16);
    harness_require_rung(&t);
    ladder_case c, rounded = {0};
    test_make(&t, &c);
    cr_assert_eq(ladder_case_rounded(&c, t.dtype, &rounded), LADDER_OK, "%s", ladder_last_error());
    static const char *const unknown[] = {"hopper", "wgmma-4"};
    for (int i = 0; i < 2; i++) {
        ladder_result r;
        const ladder_run_opts once = {0};
        setenv("LADDER_TC_PATH", unknown[i], 1);
        const ladder_status st = ladder_run(t.rung, t.dtype, &rounded, &once, &r);
        cr_assert_eq(st, LADDER_ERR_ARG, "LADDER_TC_PATH=%s gave %s (%s), not LADDER_ERR_ARG", unknown[i],
                     ladder_status_name(st), ladder_last_error());
        cr_assert(strstr(ladder_last_error(), "LADDER_TC_PATH") != NULL, "the message names no variable: %s",
                  ladder_last_error());
    }
    ladder_case_free(&rounded);
    ladder_case_free(&c);
}
