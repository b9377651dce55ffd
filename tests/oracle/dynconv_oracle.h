/**
 * @file dynconv_oracle.h
 * @brief The float64 brute-force dynconv: the reference every rung is judged by.
 *
 * Written for obviousness, not speed: one loop per index of the formulas in
 * common/dynconv.h, double accumulation, and nothing shared with the rungs
 * (its own sequence lookup, its own strided reads). Its backward is checked
 * against central finite differences of its forward in
 * tests/test_dynconv_oracle.c.
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

/**
 * A C-order double copy of a host tensor (any float dtype, any strides, each
 * element read with ladder_tensor_get()); NULL when out of memory. free() it.
 */
double *dynconv_oracle_read(const ladder_tensor *t);

/**
 * Forward from host tensors (args->x, args->kernels, optional args->cu_seqlens):
 * a new C-order double array out [B,T,D], or NULL when out of memory. free() it.
 */
double *dynconv_oracle_fwd_tensors(const ladder_dynconv_problem *p, const ladder_dynconv_args *a);

/**
 * Backward from host tensors (args->x, args->kernels, args->dout, optional
 * args->cu_seqlens): new C-order double arrays *dx [B,T,D] and
 * *dkernels [B,T,D,W]; returns 0, or -1 when out of memory (nothing to free).
 */
int dynconv_oracle_bwd_tensors(const ladder_dynconv_problem *p, const ladder_dynconv_args *a, double **dx,
                               double **dkernels);

#endif
