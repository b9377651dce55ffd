/**
 * @file npy.h
 * @brief Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Supported: little-endian `<f4` (f32), `<f2` (f16), `<i4` (i32), `<i8`
 * (i64), C order (fortran_order False), rank 0..LADDER_MAX_RANK, in a regular
 * file. The reader is strict: the header must be exactly a dict of the keys
 * 'descr', 'fortran_order' and 'shape', each once, as numpy.save writes it
 * (single or double quotes, spaces or none, a trailing comma or none),
 * padded with spaces and ended by a newline, and the data must fill the rest of
 * the file exactly. Anything else (a FIFO, a directory, big-endian, Fortran
 * order, other or structured dtypes, unknown or repeated keys, a truncated
 * file, bytes after the data) is LADDER_ERR_IO with a message naming the file
 * and what was wrong; nothing crashes or blocks, whatever the bytes
 * (tests/fuzz/fuzz_npy.c checks that).
 */
#ifndef LADDER_NPY_H
#define LADDER_NPY_H

#include <stdio.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Read @p path into a new contiguous host tensor (free with
 * ladder_tensor_free()). LADDER_ERR_ARG for a null @p path or @p out;
 * LADDER_ERR_IO for a path that is not a regular file ("x.npy is a FIFO, not
 * a regular file": opened without blocking and checked before any byte is
 * read) or not a valid .npy; LADDER_ERR_NOMEM. On failure out->data is NULL.
 */
ladder_status ladder_npy_read(const char *path, ladder_tensor *out);

/**
 * Read one .npy from the seekable stream @p f, from its current position to
 * its end, into a new contiguous host tensor, as ladder_npy_read() does;
 * @p name stands for the file in messages. The size of the data is checked
 * against what is left of the stream before anything is allocated for it.
 */
ladder_status ladder_npy_read_stream(FILE *f, const char *name, ladder_tensor *out);

/**
 * Write a host tensor (any strides) to @p path, a regular file (created or
 * truncated), in C order: f32 as `<f4`, f16 as `<f2`, bf16 widened to `<f4`
 * (NumPy has no bf16), i32 `<i4`, i64 `<i8`; format version 1.0.
 * LADDER_ERR_ARG, before the file is touched, for a null @p path or @p t, a
 * tensor with no data, or one ladder_tensor_check_layout() refuses (a rank
 * above LADDER_MAX_RANK, say); LADDER_ERR_IO when @p path is not a regular
 * file or the write fails.
 */
ladder_status ladder_npy_write(const char *path, const ladder_tensor *t);

/**
 * Write @p t to the stream @p f as ladder_npy_write() does (same checks);
 * @p name stands for the file in messages.
 */
ladder_status ladder_npy_write_stream(FILE *f, const char *name, const ladder_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
