/*
 * chapters/labs/labcheck.h: what every lab checker shares.
 *
 * A checker runs the student's function and a reference (the cpu rung, or a
 * float64 derivative taken by its definition) on the same seeded inputs,
 * compares with the library's comparator (common/compare.h) and prints one
 * line; a lab that asks for a test instead hands it correct and broken
 * functions. Its exit code says what happened:
 *     0 PASS, 1 FAIL, 2 cannot run here (a GPU lab without a GPU), 3 the checker itself failed.
 */
#ifndef LADDER_LABCHECK_H
#define LADDER_LABCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "tensor.h"

#define LABCHECK_PASS 0
#define LABCHECK_FAIL 1
#define LABCHECK_SKIP 2
#define LABCHECK_ERROR 3

/* A contiguous host tensor of @p dtype; on failure prints ERROR and exits 3. */
ladder_tensor labcheck_alloc(ladder_dtype dtype, int rank, const int64_t *shape);

/*
 * The engine's seeded random case of @p algo at @p problem (contiguous inputs, as the tests and the `ladder`
 * program make them) and the cpu rung's outputs on it, forward and backward. On failure prints ERROR, exits 3.
 */
void labcheck_case(const char *lab, const ladder_algo *algo, const void *problem, uint64_t seed, ladder_case *c,
                   ladder_result *ref);

/* Tensor @p name of the case (an input) or of @p ref (an output); exits 3 if the algorithm has no such tensor. */
ladder_tensor *labcheck_tensor(ladder_case *c, ladder_result *ref, const char *name);

/* @p st must be LADDER_OK; otherwise prints "ERROR <lab>: <what>: <ladder_last_error()>" and exits 3. */
void labcheck_ok(const char *lab, ladder_status st, const char *what);

/*
 * Compare the student's @p got with the reference @p want at LADDER_TOL_F32.
 * On a mismatch prints "FAIL <lab> at <shape>: <tensor> ... first bad [..]"
 * and returns false.
 */
bool labcheck_compare(const char *lab, const char *shape, const char *tensor, const ladder_tensor *got,
                      const ladder_tensor *want);

/* A GPU lab's first call: without a CUDA GPU here (or without nvcc at build time) prints "SKIP <lab> needs a CUDA
 * GPU: <why>" and exits 2. */
void labcheck_require_gpu(const char *lab);

/* Prints "PASS <lab>: all <n> shapes match" and returns 0. */
int labcheck_pass(const char *lab, int n_shapes);

#endif
