/*
 * tests/test_memeff.c: what only memeff must show, at every rung (the GPU rungs skip where they cannot run; the
 * tensor-core rung in bf16, and in f32 with its three TF32 products but where flash is the reference):
 *
 * 1. The dropout mask is Philox's, element by element: with V the identity (Dv = Sk), O = P~ exactly, so an
 *    element of O is 0 where dropout dropped it; it must be dropped exactly where ladder_dropout_keep() says, at
 *    offsets near and past 2^32 elements (where 32-bit counter arithmetic would wrap).
 * 2. Without bias and dropout memeff is flash: the same inputs give the same outputs (two independent codes).
 * 3. A broadcast bias is the full bias it expands to: the same outputs, and its gradient is the full gradient
 *    summed over the broadcast dimensions.
 * 4. Split keys change nothing but the order of the sums: the forward with splits = 3 matches splits = 1.
 * 5. bias.npy may hold any broadcastable shape, and dbias.npy comes back in that shape.
 * 6. Deterministic mode repeats bitwise 20 times, dbias of a broadcast bias included.
 * 7. A bias of -inf masks: a row of it is fully masked (o = 0, lse = -inf, zero gradients), and nothing is NaN.
 * 8. A NaN input row gives NaN (lse and o), never the fully-masked row's -inf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash.h"
#include "harness.h"
#include "memeff.h"
#include "npy.h"
#include "philox.h"

extern const ladder_algo ladder_memeff_algo;
extern const ladder_algo ladder_flash_algo;

static int T(const ladder_algo *a, const char *name) { return ladder_algo_tensor(a, name); }

/* Every rung (the tensor-core one in bf16, and in f32 with its three TF32 products where @p tc_f32) for each of
 * @p n problems. */
static struct criterion_test_params rungs_of(const ladder_memeff_problem *ps, const ladder_case_opts *opts, int n,
                                             bool tc_f32) {
    static const struct {
        ladder_rung rung;
        ladder_dtype dtype;
    } rungs[] = {{LADDER_RUNG_CPU, LADDER_F32},
                 {LADDER_RUNG_GPU_NAIVE, LADDER_F32},
                 {LADDER_RUNG_GPU_TILED, LADDER_F32},
                 {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16},
                 {LADDER_RUNG_GPU_TENSORCORE, LADDER_F32}};
    test_case cases[64];
    int k = 0;
    for (int i = 0; i < n; i++)
        for (size_t r = 0; r < sizeof rungs / sizeof rungs[0] && k < 64; r++) {
            if (!tc_f32 && rungs[r].rung == LADDER_RUNG_GPU_TENSORCORE && rungs[r].dtype == LADDER_F32) continue;
            cases[k] = test_case_of(&ladder_memeff_algo, &ps[i]);
            cases[k].opts.with = opts[i].with, cases[k].opts.broadcast = opts[i].broadcast;
            cases[k].opts.strided = opts[i].strided;
            cases[k].rung = rungs[r].rung, cases[k++].dtype = rungs[r].dtype;
        }
    return test_params(cases, k);
}

static struct criterion_test_params every_rung(const ladder_memeff_problem *ps, const ladder_case_opts *opts, int n) {
    return rungs_of(ps, opts, n, true);
}

/* ---- 1. the dropout mask, read back through a one-hot V ------------------------------------------------------ */

#define MASK_PROBLEM(off)                                                                                              \
    {.attn = {.B = 2, .Hq = 3, .Hkv = 1, .Sq = 37, .Sk = 128, .D = 16, .Dv = 128,                                    \
              .mask = {.causal = LADDER_CAUSAL_NONE, .window_left = -1, .window_right = -1}},                         \
     .dropout_p = 0.5, .philox_seed = 0x243f6a8885a308d3ull, .philox_offset = (off)}

ParameterizedTestParameters(memeff, dropout_mask_is_philox) {
    static const ladder_memeff_problem ps[] = {MASK_PROBLEM(0), MASK_PROBLEM(4294967296ull - 1000),
                                               MASK_PROBLEM(4294967296ull + 12345), MASK_PROBLEM(1ull << 53)};
    static const ladder_case_opts opts[4] = {{0}};
    return every_rung(ps, opts, 4);
}

ParameterizedTest(const test_case *t, memeff, dropout_mask_is_philox) {
    harness_require_rung(t);
    ladder_case c;
    test_make(t, &c);
    const ladder_memeff_problem *p = (const ladder_memeff_problem *)c.problem;
    const ladder_attention_problem *a = &p->attn;
    ladder_tensor *v = &c.t[T(&ladder_memeff_algo, "v")]; /* [B,Hkv,Sk,Sk], contiguous: the identity */
    for (int64_t e = 0; e < ladder_tensor_numel(v); e++) ((float *)v->data)[e] = e / a->Sk % a->Sk == e % a->Sk;
    ladder_result r;
    const ladder_run_opts fwd = {.forward_only = true};
    cr_assert_eq(ladder_run(t->rung, t->dtype, &c, &fwd, &r), LADDER_OK, "%s", ladder_last_error());
    const ladder_tensor *o = &r.t[T(&ladder_memeff_algo, "o")];
    int64_t kept = 0;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < a->Hq; h++)
            for (int64_t i = 0; i < a->Sq; i++)
                for (int64_t j = 0; j < a->Sk; j++) {
                    const int64_t idx[4] = {b, h, i, j};
                    const double got = ladder_tensor_get(o, ladder_tensor_offset(o, idx));
                    const uint64_t n = ladder_dropout_counter(p->philox_offset, b, h, i, j, a->Hq, a->Sq, a->Sk);
                    const bool keep = ladder_dropout_keep(p->philox_seed, n, (float)p->dropout_p);
                    cr_assert_eq(got != 0.0, keep, "%s, offset %llu: o[%lld,%lld,%lld,%lld] = %g but Philox output "
                                 "%llu says %s", ladder_rung_name(t->rung), (unsigned long long)p->philox_offset,
                                 (long long)b, (long long)h, (long long)i, (long long)j, got, (unsigned long long)n,
                                 keep ? "keep" : "drop");
                    kept += keep;
                }
    const double frac = (double)kept / (double)(a->B * a->Hq * a->Sq * a->Sk);
    cr_assert(frac > 0.48 && frac < 0.52, "kept %g of the elements at p = 0.5", frac);
    ladder_result_free(&r);
    ladder_case_free(&c);
}

/* ---- 2. memeff without bias and dropout = flash ------------------------------------------------------------- */

ParameterizedTestParameters(memeff, equals_flash_without_bias_or_dropout) {
    static const ladder_memeff_problem ps[] = {
        {.attn = {.B = 2, .Hq = 6, .Hkv = 2, .Sq = 113, .Sk = 203, .D = 59, .Dv = 40, .softcap = 5,
                  .mask = {.causal = LADDER_CAUSAL_BOTTOM_RIGHT, .window_left = -1, .window_right = -1}}},
        {.attn = {.B = 1, .Hq = 4, .Hkv = 4, .Sq = 64, .Sk = 300, .D = 128, .Dv = 128,
                  .mask = {.causal = LADDER_CAUSAL_NONE, .window_left = 40, .window_right = 3}},
         .deterministic = true},
    };
    static const ladder_case_opts opts[2] = {{.strided = true}, {0}};
    return rungs_of(ps, opts, 2, false); /* flash has no f32 tensor-core rung to compare with */
}

ParameterizedTest(const test_case *t, memeff, equals_flash_without_bias_or_dropout) {
    harness_require_rung(t);
    if (ladder_algo_rung_available(&ladder_flash_algo, t->rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
    ladder_case m, f;
    test_make(t, &m);
    const ladder_memeff_problem *mp = (const ladder_memeff_problem *)m.problem;
    const ladder_flash_problem fp = {.attn = mp->attn, .deterministic = mp->deterministic};
    const ladder_case_opts fo = {.seed = t->opts.seed, .strided = t->opts.strided};
    cr_assert_eq(ladder_case_make(&f, &ladder_flash_algo, &fp, &fo), LADDER_OK, "%s", ladder_last_error());
    /* flash runs on memeff's input values, copied into its own case (whose views and NaN padding the rounding
     * and the device mirror know): element by element through both cases' strides */
    const char *shared[] = {"q", "k", "v", "do"};
    for (int i = 0; i < 4; i++) {
        const ladder_tensor *from = &m.t[T(&ladder_memeff_algo, shared[i])];
        ladder_tensor *to = &f.t[T(&ladder_flash_algo, shared[i])];
        const int64_t *n = from->shape;
        for (int64_t x = 0; x < n[0] * n[1] * n[2] * n[3]; x++) {
            const int64_t ix[4] = {x / (n[1] * n[2] * n[3]), x / (n[2] * n[3]) % n[1], x / n[3] % n[2], x % n[3]};
            int64_t at_from = 0, at_to = 0;
            for (int d = 0; d < 4; d++) at_from += ix[d] * from->strides[d], at_to += ix[d] * to->strides[d];
            ladder_tensor_set(to, at_to, ladder_tensor_get(from, at_from));
        }
    }
    ladder_result rm, rf;
    test_run(t, t->rung, t->dtype, &m, &rm);
    test_run(t, t->rung, t->dtype, &f, &rf);
    const char *outs[] = {"o", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < 5; i++) {
        const ladder_cmp cmp = ladder_compare(&rm.t[T(&ladder_memeff_algo, outs[i])],
                                              &rf.t[T(&ladder_flash_algo, outs[i])], ladder_tolerance(t->dtype));
        test_expect_close("memeff vs flash", t, outs[i], &cmp);
    }
    ladder_result_free(&rm);
    ladder_result_free(&rf);
    ladder_case_free(&f);
    ladder_case_free(&m);
}

/* ---- 3. a broadcast bias = the full bias it expands to ------------------------------------------------------- */

#define BIAS_PROBLEM                                                                                                   \
    {.attn = {.B = 2, .Hq = 4, .Hkv = 2, .Sq = 45, .Sk = 70, .D = 24, .Dv = 16,                                      \
              .mask = {.causal = LADDER_CAUSAL_TOP_LEFT, .window_left = -1, .window_right = -1}},                     \
     .dropout_p = 0.1, .philox_seed = 3, .philox_offset = 77}

ParameterizedTestParameters(memeff, broadcast_bias_gradient_is_the_full_one_summed) {
    static const ladder_memeff_problem ps[] = {BIAS_PROBLEM, BIAS_PROBLEM, BIAS_PROBLEM};
    static ladder_case_opts opts[3];
    const uint32_t bias = 1u << T(&ladder_memeff_algo, "bias");
    opts[0] = (ladder_case_opts){.with = bias, .broadcast = 1u};  /* [1,Hq,Sq,Sk] */
    opts[1] = (ladder_case_opts){.with = bias, .broadcast = 6u};  /* [B,1,1,Sk] */
    opts[2] = (ladder_case_opts){.with = bias, .broadcast = 3u, .strided = true}; /* [1,1,Sq,Sk] */
    return every_rung(ps, opts, 3);
}

ParameterizedTest(const test_case *t, memeff, broadcast_bias_gradient_is_the_full_one_summed) {
    harness_require_rung(t);
    const int bias = T(&ladder_memeff_algo, "bias"), dbias = T(&ladder_memeff_algo, "dbias");
    ladder_case narrow, full;
    test_make(t, &narrow);
    test_case tf = *t;
    tf.opts.broadcast = 0; /* the same seed: every other input is drawn the same */
    test_make(&tf, &full);
    const ladder_tensor *nb = &narrow.t[bias];
    ladder_tensor *fb = &full.t[bias];
    for (int64_t e = 0; e < ladder_tensor_numel(fb); e++) { /* the full bias is the narrow one, expanded */
        int64_t at[4], from[4], rest = e;
        for (int d = 3; d >= 0; d--) {
            at[d] = rest % fb->shape[d], rest /= fb->shape[d];
            from[d] = nb->shape[d] == 1 ? 0 : at[d];
        }
        ladder_tensor_set(fb, ladder_tensor_offset(fb, at), ladder_tensor_get(nb, ladder_tensor_offset(nb, from)));
    }
    ladder_result rn, rf;
    test_run(t, t->rung, t->dtype, &narrow, &rn);
    test_run(&tf, t->rung, t->dtype, &full, &rf);
    for (int i = 0; i < ladder_memeff_algo.n_tensors; i++) {
        if (i == dbias || !rn.t[i].data) continue;
        const ladder_cmp cmp = ladder_compare(&rn.t[i], &rf.t[i], ladder_tolerance(t->dtype));
        test_expect_close("broadcast bias vs full bias", t, ladder_memeff_algo.tensors[i].name, &cmp);
    }
    /* the full gradient summed over the dimensions where the narrow bias has 1 */
    const ladder_tensor *gf = &rf.t[dbias], *gn = &rn.t[dbias];
    double *sum = calloc((size_t)ladder_tensor_numel(gn), sizeof *sum);
    cr_assert(sum);
    for (int64_t e = 0; e < ladder_tensor_numel(gf); e++) {
        int64_t to = 0, rest = e, stride = 1;
        for (int d = 3; d >= 0; d--) {
            const int64_t x = rest % gf->shape[d];
            rest /= gf->shape[d];
            to += (gn->shape[d] == 1 ? 0 : x) * stride;
            stride *= gn->shape[d];
        }
        sum[to] += ladder_tensor_get(gf, e);
    }
    const ladder_cmp cmp = test_compare_to_f64(gn, sum, ladder_tolerance(t->dtype));
    test_expect_close("broadcast dbias vs the full dbias summed", t, "dbias", &cmp);
    free(sum);
    ladder_result_free(&rn);
    ladder_result_free(&rf);
    ladder_case_free(&full);
    ladder_case_free(&narrow);
}

/* ---- 4. split keys: the same forward ---------------------------------------------------------------------- */

ParameterizedTestParameters(memeff, split_keys_forward_equals_unsplit) {
    static const ladder_memeff_problem ps[] = {
        {.attn = {.B = 2, .Hq = 8, .Hkv = 2, .Sq = 3, .Sk = 1000, .D = 64, .Dv = 64,
                  .mask = {.causal = LADDER_CAUSAL_BOTTOM_RIGHT, .window_left = -1, .window_right = -1}},
         .dropout_p = 0.1, .philox_seed = 9, .splits = 3},
    };
    static ladder_case_opts opts[1];
    opts[0] = (ladder_case_opts){.with = 1u << T(&ladder_memeff_algo, "bias"), .broadcast = 6u};
    return every_rung(ps, opts, 1);
}

ParameterizedTest(const test_case *t, memeff, split_keys_forward_equals_unsplit) {
    harness_require_rung(t);
    ladder_case split, whole;
    test_make(t, &split);
    test_make(t, &whole);
    ((ladder_memeff_problem *)(void *)whole.problem)->splits = 1;
    ladder_result rs, rw;
    const ladder_run_opts fwd = {.forward_only = true};
    cr_assert_eq(ladder_run(t->rung, t->dtype, &split, &fwd, &rs), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_run(t->rung, t->dtype, &whole, &fwd, &rw), LADDER_OK, "%s", ladder_last_error());
    const char *outs[] = {"o", "lse"};
    for (int i = 0; i < 2; i++) {
        const int k = T(&ladder_memeff_algo, outs[i]);
        const ladder_cmp cmp = ladder_compare(&rs.t[k], &rw.t[k], ladder_tolerance(t->dtype));
        test_expect_close("splits 3 vs splits 1", t, outs[i], &cmp);
    }
    ladder_result_free(&rs);
    ladder_result_free(&rw);
    ladder_case_free(&whole);
    ladder_case_free(&split);
}

/* ---- 5. .npy by name: bias.npy in a broadcast shape in, dbias.npy in that shape out ----------------------------- */

Test(memeff, npy_bias_in_any_broadcast_shape_dbias_out_in_its_shape) {
    const ladder_memeff_problem p = {.attn = {.B = 2, .Hq = 3, .Hkv = 1, .Sq = 9, .Sk = 11, .D = 8, .Dv = 5,
                                              .mask = {.causal = LADDER_CAUSAL_NONE, .window_left = -1,
                                                       .window_right = -1}},
                                     .dropout_p = 0.2, .philox_seed = 5};
    ladder_case c, back;
    const ladder_case_opts opts = {.seed = 11, .with = 1u << T(&ladder_memeff_algo, "bias"), .broadcast = 5u};
    cr_assert_eq(ladder_case_make(&c, &ladder_memeff_algo, &p, &opts), LADDER_OK, "%s", ladder_last_error());
    char dir[64], path[128];
    harness_tmpdir_make(dir, sizeof dir, "memeff");
    const char *ins[] = {"q", "k", "v", "bias", "do"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, ins[i]);
        cr_assert_eq(ladder_npy_write(path, &c.t[T(&ladder_memeff_algo, ins[i])]), LADDER_OK, "%s", ladder_last_error());
    }
    cr_assert_eq(ladder_case_read_dir(&back, &ladder_memeff_algo, dir, &p), LADDER_OK, "%s", ladder_last_error());
    const ladder_tensor *bias = &back.t[T(&ladder_memeff_algo, "bias")];
    cr_assert(bias->rank == 4 && bias->shape[0] == 1 && bias->shape[1] == 3 && bias->shape[2] == 1 &&
              bias->shape[3] == 11, "bias.npy read back with the wrong shape");
    ladder_result got, want;
    const ladder_run_opts once = {0};
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &back, &once, &got), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &once, &want), LADDER_OK, "%s", ladder_last_error());
    char written[1024];
    cr_assert_eq(ladder_result_write_dir(&back, &got, dir, written, sizeof written), LADDER_OK, "%s",
                 ladder_last_error());
    ladder_tensor dbias;
    snprintf(path, sizeof path, "%s/dbias.npy", dir);
    cr_assert_eq(ladder_npy_read(path, &dbias), LADDER_OK, "%s", ladder_last_error());
    cr_assert(dbias.rank == 4 && memcmp(dbias.shape, bias->shape, sizeof dbias.shape) == 0,
              "dbias.npy does not have the bias's shape [1,3,1,11]");
    const ladder_cmp cmp = ladder_compare(&dbias, &want.t[T(&ladder_memeff_algo, "dbias")], LADDER_TOL_F32);
    cr_assert(cmp.ok, "dbias.npy differs from the run on the same inputs in memory");
    ladder_tensor_free(&dbias);
    ladder_result_free(&got);
    ladder_result_free(&want);
    ladder_case_free(&back);
    ladder_case_free(&c);
    harness_tmpdir_remove(dir);
}

/* ---- 6. deterministic mode: 20 repeats bitwise, dbias of a broadcast bias included --------------------------- */

ParameterizedTestParameters(memeff, deterministic_mode_repeats_bitwise_20_times) {
    static const ladder_memeff_problem ps[] = {
        {.attn = {.B = 2, .Hq = 6, .Hkv = 2, .Sq = 100, .Sk = 130, .D = 64, .Dv = 40,
                  .mask = {.causal = LADDER_CAUSAL_BOTTOM_RIGHT, .window_left = -1, .window_right = -1}},
         .dropout_p = 0.1, .philox_seed = 21, .deterministic = true},
    };
    static ladder_case_opts opts[1];
    opts[0] = (ladder_case_opts){.with = 1u << T(&ladder_memeff_algo, "bias"), .broadcast = 6u, .strided = true};
    return every_rung(ps, opts, 1);
}

ParameterizedTest(const test_case *t, memeff, deterministic_mode_repeats_bitwise_20_times) {
    enum { REPEATS = 20 };
    harness_require_rung(t);
    ladder_case c;
    test_make(t, &c);
    ladder_result first, again;
    test_run(t, t->rung, t->dtype, &c, &first);
    for (int rep = 1; rep < REPEATS; rep++) {
        test_run(t, t->rung, t->dtype, &c, &again);
        for (int i = 0; i < ladder_memeff_algo.n_tensors; i++) {
            if (!first.t[i].data) continue;
            const size_t bytes = (size_t)ladder_tensor_numel(&first.t[i]) * ladder_dtype_size(first.t[i].dtype);
            cr_assert(memcmp(first.t[i].data, again.t[i].data, bytes) == 0, "%s: %s of run %d differs from run 1",
                      ladder_rung_name(t->rung), ladder_memeff_algo.tensors[i].name, rep + 1);
        }
        ladder_result_free(&again);
    }
    ladder_result_free(&first);
    ladder_case_free(&c);
}

/* ---- 7. a bias of -inf masks: a row of it is a fully masked row, and no NaN appears anywhere ----------------- */

ParameterizedTestParameters(memeff, a_minus_inf_bias_masks) {
    static const ladder_memeff_problem ps[] = {
        {.attn = {.B = 2, .Hq = 2, .Hkv = 1, .Sq = 9, .Sk = 70, .D = 16, .Dv = 8,
                  .mask = {.causal = LADDER_CAUSAL_NONE, .window_left = -1, .window_right = -1}},
         .dropout_p = 0.1, .philox_seed = 4},
    };
    static ladder_case_opts opts[1];
    opts[0] = (ladder_case_opts){.with = 1u << T(&ladder_memeff_algo, "bias")};
    return every_rung(ps, opts, 1);
}

ParameterizedTest(const test_case *t, memeff, a_minus_inf_bias_masks) {
    harness_require_rung(t);
    ladder_case c;
    test_make(t, &c);
    ladder_tensor *bias = &c.t[T(&ladder_memeff_algo, "bias")];
    for (int64_t j = 0; j < bias->shape[3]; j++) { /* row (0,1,3) entirely, row (1,0,5) at every other key */
        const int64_t all[4] = {0, 1, 3, j}, half[4] = {1, 0, 5, j};
        ladder_tensor_set(bias, ladder_tensor_offset(bias, all), -INFINITY);
        if (j % 2) ladder_tensor_set(bias, ladder_tensor_offset(bias, half), -INFINITY);
    }
    ladder_result r;
    test_run(t, t->rung, t->dtype, &c, &r);
    for (int i = 0; i < ladder_memeff_algo.n_tensors; i++) {
        const ladder_tensor *x = &r.t[i];
        for (int64_t e = 0; x->data && e < ladder_tensor_numel(x); e++) {
            const double v = ladder_tensor_get(x, e);
            const bool lse_row = i == T(&ladder_memeff_algo, "lse") && e == (0 * 2 + 1) * 9 + 3;
            cr_assert(lse_row ? v == -INFINITY : isfinite(v), "%s: %s[%lld] is %g", ladder_rung_name(t->rung),
                      ladder_memeff_algo.tensors[i].name, (long long)e, v);
        }
    }
    const ladder_tensor *o = &r.t[T(&ladder_memeff_algo, "o")], *dq = &r.t[T(&ladder_memeff_algo, "dq")];
    for (int64_t d = 0; d < 8; d++) {
        const int64_t at[4] = {0, 1, 3, d};
        cr_assert(ladder_tensor_get(o, ladder_tensor_offset(o, at)) == 0.0, "%s: the masked row's o is not 0",
                  ladder_rung_name(t->rung));
        cr_assert(ladder_tensor_get(dq, ladder_tensor_offset(dq, at)) == 0.0, "%s: the masked row's dq is not 0",
                  ladder_rung_name(t->rung));
    }
    ladder_result_free(&r);
    ladder_case_free(&c);
}

/* ---- 8. a NaN input stays visible: its row's lse and o are NaN, never the fully-masked marker -inf ------------- */

ParameterizedTestParameters(memeff, a_nan_row_is_no_masked_row) {
    static const ladder_memeff_problem ps[] = {
        {.attn = {.B = 1, .Hq = 2, .Hkv = 1, .Sq = 9, .Sk = 33, .D = 16, .Dv = 8,
                  .mask = {.causal = LADDER_CAUSAL_NONE, .window_left = -1, .window_right = -1}},
         .dropout_p = 0.1, .philox_seed = 1},
    };
    static ladder_case_opts opts[1];
    opts[0] = (ladder_case_opts){.with = 1u << T(&ladder_memeff_algo, "bias"), .broadcast = 6u};
    return every_rung(ps, opts, 1);
}

ParameterizedTest(const test_case *t, memeff, a_nan_row_is_no_masked_row) {
    harness_require_rung(t);
    ladder_case c;
    test_make(t, &c);
    ladder_tensor *q = &c.t[T(&ladder_memeff_algo, "q")];
    const int64_t at[4] = {0, 1, 4, 3}; /* one element of row 4 of head 1 */
    ladder_tensor_set(q, ladder_tensor_offset(q, at), NAN);
    ladder_result r;
    const ladder_run_opts fwd = {.forward_only = true};
    cr_assert_eq(ladder_run(t->rung, t->dtype, &c, &fwd, &r), LADDER_OK, "%s", ladder_last_error());
    const ladder_tensor *lse = &r.t[T(&ladder_memeff_algo, "lse")], *o = &r.t[T(&ladder_memeff_algo, "o")];
    const int64_t row[3] = {0, 1, 4}, other[3] = {0, 1, 5}, o_at[4] = {0, 1, 4, 0};
    const double got = ladder_tensor_get(lse, ladder_tensor_offset(lse, row));
    cr_assert(isnan(got), "%s: the NaN row's lse is %g, not NaN", ladder_rung_name(t->rung), got);
    cr_assert(isnan(ladder_tensor_get(o, ladder_tensor_offset(o, o_at))), "%s: the NaN row's o is not NaN",
              ladder_rung_name(t->rung));
    cr_assert(isfinite(ladder_tensor_get(lse, ladder_tensor_offset(lse, other))), "%s: the NaN spread to row 5",
              ladder_rung_name(t->rung));
    ladder_result_free(&r);
    ladder_case_free(&c);
}
