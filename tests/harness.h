/*
 * tests/harness.h: what the dynconv test files share.
 *
 * A shape (B, T, D, W, strided?, varlen?), a random case of that shape, one
 * call that runs a rung forward and backward on host tensors (mirrored to the
 * device for GPU rungs, converted to bf16/fp16 for the tensor-core rung), the
 * shape grids, and the assertion whose message names the rung, the shape, the
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
#include "dynconv.h"
#include "rung.h"
#include "tensor.h"

/** Most sequences a varlen shape packs. */
#define DC_MAX_SEQS 8

/** One dynconv test shape. */
typedef struct dc_shape {
    int64_t B, T, D;
    int W;
    bool strided;                 /**< x, kernels, dout are views into larger NaN-padded buffers */
    int n_seqs;                   /**< 0: no cu_seqlens; else B = 1 and seqlens sum to T */
    int32_t seqlens[DC_MAX_SEQS]; /**< lengths of the packed sequences (0 allowed) */
} dc_shape;

/** "B=1 T=65 D=129 W=64 strided varlen[32,0,1,32]" */
void dc_shape_str(const dc_shape *s, char *buf, size_t n);

/**
 * A random f32 case. Strided views: x is a slice of a [B,T+2,D+3] buffer at
 * (0,1,2); kernels a slice of [B,T,D+1,W+3] at (0,0,1,2) (channel slice,
 * padded W); dout the transpose of a [B,D,T] buffer (last stride T). Every
 * buffer element outside the view is NaN, so a read outside the view shows.
 */
typedef struct dc_case {
    dc_shape shape;
    ladder_dynconv_problem problem;
    ladder_tensor x, kernels, dout;             /**< f32 input views */
    ladder_tensor x_buf, kernels_buf, dout_buf; /**< the allocations they point into */
    ladder_tensor cu_seqlens;                   /**< i32 [n_seqs+1]; absent (data NULL) without varlen */
} dc_case;

/** Fill @p c with fresh inputs from a generator seeded by the shape and @p salt (asserts on NOMEM). */
void dc_case_make(dc_case *c, const dc_shape *s, uint64_t salt);
/** Round every input element to @p precision (bf16 or f16) in place, as the tensor-core rung will see them. */
void dc_case_round_inputs(dc_case *c, ladder_dtype precision);
void dc_case_free(dc_case *c);

/** Outputs of one rung run: contiguous host tensors in the rung's output dtype. */
typedef struct dc_result {
    ladder_tensor out, dx, dkernels;
} dc_result;

/**
 * Run @p rung forward then backward on @p c's inputs, with outputs poisoned
 * (NaN) before each call. GPU rungs run on device mirrors; for the
 * tensor-core rung the inputs are converted to @p dtype (bf16 or f16,
 * strides kept) and the outputs come back in it. Asserts that both calls
 * return LADDER_OK, naming rung, shape and ladder_last_error() otherwise.
 */
void dc_run(ladder_rung rung, ladder_dtype dtype, const dc_case *c, dc_result *r);
void dc_result_free(dc_result *r);

/** "gpu_tensorcore (bf16)", or the plain rung name for the fp32 rungs. */
void dc_rung_label(ladder_rung rung, ladder_dtype dtype, char *buf, size_t n);

/** Assert @p cmp passed: "<who> on <shape>: <tensor> differs: <ladder_cmp_describe>". */
void dc_expect_close(const char *who, const dc_shape *s, const char *tensor, const ladder_cmp *cmp);

/** ladder_compare_f64 of a host tensor (any dtype, any strides) against a C-order double array. */
ladder_cmp dc_compare_to_f64(const ladder_tensor *got, const double *want, double tol);

/** Run 10 times; assert out, dx and dkernels are bitwise equal to the first run's. */
void dc_expect_deterministic(ladder_rung rung, ladder_dtype dtype, const dc_shape *s);

/** Skip the current test (cr_skip_test with the reason) unless @p rung can run here. */
void harness_require_rung(ladder_rung rung);

/** True when LADDER_TEST_SMALL=1: small grids, for compute-sanitizer runs. */
bool harness_small(void);

/** Create a fresh directory /tmp/ladder-<tag>-XXXXXX into @p dir (@p n bytes); the test fails if it cannot. */
void harness_tmpdir_make(char *dir, size_t n, const char *tag);

/** Remove @p dir and everything in it; the test fails if it cannot. */
void harness_tmpdir_remove(const char *dir);

/**
 * The cross-rung shape grid (LADDER_TEST_SMALL=1 picks the small one);
 * writes at most @p max shapes, returns how many.
 */
int dc_grid(dc_shape *shapes, int max);

/** The grid as parameters for a Criterion ParameterizedTest (memory from cr_malloc). */
struct criterion_test_params dc_grid_params(void);

#endif
