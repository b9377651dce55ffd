/**
 * @file npy.h
 * @brief Reading and writing NumPy .npy files (format version 1.0 and 2.0).
 *
 * Supported: little-endian `<f4` (f32), `<f2` (f16), `<i4` (i32), `<i8`
 * (i64), C order (fortran_order False), rank 0..LADDER_MAX_RANK. Anything
 * else (big-endian, Fortran order, other types, a truncated file, a
 * malformed header) is LADDER_ERR_IO with a message naming the file and
 * what was wrong; nothing crashes.
 */
#ifndef LADDER_NPY_H
#define LADDER_NPY_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Read @p path into a new contiguous host tensor (free with ladder_tensor_free()). */
ladder_status ladder_npy_read(const char *path, ladder_tensor *out);

/**
 * Write a host tensor (any strides) to @p path in C order: f32 as `<f4`,
 * f16 as `<f2`, bf16 widened to `<f4` (NumPy has no bf16), i32 `<i4`, i64 `<i8`.
 */
ladder_status ladder_npy_write(const char *path, const ladder_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
