/*
 * tests/harness.h: what every suite shares, for every algorithm.
 *
 * A test case is an algorithm, a problem and the engine's case options
 * (seed, strided, packed sequences, optional tensors). The suites loop over
 * the per-algorithm test data in test_algos[] (one tests/<algo>_cases.c
 * each: its grid, its determinism cases, its float64 oracle and its
 * finite-difference shapes); everything else (making the case, running a
 * rung, comparing, the messages) is the engine's (common/engine.h) or here.
 * Every failure message names the algorithm, the rung, the shape, the
 * tensor, the error and the first bad index (STYLE.md habit 7).
 */
#ifndef LADDER_TESTS_HARNESS_H
#define LADDER_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "compare.h"
#include "engine.h"

/**
 * One test case: plain data, so that Criterion can copy it into a test's parameters. No pointers: Criterion
 * runs each test in a freshly started process, where the parent's addresses mean nothing.
 */
typedef struct test_case {
    int algo;                                               /**< what it is a case of: an index into ladder_algos */
    _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX]; /**< the algorithm's problem struct */
    ladder_case_opts opts;                                  /**< seed, strided, varlen, optional tensors */
    ladder_rung rung;                                       /**< the rung under test (cross-rung suites) */
    ladder_dtype dtype;                                     /**< its input dtype (bf16/f16 for gpu_tensorcore) */
} test_case;

/**
 * A float64 oracle pass over case @p c (its problem, and the shape each input has in it: a broadcast input's
 * may have 1 where the problem has more): t[i] is tensor i of the descriptor as a C-order double array (NULL
 * when absent); inputs (index tensors too) are filled, outputs are to be written. @p cu is the first index
 * tensor (cu_seqlens; NULL without) with @p n_seqs sequences.
 */
typedef void (*test_oracle_fn)(const ladder_case *c, const int32_t *cu, int n_seqs, double *const *t);

/** What one algorithm adds to the generic suites (tests/<algo>_cases.c). */
typedef struct test_algo {
    const ladder_algo *algo;
    /** The cross-rung grid (cpu vs oracle, every GPU rung vs cpu); @p small: the compute-sanitizer grid. */
    int (*grid)(test_case *out, int max, bool small);
    /** Cases for the bitwise-determinism repeats. */
    int (*determinism)(test_case *out, int max);
    test_oracle_fn oracle_fwd, oracle_bwd;
    /** Tiny cases for the finite-difference check of the oracle backward. */
    int (*fd_cases)(test_case *out, int max);
    double fd_step; /**< central-difference step */
    double fd_tol;  /**< relative L2 tolerance of the oracle backward against the differences */
    /** A small valid problem for the bad-argument suite. */
    int (*args_case)(test_case *out, int max);
} test_algo;

/** Every algorithm's test data, in chapter order. */
extern const test_algo *const test_algos[];
extern const int test_n_algos;

/** The descriptor of @p t's algorithm. */
const ladder_algo *test_case_algo(const test_case *t);
/** A case of @p algo with @p problem (copied) and default options; the seed mixes every field of the problem. */
test_case test_case_of(const ladder_algo *algo, const void *problem);
/** Pack @p n sequences of these lengths into @p t (B = 1, T = their sum). */
void test_case_varlen(test_case *t, const int64_t *lens, int n);
/** After test_case_varlen(): a second index tensor packs these n lengths instead (flash: the keys). */
void test_case_varlen2(test_case *t, const int64_t *lens);
/** Freeze the inputs @p names ("bq,bk") of @p t: read, their gradient not asked for. Cases are listed before any test
 *  runs, where nothing may assert: a name that cannot be frozen freezes everything, which ladder_case_make() then
 *  refuses, naming it, in every test of the case. */
void test_case_freeze(test_case *t, const char *names);
/** Give @p t the @p n optional tensors of its algorithm from the one named @p first on, in the descriptor's order
 *  (flex's eight block lists: "kv_num_blocks", 8). */
void test_case_with(test_case *t, const char *first, int n);

/** "dynconv B=1 T=65 D=129 W=64 strided varlen[32,0,1,32]" */
void test_case_str(const test_case *t, char *buf, size_t n);
/** "gpu_tensorcore (bf16)", or the plain rung name for the fp32 rungs. */
void test_rung_label(ladder_rung rung, ladder_dtype dtype, char *buf, size_t n);

/** Make the engine's case (asserts). */
void test_make(const test_case *t, ladder_case *c);
/** Run @p rung on @p c, forward and backward (asserts LADDER_OK, naming the rung, the case and the error). */
void test_run(const test_case *t, ladder_rung rung, ladder_dtype dtype, const ladder_case *c, ladder_result *r);
/** Assert @p cmp passed: "<who> on <case>: <tensor> differs: <ladder_cmp_describe>". */
void test_expect_close(const char *who, const test_case *t, const char *tensor, const ladder_cmp *cmp);
/**
 * Assert every output of @p got matches @p want at @p tol: those the algorithm gives magnitudes for (flex's dq, dk
 * and buffer gradients, ladder_case_magnitudes() of @p c) held to them, the others by the plain rule.
 */
void test_expect_results_close(const char *who, const test_case *t, const ladder_case *c, const ladder_result *got,
                               const ladder_result *want, double tol);
/** The magnitudes of @p c's outputs (ladder_case_magnitudes(); asserts). Free with ladder_magnitudes_free(). */
void test_magnitudes(const ladder_case *c, ladder_magnitudes *m);
/** Every element x of input @p name of case @p c set to f(x) (asserts the input is present): the magnitudes tests make
 *  inputs whose terms do not cancel (test_zero(), test_positive()). */
void test_set_input(ladder_case *c, const char *name, double (*f)(double));
/** 0, whatever x is. */
double test_zero(double x);
/** |x| + 0.25: positive, away from 0. */
double test_positive(double x);
/** Run @p t's rung 10 times (2 with LADDER_TEST_SMALL=1); assert every output is bitwise equal to the first run's. */
void test_expect_deterministic(const test_case *t);
/** Run @p t's rung at 1 OpenMP thread, then at 2, 3 and 7; assert every output is bitwise equal to the first run's
 * (the cpu rung's sums run in an order that the thread count does not change). */
void test_expect_thread_count_independent(const test_case *t);

/** A rung, and the dtype its float inputs take there. */
typedef struct test_rung {
    ladder_rung rung;
    ladder_dtype dtype;
} test_rung;

/** How many ::test_rungs. */
#define TEST_N_RUNGS 4
/** Every rung once, lowest first, the tensor-core one in bf16: the rungs at which a suite checks what one algorithm
 *  promises (entries 1 on are the GPU rungs). */
extern const test_rung test_rungs[TEST_N_RUNGS];

/** Skip the current test (with the reason) unless @p t's algorithm can run on its rung here. */
void harness_require_rung(const test_case *t);
/** True when LADDER_TEST_SMALL=1: small grids, for compute-sanitizer runs. */
bool harness_small(void);
/** Create a fresh directory /tmp/ladder-<tag>-XXXXXX into @p dir (@p n bytes); the test fails if it cannot. */
void harness_tmpdir_make(char *dir, size_t n, const char *tag);
/** Remove @p dir and everything in it; the test fails if it cannot. */
void harness_tmpdir_remove(const char *dir);

/** Cases as parameters for a Criterion ParameterizedTest (memory from cr_malloc). */
struct criterion_test_params test_params(const test_case *cases, int n);

/** The test data of @p algo. */
const test_algo *test_algo_of(const ladder_algo *algo);
/**
 * The case as C-order double arrays, one per tensor of the descriptor (NULL when absent): inputs copied from the
 * case, outputs allocated and written by the algorithm's oracle, forward then backward. Free with test_oracle_free().
 */
void test_oracle_run(const ladder_case *c, double *t[LADDER_MAX_TENSORS]);
/** Free what test_oracle_run() made. */
void test_oracle_free(double *t[LADDER_MAX_TENSORS]);
/** Compare a host tensor (any dtype, any strides) with a C-order double array. */
ladder_cmp test_compare_to_f64(const ladder_tensor *got, const double *want, double tol);
/** The same for output @p i, held to its magnitudes where @p m has them (ladder_output_compare()'s rule). */
ladder_cmp test_compare_output_to_f64(const ladder_magnitudes *m, int i, const ladder_tensor *got, const double *want,
                                      double tol);

/** Which case list of a test_algo a suite draws from. */
typedef enum test_list { TEST_GRID, TEST_DETERMINISM, TEST_FD, TEST_ARGS } test_list;
/**
 * Every algorithm's cases of @p list, each with rung @p rung and dtype @p dtype, as Criterion parameters
 * (LADDER_TEST_SMALL=1 picks the small grids, and each algorithm's first determinism case alone;
 * LADDER_TEST_ALGO=name[,name...] keeps those algorithms' cases).
 */
struct criterion_test_params test_all(test_list list, ladder_rung rung, ladder_dtype dtype);
/** The same for every GPU rung and dtype: gpu_naive, gpu_tiled (f32), gpu_tensorcore (bf16, then f16); with
 *  LADDER_TEST_SMALL=1, the determinism cases at gpu_tiled and in bf16 alone. */
struct criterion_test_params test_all_gpu_rungs(test_list list);

#endif
