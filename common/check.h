/**
 * @file check.h
 * @brief Argument checks every dispatcher shares; each failure names the argument.
 */
#ifndef LADDER_CHECK_H
#define LADDER_CHECK_H

#include <stdbool.h>

#include "rung.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @p t must be present (LADDER_ERR_ARG "x is null"), pass
 * ladder_tensor_check_layout() (LADDER_ERR_ARG: a bad rank or dtype, negative
 * sizes or strides, sizes or strides too large to address), and have rank
 * and shape @p shape (LADDER_ERR_SHAPE
 * "x has shape [2,5,7] but the problem needs [2,6,7] ([B,T,D])"). @p dims
 * names the dimensions for the message, e.g. "[B,T,D]".
 */
ladder_status ladder_check_tensor(const ladder_tensor *t, const char *name, int rank, const int64_t *shape,
                                  const char *dims);

/**
 * @p t's data pointer must be aligned to its dtype's size (LADDER_ERR_ARG "x's data pointer 0x... is not a
 * multiple of 4 bytes, the size of an f32"): every rung reads elements through typed pointers, and a misaligned
 * one is undefined behaviour on the CPU and a fault on the GPU. Absent tensors pass. ladder_check_tensor() and
 * ladder_check_cu_seqlens_named() call it; a dispatcher calls it itself for a tensor it checks another way.
 */
ladder_status ladder_check_aligned(const ladder_tensor *t, const char *name);

/** @p t must be contiguous (outputs are written in C order): LADDER_ERR_UNSUPPORTED otherwise. */
ladder_status ladder_check_contiguous(const ladder_tensor *t, const char *name);

/** @p t must have dtype @p want on @p rung: LADDER_ERR_UNSUPPORTED "rung gpu_naive takes x as f32, not bf16". */
ladder_status ladder_check_dtype(const ladder_tensor *t, const char *name, ladder_dtype want, ladder_rung rung);

/**
 * @p out and @p other must not share memory: LADDER_ERR_ARG "dx overlaps x:
 * an output must not share memory with an input or another output" when the
 * byte ranges [data, data + ladder_tensor_span_bytes()) of the two intersect.
 * Only addresses are compared and nothing is read, so host and device
 * pointers both work. An absent (data NULL) or empty tensor overlaps nothing.
 * The range of a strided tensor includes the gaps between its elements, so
 * two interleaved views count as overlapping. A tensor that
 * ladder_tensor_check_layout() refuses gives that error instead.
 */
ladder_status ladder_check_disjoint(const ladder_tensor *out, const char *out_name, const ladder_tensor *other,
                                    const char *other_name);

/**
 * ladder_check_disjoint() for each of the @p n_outs outputs against each of
 * the @p n_ins inputs, then against every other output; the first overlap
 * found is the error. Absent tensors are skipped, so optional ones can be listed.
 * Dispatchers call this before anything is written.
 */
ladder_status ladder_check_outputs_disjoint(const ladder_tensor *const *outs, const char *const *out_names, int n_outs,
                                            const ladder_tensor *const *ins, const char *const *in_names, int n_ins);

/**
 * Validate cu_seqlens [N+1] (a layout ladder_tensor_check_layout() accepts,
 * i32, N >= 1, contiguous: LADDER_ERR_UNSUPPORTED otherwise) against @p total
 * tokens: starts at 0, never decreases, ends at @p total (LADDER_ERR_ARG
 * naming the entry).
 * Reads device memory through a copy when @p on_device.
 */
ladder_status ladder_check_cu_seqlens(const ladder_tensor *cu, int64_t total, bool on_device);

/**
 * ladder_check_cu_seqlens() for an index tensor called @p name whose sequences pack the size called
 * @p total_name (an algorithm with two: "cu_seqlens_k" packs "Sk"); the messages name both.
 */
ladder_status ladder_check_cu_seqlens_named(const ladder_tensor *cu, const char *name, const char *total_name,
                                            int64_t total, bool on_device);

#ifdef __cplusplus
}
#endif
#endif
