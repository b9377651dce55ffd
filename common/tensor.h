/**
 * @file tensor.h
 * @brief The one tensor descriptor: data pointer, dtype, rank, shape, strides.
 *
 * Strides are in elements and must be >= 0. Inputs may be strided (a slice of
 * a larger tensor); outputs are written contiguous (row-major, C order).
 * A descriptor does not own its data; ladder_tensor_alloc() and
 * ladder_tensor_free() manage host memory for tests and tools.
 *
 * Sizes and strides come from callers and files, so no helper here trusts
 * them: every product and sum of them is checked for overflow, and
 * ladder_tensor_check_layout() says whether a descriptor is usable at all.
 */
#ifndef LADDER_TENSOR_H
#define LADDER_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Element types. bf16 and f16 are stored as raw 16-bit patterns. */
typedef enum ladder_dtype {
    LADDER_F32 = 0, /**< IEEE binary32 */
    LADDER_F16,     /**< IEEE binary16 (fp16), raw bits */
    LADDER_BF16,    /**< bfloat16 (the top half of an f32), raw bits */
    LADDER_I32,     /**< int32_t (cu_seqlens) */
    LADDER_I64      /**< int64_t */
} ladder_dtype;

/** Largest rank any ladder tensor has. */
#define LADDER_MAX_RANK 4

/** A strided view of host or device memory. data == NULL means "absent". */
typedef struct ladder_tensor {
    void *data;                        /**< first element (host or device memory) */
    ladder_dtype dtype;                /**< element type */
    int rank;                          /**< number of dimensions, 0..LADDER_MAX_RANK */
    int64_t shape[LADDER_MAX_RANK];    /**< size of each dimension */
    int64_t strides[LADDER_MAX_RANK];  /**< step of each dimension, in elements, >= 0 */
} ladder_tensor;

/** Bytes per element. */
size_t ladder_dtype_size(ladder_dtype dtype);
/** "f32", "f16", "bf16", "i32", "i64". */
const char *ladder_dtype_name(ladder_dtype dtype);
/** True for f32, f16 and bf16. */
bool ladder_dtype_is_float(ladder_dtype dtype);

/**
 * A contiguous (C-order) descriptor of @p data; @p shape has @p rank entries.
 *
 * Given a rank outside 0..LADDER_MAX_RANK it reads nothing from @p shape and
 * returns a descriptor that keeps @p data, @p dtype and that rank, with shape
 * and strides all 0. Given a negative size, or a shape whose size in bytes
 * does not fit in int64, it keeps the shape and leaves the strides 0. Either
 * way the descriptor is invalid: ladder_tensor_check_layout() and every check
 * built on it refuse it with LADDER_ERR_ARG, and the helpers below answer -1
 * (or false) for it.
 */
ladder_tensor ladder_tensor_make(void *data, ladder_dtype dtype, int rank, const int64_t *shape);

/**
 * LADDER_OK when every size, stride and byte count of @p t can be computed
 * without overflow; LADDER_ERR_ARG naming @p name otherwise: a dtype that is
 * not a ::ladder_dtype, a rank outside 0..LADDER_MAX_RANK, a negative size or
 * stride, a shape whose size in bytes overflows int64 (sizes of 0 do not hide
 * the others: [0, 2^62, 8] is refused as NumPy refuses it), or strides whose
 * span in bytes overflows int64 or runs past the end of the address space.
 * Only the descriptor is read, never the data (which may be NULL or device
 * memory). Every tensor the library accepts passes this first.
 */
ladder_status ladder_tensor_check_layout(const ladder_tensor *t, const char *name);

/** Product of the shape (1 for rank 0); -1 when ladder_tensor_check_layout() refuses @p t. */
int64_t ladder_tensor_numel(const ladder_tensor *t);
/**
 * Elements from data to one past the last addressed element (0 if empty);
 * -1 when ladder_tensor_check_layout() refuses @p t.
 */
int64_t ladder_tensor_span(const ladder_tensor *t);
/**
 * Bytes from data to the end of the last addressed element: the span times
 * the element size (0 if empty); -1 when ladder_tensor_check_layout() refuses
 * @p t. The tensor's memory is the byte range [data, data + this).
 */
int64_t ladder_tensor_span_bytes(const ladder_tensor *t);
/** True when the strides are exactly C order for the shape; false when ladder_tensor_check_layout() refuses @p t. */
bool ladder_tensor_is_contiguous(const ladder_tensor *t);
/**
 * Element offset of the multi-index @p idx (rank entries); -1 when the rank
 * is outside 0..LADDER_MAX_RANK, an index is outside its dimension, or the
 * offset overflows int64 (which a valid descriptor never lets happen).
 */
int64_t ladder_tensor_offset(const ladder_tensor *t, const int64_t *idx);
/**
 * Element offset of the @p flat-th element in C order; -1 when @p flat is
 * outside 0..numel-1 (an empty tensor has no element), the rank is outside
 * 0..LADDER_MAX_RANK, or the offset overflows int64.
 */
int64_t ladder_tensor_offset_of_flat(const ladder_tensor *t, int64_t flat);
/** Writes "[2,8,128]" into @p buf, or "(rank 7)" when the rank is outside 0..LADDER_MAX_RANK. */
void ladder_tensor_shape_str(const ladder_tensor *t, char *buf, size_t n);

/**
 * Bytes a contiguous tensor of this shape needs, or -1 if @p dtype is not a
 * ::ladder_dtype, @p rank is outside 0..LADDER_MAX_RANK, a size is negative,
 * or the size in bytes does not fit in int64 (checked, so a huge shape cannot
 * wrap around to a small allocation; a size of 0 anywhere does not hide huge
 * sizes elsewhere).
 */
int64_t ladder_shape_bytes(ladder_dtype dtype, int rank, const int64_t *shape);

/**
 * Allocate a contiguous host tensor (contents undefined): LADDER_ERR_ARG for
 * what ladder_tensor_check_layout() refuses (a bad dtype or rank, a negative
 * size, a shape too large to address), LADDER_ERR_NOMEM if malloc fails.
 * On failure t->data is NULL.
 */
ladder_status ladder_tensor_alloc(ladder_tensor *t, ladder_dtype dtype, int rank, const int64_t *shape);
/** Free a host tensor made by ladder_tensor_alloc() (or the npy reader); NULL data is fine. */
void ladder_tensor_free(ladder_tensor *t);

/** Read element at element offset @p off of a host float or int tensor as double. */
double ladder_tensor_get(const ladder_tensor *t, int64_t off);
/** Store @p v at element offset @p off of a host tensor, rounding to its dtype. */
void ladder_tensor_set(ladder_tensor *t, int64_t off, double v);
/** Fill every addressed element of a host float tensor with NaN (poison). */
void ladder_tensor_poison(ladder_tensor *t);

/**
 * Convert a host tensor (any strides, any dtype) into a new contiguous host
 * tensor @p dst of dtype @p to: floats round to nearest even; integers are
 * converted through double, so the caller checks that they fit @p to.
 */
ladder_status ladder_tensor_convert(const ladder_tensor *src, ladder_tensor *dst, ladder_dtype to);
/** Round every addressed element of a host f32 tensor to @p precision (bf16 or f16) in place. */
void ladder_tensor_round_to(ladder_tensor *t, ladder_dtype precision);

#ifdef __cplusplus
}
#endif
#endif
