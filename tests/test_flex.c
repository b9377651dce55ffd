/*
 * tests/test_flex.c: what only flex must show (the cross-algorithm checks at every rung, the tensor-core one in bf16;
 * the GPU rungs skip where they cannot run):
 *
 * 1. Every registered score mod's hand-written derivatives match finite differences of the mod itself, to the score
 *    and to every buffer element it reads, and it reads no other element; it computes what the oracle's double
 *    version computes; and a mod named additive is s plus its term at s = 0. Table-driven: a mod registered in
 *    common/flex_mods.c is checked here with no test written. T5's bucket follows its definition.
 * 2. flex with the causal mask is flash causal (top-left); flex with alibi is memeff with the equivalent bias
 *    (dslopes the reduction of dbias); flex with the document mask is flash on the same documents packed as
 *    variable-length sequences (with causal too).
 * 3. Block masks: the builder's lists are the tiles' kinds, proven element by element, in memory proportional to
 *    the tiles; hand-made lists (a query tile with no tile, every tile full, a single partial tile, Sq != Sk and
 *    lengths that are not multiples of the block) run as the oracle reads them; every tile full with no mask is
 *    plain attention.
 * 4. Buffer gradients: every registered read takes one element along the line of the plane that the fast GPU rungs
 *    sum it along, and their numbering of tiles, partials and lines adds up to each line's sum (emulated here); the
 *    gradients are the same bits at every thread count and every run, and over 20 runs at each GPU rung (the
 *    tensor-core one in bf16).
 * 5. Bad input: unknown mod names, buffers of the wrong shape or dtype, missing buffers, lists unsorted,
 *    out of range, inconsistent between forward and backward, or given in part; at the tensor-core rung, f32 inputs,
 *    16-bit buffers and head dims past its kernels'.
 * 6. Frozen buffers (read, their gradient not asked for) write no gradient and change no other output; only inputs
 *    whose gradient may be left out can be frozen. The FLOP count is the pairs the mask mods let through: causal is
 *    flash causal's count, and every mask's count is the mask's predicate summed over every pair.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "flash.h"
#include "flex.h"
#include "flex_lines.h"
#include "flex_rungs.h"
#include "harness.h"
#include "memeff.h"
#include "oracle/flex_oracle.h"
#include "rng.h"

extern const ladder_algo ladder_flex_algo;
extern const ladder_algo ladder_flash_algo;
extern const ladder_algo ladder_memeff_algo;

static int T(const ladder_algo *a, const char *name) { return ladder_algo_tensor(a, name); }

/* ---- 1. every registered mod's derivatives against finite differences ------------------------------------------- */

enum { MB_ = 2, MH_ = 3, MSQ = 7, MSK = 9, MNB = 8 };

/* A small problem and host buffers for every registered buffer, contiguous, filled with seeded values. */
typedef struct mod_bench {
    ladder_flex_problem p;
    ladder_flex_args a;
    ladder_tensor bufs[LADDER_FLEX_MAX_BUFFERS];
} mod_bench;

static void mod_bench_make(mod_bench *m, int score_mod) {
    memset(m, 0, sizeof *m);
    m->p = (ladder_flex_problem){.attn = {.B = MB_, .Hq = MH_, .Hkv = 1, .Sq = MSQ, .Sk = MSK, .D = 1, .Dv = 1},
                                 .score_mod = score_mod, .softcap = 2.0, .window_left = 2, .num_buckets = MNB};
    ladder_rng rng;
    ladder_rng_seed(&rng, 0xf1e5u + (uint64_t)score_mod);
    for (int i = 0; i < ladder_flex_n_buffers; i++) {
        const ladder_flex_buffer_spec *s = &ladder_flex_buffers[i];
        int64_t shape[2];
        const int rank = ladder_flex_buffer_shape(&m->p, s, shape);
        cr_assert(rank > 0, "buffer %s: unknown size in '%s'", s->name, s->dims);
        cr_assert_eq(ladder_tensor_alloc(&m->bufs[i], s->dtype, rank, shape), LADDER_OK);
        for (int64_t e = 0; e < ladder_tensor_numel(&m->bufs[i]); e++)
            ladder_tensor_set(&m->bufs[i], e, s->dtype == LADDER_I32 ? (double)(ladder_rng_next(&rng) % 3)
                                                                     : ladder_rng_normal(&rng));
        *(ladder_tensor *)((char *)&m->a + s->arg) = m->bufs[i];
    }
}

static void mod_bench_free(mod_bench *m) {
    for (int i = 0; i < ladder_flex_n_buffers; i++) ladder_tensor_free(&m->bufs[i]);
}

Test(flex, every_registered_score_mod_matches_finite_differences) {
    for (int k = 0; k < ladder_flex_n_score_mods; k++) {
        const ladder_flex_score_spec *spec = &ladder_flex_score_mods[k];
        cr_assert_eq(spec->id, k, "score mod %s: registered at %d with id %d (ids in registry order)", spec->name, k,
                     spec->id);
        mod_bench m;
        mod_bench_make(&m, spec->id);
        ladder_rng rng;
        ladder_rng_seed(&rng, 77u + (uint64_t)k);
        for (int trial = 0; trial < 200; trial++) {
            const int64_t b = (int64_t)(ladder_rng_next(&rng) % MB_), h = (int64_t)(ladder_rng_next(&rng) % MH_);
            const int64_t i = (int64_t)(ladder_rng_next(&rng) % MSQ), j = (int64_t)(ladder_rng_next(&rng) % MSK);
            float s = (float)(2.0 * ladder_rng_normal(&rng));
            const ladder_flex_env e = ladder_flex_env_of(&m.p, &m.a);
            const ladder_flex_grad g = ladder_flex_score_grad(spec->id, s, &e, b, h, i, j);
            /* the float mod against the oracle's double one */
            flex_oracle_tensors x = {0};
            double *dbl[LADDER_FLEX_MAX_BUFFERS] = {0};
            for (int u = 0; u < ladder_flex_n_buffers; u++) {
                const int64_t n = ladder_tensor_numel(&m.bufs[u]);
                dbl[u] = malloc((size_t)n * sizeof(double));
                for (int64_t v = 0; v < n; v++) dbl[u][v] = ladder_tensor_get(&m.bufs[u], v);
            }
#define D(name) dbl[ladder_flex_buffer(name) - ladder_flex_buffers]
            x.slopes = D("slopes"), x.rel_bias = D("rel_bias"), x.t5_bias = D("t5_bias"), x.bq = D("bq"), x.bk = D("bk");
#undef D
            const double want = flex_oracle_score(&m.p, &x, s, b, h, i, j);
            const double got = ladder_flex_score(spec->id, s, &e, b, h, i, j);
            for (int u = 0; u < ladder_flex_n_buffers; u++) free(dbl[u]);
            cr_expect(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "score mod %s at (b %lld, h %lld, i %lld, j %lld, "
                      "s %g): %g, the oracle %g", spec->name, (long long)b, (long long)h, (long long)i, (long long)j,
                      (double)s, got, want);
            /* dS/ds */
            const float step = 1e-2f;
            const double fd = (ladder_flex_score(spec->id, s + step, &e, b, h, i, j) -
                               ladder_flex_score(spec->id, s - step, &e, b, h, i, j)) / (2.0 * step);
            cr_expect(fabs(g.dscore - fd) <= 2e-3 * (1 + fabs(fd)), "score mod %s: dS/ds is %g but finite differences "
                      "give %g (s %g)", spec->name, (double)g.dscore, fd, (double)s);
            /* an additive mod (the Hopper backward adds its terms from a tile): S = s + S(0), dS/ds = 1 */
            if (ladder_flex_additive(spec->id)) {
                const double term = ladder_flex_score(spec->id, 0.0f, &e, b, h, i, j);
                cr_expect(g.dscore == 1.0f && fabs(got - (s + term)) <= 1e-6 * (1 + fabs(got)), "score mod %s, "
                          "named additive: S(%g) = %g, but s + S(0) = %g and dS/ds = %g", spec->name, (double)s, got,
                          s + term, (double)g.dscore);
            }
            /* dS/d(each element read), and no other element */
            for (int r = 0; r < spec->n_reads; r++) {
                const ladder_flex_buffer_spec *buf = ladder_flex_buffer(spec->reads[r]);
                cr_assert_not_null(buf, "score mod %s reads '%s', which is not a registered buffer", spec->name,
                                   spec->reads[r]);
                cr_assert_eq(buf->dtype, LADDER_F32, "score mod %s reads %s, which has no gradient", spec->name,
                             buf->name);
                ladder_tensor *t = &m.bufs[buf - ladder_flex_buffers];
                cr_assert(g.at[r] >= 0 && g.at[r] < ladder_tensor_numel(t), "score mod %s: read %d at %lld, outside "
                          "%s's %lld elements", spec->name, r, (long long)g.at[r], buf->name,
                          (long long)ladder_tensor_numel(t));
                float *x0 = (float *)t->data + g.at[r];
                const float keep = *x0;
                *x0 = keep + step;
                ladder_flex_env up_env = ladder_flex_env_of(&m.p, &m.a);
                const double up = ladder_flex_score(spec->id, s, &up_env, b, h, i, j);
                *x0 = keep - step;
                const double down = ladder_flex_score(spec->id, s, &up_env, b, h, i, j);
                *x0 = keep;
                double dsum = 0; /* reads of the same element add up */
                for (int q = 0; q < spec->n_reads; q++)
                    if (ladder_flex_buffer(spec->reads[q]) == buf && g.at[q] == g.at[r]) dsum += g.d[q];
                const double fdx = (up - down) / (2.0 * step);
                cr_expect(fabs(dsum - fdx) <= 2e-3 * (1 + fabs(fdx)), "score mod %s: dS/d%s[%lld] is %g but finite "
                          "differences give %g", spec->name, buf->name, (long long)g.at[r], dsum, fdx);
            }
            for (int u = 0; u < ladder_flex_n_buffers; u++) { /* one other element of every float buffer: no effect */
                if (ladder_flex_buffers[u].dtype != LADDER_F32) continue;
                const int64_t n = ladder_tensor_numel(&m.bufs[u]), other = (int64_t)(ladder_rng_next(&rng) % (uint64_t)n);
                bool read = false;
                for (int r = 0; r < spec->n_reads; r++)
                    read |= ladder_flex_buffer(spec->reads[r]) == &ladder_flex_buffers[u] && g.at[r] == other;
                if (read) continue;
                float *y = (float *)m.bufs[u].data + other;
                const float keep = *y;
                *y = keep + 1.0f;
                const ladder_flex_env moved = ladder_flex_env_of(&m.p, &m.a);
                const float after = ladder_flex_score(spec->id, s, &moved, b, h, i, j);
                *y = keep;
                cr_expect(after == (float)got, "score mod %s changed when %s[%lld] moved, which its derivative says "
                          "it does not read", spec->name, ladder_flex_buffers[u].name, (long long)other);
            }
        }
        mod_bench_free(&m);
    }
}

/* T5's bucket as its comment defines it, by division and halving: the oracle shares ladder_flex_t5_bucket() with the
 * rungs, so its formula is checked here against the definition, at every distance up to past 2^16 and around every
 * power of two, for bucket counts from 2 to 300. */
static int64_t t5_bucket_by_definition(int64_t rel, int64_t num_buckets) {
    const int64_t n = num_buckets / 2, exact = n / 2, base = rel > 0 ? n : 0, dist = rel > 0 ? rel : -rel;
    if (dist < exact) return base + dist;
    if (exact == 0) return base;
    int64_t q = dist / exact, bucket = exact; /* exact + floor(log2(dist / exact)) */
    while (q > 1) q >>= 1, bucket++;
    return base + (bucket < n - 1 ? bucket : n - 1);
}

Test(flex, t5_buckets_follow_their_definition) {
    for (int64_t nb = 2; nb <= 300; nb++) {
        for (int64_t rel = -70000; rel <= 70000; rel++)
            if (ladder_flex_t5_bucket(rel, nb) != t5_bucket_by_definition(rel, nb))
                cr_assert_fail("%lld buckets, j - i = %lld: bucket %lld, by the definition %lld", (long long)nb,
                               (long long)rel, (long long)ladder_flex_t5_bucket(rel, nb),
                               (long long)t5_bucket_by_definition(rel, nb));
        for (int p = 0; p < 62; p++)
            for (int64_t d = -1; d <= 1; d++) {
                const int64_t rel = ((int64_t)1 << p) + d;
                cr_assert_eq(ladder_flex_t5_bucket(rel, nb), t5_bucket_by_definition(rel, nb),
                             "%lld buckets, j - i = %lld", (long long)nb, (long long)rel);
                cr_assert_eq(ladder_flex_t5_bucket(-rel, nb), t5_bucket_by_definition(-rel, nb),
                             "%lld buckets, j - i = %lld", (long long)nb, (long long)-rel);
            }
    }
}

/* ---- 2. flex = flash causal, = memeff with the ALiBi bias, document = flash varlen ---------------------------- */

/* Each of @p n flex problems at every rung, the tensor-core one in bf16 (those that cannot run here skip). */
static struct criterion_test_params every_rung(const ladder_flex_problem *ps, int n) {
    test_case cases[32];
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < TEST_N_RUNGS && k < 32; r++) {
            cases[k] = test_case_of(&ladder_flex_algo, &ps[i]);
            cases[k].opts.strided = i % 2 == 1;
            cases[k].rung = test_rungs[r].rung, cases[k++].dtype = test_rungs[r].dtype;
        }
    return test_params(cases, k);
}

/* Copy input @p name of case @p from into case @p to, element by element through both cases' strides. */
static void copy_input(const ladder_case *from, const char *from_name, ladder_case *to, const char *to_name) {
    const ladder_tensor *f = &from->t[T(from->algo, from_name)];
    ladder_tensor *t = &to->t[T(to->algo, to_name)];
    cr_assert(f->data && t->data && f->rank == t->rank, "%s and %s must both be present, of one rank", from_name,
              to_name);
    const int64_t n = ladder_tensor_numel(f);
    for (int64_t x = 0; x < n; x++)
        ladder_tensor_set(t, ladder_tensor_offset_of_flat(t, x), ladder_tensor_get(f, ladder_tensor_offset_of_flat(f, x)));
}

/* Run @p t's rung on both cases (@p x flex's) and compare the named outputs, dq and dk held to flex's magnitudes
 * (sums of dS, which cancel: common/flex_magnitudes.c), at the tolerance of the rung's dtype: fp32's at the fp32
 * rungs; at the tensor-core rung the 16-bit one, as the rung is held to against the cpu rung, since the two round P
 * and dS to 16 bits in tiles of their own (running maxima, partial sums), and a value on either side of a rounding
 * edge moves by the 16-bit unit. */
static void expect_same(const test_case *t, ladder_case *x, ladder_case *y, const char *who) {
    ladder_result rx, ry;
    test_run(t, t->rung, t->dtype, x, &rx);
    test_run(t, t->rung, t->dtype, y, &ry);
    ladder_magnitudes m;
    test_magnitudes(x, &m);
    const char *outs[] = {"o", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < 5; i++) {
        const int at = T(x->algo, outs[i]);
        const ladder_cmp cmp =
            ladder_output_compare(&m, at, &rx.t[at], &ry.t[T(y->algo, outs[i])], ladder_tolerance(t->dtype));
        test_expect_close(who, t, outs[i], &cmp);
    }
    ladder_magnitudes_free(&m);
    ladder_result_free(&rx);
    ladder_result_free(&ry);
}

#define FLEX(b, hq, hkv, sq, sk, d, mod, masks)                                                                        \
    {.attn = {.B = (b), .Hq = (hq), .Hkv = (hkv), .Sq = (sq), .Sk = (sk), .D = (d), .Dv = (d),                       \
              .mask = LADDER_ATTN_NO_MASK},                                                                           \
     .score_mod = (mod), .mask_mods = (masks), .window_left = -1, .num_buckets = 0}

ParameterizedTestParameters(flex, causal_equals_flash_causal) {
    static const ladder_flex_problem ps[] = {FLEX(2, 4, 2, 200, 300, 32, 0, 1 << LADDER_FLEX_CAUSAL),
                                             FLEX(1, 2, 1, 257, 130, 24, 0, 1 << LADDER_FLEX_CAUSAL)};
    return every_rung(ps, 2);
}

ParameterizedTest(const test_case *t, flex, causal_equals_flash_causal) {
    harness_require_rung(t);
    if (ladder_algo_rung_available(&ladder_flash_algo, t->rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
    ladder_case x, f;
    test_make(t, &x);
    const ladder_flex_problem *xp = (const ladder_flex_problem *)x.problem;
    ladder_flash_problem fp = {.attn = xp->attn};
    fp.attn.mask = (ladder_attn_mask){LADDER_CAUSAL_TOP_LEFT, -1, -1}; /* i >= j, as the causal mask_mod reads */
    const ladder_case_opts fo = {.seed = 1, .strided = t->opts.strided};
    cr_assert_eq(ladder_case_make(&f, &ladder_flash_algo, &fp, &fo), LADDER_OK, "%s", ladder_last_error());
    const char *shared[] = {"q", "k", "v", "do"};
    for (int i = 0; i < 4; i++) copy_input(&x, shared[i], &f, shared[i]);
    expect_same(t, &x, &f, "flex causal vs flash causal");
    ladder_case_free(&f);
    ladder_case_free(&x);
}

ParameterizedTestParameters(flex, alibi_equals_memeff_with_the_alibi_bias) {
    static const ladder_flex_problem ps[] = {FLEX(2, 4, 2, 100, 150, 16, LADDER_FLEX_ALIBI, 1 << LADDER_FLEX_CAUSAL),
                                             FLEX(1, 2, 2, 130, 70, 8, LADDER_FLEX_ALIBI, 0)};
    return every_rung(ps, 2);
}

ParameterizedTest(const test_case *t, flex, alibi_equals_memeff_with_the_alibi_bias) {
    harness_require_rung(t);
    if (ladder_algo_rung_available(&ladder_memeff_algo, t->rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
    ladder_case x, m;
    test_make(t, &x);
    const ladder_flex_problem *xp = (const ladder_flex_problem *)x.problem;
    const ladder_attention_problem *p = &xp->attn;
    ladder_memeff_problem mp = {.attn = xp->attn};
    if (xp->mask_mods) mp.attn.mask = (ladder_attn_mask){LADDER_CAUSAL_TOP_LEFT, -1, -1};
    else mp.attn.mask = LADDER_ATTN_NO_MASK;
    /* bias [1,Hq,Sq,Sk] = slopes[h] * (j - i), the same float the alibi mod adds */
    const ladder_case_opts mo = {.seed = 1, .strided = t->opts.strided, .with = 1u << T(&ladder_memeff_algo, "bias"),
                                 .broadcast = 1u};
    cr_assert_eq(ladder_case_make(&m, &ladder_memeff_algo, &mp, &mo), LADDER_OK, "%s", ladder_last_error());
    const char *shared[] = {"q", "k", "v", "do"};
    for (int i = 0; i < 4; i++) copy_input(&x, shared[i], &m, shared[i]);
    /* slopes 2^-(h+4), powers of two as ALiBi's are: slope * (j - i) is then exact in bf16 too (|j - i| < 256), so
     * that the tensor-core rung's 16-bit bias is the slopes' bias itself */
    ladder_tensor *slopes = &x.t[T(&ladder_flex_algo, "slopes")];
    for (int64_t h = 0; h < p->Hq; h++) ladder_tensor_set(slopes, h * slopes->strides[0], ldexp(1.0, -(int)(h + 4)));
    ladder_tensor *bias = &m.t[T(&ladder_memeff_algo, "bias")];
    for (int64_t h = 0; h < p->Hq; h++)
        for (int64_t i = 0; i < p->Sq; i++)
            for (int64_t j = 0; j < p->Sk; j++) {
                const int64_t at[4] = {0, h, i, j};
                const float slope = (float)ladder_tensor_get(slopes, h * slopes->strides[0]);
                ladder_tensor_set(bias, ladder_tensor_offset(bias, at), (double)(slope * (float)(j - i)));
            }
    expect_same(t, &x, &m, "flex alibi vs memeff with the ALiBi bias");
    /* dslopes[h] = sum_{i,j} dbias[0,h,i,j] * (j - i): the slope's gradient is the bias's, reduced; a sum that
     * cancels, so held to its magnitudes (both sides' dS carry their own rounding) */
    ladder_result rx, rm;
    test_run(t, t->rung, t->dtype, &x, &rx);
    test_run(t, t->rung, t->dtype, &m, &rm);
    const ladder_tensor *dslopes = &rx.t[T(&ladder_flex_algo, "dslopes")], *dbias = &rm.t[T(&ladder_memeff_algo, "dbias")];
    cr_assert(dslopes->data && dbias->data, "dslopes and dbias must both be written");
    double *want = calloc((size_t)p->Hq, sizeof *want);
    for (int64_t h = 0; h < p->Hq; h++)
        for (int64_t i = 0; i < p->Sq; i++)
            for (int64_t j = 0; j < p->Sk; j++) {
                const int64_t at[4] = {0, h, i, j}; /* dbias is the rung's dtype: 16-bit at the tensor-core rung */
                want[h] += ladder_tensor_get(dbias, ladder_tensor_offset(dbias, at)) * (double)(j - i);
            }
    ladder_magnitudes mags; /* at the tensor-core rung dbias is 16-bit, each element rounded: the dtype's tolerance */
    test_magnitudes(&x, &mags);
    const ladder_cmp cmp = test_compare_output_to_f64(&mags, T(&ladder_flex_algo, "dslopes"), dslopes, want,
                                                      ladder_tolerance(t->dtype));
    test_expect_close("flex dslopes vs memeff dbias reduced", t, "dslopes", &cmp);
    ladder_magnitudes_free(&mags);
    free(want);
    ladder_result_free(&rx);
    ladder_result_free(&rm);
    ladder_case_free(&m);
    ladder_case_free(&x);
}

ParameterizedTestParameters(flex, document_equals_flash_varlen) {
    static const ladder_flex_problem ps[] = {
        FLEX(1, 4, 2, 300, 300, 16, 0, 1 << LADDER_FLEX_DOCUMENT),
        FLEX(1, 2, 1, 257, 257, 24, 0, (1 << LADDER_FLEX_DOCUMENT) | (1 << LADDER_FLEX_CAUSAL))};
    return every_rung(ps, 2);
}

ParameterizedTest(const test_case *t, flex, document_equals_flash_varlen) {
    harness_require_rung(t);
    if (ladder_algo_rung_available(&ladder_flash_algo, t->rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
    ladder_case x, f;
    test_make(t, &x);
    const ladder_flex_problem *xp = (const ladder_flex_problem *)x.problem;
    /* the documents as packed sequences: doc_q = doc_k here (the same cuts of Sq = Sk), ids ascending from 0 */
    const ladder_tensor *doc = &x.t[T(&ladder_flex_algo, "doc_q")];
    int64_t lens[LADDER_MAX_SEQS] = {0};
    int n = 0;
    for (int64_t i = 0; i < xp->attn.Sq; i++) {
        const int32_t d = ((const int32_t *)doc->data)[i];
        cr_assert(d >= 0 && d < LADDER_MAX_SEQS && d >= n - 1, "document ids must ascend from 0");
        if (d + 1 > n) n = d + 1;
        lens[d]++;
    }
    ladder_flash_problem fp = {.attn = xp->attn};
    fp.attn.mask = (xp->mask_mods >> LADDER_FLEX_CAUSAL) & 1 ? (ladder_attn_mask){LADDER_CAUSAL_TOP_LEFT, -1, -1}
                                                             : LADDER_ATTN_NO_MASK;
    test_case ft = test_case_of(&ladder_flash_algo, &fp);
    test_case_varlen(&ft, lens, n);
    ft.opts.strided = t->opts.strided;
    test_make(&ft, &f);
    const char *shared[] = {"q", "k", "v", "do"};
    for (int i = 0; i < 4; i++) copy_input(&x, shared[i], &f, shared[i]);
    expect_same(t, &x, &f, "flex document vs flash varlen");
    ladder_case_free(&f);
    ladder_case_free(&x);
}

/* ---- 3. block masks ----------------------------------------------------------------------------------------- */

Test(flex, built_lists_are_the_tiles_kinds_element_by_element) {
    const int masks[] = {1 << LADDER_FLEX_CAUSAL, 1 << LADDER_FLEX_WINDOW, 1 << LADDER_FLEX_PREFIX_LM,
                         1 << LADDER_FLEX_DOCUMENT, (1 << LADDER_FLEX_DOCUMENT) | (1 << LADDER_FLEX_CAUSAL), 0};
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
        ladder_flex_problem p = FLEX(2, 2, 2, 300, 517, 8, 0, masks[k]);
        p.window_left = 150;
        ladder_case c;
        const ladder_case_opts o = {.seed = 5 + k};
        cr_assert_eq(ladder_case_make(&c, &ladder_flex_algo, &p, &o), LADDER_OK, "%s", ladder_last_error());
        ladder_flex_args a = {0}, lists = {0};
        a.prefix = c.t[T(&ladder_flex_algo, "prefix")], a.doc_q = c.t[T(&ladder_flex_algo, "doc_q")];
        a.doc_k = c.t[T(&ladder_flex_algo, "doc_k")];
        cr_assert_eq(ladder_flex_block_mask(&p, &a, &lists), LADDER_OK, "%s", ladder_last_error());
        const int64_t Tq = ladder_flex_tiles(p.attn.Sq), Tk = ladder_flex_tiles(p.attn.Sk);
        int64_t MB, MH;
        ladder_flex_block_dims(&p, &MB, &MH);
        cr_expect_eq(ladder_tensor_numel(&lists.kv_indices), MB * MH * Tq * Tk, "memory is one entry per tile");
        cr_expect_eq(flex_check_lists(&lists), LADDER_OK, "built lists must validate: %s", ladder_last_error());
        const ladder_flex_env e = ladder_flex_env_of(&p, &a);
        for (int64_t b = 0; b < MB; b++)
            for (int64_t tq = 0; tq < Tq; tq++)
                for (int64_t tk = 0; tk < Tk; tk++) {
                    bool any = false, all = true; /* the tile's kind, from every element */
                    for (int64_t i = tq * LADDER_FLEX_BLOCK; i < (tq + 1) * LADDER_FLEX_BLOCK && i < p.attn.Sq; i++)
                        for (int64_t j = tk * LADDER_FLEX_BLOCK; j < (tk + 1) * LADDER_FLEX_BLOCK && j < p.attn.Sk; j++) {
                            const bool ok = ladder_flex_masks((unsigned)p.mask_mods, &e, b, 0, i, j);
                            any |= ok, all &= ok;
                        }
                    const int64_t row = b * Tq + tq;
                    bool partial = false, full = false;
                    for (int32_t x = 0; x < ((int32_t *)lists.kv_num_blocks.data)[row]; x++)
                        partial |= ((int32_t *)lists.kv_indices.data)[row * Tk + x] == tk;
                    for (int32_t x = 0; x < ((int32_t *)lists.full_kv_num_blocks.data)[row]; x++)
                        full |= ((int32_t *)lists.full_kv_indices.data)[row * Tk + x] == tk;
                    cr_expect(full == all && partial == (any && !all), "mask %d, b %lld, tile (%lld, %lld): listed "
                              "partial %d full %d, but its elements say any %d all %d", masks[k], (long long)b,
                              (long long)tq, (long long)tk, partial, full, any, all);
                }
        ladder_tensor *all = &lists.kv_num_blocks;
        for (int l = 0; l < 8; l++) ladder_tensor_free(&all[l]);
        ladder_case_free(&c);
    }
}

/* Each mask mod's bounds (ladder_flex_mask_bounds(), which settle most tiles before any element is evaluated) never
 * call a rectangle empty or full that its elements say is not, on random rectangles of random sizes and places,
 * with document ids sorted and shuffled; and they settle some of them for every built-in mask mod. */
Test(flex, mask_bounds_never_contradict_the_elements) {
    enum { SQ = 300, SK = 517, B = 2 };
    int32_t doc_q[SQ], doc_k[SK], prefix[B] = {100, 400};
    ladder_flex_env e = {.Sq = SQ, .Sk = SK, .window_left = 150};
    e.prefix = (ladder_flex_buf){prefix, {1, 0}};
    e.doc_q = (ladder_flex_buf){doc_q, {1, 0}}, e.doc_k = (ladder_flex_buf){doc_k, {1, 0}};
    uint64_t x = 12345; /* a small LCG: the rectangles and the ids */
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        for (int i = 0; i < SQ; i++) doc_q[i] = shuffled ? (int32_t)((x = x * 6364136223846793005u + 1) >> 61) : i / 70;
        for (int j = 0; j < SK; j++) doc_k[j] = shuffled ? (int32_t)((x = x * 6364136223846793005u + 1) >> 61) : j / 120;
        for (int m = 0; m < LADDER_FLEX_MASK_COUNT; m++) {
            int settled = 0;
            for (int n = 0; n < 3000; n++) {
                x = x * 6364136223846793005u + 1;
                const int64_t i0 = (int64_t)(x >> 33) % SQ, j0 = (int64_t)(x >> 13) % SK, b = (int64_t)(x >> 7) % B;
                const int64_t i1 = i0 + 1 + (int64_t)(x >> 45) % (SQ - i0), j1 = j0 + 1 + (int64_t)(x >> 24) % (SK - j0);
                const int kind = ladder_flex_mask_bounds(m, &e, b, i0, i1, j0, j1);
                if (kind == LADDER_FLEX_TILE_PARTIAL) continue;
                settled++;
                for (int64_t i = i0; i < i1; i++)
                    for (int64_t j = j0; j < j1; j++)
                        if (ladder_flex_mask(m, &e, b, 0, i, j) != (kind == LADDER_FLEX_TILE_FULL))
                            cr_assert_fail("mask %d (%s ids): rows [%lld, %lld) keys [%lld, %lld) of batch row %lld called "
                                     "%s, but element (%lld, %lld) says otherwise", m, shuffled ? "shuffled" : "sorted",
                                     (long long)i0, (long long)i1, (long long)j0, (long long)j1, (long long)b,
                                     kind == LADDER_FLEX_TILE_FULL ? "full" : "empty", (long long)i, (long long)j);
            }
            cr_expect_gt(settled, 0, "mask %d (%s ids): the bounds settled none of 3000 rectangles", m,
                         shuffled ? "shuffled" : "sorted");
        }
    }
}

/* A row's interval of keys (ladder_flex_mask_interval(), to which the GPU rungs narrow each row's key range) and the
 * set's other mods (asked at each element of a partial tile) together are exactly the keys its mask mods let it see,
 * for every set of mask mods, at every row, with windows and prefixes of many lengths (a prefix past the row and
 * before it, 0 and past the keys). */
Test(flex, a_rows_mask_interval_and_its_other_mods_are_its_mask_mods) {
    enum { SQ = 200, SK = 333, B = 3 };
    int32_t doc_q[SQ], doc_k[SK], prefix[B] = {0, 90, SK + 5};
    for (int i = 0; i < SQ; i++) doc_q[i] = i / 50;
    for (int j = 0; j < SK; j++) doc_k[j] = j / 80;
    ladder_flex_env e = {.Sq = SQ, .Sk = SK};
    e.prefix = (ladder_flex_buf){prefix, {1, 0}};
    e.doc_q = (ladder_flex_buf){doc_q, {1, 0}}, e.doc_k = (ladder_flex_buf){doc_k, {1, 0}};
    static const int64_t windows[] = {0, 1, 37, 150, SK + SQ};
    for (unsigned set = 0; set < (1u << LADDER_FLEX_MASK_COUNT); set++)
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
            for (int64_t b = 0; b < B; b++)
                for (int64_t i = 0; i < SQ; i++) {
                    e.window_left = windows[w];
                    int64_t lo = -7, hi = -7;
                    ladder_flex_mask_interval(set, &e, b, i, &lo, &hi);
                    if (!(set & LADDER_FLEX_INTERVAL_MASKS))
                        cr_assert(lo == 0 && hi == INT64_MAX, "set %#x has no interval mod, but [%lld, %lld)", set,
                                  (long long)lo, (long long)hi);
                    for (int64_t j = 0; j < SK; j++) {
                        const bool seen = ladder_flex_masks(set, &e, b, 0, i, j),
                                   in = j >= lo && j < hi,
                                   others = ladder_flex_masks(set & ~LADDER_FLEX_INTERVAL_MASKS, &e, b, 0, i, j);
                        if (seen != (in && others))
                            cr_assert_fail("set %#x, window %lld, batch row %lld, row %lld: key %lld is %s, but the "
                                           "interval [%lld, %lld) and the other mods (%s) say otherwise", set,
                                           (long long)windows[w], (long long)b, (long long)i, (long long)j,
                                           seen ? "seen" : "masked", (long long)lo, (long long)hi,
                                           others ? "seen" : "masked");
                    }
                }
}

/* The reason for block lists: PyTorch's builder materialises the Sq x Sk mask and runs out of memory near
 * 24k tokens. Building a document mask at 16k tokens here must take memory per tile (128 x 128 tiles: kinds and
 * lists under 1 MB), never per element (256 MB as one byte each): the process's peak resident memory must not grow
 * by even 32 MB. */
Test(flex, building_a_long_document_mask_takes_memory_per_tile_not_per_element) {
    enum { S = 16384, DOC = 1000 };
    const ladder_flex_problem p = FLEX(1, 1, 1, S, S, 8, 0, 1 << LADDER_FLEX_DOCUMENT);
    const int64_t n = S;
    ladder_flex_args a = {0}, lists = {0};
    cr_assert_eq(ladder_tensor_alloc(&a.doc_q, LADDER_I32, 1, &n), LADDER_OK);
    for (int64_t i = 0; i < n; i++) ((int32_t *)a.doc_q.data)[i] = (int32_t)(i / DOC);
    a.doc_k = a.doc_q;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    cr_assert_eq(ladder_flex_block_mask(&p, &a, &lists), LADDER_OK, "%s", ladder_last_error());
    getrusage(RUSAGE_SELF, &after);
    cr_expect_lt(after.ru_maxrss - before.ru_maxrss, 32 * 1024, "building grew the peak resident memory by %ld kB",
                 after.ru_maxrss - before.ru_maxrss);
    cr_expect_eq(flex_check_lists(&lists), LADDER_OK, "%s", ladder_last_error());
    const int32_t *full = lists.full_kv_num_blocks.data;
    cr_expect_eq(full[0], 7, "query tile 0 (rows 0..127 of document 0) has key tiles 0..6 full, got %d", full[0]);
    ladder_tensor *all = &lists.kv_num_blocks;
    for (int l = 0; l < 8; l++) ladder_tensor_free(&all[l]);
    ladder_tensor_free(&a.doc_q);
}

/* `ladder bench` gives a case the lists of its mask before timing (ladder_algo::fixed_inputs), as a user with a fixed
 * mask would: they are the builder's, and every output is the same bits as with the lists built inside the call. */
Test(flex, fixed_inputs_are_the_built_lists_and_change_no_output) {
    const ladder_flex_problem p = FLEX(2, 2, 1, 300, 517, 8, LADDER_FLEX_ALIBI,
                                       (1 << LADDER_FLEX_DOCUMENT) | (1 << LADDER_FLEX_CAUSAL));
    test_case t = test_case_of(&ladder_flex_algo, &p);
    ladder_case built, given;
    test_make(&t, &built);
    test_make(&t, &given);
    const int first = T(&ladder_flex_algo, "kv_num_blocks");
    cr_assert_eq((given.present >> first) & 0xffu, 0, "the case should have no lists yet");
    cr_assert_eq(ladder_flex_algo.fixed_inputs(&given), LADDER_OK, "%s", ladder_last_error());
    cr_assert_eq((given.present >> first) & 0xffu, 0xffu, "fixed_inputs should add all eight lists");
    ladder_flex_args a = {0}, lists = {0};
    a.doc_q = given.t[T(&ladder_flex_algo, "doc_q")], a.doc_k = given.t[T(&ladder_flex_algo, "doc_k")];
    cr_assert_eq(ladder_flex_block_mask(&p, &a, &lists), LADDER_OK, "%s", ladder_last_error());
    ladder_tensor *want = &lists.kv_num_blocks;
    for (int l = 0; l < 8; l += 2) { /* each count, and the entries it counts (the rest of a row is not read) */
        const ladder_tensor *num = &given.t[first + l], *idx = &given.t[first + l + 1];
        const int64_t rows = ladder_tensor_numel(num), width = idx->shape[3];
        for (int64_t r = 0; r < rows; r++) {
            const int32_t n = ((const int32_t *)num->data)[r];
            cr_expect(n == ((const int32_t *)want[l].data)[r] &&
                          memcmp((const int32_t *)idx->data + r * width, (const int32_t *)want[l + 1].data + r * width,
                                 (size_t)n * sizeof(int32_t)) == 0,
                      "%s row %lld differs from the builder's", ladder_flex_algo.tensors[first + l + 1].name,
                      (long long)r);
        }
    }
    for (int l = 0; l < 8; l++) ladder_tensor_free(&want[l]);
    ladder_result rb, rg;
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &built, &(ladder_run_opts){0}, &rb), LADDER_OK, "%s",
                 ladder_last_error());
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &given, &(ladder_run_opts){0}, &rg), LADDER_OK, "%s",
                 ladder_last_error());
    for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
        if (!rb.t[i].data) continue;
        const size_t bytes = (size_t)ladder_tensor_numel(&rb.t[i]) * ladder_dtype_size(rb.t[i].dtype);
        cr_expect(memcmp(rb.t[i].data, rg.t[i].data, bytes) == 0, "%s: given lists change the bits",
                  ladder_flex_algo.tensors[i].name);
    }
    ladder_result_free(&rb), ladder_result_free(&rg);
    ladder_case_free(&built), ladder_case_free(&given);
}

/* Tile kinds of a hand-made pattern, and a case with those lists in place of the drawn ones. */
enum { E = LADDER_FLEX_TILE_EMPTY, PA = LADDER_FLEX_TILE_PARTIAL, F = LADDER_FLEX_TILE_FULL };

static void set_lists(ladder_case *c, const unsigned char *kind, int64_t Tq, int64_t Tk) {
    ladder_tensor *l = &c->t[T(&ladder_flex_algo, "kv_num_blocks")];
    int32_t *kv_num = l[0].data, *kv_idx = l[1].data, *fkv_num = l[2].data, *fkv_idx = l[3].data;
    int32_t *q_num = l[4].data, *q_idx = l[5].data, *fq_num = l[6].data, *fq_idx = l[7].data;
    for (int64_t r = 0; r < Tq; r++)
        ladder_flex_list_row(kind + r * Tk, 1, Tk, kv_idx + r * Tk, &kv_num[r], fkv_idx + r * Tk, &fkv_num[r]);
    for (int64_t col = 0; col < Tk; col++)
        ladder_flex_list_row(kind + col, Tk, Tq, q_idx + col * Tq, &q_num[col], fq_idx + col * Tq, &fq_num[col]);
}

static void expect_matches_oracle(ladder_case *c, const char *what) {
    double *v[LADDER_MAX_TENSORS];
    test_oracle_run(c, v);
    ladder_result r;
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, c, &(ladder_run_opts){0}, &r), LADDER_OK, "%s: %s", what,
                 ladder_last_error());
    ladder_magnitudes m;
    test_magnitudes(c, &m);
    for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
        if (!r.t[i].data || !v[i]) continue;
        const ladder_cmp cmp = test_compare_output_to_f64(&m, i, &r.t[i], v[i], LADDER_TOL_F32);
        char why[256];
        ladder_cmp_describe(&cmp, why, sizeof why);
        cr_expect(cmp.ok, "%s: cpu vs oracle, %s: %s", what, ladder_flex_algo.tensors[i].name, why);
    }
    ladder_magnitudes_free(&m);
    ladder_result_free(&r);
    test_oracle_free(v);
}

Test(flex, hand_made_block_lists_run_as_the_oracle_reads_them) {
    static const struct {
        const char *what;
        int64_t Sq, Sk;
        int masks;
        unsigned char kind[12];
    } pats[] = {
        {"a query tile with no key tile (its rows fully masked)", 300, 200, 1 << LADDER_FLEX_CAUSAL,
         {PA, F, E, E, F, PA}},
        {"every tile full", 257, 300, 0, {F, F, F, F, F, F, F, F, F}},
        {"a single partial tile", 100, 90, 1 << LADDER_FLEX_CAUSAL, {PA}},
        {"partial tiles only, Sq != Sk, ragged ends", 129, 385, 1 << LADDER_FLEX_DOCUMENT,
         {PA, E, PA, PA, PA, E, E, PA}},
    };
    for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
        ladder_flex_problem p = FLEX(2, 2, 1, pats[k].Sq, pats[k].Sk, 8, LADDER_FLEX_REL_BIAS, pats[k].masks);
        test_case t = test_case_of(&ladder_flex_algo, &p);
        test_case_with(&t, "kv_num_blocks", 8);
        t.opts.with |= 1u << T(&ladder_flex_algo, "dlse");
        ladder_case c;
        test_make(&t, &c);
        set_lists(&c, pats[k].kind, ladder_flex_tiles(p.attn.Sq), ladder_flex_tiles(p.attn.Sk));
        expect_matches_oracle(&c, pats[k].what);
        ladder_case_free(&c);
    }
}

/* ---- 4. buffer gradients: the lines the GPU rungs sum along, and determinism ---------------------------------- */

/* Fail unless the lines of kind @p line of plane Sq x Sk in env @p e (its Sq, Sk and num_buckets replaced), in order,
 * read the elements of read r of score mod @p spec in runs: each element on one run of consecutive lines. */
static void expect_one_run_per_element(const ladder_flex_score_spec *spec, int r, ladder_flex_env e, int64_t Sq,
                                       int64_t Sk, int64_t num_buckets) {
    const ladder_flex_line line = ladder_flex_read_line(spec->id, r);
    e.Sq = Sq, e.Sk = Sk, e.num_buckets = num_buckets;
    const int64_t N = ladder_flex_lines(line, Sq, Sk);
    int64_t *runs = malloc(sizeof(int64_t) * (size_t)N), n_runs = 0;
    cr_assert(runs);
    for (int64_t h = 0; h < MH_; h++, n_runs = 0)
        for (int64_t n = 0; n < N; n++) {
            int64_t i, j;
            ladder_flex_line_first(line, n, Sq, &i, &j);
            const int64_t at = ladder_flex_score_grad(spec->id, 0.5f, &e, 0, h, i, j).at[r];
            if (n_runs && runs[n_runs - 1] == at) continue;
            for (int64_t k = 0; k < n_runs; k++)
                cr_assert_neq(runs[k], at, "score mod %s, read %d, plane %lldx%lld: line %lld of head %lld reads "
                              "element %lld, which an earlier run of lines read (the scatter needs each element's "
                              "lines consecutive)", spec->name, r, (long long)Sq, (long long)Sk, (long long)n,
                              (long long)h, (long long)at);
            runs[n_runs++] = at;
        }
    free(runs);
}

/* The fast GPU rungs sum a read's shares along one line of the plane per element (common/flex_lines.h): every
 * registered read must take the same element all along the line ladder_flex_read_line() names, in every batch row, so
 * that the element the scatter asks for at the line's first position is the one every score on the line read; and
 * the lines that read one element must be consecutive, since the scatter gives each run of lines one thread (also
 * on planes far larger than this test's buffers, with t5_bias's 32 buckets: the elements are only counted). */
Test(flex, every_registered_read_takes_one_element_along_its_line) {
    for (int k = 0; k < ladder_flex_n_score_mods; k++) {
        const ladder_flex_score_spec *spec = &ladder_flex_score_mods[k];
        mod_bench m;
        mod_bench_make(&m, spec->id);
        const ladder_flex_env e = ladder_flex_env_of(&m.p, &m.a);
        for (int r = 0; r < spec->n_reads; r++) {
            const ladder_flex_line line = ladder_flex_read_line(spec->id, r);
            for (int64_t b = 0; b < MB_; b++)
                for (int64_t h = 0; h < MH_; h++)
                    for (int64_t i = 0; i < MSQ; i++)
                        for (int64_t j = 0; j < MSK; j++) {
                            const int64_t n = ladder_flex_line_of(line, i, j, MSQ);
                            int64_t fi, fj;
                            ladder_flex_line_first(line, n, MSQ, &fi, &fj);
                            cr_assert(fi >= 0 && fi < MSQ && fj >= 0 && fj < MSK &&
                                          ladder_flex_line_of(line, fi, fj, MSQ) == n,
                                      "line %lld of kind %d: its first position (%lld, %lld) is not on it",
                                      (long long)n, (int)line, (long long)fi, (long long)fj);
                            const int64_t at = ladder_flex_score_grad(spec->id, 0.5f, &e, b, h, i, j).at[r];
                            const int64_t first = ladder_flex_score_grad(spec->id, 0.5f, &e, 0, h, fi, fj).at[r];
                            cr_expect_eq(at, first, "score mod %s, read %d: (b %lld, h %lld, i %lld, j %lld) reads "
                                         "element %lld, but its line's first position in batch row 0 reads %lld "
                                         "(name the read's line in ladder_flex_read_line())", spec->name, r,
                                         (long long)b, (long long)h, (long long)i, (long long)j, (long long)at,
                                         (long long)first);
                        }
            expect_one_run_per_element(spec, r, e, MSQ, MSK, MNB);
            expect_one_run_per_element(spec, r, e, 1000, 700, 32);
        }
        mod_bench_free(&m);
    }
}

/*
 * The numbering of the GPU rungs' three sums (common/flex_lines.h), emulated in double on integer shares, so that
 * every sum is exact: per tile along the tile's lines into its query tile's row of partials, then per line of the
 * plane over the query tiles; the result is each line's sum taken directly. Every element's tile slot is its line's
 * slot in its query tile's row, inside the row's width. The tiles of each rung (32 x 32 tiled; 32 x 128, 32 x 64 and
 * 64 x 128 tensor-core), planes that are not multiples of them, and a third of the tiles skipped, as a block mask skips them
 * (their slots stay the zero that each row starts at).
 */
Test(flex, gpu_buffer_gradient_tiles_partials_and_lines_add_up_to_each_lines_sum) {
    static const int tiles[][2] = {{32, 32}, {32, 128}, {32, 64}, {64, 128}};
    static const int64_t planes[][2] = {{1, 1}, {45, 70}, {130, 200}, {64, 128}, {257, 129}, {200, 33}};
    ladder_rng rng;
    ladder_rng_seed(&rng, 0x11e5u);
    for (int line = LADDER_FLEX_DIAGONAL; line <= LADDER_FLEX_COLUMN; line++)
        for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ti++)
            for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
                const ladder_flex_line L = (ladder_flex_line)line;
                const int BR = tiles[ti][0], BC = tiles[ti][1];
                const int64_t Sq = planes[pi][0], Sk = planes[pi][1], Tq = (Sq + BR - 1) / BR, Tk = (Sk + BC - 1) / BC;
                const int64_t width = ladder_flex_partial_width(L, Sk, BR), N = ladder_flex_lines(L, Sq, Sk);
                cr_assert_eq(ladder_flex_partial_numel(L, 1, 1, Sq, Sk, BR), Tq * width);
                double *part = calloc((size_t)(Tq * width), sizeof(double)), *want = calloc((size_t)N, sizeof(double));
                double *sums = malloc(sizeof(double) * (size_t)ladder_flex_tile_lines(L, BR, BC));
                for (int64_t qt = 0; qt < Tq; qt++)
                    for (int64_t kt = 0; kt < Tk; kt++) {
                        if (ladder_rng_next(&rng) % 3 == 0) continue; /* an empty tile: never visited */
                        const int64_t j0 = kt * BC;
                        for (int l = 0; l < ladder_flex_tile_lines(L, BR, BC); l++) sums[l] = 0.0;
                        for (int r = 0; r < BR; r++)
                            for (int c = 0; c < BC; c++) {
                                const int64_t i = qt * BR + r, j = j0 + c;
                                if (i >= Sq || j >= Sk) continue; /* past the plane: a share of 0 */
                                const double share = (double)(ladder_rng_next(&rng) % 7) - 3.0;
                                const int l = ladder_flex_tile_line(L, r, c, BR);
                                const int64_t slot = ladder_flex_tile_slot(L, l, j0);
                                cr_assert(l >= 0 && l < ladder_flex_tile_lines(L, BR, BC) && slot >= 0 && slot < width,
                                          "kind %d, tile %dx%d, plane %lldx%lld: (%lld, %lld) on tile line %d, slot "
                                          "%lld of %lld", line, BR, BC, (long long)Sq, (long long)Sk, (long long)i,
                                          (long long)j, l, (long long)slot, (long long)width);
                                const int64_t n = ladder_flex_line_of(L, i, j, Sq);
                                cr_assert_eq(ladder_flex_partial_slot(L, n, qt, BR, Sq), slot,
                                             "kind %d, tile %dx%d, plane %lldx%lld: (%lld, %lld) is in slot %lld of "
                                             "its tile, but its line %lld in slot %lld of the query tile's row", line,
                                             BR, BC, (long long)Sq, (long long)Sk, (long long)i, (long long)j,
                                             (long long)slot, (long long)n,
                                             (long long)ladder_flex_partial_slot(L, n, qt, BR, Sq));
                                sums[l] += share;
                                want[n] += share;
                            }
                        for (int l = 0; l < ladder_flex_tile_lines(L, BR, BC); l++) { /* as flex_add_tile_sums() adds */
                            const int64_t slot = ladder_flex_tile_slot(L, l, j0);
                            if (slot < width) part[qt * width + slot] += sums[l];
                        }
                    }
                for (int64_t n = 0; n < N; n++) { /* as ladder_flex_line_sum_kernel() adds */
                    double got = 0.0;
                    for (int64_t qt = 0; qt < Tq; qt++) {
                        const int64_t slot = ladder_flex_partial_slot(L, n, qt, BR, Sq);
                        if (slot >= 0 && slot < width) got += part[qt * width + slot];
                    }
                    cr_expect_eq(got, want[n], "kind %d, tile %dx%d, plane %lldx%lld: line %lld sums to %g through "
                                 "the partials, %g directly", line, BR, BC, (long long)Sq, (long long)Sk, (long long)n,
                                 got, want[n]);
                }
                free(part), free(want), free(sums);
            }
}

Test(flex, buffer_gradients_are_the_same_bits_at_every_thread_count) {
    const int mods[] = {LADDER_FLEX_ALIBI, LADDER_FLEX_REL_BIAS, LADDER_FLEX_T5_BIAS, LADDER_FLEX_BIAS_QK};
    for (size_t k = 0; k < sizeof mods / sizeof mods[0]; k++) {
        ladder_flex_problem p = FLEX(2, 3, 1, 150, 170, 8, mods[k], 1 << LADDER_FLEX_CAUSAL);
        p.num_buckets = 16;
        test_case t = test_case_of(&ladder_flex_algo, &p);
        t.opts.with |= 1u << T(&ladder_flex_algo, "dlse");
        ladder_case c;
        test_make(&t, &c);
        ladder_result first;
        omp_set_num_threads(1);
        test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &first);
        for (int threads = 2; threads <= 5; threads++)
            for (int rep = 0; rep < 4; rep++) {
                omp_set_num_threads(threads);
                ladder_result again;
                test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &again);
                for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
                    if (!first.t[i].data) continue;
                    const size_t bytes = (size_t)ladder_tensor_numel(&first.t[i]) * sizeof(float);
                    cr_expect(memcmp(first.t[i].data, again.t[i].data, bytes) == 0, "score mod %s: %s differs "
                              "between 1 and %d threads", ladder_flex_score_mods[mods[k]].name,
                              ladder_flex_algo.tensors[i].name, threads);
                }
                ladder_result_free(&again);
            }
        ladder_result_free(&first);
        ladder_case_free(&c);
    }
}

/* At each GPU rung flex has, every buffer-gradient mod (with dq, dk, dv) repeats bit for bit over 20 runs: the rung
 * sums every buffer gradient in a fixed order (PyTorch's atomics do not). */
ParameterizedTestParameters(flex, gpu_buffer_gradients_repeat_bitwise_over_20_runs) {
    static const int mods[] = {LADDER_FLEX_ALIBI, LADDER_FLEX_REL_BIAS, LADDER_FLEX_T5_BIAS, LADDER_FLEX_BIAS_QK};
    test_case cases[12];
    int k = 0;
    for (int r = 1; r < TEST_N_RUNGS; r++) /* the GPU rungs */
        for (size_t m = 0; m < sizeof mods / sizeof mods[0]; m++) {
            ladder_flex_problem p = FLEX(2, 4, 2, 200, 260, 16, mods[m], 1 << LADDER_FLEX_CAUSAL);
            p.num_buckets = 16;
            cases[k] = test_case_of(&ladder_flex_algo, &p);
            cases[k].opts.with |= 1u << T(&ladder_flex_algo, "dlse");
            cases[k].rung = test_rungs[r].rung, cases[k++].dtype = test_rungs[r].dtype;
        }
    return test_params(cases, k);
}

ParameterizedTest(const test_case *t, flex, gpu_buffer_gradients_repeat_bitwise_over_20_runs) {
    harness_require_rung(t);
    const int mod = ((const ladder_flex_problem *)t->problem)->score_mod;
    ladder_case c;
    test_make(t, &c);
    ladder_result first;
    test_run(t, t->rung, t->dtype, &c, &first);
    const ladder_flex_score_spec *spec = &ladder_flex_score_mods[mod];
    for (int r = 0; r < spec->n_reads; r++) {
        char grad[48];
        snprintf(grad, sizeof grad, "d%s", spec->reads[r]);
        cr_assert(first.t[T(&ladder_flex_algo, grad)].data, "score mod %s: %s was not written", spec->name, grad);
    }
    for (int rep = 2; rep <= 20; rep++) {
        ladder_result again;
        test_run(t, t->rung, t->dtype, &c, &again);
        for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
            if (!first.t[i].data) continue;
            const size_t bytes = (size_t)ladder_tensor_numel(&first.t[i]) * ladder_dtype_size(first.t[i].dtype);
            cr_expect(memcmp(first.t[i].data, again.t[i].data, bytes) == 0, "rung %s, score mod %s: %s of run %d "
                      "differs bitwise from run 1", ladder_rung_name(t->rung), spec->name,
                      ladder_flex_algo.tensors[i].name, rep);
        }
        ladder_result_free(&again);
    }
    ladder_result_free(&first);
    ladder_case_free(&c);
}

/* ---- 5. bad input ---------------------------------------------------------------------------------------------- */

Test(flex, unknown_mod_names_are_refused_naming_the_registered_ones) {
    int id, set;
    cr_expect_eq(ladder_flex_score_parse("alibbi", &id), LADDER_ERR_ARG);
    cr_expect(strstr(ladder_last_error(), "'alibbi'") && strstr(ladder_last_error(), "rel_bias"), "%s",
              ladder_last_error());
    cr_expect_eq(ladder_flex_mask_parse("causal+docment", &set), LADDER_ERR_ARG);
    cr_expect(strstr(ladder_last_error(), "'docment'") && strstr(ladder_last_error(), "document"), "%s",
              ladder_last_error());
    cr_expect_eq(ladder_flex_mask_parse("causal+document", &set), LADDER_OK);
    cr_expect_eq(set, (1 << LADDER_FLEX_CAUSAL) | (1 << LADDER_FLEX_DOCUMENT));
    cr_expect_eq(ladder_flex_mask_parse("none", &set), LADDER_OK);
    cr_expect_eq(set, 0);
}

/* A valid forward call on a case, for breaking one thing at a time. */
typedef struct call {
    ladder_case c;
    ladder_result r;
    ladder_flex_args a;
} call;

/* The call at head dims @p D and @p Dv, its forward run at the cpu rung. */
static void call_make_dims(call *k, int score_mod, int masks, bool lists, int64_t D, int64_t Dv) {
    ladder_flex_problem p = FLEX(2, 2, 1, 200, 300, D, score_mod, masks);
    p.attn.Dv = Dv;
    test_case t = test_case_of(&ladder_flex_algo, &p);
    if (lists) test_case_with(&t, "kv_num_blocks", 8);
    test_make(&t, &k->c);
    cr_assert_eq(ladder_run(LADDER_RUNG_CPU, LADDER_F32, &k->c, &(ladder_run_opts){.forward_only = true}, &k->r),
                 LADDER_OK, "%s", ladder_last_error());
    memset(&k->a, 0, sizeof k->a);
    for (int i = 0; i < ladder_flex_algo.n_tensors; i++) {
        ladder_tensor *to = (ladder_tensor *)((char *)&k->a + ladder_flex_algo.tensors[i].offset);
        if (k->c.t[i].data && (ladder_flex_algo.tensors[i].role & (LADDER_IN_FWD | LADDER_INDEX))) *to = k->c.t[i];
        if (k->r.t[i].data && (ladder_flex_algo.tensors[i].role & LADDER_OUT_FWD)) *to = k->r.t[i];
    }
}

static void call_make(call *k, int score_mod, int masks, bool lists) {
    call_make_dims(k, score_mod, masks, lists, 4, 4);
}

static void call_free(call *k) {
    ladder_result_free(&k->r);
    ladder_case_free(&k->c);
}

static void expect_refused_at(call *k, ladder_rung rung, ladder_status want, const char *needle) {
    const ladder_status st = ladder_flex_fwd(rung, (const ladder_flex_problem *)k->c.problem, &k->a);
    cr_expect_eq(st, want, "expected %s, got %s (%s)", ladder_status_name(want), ladder_status_name(st),
                 ladder_last_error());
    cr_expect(strstr(ladder_last_error(), needle), "the message \"%s\" does not name \"%s\"", ladder_last_error(),
              needle);
}

static void expect_refused(call *k, ladder_status want, const char *needle) {
    expect_refused_at(k, LADDER_RUNG_CPU, want, needle);
}

Test(flex, buffers_missing_or_of_the_wrong_shape_or_dtype) {
    call k;
    call_make(&k, LADDER_FLEX_ALIBI, 1 << LADDER_FLEX_DOCUMENT, false);
    cr_assert_eq(ladder_flex_fwd(LADDER_RUNG_CPU, (const ladder_flex_problem *)k.c.problem, &k.a), LADDER_OK, "%s",
                 ladder_last_error());
    const ladder_tensor slopes = k.a.slopes, doc_k = k.a.doc_k;
    k.a.slopes.data = NULL;
    expect_refused(&k, LADDER_ERR_ARG, "slopes [Hq] is missing");
    k.a.slopes = slopes, k.a.slopes.shape[0] = 3;
    expect_refused(&k, LADDER_ERR_SHAPE, "slopes has shape [3]");
    k.a.slopes = slopes, k.a.slopes.dtype = LADDER_I32;
    expect_refused(&k, LADDER_ERR_UNSUPPORTED, "slopes");
    k.a.slopes = slopes;
    k.a.doc_k.data = NULL; /* a mask whose buffer is missing */
    expect_refused(&k, LADDER_ERR_ARG, "doc_k [Sk] is missing");
    k.a.doc_k = doc_k, k.a.doc_k.dtype = LADDER_F32;
    expect_refused(&k, LADDER_ERR_UNSUPPORTED, "doc_k");
    k.a.doc_k = doc_k;
    k.a.bq = slopes; /* a buffer no mod of the problem reads: its shape is still checked */
    expect_refused(&k, LADDER_ERR_SHAPE, "bq has shape [2]");
    call_free(&k);
}

Test(flex, block_lists_unsorted_out_of_range_inconsistent_or_partial) {
    call k;
    call_make(&k, LADDER_FLEX_SCORE_NONE, 0, true);
    /* a known pattern: tiles (0,0) partial, (0,1) full, (1,0) empty, (1,2) partial ... 2 x 3 tiles */
    const unsigned char kind[6] = {PA, F, PA, E, PA, PA};
    set_lists(&k.c, kind, 2, 3);
    cr_assert_eq(ladder_flex_fwd(LADDER_RUNG_CPU, (const ladder_flex_problem *)k.c.problem, &k.a), LADDER_OK, "%s",
                 ladder_last_error());
    int32_t *kv_idx = k.a.kv_indices.data, *kv_num = k.a.kv_num_blocks.data, *q_idx = k.a.q_indices.data;
    /* row 0 lists partial tiles 0, 2: swap them */
    kv_idx[0] = 2, kv_idx[1] = 0;
    expect_refused(&k, LADDER_ERR_ARG, "ascending");
    kv_idx[0] = 0, kv_idx[1] = 3;
    expect_refused(&k, LADDER_ERR_ARG, "in 0..2");
    kv_idx[1] = 2, kv_num[0] = 4;
    expect_refused(&k, LADDER_ERR_ARG, "kv_num_blocks[0,0]");
    kv_num[0] = 2;
    q_idx[0] = 1; /* key tile 0's partial query tiles: 0 -> 1, which the forward's lists do not say */
    expect_refused(&k, LADDER_ERR_ARG, "not the transpose");
    q_idx[0] = 0;
    ((int32_t *)k.a.full_kv_indices.data)[0] = 0; /* tile (0, 0) both partial and full */
    expect_refused(&k, LADDER_ERR_ARG, "also listed as partial");
    ((int32_t *)k.a.full_kv_indices.data)[0] = 1;
    cr_assert_eq(ladder_flex_fwd(LADDER_RUNG_CPU, (const ladder_flex_problem *)k.c.problem, &k.a), LADDER_OK, "%s",
                 ladder_last_error());
    k.a.q_indices.data = NULL;
    expect_refused(&k, LADDER_ERR_ARG, "q_indices is missing: block lists come all eight together");
    call_free(&k);
}

/* At the tensor-core rung: q, k, v and o bf16 or f16, never f32 (flex has no TF32 kernels); the buffers f32, as at
 * every rung; head dims up to LADDER_FLEX_TC_MAX_HEAD_DIM. Each refusal names what it refuses, and comes before the
 * rung's availability is asked, so that a machine without a GPU sees it too. */
Test(flex, the_tensor_core_rung_refuses_f32_inputs_16_bit_buffers_and_wide_heads) {
    const ladder_rung tc = LADDER_RUNG_GPU_TENSORCORE;
    call k;
    call_make_dims(&k, LADDER_FLEX_ALIBI, 1 << LADDER_FLEX_CAUSAL, false, 192, 64);
    expect_refused_at(&k, tc, LADDER_ERR_UNSUPPORTED, "takes q as bf16 or f16, not f32: flex has no f32 (TF32)");
    k.a.q.dtype = k.a.k.dtype = k.a.v.dtype = k.a.o.dtype = LADDER_BF16; /* the dtypes alone: nothing runs */
    k.a.slopes.dtype = LADDER_BF16;
    expect_refused_at(&k, tc, LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes slopes as f32, not bf16");
    k.a.slopes.dtype = LADDER_F32;
    expect_refused_at(&k, tc, LADDER_ERR_UNSUPPORTED, "D = 192 and Dv = 64, but rung gpu_tensorcore runs flex at "
                                                      "head dims up to 128");
    call_free(&k);
}

/* ---- 6. frozen buffers, and the FLOP count ---------------------------------------------------------------------- */

/* A frozen buffer is read but has no gradient: dslopes leaves the case (no rung writes it), and every other output is
 * the learnable case's, bit for bit at the cpu rung (the buffer gradients are a reduction of their own there). */
Test(flex, frozen_slopes_give_no_dslopes_and_the_same_other_outputs) {
    const ladder_flex_problem p = FLEX(2, 4, 2, 150, 200, 16, LADDER_FLEX_ALIBI, 1 << LADDER_FLEX_CAUSAL);
    test_case learnable = test_case_of(&ladder_flex_algo, &p), frozen = learnable;
    cr_assert_eq(ladder_algo_frozen(&ladder_flex_algo, "slopes", &frozen.opts.frozen), LADDER_OK, "%s",
                 ladder_last_error());
    cr_assert_eq(frozen.opts.frozen, 1u << T(&ladder_flex_algo, "slopes"));
    ladder_case cl, cf;
    ladder_result rl, rf;
    test_make(&learnable, &cl);
    test_make(&frozen, &cf);
    const int slopes = T(&ladder_flex_algo, "slopes"), dslopes = T(&ladder_flex_algo, "dslopes");
    cr_assert(cf.t[slopes].data, "a frozen buffer is still read: slopes must be in the case");
    cr_assert(!((cf.present >> dslopes) & 1u), "frozen slopes must take dslopes out of the case's outputs");
    cr_assert((cl.present >> dslopes) & 1u, "learnable slopes must keep dslopes");
    test_run(&learnable, LADDER_RUNG_CPU, LADDER_F32, &cl, &rl);
    test_run(&frozen, LADDER_RUNG_CPU, LADDER_F32, &cf, &rf);
    cr_expect_null(rf.t[dslopes].data, "the frozen run wrote dslopes");
    cr_expect_not_null(rl.t[dslopes].data, "the learnable run wrote no dslopes");
    const char *outs[] = {"o", "lse", "dq", "dk", "dv"};
    for (int i = 0; i < 5; i++) {
        const ladder_tensor *a = &rl.t[T(&ladder_flex_algo, outs[i])], *b = &rf.t[T(&ladder_flex_algo, outs[i])];
        cr_assert(a->data && b->data, "%s must be written both times", outs[i]);
        cr_expect_eq(memcmp(a->data, b->data, (size_t)ladder_tensor_numel(a) * ladder_dtype_size(a->dtype)), 0,
                     "%s differs between frozen and learnable slopes", outs[i]);
    }
    /* a case read from files is frozen afterwards, the same way */
    cr_assert_eq(ladder_case_freeze(&cl, frozen.opts.frozen), LADDER_OK, "%s", ladder_last_error());
    cr_expect_eq(cl.present, cf.present, "ladder_case_freeze() must leave the outputs ladder_case_make() leaves");
    ladder_result_free(&rl);
    ladder_result_free(&rf);
    ladder_case_free(&cl);
    ladder_case_free(&cf);
}

/* Only an input whose gradient may be left out can be frozen: a bad name is refused naming it and the ones that can
 * be; recurrent writes every gate's gradient, so it has none; memeff's bias can. */
Test(flex, only_inputs_with_a_gradient_that_may_be_left_out_can_be_frozen) {
    extern const ladder_algo ladder_recurrent_algo;
    uint32_t set = 123;
    cr_expect_eq(ladder_algo_frozen(&ladder_flex_algo, "bq,bk", &set), LADDER_OK, "%s", ladder_last_error());
    cr_expect_eq(set, (1u << T(&ladder_flex_algo, "bq")) | (1u << T(&ladder_flex_algo, "bk")));
    cr_expect_eq(ladder_algo_frozen(&ladder_flex_algo, "none", &set), LADDER_OK);
    cr_expect_eq(set, 0u);
    const char *bad[] = {"q", "slopes,dslopes", "doc_q", "sloeps"};
    const char *named[] = {"'q'", "'dslopes'", "'doc_q'", "'sloeps'"};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(ladder_algo_frozen(&ladder_flex_algo, bad[i], &set), LADDER_ERR_ARG, "%s must be refused", bad[i]);
        cr_expect(strstr(ladder_last_error(), named[i]) && strstr(ladder_last_error(), "slopes, rel_bias, t5_bias, bq, bk"),
                  "the message \"%s\" must name %s and the inputs that can be frozen", ladder_last_error(), named[i]);
    }
    cr_expect_eq(ladder_algo_frozen(&ladder_memeff_algo, "bias", &set), LADDER_OK, "%s", ladder_last_error());
    cr_expect_eq(ladder_algo_freezable(&ladder_recurrent_algo), 0u, "recurrent writes every gate's gradient");
    cr_expect_eq(ladder_algo_frozen(&ladder_recurrent_algo, "g", &set), LADDER_ERR_ARG);
    cr_expect(strstr(ladder_last_error(), "it has none"), "%s", ladder_last_error());
    /* a case asked to freeze what cannot be frozen is refused, not quietly run with the gradient */
    ladder_case c;
    const ladder_flex_problem p = FLEX(1, 2, 2, 20, 30, 8, LADDER_FLEX_ALIBI, 0);
    const ladder_case_opts o = {.seed = 3, .frozen = 1u << T(&ladder_flex_algo, "q")};
    cr_expect_eq(ladder_case_make(&c, &ladder_flex_algo, &p, &o), LADDER_ERR_ARG);
    cr_expect(strstr(ladder_last_error(), "'q'"), "%s", ladder_last_error());
}

/* The pairs a FLOP count of @p p stands for: its forward FLOPs over 2*B*Hq*(D + Dv). */
static double counted_pairs(const ladder_algo *algo, const void *p, const ladder_attention_problem *attn) {
    return algo->flops(p, LADDER_PASS_FWD) / (2.0 * (double)attn->B * (double)attn->Hq * (double)(attn->D + attn->Dv));
}

/* flex counts the useful work: the pairs its mask mods let through, exactly. causal is flash causal's count (top-left
 * at any Sq, Sk; at Sq = Sk flash's bottom-right too), no mask the whole plane, and each position mask (causal,
 * window, both) its predicate summed over every pair; the backward is 2.5 times the forward. */
Test(flex, flops_count_the_pairs_the_mask_mods_let_through) {
    const int64_t shapes[][2] = {{64, 64}, {100, 37}, {37, 100}, {1, 5}};
    for (int s = 0; s < 4; s++) {
        const int64_t Sq = shapes[s][0], Sk = shapes[s][1];
        for (int masks = 0; masks < 4; masks++) { /* none, causal, window, causal + window */
            ladder_flex_problem p = FLEX(2, 3, 1, Sq, Sk, 8, LADDER_FLEX_ALIBI, masks);
            p.attn.Dv = 5;
            p.window_left = (masks & (1 << LADDER_FLEX_WINDOW)) ? 9 : -1;
            const ladder_flex_env env = {.window_left = p.window_left};
            double want = 0;
            for (int64_t i = 0; i < Sq; i++)
                for (int64_t j = 0; j < Sk; j++) want += ladder_flex_masks((unsigned)masks, &env, 0, 0, i, j) ? 1 : 0;
            const double got = counted_pairs(&ladder_flex_algo, &p, &p.attn);
            cr_expect_eq(got, want, "flex Sq=%lld Sk=%lld mask_mods=%d counts %.0f pairs, its masks let %.0f through",
                         (long long)Sq, (long long)Sk, masks, got, want);
            cr_expect_eq(ladder_flex_algo.flops(&p, LADDER_PASS_BWD), 2.5 * ladder_flex_algo.flops(&p, LADDER_PASS_FWD));
            if (masks > 1) continue;
            ladder_flash_problem f = {.attn = p.attn};
            f.attn.mask = (ladder_attn_mask){masks ? LADDER_CAUSAL_TOP_LEFT : LADDER_CAUSAL_NONE, -1, -1};
            cr_expect_eq(ladder_flex_algo.flops(&p, LADDER_PASS_FWD), ladder_flash_algo.flops(&f, LADDER_PASS_FWD),
                         "flex and flash (causal %d) count different FLOPs at Sq=%lld Sk=%lld", masks, (long long)Sq,
                         (long long)Sk);
            cr_expect_eq(ladder_flex_algo.flops(&p, LADDER_PASS_BWD), ladder_flash_algo.flops(&f, LADDER_PASS_BWD));
            f.attn.mask.causal = LADDER_CAUSAL_BOTTOM_RIGHT;
            if (masks && Sq == Sk)
                cr_expect_eq(ladder_flex_algo.flops(&p, LADDER_PASS_FWD), ladder_flash_algo.flops(&f, LADDER_PASS_FWD),
                             "flex causal and flash causal (bottom-right) differ at Sq = Sk = %lld", (long long)Sq);
        }
    }
    /* the bench's sizes: a causal square is S(S+1)/2 pairs, the causal 1024-token window S*1025 less the first rows' */
    const ladder_flex_problem causal = FLEX(4, 16, 16, 4096, 4096, 128, 0, 1 << LADDER_FLEX_CAUSAL);
    cr_expect_eq(counted_pairs(&ladder_flex_algo, &causal, &causal.attn), 4096.0 * 4097.0 / 2);
    ladder_flex_problem window = FLEX(2, 16, 16, 8192, 8192, 128, LADDER_FLEX_ALIBI,
                                      (1 << LADDER_FLEX_CAUSAL) | (1 << LADDER_FLEX_WINDOW));
    window.window_left = 1024;
    cr_expect_eq(counted_pairs(&ladder_flex_algo, &window, &window.attn), 8192.0 * 1025 - 1024.0 * 1025 / 2);
}
