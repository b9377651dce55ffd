/*
 * tests/test_args.c: bad input through every algorithm's dispatcher, from its descriptor.
 *
 * For each algorithm (its small valid case from tests/<algo>_cases.c) and each pass: every required tensor
 * missing, every tensor of the wrong shape, every input with a negative stride, every data pointer not aligned to
 * its dtype, every output not contiguous or overlapping an input, every size out of its range, a rung number out
 * of range, dtypes a rung does not take, and the GPU rungs on a machine without a GPU. Each case asserts the
 * status from DESIGN.md's table, that ladder_last_error() names the argument, and that nothing was written (the
 * outputs stay NaN). What only one algorithm has (cu_seqlens rules, its dtype rules at the tensor-core rung) is in
 * tests/test_<algo>_args.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "harness.h"

/* One algorithm's valid call: its case, the args struct the dispatcher takes, and the NaN outputs. */
typedef struct fixture {
    test_case t;
    ladder_case c;
    ladder_tensor outs[LADDER_MAX_TENSORS]; /* the allocations; args holds (possibly altered) copies */
    void *args;
} fixture;

static ladder_tensor *arg(fixture *f, int i) { return (ladder_tensor *)((char *)f->args + f->c.algo->tensors[i].offset); }

/* Reset every args field to the valid call. */
static void reset(fixture *f) {
    for (int i = 0; i < f->c.algo->n_tensors; i++) *arg(f, i) = f->c.t[i].data ? f->c.t[i] : f->outs[i];
    memcpy(f->c.problem, f->t.problem, sizeof f->c.problem);
    if (f->t.opts.n_seqs) cr_assert_fail("the args case must not be varlen");
}

static void setup(fixture *f, const test_algo *ta) {
    test_case cases[4];
    cr_assert(ta->args_case(cases, 4) >= 1, "%s has no args case", ta->algo->name);
    f->t = cases[0];
    test_make(&f->t, &f->c);
    memcpy(f->t.problem, f->c.problem, sizeof f->t.problem);
    memset(f->outs, 0, sizeof f->outs);
    for (int i = 0; i < f->c.algo->n_tensors; i++) {
        if (f->c.t[i].data || !((f->c.present >> i) & 1u)) continue;
        int64_t shape[LADDER_MAX_RANK];
        int rank = ladder_tensor_shape_of(f->c.algo, f->c.problem, NULL, i, shape);
        cr_assert(ladder_tensor_alloc(&f->outs[i], LADDER_F32, rank, shape) == LADDER_OK);
        ladder_tensor_poison(&f->outs[i]);
    }
    f->args = calloc(1, f->c.algo->args_size);
    cr_assert(f->args);
    reset(f);
}

static void teardown(fixture *f) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) ladder_tensor_free(&f->outs[i]);
    ladder_case_free(&f->c);
    free(f->args);
}

/* Does @p pass read or write tensor @p i (required ones only)? */
static bool used_by(const ladder_algo *algo, int i, ladder_pass pass) {
    unsigned r = algo->tensors[i].role;
    if (r & (LADDER_OPTIONAL | LADDER_INDEX)) return false;
    if (pass == LADDER_PASS_FWD) return r & (LADDER_IN_FWD | LADDER_OUT_FWD);
    return r & (LADDER_IN_FWD | LADDER_IN_BWD | LADDER_OUT_BWD | LADDER_READ_BY_BWD);
}

static bool is_output(const ladder_algo *algo, int i) {
    return algo->tensors[i].role & (LADDER_OUT_FWD | LADDER_OUT_BWD);
}

/* The call failed with @p want, its message names @p needle (and @p needle2 if given), and nothing was written. */
static void expect_failure(fixture *f, ladder_rung rung, ladder_pass pass, ladder_status want, const char *needle,
                           const char *needle2) {
    char call[96];
    snprintf(call, sizeof call, "%s %s (rung %d)", f->c.algo->name, pass ? "bwd" : "fwd", (int)rung);
    ladder_status got = f->c.algo->call(rung, pass, f->c.problem, f->args);
    cr_assert_eq(got, want, "%s returned %s, expected %s (message: \"%s\")", call, ladder_status_name(got),
                 ladder_status_name(want), ladder_last_error());
    cr_assert(strstr(ladder_last_error(), needle), "%s: the message \"%s\" does not name \"%s\"", call,
              ladder_last_error(), needle);
    cr_assert(!needle2 || strstr(ladder_last_error(), needle2), "%s: the message \"%s\" does not name \"%s\"", call,
              ladder_last_error(), needle2);
    for (int i = 0; i < f->c.algo->n_tensors; i++)
        for (int64_t j = 0; f->outs[i].data && j < ladder_tensor_numel(&f->outs[i]); j++)
            cr_assert(isnan(ladder_tensor_get(&f->outs[i], j)), "%s failed but wrote %s[%lld] = %g", call,
                      f->c.algo->tensors[i].name, (long long)j, ladder_tensor_get(&f->outs[i], j));
    reset(f);
}

/* Run @p body once per algorithm and pass, with a fresh fixture. */
#define FOR_EACH_ALGO_AND_PASS(...)                                                                                    \
    for (int a_ = 0; a_ < test_n_algos; a_++)                                                                          \
        for (int pass_ = 0; pass_ < 2; pass_++) {                                                                      \
            fixture f_;                                                                                                \
            setup(&f_, test_algos[a_]);                                                                                \
            fixture *f = &f_;                                                                                          \
            const ladder_algo *algo = f->c.algo;                                                                       \
            ladder_pass pass = (ladder_pass)pass_;                                                                     \
            (void)algo, (void)pass;                                                                                    \
            __VA_ARGS__;                                                                                               \
            teardown(f);                                                                                               \
        }

#define CPU LADDER_RUNG_CPU

Test(args, a_valid_call_succeeds_and_clears_the_error) {
    FOR_EACH_ALGO_AND_PASS({
        ladder_fail(LADDER_ERR_ARG, "left behind by an earlier call");
        ladder_status st = algo->call(CPU, LADDER_PASS_FWD, f->c.problem, f->args);
        if (pass == LADDER_PASS_BWD && st == LADDER_OK) st = algo->call(CPU, pass, f->c.problem, f->args);
        cr_assert_eq(st, LADDER_OK, "%s: %s", algo->name, ladder_last_error());
        cr_assert_str_empty(ladder_last_error(), "%s: a successful call must clear the last error", algo->name);
    });
}

Test(args, null_problem_or_args) {
    FOR_EACH_ALGO_AND_PASS({
        ladder_status st = algo->call(CPU, pass, NULL, f->args);
        cr_assert(st == LADDER_ERR_ARG && strstr(ladder_last_error(), "problem"), "%s: null problem: %s", algo->name,
                  ladder_last_error());
        st = algo->call(CPU, pass, f->c.problem, NULL);
        cr_assert(st == LADDER_ERR_ARG && strstr(ladder_last_error(), "args"), "%s: null args: %s", algo->name,
                  ladder_last_error());
    });
}

Test(args, every_required_tensor_missing) {
    FOR_EACH_ALGO_AND_PASS({
        for (int i = 0; i < algo->n_tensors; i++) {
            if (!used_by(algo, i, pass)) continue;
            char needle[64];
            snprintf(needle, sizeof needle, "%s is null", algo->tensors[i].name);
            arg(f, i)->data = NULL;
            expect_failure(f, CPU, pass, LADDER_ERR_ARG, needle, NULL);
        }
    });
}

Test(args, every_tensor_of_the_wrong_shape) {
    FOR_EACH_ALGO_AND_PASS({
        for (int i = 0; i < algo->n_tensors; i++) {
            if (!used_by(algo, i, pass)) continue;
            char needle[64];
            snprintf(needle, sizeof needle, "%s has shape", algo->tensors[i].name);
            ladder_tensor *t = arg(f, i);
            t->shape[t->rank - 1] -= 1; /* smaller: still inside the allocation, never read */
            expect_failure(f, CPU, pass, LADDER_ERR_SHAPE, needle, NULL);
            arg(f, i)->rank -= 1;
            expect_failure(f, CPU, pass, LADDER_ERR_SHAPE, needle, NULL);
        }
    });
}

Test(args, negative_strides_are_refused) {
    FOR_EACH_ALGO_AND_PASS({
        for (int i = 0; i < algo->n_tensors; i++) {
            if (!used_by(algo, i, pass) || is_output(algo, i)) continue;
            char needle[64];
            snprintf(needle, sizeof needle, "%s has stride -1", algo->tensors[i].name);
            arg(f, i)->strides[0] = -1;
            expect_failure(f, CPU, pass, LADDER_ERR_ARG, needle, NULL);
        }
    });
}

Test(args, misaligned_data_pointers_are_refused) {
    FOR_EACH_ALGO_AND_PASS({
        for (int i = 0; i < algo->n_tensors; i++) {
            if (!used_by(algo, i, pass)) continue;
            char needle[64];
            snprintf(needle, sizeof needle, "%s's data pointer", algo->tensors[i].name);
            arg(f, i)->data = (char *)arg(f, i)->data + 1; /* inside the allocation, but not on an element */
            expect_failure(f, CPU, pass, LADDER_ERR_ARG, needle, NULL);
        }
    });
}

Test(args, outputs_must_be_contiguous) {
    FOR_EACH_ALGO_AND_PASS({
        for (int i = 0; i < algo->n_tensors; i++) {
            ladder_tensor *t = arg(f, i);
            if (!used_by(algo, i, pass) || !is_output(algo, i) || t->rank < 2) continue;
            if (t->shape[t->rank - 1] < 2 || t->shape[t->rank - 2] < 2) continue;
            /* the same elements with the last two dimensions transposed */
            t->strides[t->rank - 2] = 1;
            t->strides[t->rank - 1] = t->shape[t->rank - 2];
            char needle[96];
            snprintf(needle, sizeof needle, "%s is an output and must be contiguous", algo->tensors[i].name);
            expect_failure(f, CPU, pass, LADDER_ERR_UNSUPPORTED, needle, NULL);
        }
    });
}

Test(args, outputs_must_not_overlap_inputs_or_each_other) {
    FOR_EACH_ALGO_AND_PASS({
        for (int o = 0; o < algo->n_tensors; o++) {
            if (!used_by(algo, o, pass) || !is_output(algo, o)) continue;
            for (int i = 0; i < algo->n_tensors; i++) {
                if (i == o || !used_by(algo, i, pass)) continue;
                /* the output on the other tensor's first element, where it fits inside that tensor's memory (a
                 * larger one would also reach whatever lies beyond, and the message could name that instead) */
                if (ladder_tensor_span_bytes(arg(f, o)) > ladder_tensor_span_bytes(arg(f, i))) continue;
                arg(f, o)->data = arg(f, i)->data;
                expect_failure(f, CPU, pass, LADDER_ERR_ARG, algo->tensors[o].name, algo->tensors[i].name);
            }
        }
    });
}

Test(args, sizes_out_of_range) {
    FOR_EACH_ALGO_AND_PASS({
        for (int p = 0; p < algo->n_params; p++) {
            const ladder_param *par = &algo->params[p];
            if (par->type != LADDER_PARAM_I64 && par->type != LADDER_PARAM_INT) continue;
            double bad[2] = {par->lo - 1, par->hi + 1};
            for (int k = 0; k < 2; k++) {
                if (k == 1 && par->hi >= 1e12) continue; /* no upper limit but memory */
                char needle[64];
                snprintf(needle, sizeof needle, "%s is %.0f", par->name, bad[k]);
                ladder_param_set(algo, f->c.problem, p, bad[k]);
                expect_failure(f, CPU, pass, LADDER_ERR_ARG, needle, NULL);
            }
        }
    });
}

Test(args, an_invalid_rung_number_is_an_argument_error) {
    FOR_EACH_ALGO_AND_PASS({
        expect_failure(f, (ladder_rung)LADDER_RUNG_COUNT, pass, LADDER_ERR_ARG, "rung 4 is not a ladder_rung", NULL);
        expect_failure(f, (ladder_rung)-1, pass, LADDER_ERR_ARG, "rung -1 is not a ladder_rung", NULL);
    });
}

Test(args, fp32_rungs_take_f32_only) {
    const ladder_rung rungs[] = {LADDER_RUNG_CPU, LADDER_RUNG_GPU_NAIVE, LADDER_RUNG_GPU_TILED};
    FOR_EACH_ALGO_AND_PASS({
        for (int r = 0; r < 3; r++)
            for (int i = 0; i < algo->n_tensors; i++) {
                if (!used_by(algo, i, pass)) continue;
                char needle[96];
                snprintf(needle, sizeof needle, "rung %s takes %s as f32, not f16", ladder_rung_name(rungs[r]),
                         algo->tensors[i].name);
                arg(f, i)->dtype = LADDER_F16;
                expect_failure(f, rungs[r], pass, LADDER_ERR_UNSUPPORTED, needle, NULL);
            }
    });
}

Test(args, gpu_rungs_without_a_gpu_are_unavailable) {
    if (ladder_gpu_count() > 0) cr_skip_test("a GPU is present here (this case needs a machine without one)");
    FOR_EACH_ALGO_AND_PASS({
        for (int r = LADDER_RUNG_GPU_NAIVE; r < LADDER_RUNG_COUNT; r++) {
            if (r == LADDER_RUNG_GPU_TENSORCORE) /* valid dtypes first, so that availability is what fails */
                for (int i = 0; i < algo->n_tensors; i++)
                    arg(f, i)->dtype = ladder_tensor_dtype_at(algo, i, LADDER_BF16);
            expect_failure(f, (ladder_rung)r, pass, LADDER_ERR_UNAVAILABLE, ladder_rung_name((ladder_rung)r), NULL);
        }
    });
}
