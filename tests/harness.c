/* tests/harness.c: the test machinery every suite shares (see harness.h). */
#include "harness.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every byte of the problem, the options and the salt mixed (FNV-1a), so each case gets its own inputs. */
static uint64_t mix(const void *data, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)data)[i]) * 0x100000001b3ull;
    return h;
}

const ladder_algo *test_case_algo(const test_case *t) { return ladder_algos[t->algo]; }

test_case test_case_of(const ladder_algo *algo, const void *problem) {
    test_case t;
    memset(&t, 0, sizeof t);
    while (ladder_algos[t.algo] != algo) t.algo++;
    memcpy(t.problem, problem, algo->problem_size);
    t.opts.seed = mix(problem, algo->problem_size, 0xcbf29ce484222325ull);
    t.dtype = LADDER_F32;
    return t;
}

void test_case_varlen(test_case *t, const int64_t *lens, int n) {
    t->opts.n_seqs = n;
    for (int i = 0; i < n; i++) t->opts.seqlens[i] = lens[i];
    t->opts.seed = mix(lens, (size_t)n * sizeof *lens, t->opts.seed);
}

void test_case_varlen2(test_case *t, const int64_t *lens) {
    t->opts.has_seqlens2 = true;
    for (int i = 0; i < t->opts.n_seqs; i++) t->opts.seqlens2[i] = lens[i];
    t->opts.seed = mix(lens, (size_t)t->opts.n_seqs * sizeof *lens, t->opts.seed);
}

void test_case_freeze(test_case *t, const char *names) {
    if (ladder_algo_frozen(test_case_algo(t), names, &t->opts.frozen) != LADDER_OK) t->opts.frozen = ~0u;
}

void test_case_with(test_case *t, const char *first, int n) {
    const int at = ladder_algo_tensor(test_case_algo(t), first);
    for (int l = 0; l < n; l++) t->opts.with |= 1u << (at + l);
}

void test_case_str(const test_case *t, char *buf, size_t n) {
    char shape[256];
    ladder_problem_str(test_case_algo(t), t->problem, shape, sizeof shape);
    int used = snprintf(buf, n, "%s %s%s", test_case_algo(t)->name, shape, t->opts.strided ? " strided" : "");
    for (int i = 0; i < t->opts.n_seqs && used > 0 && (size_t)used < n; i++)
        used += snprintf(buf + used, n - (size_t)used, "%s%lld", i ? "," : " varlen[", (long long)t->opts.seqlens[i]);
    if (t->opts.n_seqs && used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, "]");
    for (int i = 0; t->opts.has_seqlens2 && i < t->opts.n_seqs && used > 0 && (size_t)used < n; i++)
        used += snprintf(buf + used, n - (size_t)used, "%s%lld", i ? "," : " varlen2[", (long long)t->opts.seqlens2[i]);
    if (t->opts.has_seqlens2 && used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, "]");
    for (int i = 0; i < test_case_algo(t)->n_tensors && used > 0 && (size_t)used < n; i++)
        if ((t->opts.with >> i) & 1u) used += snprintf(buf + used, n - (size_t)used, " +%s", test_case_algo(t)->tensors[i].name);
    for (int i = 0; i < test_case_algo(t)->n_tensors && used > 0 && (size_t)used < n; i++)
        if ((t->opts.frozen >> i) & 1u)
            used += snprintf(buf + used, n - (size_t)used, " frozen:%s", test_case_algo(t)->tensors[i].name);
    for (int d = 0; d < LADDER_MAX_RANK && (t->opts.broadcast | t->opts.stride0) && used > 0 && (size_t)used < n; d++)
        used += snprintf(buf + used, n - (size_t)used, "%s%c", d ? "" : " broadcast[",
                         (t->opts.broadcast >> d) & 1u ? '1' : (t->opts.stride0 >> d) & 1u ? '0' : 'n');
    if ((t->opts.broadcast | t->opts.stride0) && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, "]");
}

void test_rung_label(ladder_rung rung, ladder_dtype dtype, char *buf, size_t n) {
    if (rung == LADDER_RUNG_GPU_TENSORCORE) snprintf(buf, n, "%s (%s)", ladder_rung_name(rung), ladder_dtype_name(dtype));
    else snprintf(buf, n, "%s", ladder_rung_name(rung));
}

void test_make(const test_case *t, ladder_case *c) {
    char what[512];
    ladder_status st = ladder_case_make(c, test_case_algo(t), t->problem, &t->opts);
    if (st != LADDER_OK) test_case_str(t, what, sizeof what);
    cr_assert(st == LADDER_OK, "making the case %s: %s", what, ladder_last_error());
}

void test_run(const test_case *t, ladder_rung rung, ladder_dtype dtype, const ladder_case *c, ladder_result *r) {
    const ladder_run_opts once = {0};
    ladder_status st = ladder_run(rung, dtype, c, &once, r);
    if (st != LADDER_OK) {
        char label[64], what[512];
        test_rung_label(rung, dtype, label, sizeof label);
        test_case_str(t, what, sizeof what);
        cr_assert_fail("%s on %s returned %s: %s", label, what, ladder_status_name(st), ladder_last_error());
    }
}

void test_expect_close(const char *who, const test_case *t, const char *tensor, const ladder_cmp *cmp) {
    if (cmp->ok) return;
    char what[512], why[512];
    test_case_str(t, what, sizeof what);
    ladder_cmp_describe(cmp, why, sizeof why);
    cr_assert_fail("%s on %s: %s differs: %s", who, what, tensor, why);
}

void test_magnitudes(const ladder_case *c, ladder_magnitudes *m) {
    cr_assert_eq(ladder_case_magnitudes(c, m), LADDER_OK, "the magnitudes of %s's outputs: %s", c->algo->name,
                 ladder_last_error());
}

void test_set_input(ladder_case *c, const char *name, double (*f)(double)) {
    ladder_tensor *t = &c->t[ladder_algo_tensor(c->algo, name)];
    cr_assert(t->data, "%s must be present", name);
    for (int64_t x = 0; x < ladder_tensor_numel(t); x++) {
        const int64_t at = ladder_tensor_offset_of_flat(t, x);
        ladder_tensor_set(t, at, f(ladder_tensor_get(t, at)));
    }
}

double test_zero(double x) { return 0 * x; }
double test_positive(double x) { return fabs(x) + 0.25; }

void test_expect_results_close(const char *who, const test_case *t, const ladder_case *c, const ladder_result *got,
                               const ladder_result *want, double tol) {
    ladder_magnitudes m;
    test_magnitudes(c, &m);
    for (int i = 0; i < c->algo->n_tensors; i++) {
        if (!want->t[i].data) continue;
        cr_assert(got->t[i].data, "%s: %s was not returned", who, c->algo->tensors[i].name);
        ladder_cmp cmp = ladder_output_compare(&m, i, &got->t[i], &want->t[i], tol);
        test_expect_close(who, t, c->algo->tensors[i].name, &cmp);
    }
    ladder_magnitudes_free(&m);
}

/* Flat index of the first element whose bytes differ, -1 if none (both contiguous, same dtype and shape). */
static int64_t first_bitwise_difference(const ladder_tensor *a, const ladder_tensor *b) {
    size_t size = ladder_dtype_size(a->dtype);
    int64_t n = ladder_tensor_numel(a);
    if (memcmp(a->data, b->data, (size_t)n * size) == 0) return -1;
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)a->data + i * size, (const char *)b->data + i * size, size) != 0) return i;
    return -1;
}

/*
 * Run @p t's rung once, then @p n more times, the k-th of them at threads[k] OpenMP threads (the first at 1), or,
 * with @p threads NULL, at whatever count the first ran; assert that every output of each is bitwise equal to the
 * first's.
 */
static void expect_repeats_bitwise_equal(const test_case *t, int n, const int *threads) {
    char label[64], what[512], again_is[48];
    const char *first_is = threads ? "the run at 1 thread" : "run 1";
    test_rung_label(t->rung, t->dtype, label, sizeof label);
    test_case_str(t, what, sizeof what);
    ladder_case c;
    test_make(t, &c);
    ladder_result first, again;
    if (threads) omp_set_num_threads(1);
    test_run(t, t->rung, t->dtype, &c, &first);
    for (int k = 0; k < n; k++) {
        if (threads) omp_set_num_threads(threads[k]);
        test_run(t, t->rung, t->dtype, &c, &again);
        if (threads) snprintf(again_is, sizeof again_is, "the run at %d threads", threads[k]);
        else snprintf(again_is, sizeof again_is, "run %d", k + 2);
        for (int i = 0; i < c.algo->n_tensors; i++) {
            if (!first.t[i].data) continue;
            int64_t bad = first_bitwise_difference(&first.t[i], &again.t[i]);
            if (bad >= 0)
                cr_assert_fail("%s on %s: %s of %s differs bitwise from %s at flat index %lld (%.9g vs %.9g)", label,
                               what, c.algo->tensors[i].name, again_is, first_is, (long long)bad,
                               ladder_tensor_get(&again.t[i], bad), ladder_tensor_get(&first.t[i], bad));
        }
        ladder_result_free(&again);
    }
    ladder_result_free(&first);
    ladder_case_free(&c);
}

void test_expect_deterministic(const test_case *t) {
    /* under compute-sanitizer (the small grids) a second run already replays every kernel the first ran, and ten
     * of them made the determinism suite alone outlast the sanitizer's time */
    expect_repeats_bitwise_equal(t, harness_small() ? 1 : 19, NULL);
}

void test_expect_thread_count_independent(const test_case *t) {
    /* 2 and 3 split the tasks differently, 7 leaves some threads with more tasks than others */
    static const int threads[] = {2, 3, 7};
    expect_repeats_bitwise_equal(t, (int)(sizeof threads / sizeof threads[0]), threads);
}

void harness_require_rung(const test_case *t) {
    if (ladder_algo_rung_available(test_case_algo(t), t->rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
}

bool harness_small(void) {
    const char *v = getenv("LADDER_TEST_SMALL");
    return v && strcmp(v, "1") == 0;
}

void harness_tmpdir_make(char *dir, size_t n, const char *tag) {
    snprintf(dir, n, "/tmp/ladder-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "cannot create %s", dir);
}

void harness_tmpdir_remove(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0, "cannot remove %s", dir);
}

static void free_params(struct criterion_test_params *params) { cr_free(params->params); }

struct criterion_test_params test_params(const test_case *cases, int n) {
    test_case *params = cr_malloc((size_t)(n > 0 ? n : 1) * sizeof *params);
    memcpy(params, cases, (size_t)n * sizeof *params);
    return cr_make_param_array(test_case, params, (size_t)n, free_params);
}

/* Whether LADDER_TEST_ALGO (a comma-separated list of algorithm names; unset or empty: all) names @p name. */
static bool algo_selected(const char *name) {
    const char *list = getenv("LADDER_TEST_ALGO");
    if (!list || !*list) return true;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == strlen(name) && strncmp(p, name, len) == 0) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Every selected algorithm's cases of @p list into @p cases (at most @p max), with this rung and dtype. */
static int collect(test_list list, ladder_rung rung, ladder_dtype dtype, test_case *cases, int max) {
    int n = 0;
    for (int a = 0; a < test_n_algos; a++) {
        const test_algo *ta = test_algos[a];
        if (!algo_selected(ta->algo->name)) continue;
        /* small: each algorithm's first determinism case alone (the others are larger, and the grid covers the
         * kernels); it is the one that determinism is asked of (flash's deterministic dQ pass) */
        int room = harness_small() && list == TEST_DETERMINISM && max - n > 1 ? 1 : max - n;
        int got = list == TEST_GRID          ? ta->grid(cases + n, max - n, harness_small())
                  : list == TEST_DETERMINISM ? ta->determinism(cases + n, room)
                  : list == TEST_FD          ? ta->fd_cases(cases + n, max - n)
                                             : ta->args_case(cases + n, max - n);
        for (int i = n; i < n + got; i++) cases[i].rung = rung, cases[i].dtype = dtype;
        n += got;
    }
    return n;
}

enum { MAX_CASES = 1024 };
static test_case all_cases[MAX_CASES];

struct criterion_test_params test_all(test_list list, ladder_rung rung, ladder_dtype dtype) {
    return test_params(all_cases, collect(list, rung, dtype, all_cases, MAX_CASES));
}

const test_rung test_rungs[TEST_N_RUNGS] = {{LADDER_RUNG_CPU, LADDER_F32},
                                           {LADDER_RUNG_GPU_NAIVE, LADDER_F32},
                                           {LADDER_RUNG_GPU_TILED, LADDER_F32},
                                           {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16}};

struct criterion_test_params test_all_gpu_rungs(test_list list) {
    static const struct {
        ladder_rung rung;
        ladder_dtype dtype;
    } gpu[] = {{LADDER_RUNG_GPU_NAIVE, LADDER_F32},
               {LADDER_RUNG_GPU_TILED, LADDER_F32},
               {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16},
               {LADDER_RUNG_GPU_TENSORCORE, LADDER_F16}};
    int n = 0;
    for (size_t r = 0; r < sizeof gpu / sizeof gpu[0]; r++) {
        /* small (the sanitizer runs): the determinism cases at the tiled rung and in bf16 alone, the longest cases
         * there. The naive rung's kernels and the tensor-core ones' fp16 instantiations run in the small grids of
         * their own suites, and a second dtype of the same templates meets no other hazard. */
        if (harness_small() && list == TEST_DETERMINISM &&
            (gpu[r].rung == LADDER_RUNG_GPU_NAIVE || gpu[r].dtype == LADDER_F16))
            continue;
        n += collect(list, gpu[r].rung, gpu[r].dtype, all_cases + n, MAX_CASES - n);
    }
    return test_params(all_cases, n);
}
const test_algo *test_algo_of(const ladder_algo *algo) {
    for (int i = 0; i < test_n_algos; i++)
        if (test_algos[i]->algo == algo) return test_algos[i];
    cr_assert_fail("%s has no test data in tests/algos.c", algo->name);
    return NULL;
}

/* A C-order double copy of a host tensor (any dtype, any strides). */
static double *to_f64(const ladder_tensor *t) {
    int64_t n = ladder_tensor_numel(t);
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    cr_assert(d, "out of memory copying %lld elements to double", (long long)n);
    for (int64_t i = 0; i < n; i++) d[i] = ladder_tensor_get(t, ladder_tensor_offset_of_flat(t, i));
    return d;
}

void test_oracle_run(const ladder_case *c, double *t[LADDER_MAX_TENSORS]) {
    const ladder_algo *algo = c->algo;
    const test_algo *ta = test_algo_of(algo);
    const ladder_tensor *index = NULL;
    memset(t, 0, LADDER_MAX_TENSORS * sizeof *t);
    for (int i = 0; i < algo->n_tensors; i++) {
        if (!c->t[i].data) continue;
        if ((algo->tensors[i].role & LADDER_INDEX) && !index) index = &c->t[i];
        t[i] = to_f64(&c->t[i]); /* index tensors too: an algorithm with two reads the second here */
    }
    for (int i = 0; i < algo->n_tensors; i++) {
        if (c->t[i].data || !((c->present >> i) & 1u)) continue;
        int64_t shape[LADDER_MAX_RANK], n = 1;
        int rank = ladder_case_shape(c, i, shape);
        cr_assert(rank >= 0, "%s: bad dims", algo->tensors[i].name);
        for (int d = 0; d < rank; d++) n *= shape[d];
        t[i] = calloc((size_t)(n > 0 ? n : 1), sizeof *t[i]);
        cr_assert(t[i], "out of memory for the oracle's %s", algo->tensors[i].name);
    }
    const int32_t *cu = index ? index->data : NULL;
    int n_seqs = index ? (int)index->shape[0] - 1 : 0;
    ta->oracle_fwd(c, cu, n_seqs, t);
    if (c->backward) ta->oracle_bwd(c, cu, n_seqs, t);
}

void test_oracle_free(double *t[LADDER_MAX_TENSORS]) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) free(t[i]), t[i] = NULL;
}

ladder_cmp test_compare_to_f64(const ladder_tensor *got, const double *want, double tol) {
    return test_compare_output_to_f64(NULL, 0, got, want, tol);
}

ladder_cmp test_compare_output_to_f64(const ladder_magnitudes *m, int i, const ladder_tensor *got, const double *want,
                                      double tol) {
    double *g = to_f64(got);
    const ladder_magnitude mi = {m ? m->terms[i] : NULL, m ? m->rounding[i] : NULL};
    ladder_cmp cmp = mi.terms ? ladder_compare_f64_magnitude(g, want, got->rank, got->shape, &mi, tol)
                              : ladder_compare_f64(g, want, got->rank, got->shape, tol);
    free(g);
    return cmp;
}
