/*
 * tests/test_flex_magnitudes.c: the magnitudes flex's dq, dk, dv and buffer gradients are held to
 * (common/flex_magnitudes.c, ladder_compare_magnitude()) are the sums they claim to be, the check they give fails a
 * wrong gradient, and it leaves room for a correct GPU rung's rounding:
 *
 * 1. Where no term cancels (dO = 0 and dlse > 0 make every dS positive; queries and keys made positive), each
 *    element's sum of |term| is its value: the pass visits the scores the oracle visits and adds each term where
 *    the oracle adds it, for every score mod.
 * 2. A slope's gradient moved past its bound fails, inside it passes, also through ladder_result_check() (what
 *    `ladder run` calls); a gradient computed without the document mask fails.
 * 3. fp32 as a GPU rung rounds it (fused multiply-adds, exponentials a unit in the last place off and flushed to
 *    zero below the smallest normal float), emulated here on the problems where the plain rule fails a correct GPU
 *    rung (ALiBi over causal and document masks, `ladder run flex`'s problem and `ladder bench flex`'s checked one),
 *    stays well inside the bound, while the plain rule fails it.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flex.h"
#include "harness.h"

extern const ladder_algo ladder_flex_algo;

static int T(const char *name) { return ladder_algo_tensor(&ladder_flex_algo, name); }

static ladder_flex_problem problem(int64_t B, int64_t Hq, int64_t Hkv, int64_t S, int64_t D, int mod, int masks) {
    return (ladder_flex_problem){.attn = {.B = B, .Hq = Hq, .Hkv = Hkv, .Sq = S, .Sk = S, .D = D, .Dv = D,
                                          .mask = LADDER_ATTN_NO_MASK},
                                 .score_mod = mod, .mask_mods = masks, .softcap = 2.5, .window_left = -1,
                                 .num_buckets = 16};
}


/* ---- 1. where nothing cancels, the terms' magnitude is the value ------------------------------------------------ */

Test(flex_magnitudes, where_no_term_cancels_the_sum_of_terms_is_the_value) {
    const int mods[] = {LADDER_FLEX_SCORE_NONE, LADDER_FLEX_SOFTCAP, LADDER_FLEX_ALIBI, LADDER_FLEX_REL_BIAS,
                        LADDER_FLEX_T5_BIAS, LADDER_FLEX_BIAS_QK};
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        /* causal: alibi's j - i <= 0 keeps its terms of one sign; a second document masks more */
        const ladder_flex_problem p = problem(2, 4, 2, 150, 8, mods[k], (1 << LADDER_FLEX_CAUSAL) |
                                                                            (k % 2 ? 1 << LADDER_FLEX_DOCUMENT : 0));
        test_case t = test_case_of(&ladder_flex_algo, &p);
        t.opts.with |= 1u << T("dlse");
        ladder_case c;
        test_make(&t, &c);
        test_set_input(&c, "do", test_zero); /* dP = 0, Delta = -dlse: dS = P dlse > 0 */
        test_set_input(&c, "dlse", test_positive);
        test_set_input(&c, "q", test_positive); /* dq's and dk's terms ds k, ds q > 0 */
        test_set_input(&c, "k", test_positive);
        double *v[LADDER_MAX_TENSORS];
        test_oracle_run(&c, v);
        ladder_magnitudes m;
        test_magnitudes(&c, &m);
        int checked = 0;
        for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
            if (!m.terms[i]) continue;
            checked++;
            int64_t shape[LADDER_MAX_RANK], n = 1, bad = -1, low = -1;
            for (int d = 0, rank = ladder_case_shape(&c, i, shape); d < rank; d++) n *= shape[d];
            for (int64_t x = 0; x < n; x++) {
                /* the pass takes S from the float mod, the oracle in double: they agree to a few float roundings */
                if (bad < 0 && !(fabs(m.terms[i][x] - fabs(v[i][x])) <= 1e-5 * fabs(v[i][x]))) bad = x;
                if (low < 0 && !(m.rounding[i][x] >= m.terms[i][x])) low = x;
            }
            cr_expect(bad < 0, "score mod %s, %s[%lld]: terms %.9g but the value is %.9g",
                      ladder_flex_score_mods[mods[k]].name, ladder_flex_algo.tensors[i].name, (long long)bad,
                      bad < 0 ? 0 : m.terms[i][bad], bad < 0 ? 0 : v[i][bad]);
            cr_expect(low < 0, "score mod %s, %s[%lld]: a rounding coefficient below the terms' magnitude",
                      ladder_flex_score_mods[mods[k]].name, ladder_flex_algo.tensors[i].name, (long long)low);
        }
        const int buffers = ladder_flex_score_mods[mods[k]].n_reads;
        cr_expect_eq(checked, 3 + buffers, "score mod %s: magnitudes for dq, dk, dv and %d buffer gradients, got %d "
                     "outputs", ladder_flex_score_mods[mods[k]].name, buffers, checked);
        ladder_magnitudes_free(&m);
        test_oracle_free(v);
        ladder_case_free(&c);
    }
}

/* ---- 2. the bound fails a wrong gradient ------------------------------------------------------------------------ */

/* ALiBi's slopes over causal and document masks, block-aligned: the plain rule failed a correct gpu_naive here. */
static const ladder_flex_problem alibi_documents = {
    .attn = {.B = 1, .Hq = 4, .Hkv = 1, .Sq = 256, .Sk = 256, .D = 32, .Dv = 32, .mask = {0, -1, -1}},
    .score_mod = LADDER_FLEX_ALIBI, .mask_mods = (1 << LADDER_FLEX_CAUSAL) | (1 << LADDER_FLEX_DOCUMENT),
    .window_left = -1};

Test(flex_magnitudes, a_slope_gradient_past_its_bound_fails_and_inside_it_passes) {
    const test_case t = test_case_of(&ladder_flex_algo, &alibi_documents);
    ladder_case c;
    test_make(&t, &c);
    ladder_result want, got;
    test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &want);
    test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &got);
    ladder_magnitudes m;
    test_magnitudes(&c, &m);
    const int ds = T("dslopes");
    float *g = got.t[ds].data;
    const float *w = want.t[ds].data;
    for (int64_t h = 0; h < alibi_documents.attn.Hq; h++) {
        const double bound = LADDER_TOL_F32 * m.terms[ds][h] + LADDER_F32_ROUNDING * m.rounding[ds][h];
        /* the gradient is what is left of terms that cancel (for one head here, a ten-thousandth of them): the bound
         * is a small share of the terms, so a wrong term or row of terms above it fails, however small the value */
        cr_assert_lt(bound, 1e-3 * m.terms[ds][h], "slope %lld: a bound of %g is no small share of its terms' %g",
                     (long long)h, bound, m.terms[ds][h]);
        g[h] = (float)(w[h] + 0.5 * bound);
        ladder_cmp cmp = ladder_output_compare(&m, ds, &got.t[ds], &want.t[ds], LADDER_TOL_F32);
        cr_expect(cmp.ok, "slope %lld moved by half its bound %g must pass", (long long)h, bound);
        g[h] = (float)(w[h] - 2 * bound);
        cmp = ladder_output_compare(&m, ds, &got.t[ds], &want.t[ds], LADDER_TOL_F32);
        cr_expect(!cmp.ok && cmp.first_bad == h, "slope %lld moved by twice its bound %g must fail there", (long long)h,
                  bound);
        const ladder_check k = ladder_result_check(&c, &got, &want, LADDER_TOL_F32);
        cr_expect(!k.ok && strncmp(k.why, "dslopes: ", 9) == 0 && strstr(k.why, "bound"), "ladder_result_check must "
                  "fail on dslopes and say its bound: %s", k.why);
        g[h] = w[h];
    }
    const ladder_check k = ladder_result_check(&c, &got, &want, LADDER_TOL_F32);
    cr_expect(k.ok, "the same bits must pass: %s", k.why);
    ladder_result_free(&got);
    /* a gradient that forgot the document mask (the same inputs, the causal mask alone) */
    ((ladder_flex_problem *)c.problem)->mask_mods = 1 << LADDER_FLEX_CAUSAL;
    test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &got);
    const ladder_cmp cmp = ladder_output_compare(&m, ds, &got.t[ds], &want.t[ds], LADDER_TOL_F32);
    cr_expect_not(cmp.ok, "dslopes without the document mask must fail (worst element at %g of its bound)",
                  cmp.worst_share);
    ladder_result_free(&got);
    ladder_result_free(&want);
    ladder_magnitudes_free(&m);
    ladder_case_free(&c);
}

/* ---- 3. a GPU rung's rounding, emulated, stays inside ----------------------------------------------------------- */

/*
 * What a GPU rung's fp32 arithmetic does that the cpu rung's does not: nvcc fuses a * b + c into one rounding,
 * CUDA's expf and logf are within two units in the last place of the correctly rounded result (here one unit up,
 * down or none, by a hash of the argument), and the exponential flushes a result below the smallest normal float to
 * zero (ex2.approx.ftz).
 */
static float ulp_off(float r, float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint32_t k = (bits * 2654435761u) >> 30;
    return k == 1 ? nextafterf(r, INFINITY) : k == 2 ? nextafterf(r, -INFINITY) : r;
}
static float gpu_exp(float x) {
    const float r = ulp_off(expf(x), x);
    return r < FLT_MIN ? 0.0f : r;
}
static float gpu_log(float x) { return ulp_off(logf(x), x); }

static float in4(const ladder_tensor *t, int64_t b, int64_t h, int64_t s, int64_t e) {
    return ((const float *)t->data)[b * t->strides[0] + h * t->strides[1] + s * t->strides[2] + e * t->strides[3]];
}

/* sum_e x[bx,hx,sx,e] y[by,hy,sy,e] with every step fused, or x . o for o a contiguous row (y NULL). */
static float fused_dot(const ladder_tensor *x, int64_t bx, int64_t hx, int64_t sx, const ladder_tensor *y, int64_t by,
                       int64_t hy, int64_t sy, const float *o, int64_t n) {
    float acc = 0.0f;
    for (int64_t e = 0; e < n; e++) acc = fmaf(in4(x, bx, hx, sx, e), y ? in4(y, by, hy, sy, e) : o[e], acc);
    return acc;
}

/* An ALiBi case as the emulated GPU rung reads it. */
typedef struct emu {
    const ladder_flex_problem *fp;
    const ladder_tensor *q, *k, *v, *dO;
    const float *slopes;
    float scale;
    int64_t group;
    ladder_flex_env env;
} emu;

static bool sees(const emu *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    return ladder_flex_masks((unsigned)e->fp->mask_mods, &e->env, b, h, i, j);
}

/* S = scale q_i . k_j + slopes[h] (j - i), the mod's multiply-add fused too. */
static float score(const emu *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    const float s = e->scale * fused_dot(e->q, b, h, i, e->k, b, h / e->group, j, NULL, e->fp->attn.D);
    return fmaf(e->slopes[h], (float)(j - i), s);
}

/* Row (b, h, i)'s dS into @p dS (its Sk entries; 0 where masked), as gpu_naive computes it: lse, O, Delta, then
 * dS = P (dP - Delta), with P = exp(S - lse). @p o: room for a row of O. */
static void row_dS(const emu *e, int64_t b, int64_t h, int64_t i, float *o, float *dS) {
    const ladder_attention_problem *p = &e->fp->attn;
    const int64_t hk = h / e->group;
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = 0; j < p->Sk; j++)
        if (sees(e, b, h, i, j)) m = fmaxf(m, score(e, b, h, i, j));
    if (m == -INFINITY) return;
    for (int64_t j = 0; j < p->Sk; j++)
        if (sees(e, b, h, i, j)) l += gpu_exp(score(e, b, h, i, j) - m);
    const float lse = m + gpu_log(l);
    for (int64_t d = 0; d < p->Dv; d++) {
        o[d] = 0.0f;
        for (int64_t j = 0; j < p->Sk; j++)
            if (sees(e, b, h, i, j)) o[d] = fmaf(gpu_exp(score(e, b, h, i, j) - lse), in4(e->v, b, hk, j, d), o[d]);
    }
    const float delta = fused_dot(e->dO, b, h, i, NULL, 0, 0, 0, o, p->Dv);
    for (int64_t j = 0; j < p->Sk; j++) {
        if (!sees(e, b, h, i, j)) continue;
        const float dP = fused_dot(e->dO, b, h, i, e->v, b, hk, j, NULL, p->Dv);
        dS[j] = gpu_exp(score(e, b, h, i, j) - lse) * (dP - delta);
    }
}

/* dq, dk and dslopes of ALiBi case @p c as gpu_naive computes them, with the rounding above, into @p r (a copy of
 * the cpu rung's result: those three are replaced). */
static void emulate_gpu(const ladder_case *c, ladder_result *r) {
    const ladder_flex_problem *fp = (const ladder_flex_problem *)c->problem;
    const ladder_attention_problem *p = &fp->attn;
    cr_assert(fp->score_mod == LADDER_FLEX_ALIBI && !c->t[T("dlse")].data && c->t[T("slopes")].strides[0] == 1);
    ladder_flex_args a = {0};
    a.doc_q = c->t[T("doc_q")], a.doc_k = c->t[T("doc_k")];
    const emu e = {.fp = fp, .q = &c->t[T("q")], .k = &c->t[T("k")], .v = &c->t[T("v")], .dO = &c->t[T("do")],
                   .slopes = c->t[T("slopes")].data, .scale = (float)ladder_attention_scale(p),
                   .group = p->Hq / p->Hkv, .env = ladder_flex_env_of(fp, &a)};
    const int64_t rows = p->B * p->Hq * p->Sq;
    float *dS = calloc((size_t)(rows * p->Sk), sizeof(float)), *o = malloc((size_t)p->Dv * sizeof(float));
    cr_assert(dS && o);
    for (int64_t row = 0; row < rows; row++)
        row_dS(&e, row / (p->Hq * p->Sq), row / p->Sq % p->Hq, row % p->Sq, o, dS + row * p->Sk);
    float *dq = r->t[T("dq")].data, *dk = r->t[T("dk")].data, *dslopes = r->t[T("dslopes")].data;
    for (int64_t row = 0; row < rows; row++) /* dq_i = scale sum_j dS_ij k_j, keys in order */
        for (int64_t d = 0; d < p->D; d++) {
            const int64_t b = row / (p->Hq * p->Sq), hk = row / p->Sq % p->Hq / e.group;
            float acc = 0.0f;
            for (int64_t j = 0; j < p->Sk; j++) acc = fmaf(dS[row * p->Sk + j], in4(e.k, b, hk, j, d), acc);
            dq[row * p->D + d] = e.scale * acc;
        }
    for (int64_t krow = 0; krow < p->B * p->Hkv * p->Sk; krow++) /* dk_j = scale sum over the group's rows dS_ij q_i */
        for (int64_t d = 0; d < p->D; d++) {
            const int64_t b = krow / (p->Hkv * p->Sk), hk = krow / p->Sk % p->Hkv, j = krow % p->Sk;
            float acc = 0.0f;
            for (int64_t h = hk * e.group; h < (hk + 1) * e.group; h++)
                for (int64_t i = 0; i < p->Sq; i++)
                    acc = fmaf(dS[((b * p->Hq + h) * p->Sq + i) * p->Sk + j], in4(e.q, b, h, i, d), acc);
            dk[krow * p->D + d] = e.scale * acc;
        }
    for (int64_t h = 0; h < p->Hq; h++) { /* dslopes_h = sum dS_ij (j - i), in double as the rungs sum it */
        double acc = 0;
        for (int64_t b = 0; b < p->B; b++)
            for (int64_t i = 0; i < p->Sq; i++)
                for (int64_t j = 0; j < p->Sk; j++)
                    acc += (double)dS[((b * p->Hq + h) * p->Sq + i) * p->Sk + j] * (double)(j - i);
        dslopes[h] = (float)acc;
    }
    free(dS), free(o);
}

Test(flex_magnitudes, a_gpu_rungs_rounding_stays_well_inside_the_bound) {
    ladder_flex_problem run;
    ladder_problem_defaults(&ladder_flex_algo, &run);
    /* `ladder bench flex`'s checked problem: its dK has elements near 1e-37, sums of hundreds of flushed terms */
    const ladder_flex_problem bench = *(const ladder_flex_problem *)ladder_flex_algo.bench_problems;
    test_case cases[3] = {test_case_of(&ladder_flex_algo, &alibi_documents), test_case_of(&ladder_flex_algo, &run),
                          test_case_of(&ladder_flex_algo, &bench)};
    cases[1].opts.seed = 1; /* `ladder run flex` */
    for (int n = 0; n < 3; n++) {
        char what[512];
        test_case_str(&cases[n], what, sizeof what);
        ladder_case c;
        test_make(&cases[n], &c);
        ladder_result cpu, gpu;
        test_run(&cases[n], LADDER_RUNG_CPU, LADDER_F32, &c, &cpu);
        test_run(&cases[n], LADDER_RUNG_CPU, LADDER_F32, &c, &gpu);
        emulate_gpu(&c, &gpu);
        ladder_magnitudes m;
        test_magnitudes(&c, &m);
        const char *outs[] = {"dq", "dk", "dslopes"};
        bool plain_fails = false;
        for (int x = 0; x < 3; x++) {
            const int i = T(outs[x]);
            const ladder_cmp cmp = ladder_output_compare(&m, i, &gpu.t[i], &cpu.t[i], LADDER_TOL_F32);
            char why[256];
            ladder_cmp_describe(&cmp, why, sizeof why);
            /* a quarter: room for the order a tiled rung sums in, which the emulation does not follow; half at the
             * bench's problem, whose dK near 1e-37 is mostly flushed terms, each off by the most a flush moves it
             * (a bound, not a rounding's scatter) */
            const double room = n == 2 ? 0.5 : 0.25;
            cr_expect(cmp.ok && cmp.worst_share < room, "%s: %s of the emulated GPU rung: %s", what, outs[x], why);
            plain_fails |= !ladder_compare(&gpu.t[i], &cpu.t[i], LADDER_TOL_F32).ok;
        }
        if (n == 0)
            cr_expect(plain_fails, "%s: the plain rule should fail the emulated GPU rung here (the reason the "
                      "magnitudes exist); if it passes, this test no longer shows the rounding it is about", what);
        ladder_magnitudes_free(&m);
        ladder_result_free(&cpu), ladder_result_free(&gpu);
        ladder_case_free(&c);
    }
}
