/**
 * @file compare.h
 * @brief The one comparator: relative L2 error, max abs error, first bad element.
 *
 * A result passes when no element is NaN/Inf in one tensor and finite in the
 * other (or NaN in one and Inf in the other), the relative L2 error
 * ||a-b|| / ||b|| is at most tol, and every element satisfies
 * |a-b| <= 4 * tol * (|b| + rms(b)). The element test catches one wrong
 * element in a million, which the L2 norm alone would average away.
 */
#ifndef LADDER_COMPARE_H
#define LADDER_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** fp32 rungs against the CPU rung, and the CPU rung against the float64 oracle. */
#define LADDER_TOL_F32 1e-5
/** fp16 inputs (rounded the same way on both sides), fp32 accumulation, fp16 outputs. */
#define LADDER_TOL_F16 2e-3
/** bf16 inputs (rounded the same way on both sides), fp32 accumulation, bf16 outputs. */
#define LADDER_TOL_BF16 1e-2
/**
 * fp32 inputs and outputs, each product of the pass one TF32 product (memeff's allow_tf32 at the tensor-core rung),
 * against the cpu rung on the same inputs rounded to TF32 (as the 16-bit tests round theirs). TF32 keeps 10
 * explicit mantissa bits, so rounding an operand costs up to u = 2^-11 (4.9e-4) of it, and the deepest chain of
 * the backward (P and dS rounded for their products, then dS times k or q) rounds operands on the way: a few u
 * per term, so bf16's tolerance, as for an input rounding of that size (the H100 measurements that set it are in
 * docs/results, the run records).
 */
#define LADDER_TOL_TF32 1e-2
/**
 * fp32 inputs with three TF32 products per multiply (memeff at the tensor-core rung without allow_tf32), against
 * the cpu rung on the same unrounded inputs. A value split into a TF32 part and a TF32 remainder keeps about 21
 * bits, 3 fewer than fp32's 24, so its rounding is up to 8 times fp32's: in rows that see one key, dS = P (dP -
 * Delta) is a difference of equal terms, its elements rounding noise of that size on both sides, and the element
 * test (4 tol (|want| + rms)) needs 8 times the fp32 tolerance there (the H100 measurements are in the run
 * records).
 */
#define LADDER_TOL_3XTF32 8e-5

/** The named tolerance for results computed from inputs of @p dtype. */
double ladder_tolerance(ladder_dtype dtype);

/** What a comparison found. */
typedef struct ladder_cmp {
    bool ok;                               /**< passed every test above */
    double tol;                            /**< the tolerance used */
    double rel_l2;                         /**< ||got - want|| / ||want|| */
    double max_abs;                        /**< max |got - want| over finite pairs */
    int64_t n;                             /**< elements compared */
    int64_t nonfinite_mismatches;          /**< elements NaN/Inf on one side only (or NaN vs Inf) */
    int64_t first_bad;                     /**< flat C-order index of the first failing element, -1 if none */
    int rank;                              /**< rank of the compared shape */
    int64_t first_bad_at[LADDER_MAX_RANK]; /**< first_bad decoded to coordinates */
    double got_at_bad, want_at_bad;        /**< the two values there */
} ladder_cmp;
/** @var ladder_cmp::got_at_bad
 *  got at first_bad (want_at_bad holds want there). */

/** Compare two C-order double arrays of shape @p shape (rank entries). */
ladder_cmp ladder_compare_f64(const double *got, const double *want, int rank, const int64_t *shape, double tol);
/** Compare two host tensors of the same shape, any float dtypes, any strides. */
ladder_cmp ladder_compare(const ladder_tensor *got, const ladder_tensor *want, double tol);
/** One line: "rel_l2 3.1e-06 max_abs 2.0e-05 (tol 1e-05)" plus, on failure, "first bad [0,3,7]: got 1.2 want 1.3". */
void ladder_cmp_describe(const ladder_cmp *cmp, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
