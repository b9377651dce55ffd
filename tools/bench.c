/*
 * `ladder bench`: each bench problem of an algorithm at every available rung and dtype, forward and backward.
 *
 * Per rung: one validated call per pass (its outputs checked against the reference rung, on inputs rounded to the
 * rung's dtype; the cpu reference of the tensor-core rung also rounds what that rung rounds, ladder_run_tc_reference;
 * a GPU reference cannot, and where the algorithm has such roundings (flash) only the L2 rule decides), then the
 * rung function alone, timed: --warmup untimed runs, then --reps runs, each bracketed by CUDA events with L2
 * flushed before it, median reported. Each bench problem runs the rungs of its set (ladder_algo::bench_rungs), and
 * the lowest of them that is available is the reference. Where that is the cpu rung, its one validated call per
 * pass is also its timing (it is the reference, not the subject; --cpu-reps N times it N times after one untimed
 * run, for when it is the subject), and the other rungs get their speedup over it; a problem too large for the cpu
 * rung has a GPU rung as its reference, timed like the others, and no speedup.
 *
 * A problem none of whose rungs takes f32 inputs (flex's tensor-core sizes: the rung takes bf16 and fp16 alone) has no
 * reference: its rows are timed, and checked only for NaN (outputs are poisoned with NaN before each run, so an element
 * not written shows), and the bench says so; the test suites check the rung against the cpu rung.
 *
 * What a user with a fixed problem computes once (ladder_algo::fixed_inputs: flex's block lists) is added to each
 * case before any rung runs, so that the timed runs are the passes alone; building it is timed on its own, at its own
 * problem (ladder_algo::bench_build), in rows whose pass is "build".
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* The rungs and dtypes a sweep times, in report order. */
static const struct {
    ladder_rung rung;
    ladder_dtype dtype;
} plan[] = {
    {LADDER_RUNG_CPU, LADDER_F32},          {LADDER_RUNG_GPU_NAIVE, LADDER_F32},
    {LADDER_RUNG_GPU_TILED, LADDER_F32},    {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16},
    {LADDER_RUNG_GPU_TENSORCORE, LADDER_F16}, {LADDER_RUNG_GPU_TENSORCORE, LADDER_F32},
};
#define N_PLAN (int)(sizeof plan / sizeof plan[0])

/* Is plan entry i asked for: its rung (--rung), and for the tensor-core rung its precision (--dtype, else bf16 and
 * fp16: its fp32 inputs, where the algorithm has them, only when --dtype fp32 asks)? */
static bool plan_wanted(const tool_opts *o, int i) {
    const bool precision = plan[i].rung != LADDER_RUNG_GPU_TENSORCORE ||
                           (o->dtype_chosen ? plan[i].dtype == o->dtype : plan[i].dtype != LADDER_F32);
    return tool_rung_wanted(o, plan[i].rung) && precision;
}

static void progress(const char *algo, const char *shape, int step, int steps, const char *what, double t0) {
    fprintf(stderr, "bench %s [%s] %d/%d %s (%.1f s)\n", algo, shape, step, steps, what, (tool_now_ms() - t0) * 1e-3);
}

/* @p cpu: the cpu rung's result, for the speedup; NULL when the cpu rung did not run (speedup 0: unmeasured). */
static void add_rows(const ladder_algo *algo, const ladder_case *c, const char *shape, ladder_rung rung,
                     ladder_dtype dt, const ladder_result *res, const ladder_result *cpu, bench_row *rows, int *n) {
    for (int pass = 0; pass < 2; pass++) {
        if (res->ms[pass] <= 0) continue;
        bench_row *row = &rows[(*n)++];
        memset(row, 0, sizeof *row);
        snprintf(row->algo, sizeof row->algo, "%s", algo->name);
        snprintf(row->pass, sizeof row->pass, "%s", pass ? "bwd" : "fwd");
        snprintf(row->rung, sizeof row->rung, "%s", ladder_rung_name(rung));
        snprintf(row->dtype, sizeof row->dtype, "%s", ladder_dtype_name(dt));
        snprintf(row->shape, sizeof row->shape, "%s", shape);
        row->median_ms = res->ms[pass];
        row->bytes = algo->bytes(c->problem, c->present, (ladder_pass)pass, dt);
        row->flops = algo->flops(c->problem, (ladder_pass)pass);
        row->speedup_vs_cpu = cpu ? cpu->ms[pass] / res->ms[pass] : 0;
    }
}

/*
 * Append " with=g+h0" (the optional tensors in @p with) to @p shape, so that two bench problems of one size
 * differ; one NAME=VALUE pair, as tools/bench_tables.py reads shapes.
 */
static void with_str(const ladder_algo *algo, uint32_t with, char *shape, size_t n) {
    for (int i = 0, first = 1; i < algo->n_tensors; i++) {
        size_t used = strlen(shape);
        if (!((with >> i) & 1u)) continue;
        snprintf(shape + used, n - used, "%s%s", first ? " with=" : "+", algo->tensors[i].name);
        first = 0;
    }
}

/*
 * Append " frozen=slopes+bq" (the inputs in @p frozen), or " frozen=none" when the case's inputs @p inputs hold some
 * that could be frozen (ladder_algo_freezable()) and none is: one NAME=VALUE pair, so that a frozen row and a
 * learnable row of one problem differ and a table can pick either. Nothing where no input can be frozen.
 */
static void frozen_str(const ladder_algo *algo, uint32_t inputs, uint32_t frozen, char *shape, size_t n) {
    const uint32_t may = inputs & ladder_algo_freezable(algo);
    frozen &= may;
    if (may && !frozen) snprintf(shape + strlen(shape), n - strlen(shape), " frozen=none");
    for (int i = 0, first = 1; i < algo->n_tensors; i++) {
        size_t used = strlen(shape);
        if (!((frozen >> i) & 1u)) continue;
        snprintf(shape + used, n - used, "%s%s", first ? " frozen=" : "+", algo->tensors[i].name);
        first = 0;
    }
}

/* The inputs a case of @p problem with @p with includes: those asked for, and those the problem cannot run without. */
static uint32_t case_inputs(const ladder_algo *algo, const void *problem, uint32_t with) {
    return with | (algo->needs ? algo->needs(problem) : 0);
}

/* The reference of a problem whose rung set is @p rungs: its lowest rung available here that takes f32 inputs
 * (LADDER_RUNG_COUNT: none). */
static ladder_rung reference_rung(const ladder_algo *algo, uint32_t rungs) {
    for (int r = 0; r < LADDER_RUNG_COUNT; r++)
        if ((rungs >> r) & 1u && ladder_algo_rung_available(algo, (ladder_rung)r) == LADDER_OK &&
            ladder_algo_takes(algo, (ladder_rung)r, LADDER_F32) == LADDER_OK)
            return (ladder_rung)r;
    return LADDER_RUNG_COUNT;
}

/* Can some rung of the set @p rungs run here? */
static bool some_rung_runs(const ladder_algo *algo, uint32_t rungs) {
    for (int r = 0; r < LADDER_RUNG_COUNT; r++)
        if ((rungs >> r) & 1u && ladder_algo_rung_available(algo, (ladder_rung)r) == LADDER_OK) return true;
    return false;
}

/* The first output of @p r that holds a NaN, or -1 (outputs are poisoned with NaN before a run: an element the rung
 * did not write shows here). */
static int first_nan_output(const ladder_algo *algo, const ladder_result *r) {
    for (int i = 0; i < algo->n_tensors; i++) {
        const ladder_tensor *t = &r->t[i];
        if (!t->data || !ladder_dtype_is_float(t->dtype)) continue;
        const int64_t n = ladder_tensor_numel(t); /* contiguous, as outputs are written */
        int64_t nans = 0;
#pragma omp parallel for reduction(+ : nans) schedule(static)
        for (int64_t x = 0; x < n; x++) nans += isnan(ladder_tensor_get(t, x)) ? 1 : 0;
        if (nans) return i;
    }
    return -1;
}

/* One bench problem: every planned rung of its set @p rungs, checked and timed. */
static int bench_problem(const ladder_algo *algo, const tool_opts *o, const void *base, uint32_t with, uint32_t frozen,
                         uint32_t rungs, bench_row *rows, int max_rows, int *n_rows) {
    _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX];
    ladder_case_opts co;
    if (tool_problem(algo, o, base, problem, &co) != TOOL_OK) return TOOL_USAGE;
    if (!o->with) { /* the bench problem's optional tensors, unless --with gives others; --bias applies to them */
        co.with = with;
        if (tool_broadcast_flag(algo, o, problem, &co) != TOOL_OK) return TOOL_USAGE;
    }
    if (!o->frozen) co.frozen = frozen; /* the bench problem's frozen inputs, unless --frozen gives others */
    char shape[320];
    ladder_problem_str(algo, problem, shape, sizeof shape);
    with_str(algo, co.with, shape, sizeof shape);
    frozen_str(algo, case_inputs(algo, problem, co.with), co.frozen, shape, sizeof shape);
    const double t0 = tool_now_ms();
    if (!some_rung_runs(algo, rungs)) { /* a size only GPU rungs run at, on a machine without one */
        fprintf(stderr, "bench %s [%s] left out: none of its rungs can run here\n", algo->name, shape);
        return TOOL_OK;
    }
    const ladder_rung ref = reference_rung(algo, rungs);
    const bool ref_is_cpu = ref == LADDER_RUNG_CPU, checked = ref != LADDER_RUNG_COUNT;
    int steps = checked ? 2 : 1, step = 0, failures = 0;
    bool any_wanted = false; /* a problem none of whose rungs --rung asks for is not run, not even its reference */
    for (int i = 0; i < N_PLAN; i++) {
        const bool runs = plan_wanted(o, i) && (rungs >> plan[i].rung) & 1u &&
                          ladder_algo_rung_available(algo, plan[i].rung) == LADDER_OK;
        any_wanted |= runs;
        steps += i > 0 && runs && !(plan[i].rung == ref && plan[i].dtype == LADDER_F32);
    }
    if (!any_wanted) return TOOL_OK;

    progress(algo->name, shape, ++step, steps, "random inputs", t0);
    ladder_case c;
    if (ladder_case_make(&c, algo, problem, &co) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return TOOL_USAGE;
    }
    if (algo->fixed_inputs && algo->fixed_inputs(&c) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        ladder_case_free(&c);
        return TOOL_FAIL;
    }
    ladder_problem_str(algo, c.problem, shape, sizeof shape); /* varlen may have changed the sizes */
    with_str(algo, co.with, shape, sizeof shape);
    frozen_str(algo, c.present, co.frozen, shape, sizeof shape);
    char what[64];
    /* one timed run is the validated call itself (ladder_run_opts::reps); more get one untimed run first */
    const ladder_run_opts cpu_opts = {.warmup = o->cpu_reps > 1, .reps = o->cpu_reps};
    const ladder_run_opts gpu_opts = {.warmup = o->warmup, .reps = o->reps, .flush_l2 = true};
    ladder_result ref_res = {0};
    const ladder_run_opts once = {0}; /* a reference that is not itself asked for is run, not timed */
    if (checked) {
        snprintf(what, sizeof what, "%s f32 (the reference)", ladder_rung_name(ref));
        progress(algo->name, shape, ++step, steps, what, t0);
        const ladder_run_opts *ref_opts = ref_is_cpu ? &cpu_opts : tool_rung_wanted(o, ref) ? &gpu_opts : &once;
        ladder_status st_ref = ladder_run(ref, LADDER_F32, &c, ref_opts, &ref_res);
        if (st_ref != LADDER_OK) {
            fprintf(stderr, "ladder: %s rung: %s: %s\n", ladder_rung_name(ref), ladder_status_name(st_ref),
                    ladder_last_error());
            ladder_case_free(&c);
            return tool_exit_code(st_ref); /* a bad problem exits 2, as from `ladder run` */
        }
    } else {
        fprintf(stderr, "bench %s [%s]: no rung of its set takes f32 inputs, so none is its reference: its rows are "
                        "timed and checked only for NaN (the tests check the rung against the cpu rung)\n",
                algo->name, shape);
    }
    const ladder_result *speedup_base = ref_is_cpu ? &ref_res : NULL;
    if (checked && tool_rung_wanted(o, ref) && *n_rows + 2 <= max_rows)
        add_rows(algo, &c, shape, ref, LADDER_F32, &ref_res, speedup_base, rows, n_rows);
    for (int i = 1; i < N_PLAN && *n_rows + 2 <= max_rows; i++) {
        ladder_rung rung = plan[i].rung;
        ladder_dtype dt = plan[i].dtype;
        if (!plan_wanted(o, i) || ladder_algo_rung_available(algo, rung) != LADDER_OK) continue;
        if (!((rungs >> rung) & 1u)) continue;         /* not run at this size (minutes or hours) */
        if (rung == ref && dt == LADDER_F32) continue; /* timed above, as the reference */
        snprintf(what, sizeof what, "%s %s", ladder_rung_name(rung), ladder_dtype_name(dt));
        progress(algo->name, shape, ++step, steps, what, t0);
        ladder_result res, rounded = {0};
        ladder_status st = ladder_run(rung, dt, &c, &gpu_opts, &res);
        if (!checked) {
            const int bad = st == LADDER_OK ? first_nan_output(algo, &res) : -1;
            if (st != LADDER_OK) fprintf(stderr, "ladder: %s: %s\n", what, ladder_last_error());
            else if (bad >= 0) fprintf(stderr, "ladder: %s: %s holds NaN at the bench shape\n", what,
                                       algo->tensors[bad].name);
            else add_rows(algo, &c, shape, rung, dt, &res, NULL, rows, n_rows);
            failures += st != LADDER_OK || bad >= 0;
            if (st == LADDER_OK) ladder_result_free(&res);
            continue;
        }
        const ladder_result *want = &ref_res;
        /* a GPU reference cannot round what the tensor-core rung rounds (ladder_algo::call_emulating) */
        const bool inexact_ref = dt != LADDER_F32 && ref != LADDER_RUNG_CPU && algo->call_emulating;
        if (st == LADDER_OK && dt != LADDER_F32 && ref == LADDER_RUNG_CPU) {
            st = ladder_run_tc_reference(&c, dt, &rounded);
            want = &rounded;
        } else if (st == LADDER_OK && dt != LADDER_F32) {
            ladder_case rc;
            st = ladder_case_rounded(&c, dt, &rc);
            if (st == LADDER_OK) st = ladder_run(ref, LADDER_F32, &rc, &once, &rounded);
            ladder_case_free(&rc);
            want = &rounded;
        }
        if (st != LADDER_OK) {
            fprintf(stderr, "ladder: %s: %s\n", what, ladder_last_error());
            failures++;
            continue;
        }
        const double tol = ladder_run_tolerance(&c, rung, dt);
        ladder_check k = ladder_result_check(&c, &res, want, tol);
        if (!k.ok && inexact_ref && k.worst <= tol) {
            /* only the element rule broke, against a reference that does not round P and dS (chapter 3): the
             * tests hold every element of this rung to the emulating cpu rung; here the L2 rule decides */
            fprintf(stderr, "ladder: %s: within tol in L2; the element rule, against %s (not rounding as %s does), "
                            "is not applied: %s\n", what, ladder_rung_name(ref), ladder_rung_name(rung), k.why);
        } else if (!k.ok) {
            fprintf(stderr, "ladder: %s gives wrong results at the bench shape: %s\n", what, k.why);
            failures++;
        }
        add_rows(algo, &c, shape, rung, dt, &res, speedup_base, rows, n_rows);
        ladder_result_free(&res);
        ladder_result_free(&rounded);
    }
    fprintf(stderr, "bench %s [%s] done in %.1f s\n", algo->name, shape, (tool_now_ms() - t0) * 1e-3);
    ladder_result_free(&ref_res);
    ladder_case_free(&c);
    return failures ? TOOL_FAIL : TOOL_OK;
}

static uint32_t own_frozen(const ladder_algo *algo, int i) { return algo->bench_frozen ? algo->bench_frozen[i] : 0; }

/* Bench problem @p i with the flags applied, its optional tensors, and those of its inputs it freezes; false on a
 * usage error (reported later). */
static bool resolved(const ladder_algo *algo, const tool_opts *o, int i, unsigned char *problem, uint32_t *with,
                     uint32_t *frozen) {
    const void *base = (const char *)algo->bench_problems + (size_t)i * algo->problem_size;
    ladder_case_opts co;
    memset(problem, 0, LADDER_PROBLEM_MAX);
    if (tool_problem(algo, o, base, problem, &co) != TOOL_OK) return false;
    if (!o->with) {
        co.with = algo->bench_with ? algo->bench_with[i] : 0;
        if (tool_broadcast_flag(algo, o, problem, &co) != TOOL_OK) return false;
    }
    *with = co.with;
    *frozen = (o->frozen ? co.frozen : own_frozen(algo, i)) & case_inputs(algo, problem, co.with);
    return true;
}

/* Do the flags make bench problems @p i and @p j the same problem (`ladder bench flash --D 128 --Sq 4096 ...` sets
 * every size, and the sweep's problems become alike; `--frozen none` makes a frozen problem its learnable twin)? */
static bool same_problem(const ladder_algo *algo, const tool_opts *o, int i, int j) {
    _Alignas(8) unsigned char pi[LADDER_PROBLEM_MAX], pj[LADDER_PROBLEM_MAX];
    uint32_t wi, wj, fi, fj;
    return resolved(algo, o, i, pi, &wi, &fi) && resolved(algo, o, j, pj, &wj, &fj) && wi == wj && fi == fj &&
           memcmp(pi, pj, algo->problem_size) == 0;
}

/* Do the flags leave bench problem @p i at the size it has (its own rungs then still fit it)? */
static bool unchanged(const ladder_algo *algo, const tool_opts *o, int i) {
    const tool_opts none = {0};
    _Alignas(8) unsigned char a[LADDER_PROBLEM_MAX], b[LADDER_PROBLEM_MAX];
    uint32_t w, f;
    return resolved(algo, o, i, a, &w, &f) && resolved(algo, &none, i, b, &w, &f) &&
           memcmp(a, b, algo->problem_size) == 0;
}

/* The median of @p n times, sorted in place. */
static double median(double *ms, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            const double m = ms[j];
            ms[j] = ms[j - 1], ms[j - 1] = m;
        }
    return ms[n / 2];
}

/*
 * Like the device's copy ceiling (ladder_gpu_copy_bandwidth: two 1 GiB buffers, median of 20 copies after 3), with
 * buffers several times any last-level cache: each thread copies its own slice with memcpy (the C library's fastest
 * copy, non-temporal stores included), the slices first touched by the thread that copies them, so that on a machine
 * with several memory nodes each thread copies memory near it. Bytes counted as read + write, as the GPU's are.
 */
int tool_cpu_copy_gbps(double *gbps, int *threads) {
    enum { WARMUP = 3, REPS = 11 };
    const size_t bytes = (size_t)256 << 20;
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src), free(dst);
        fprintf(stderr, "ladder: cannot allocate 2 x %zu bytes for the host copy benchmark\n", bytes);
        return TOOL_FAIL;
    }
    const int n = omp_get_max_threads();
    const size_t slice = (bytes / (size_t)n + 63) / 64 * 64; /* whole cache lines */
    double ms[REPS];
    for (int rep = -1; rep < WARMUP + REPS; rep++) {
        const double t0 = tool_now_ms();
#pragma omp parallel for schedule(static) num_threads(n)
        for (int i = 0; i < n; i++) {
            const size_t lo = (size_t)i * slice < bytes ? (size_t)i * slice : bytes;
            const size_t len = bytes - lo < slice ? bytes - lo : slice;
            if (rep < 0) memset(src + lo, 0x3c, len), memset(dst + lo, 0, len); /* first touch; not zeros */
            else memcpy(dst + lo, src + lo, len);
        }
        if (rep >= WARMUP) ms[rep - WARMUP] = tool_now_ms() - t0;
    }
    free(src), free(dst);
    *gbps = 2.0 * (double)bytes / (median(ms, REPS) * 1e-3) / 1e9;
    *threads = n;
    return TOOL_OK;
}

/*
 * Each thread runs the same count of multiply-adds on LANES floats of its own, in the vector instructions the build
 * gives the cpu rung (its flags, no -march): LANES independent chains, no memory but the thread's own, so the loop's
 * rate at N threads against one thread's is the host's scaling alone. Median of REPS runs after WARMUP.
 */
double tool_cpu_fma_gflops(void) {
    enum { WARMUP = 2, REPS = 7, LANES = 32 };
    const long iters = 1L << 21;
    const int n = omp_get_max_threads();
    double ms[REPS];
    volatile float sink = 0.0f; /* the sums are used, so the loop is not folded away */
    for (int rep = -WARMUP; rep < REPS; rep++) {
        float total = 0.0f;
        const double t0 = tool_now_ms();
#pragma omp parallel num_threads(n) reduction(+ : total)
        {
            float acc[LANES];
            const float a = 0.999f - 1e-6f * (float)omp_get_thread_num(), b = 1e-3f;
            for (int j = 0; j < LANES; j++) acc[j] = (float)j;
            for (long it = 0; it < iters; it++) {
#pragma omp simd
                for (int j = 0; j < LANES; j++) acc[j] = acc[j] * a + b;
            }
            for (int j = 0; j < LANES; j++) total += acc[j];
        }
        if (rep >= 0) ms[rep] = tool_now_ms() - t0;
        sink = sink + total;
    }
    return 2.0 * LANES * (double)iters * n / (median(ms, REPS) * 1e-3) / 1e9;
}

/* The build rows (ladder_bench_build): each rung of its set that is asked for and runs here builds the algorithm's
 * fixed inputs at the build problem, timed like that rung's passes, except that the cpu rung builds once, untimed
 * runs and repeats left out (flex's build of a mask mod without bounds walks every element of a 128k x 128k mask:
 * most of a minute on one thread, which --cpu-reps would multiply); the GPU's row has its speedup over the cpu's. */
static int bench_builds(const ladder_algo *algo, const tool_opts *o, bench_row *rows, int max_rows, int *n_rows) {
    const ladder_bench_build *bb = algo->bench_build;
    _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX];
    ladder_case_opts co;
    if (tool_problem(algo, o, bb->problem, problem, &co) != TOOL_OK) return TOOL_USAGE;
    const ladder_run_opts cpu_opts = {.warmup = false, .reps = 1};
    const ladder_run_opts gpu_opts = {.warmup = o->warmup, .reps = o->reps, .flush_l2 = true};
    double cpu_ms = 0;
    int failures = 0;
    for (int r = 0; r < LADDER_RUNG_COUNT && *n_rows < max_rows; r++) {
        const ladder_rung rung = (ladder_rung)r;
        const bool gpu = ladder_rung_is_gpu(rung);
        if (!((bb->rungs >> r) & 1u) || !tool_rung_wanted(o, rung) || ladder_algo_rung_available(algo, rung) != LADDER_OK)
            continue;
        char shape[320];
        ladder_problem_str(algo, problem, shape, sizeof shape);
        const double t0 = tool_now_ms();
        void *state = NULL;
        double bytes = 0, ms = 0;
        ladder_status st = bb->begin(rung, problem, &state, &bytes, shape, sizeof shape);
        char what[64];
        snprintf(what, sizeof what, "building at the %s rung", ladder_rung_name(rung));
        progress(algo->name, shape, 1, 1, what, t0);
        if (st == LADDER_OK) st = ladder_time_ms(rung, bb->run, state, gpu ? &gpu_opts : &cpu_opts, &ms);
        bb->end(state);
        if (st != LADDER_OK) {
            fprintf(stderr, "ladder: %s: %s: %s\n", algo->name, what, ladder_last_error());
            failures++;
            continue;
        }
        if (rung == LADDER_RUNG_CPU) cpu_ms = ms;
        bench_row *row = &rows[(*n_rows)++];
        memset(row, 0, sizeof *row);
        snprintf(row->algo, sizeof row->algo, "%s", algo->name);
        snprintf(row->pass, sizeof row->pass, "build");
        snprintf(row->rung, sizeof row->rung, "%s", ladder_rung_name(rung));
        snprintf(row->dtype, sizeof row->dtype, "%s", ladder_dtype_name(LADDER_I32));
        snprintf(row->shape, sizeof row->shape, "%s", shape);
        row->median_ms = ms;
        row->bytes = bytes;
        row->speedup_vs_cpu = cpu_ms > 0 ? cpu_ms / ms : 0;
        fprintf(stderr, "bench %s [%s] %s done in %.1f s\n", algo->name, shape, what, (tool_now_ms() - t0) * 1e-3);
    }
    return failures ? TOOL_FAIL : TOOL_OK;
}

static uint32_t own_rungs(const ladder_algo *algo, int i) {
    return algo->bench_rungs ? algo->bench_rungs[i] : LADDER_RUNGS_ALL;
}

int tool_bench(const ladder_algo *algo, const tool_opts *o, bench_row *rows, int max_rows, int *n_rows) {
    int rc = TOOL_OK;
    for (int i = 0; i < algo->n_bench_problems && rc != TOOL_USAGE; i++) {
        /* A problem the flags made the same as an earlier one was timed there. Its rungs are those that every bench
         * problem the flags left at that size runs: where one of them leaves a rung out (minutes at the sweep's
         * sizes), so does the problem the flags made; a problem the flags moved to another size (every size given,
         * a small one) does not bar a rung. */
        bool repeat = false;
        uint32_t rungs = own_rungs(algo, i);
        for (int j = 0; j < algo->n_bench_problems && !repeat; j++) {
            if (j == i || !same_problem(algo, o, i, j)) continue;
            repeat = j < i;
            if (unchanged(algo, o, j)) rungs &= own_rungs(algo, j);
        }
        if (repeat) continue;
        const void *base = (const char *)algo->bench_problems + (size_t)i * algo->problem_size;
        const uint32_t with = algo->bench_with ? algo->bench_with[i] : 0;
        int r = bench_problem(algo, o, base, with, own_frozen(algo, i), rungs, rows, max_rows, n_rows);
        if (r > rc) rc = r;
    }
    if (algo->bench_build && rc != TOOL_USAGE) {
        int r = bench_builds(algo, o, rows, max_rows, n_rows);
        if (r > rc) rc = r;
    }
    return rc;
}
