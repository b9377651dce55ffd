/**
 * @file dynconv_oracle.h
 * @brief The float64 brute-force dynconv: the reference every rung is judged by.
 *
 * Written for obviousness, not speed: one loop per index of the formulas in
 * common/dynconv.h, double accumulation, and nothing shared with the rungs
 * (its own sequence lookup, its own strided reads). Its backward is checked
 * against central finite differences of its forward in tests/test_oracle.c.
 */
#ifndef LADDER_DYNCONV_ORACLE_H
#define LADDER_DYNCONV_ORACLE_H

#include <stdint.h>

#include "dynconv.h"

/**
 * Forward on C-order double arrays: x [B,T,D], kernels [B,T,D,W] in,
 * out [B,T,D] written. @p cu_seqlens is NULL (each batch row is one
 * sequence) or [n_seqs+1] offsets (then B = 1).
 */
void dynconv_oracle_fwd(const ladder_dynconv_problem *p, const int32_t *cu_seqlens, int n_seqs, const double *x,
                        const double *kernels, double *out);

/**
 * Backward on C-order double arrays: x, kernels, dout [B,T,D] in,
 * dx [B,T,D] and dkernels [B,T,D,W] written.
 */
void dynconv_oracle_bwd(const ladder_dynconv_problem *p, const int32_t *cu_seqlens, int n_seqs, const double *x,
                        const double *kernels, const double *dout, double *dx, double *dkernels);

#endif
