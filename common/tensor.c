#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

size_t ladder_dtype_size(ladder_dtype dtype) {
    switch (dtype) {
    case LADDER_F32: return 4;
    case LADDER_F16: return 2;
    case LADDER_BF16: return 2;
    case LADDER_I32: return 4;
    case LADDER_I64: return 8;
    }
    return 0;
}

const char *ladder_dtype_name(ladder_dtype dtype) {
    switch (dtype) {
    case LADDER_F32: return "f32";
    case LADDER_F16: return "f16";
    case LADDER_BF16: return "bf16";
    case LADDER_I32: return "i32";
    case LADDER_I64: return "i64";
    }
    return "unknown";
}

bool ladder_dtype_is_float(ladder_dtype dtype) {
    return dtype == LADDER_F32 || dtype == LADDER_F16 || dtype == LADDER_BF16;
}

ladder_tensor ladder_tensor_make(void *data, ladder_dtype dtype, int rank, const int64_t *shape) {
    ladder_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.rank = rank;
    if (rank < 0 || rank > LADDER_MAX_RANK) return t; /* no room for such a shape: invalid, and it says its rank */
    for (int i = 0; i < rank; i++) t.shape[i] = shape[i];
    /* C-order strides: each is the product of the sizes after it. A negative size or a product that overflows
       has no such strides; they stay 0, and the shape alone makes the descriptor invalid. */
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.strides[i] = stride;
        if (shape[i] < 0 || __builtin_mul_overflow(stride, shape[i], &stride)) {
            memset(t.strides, 0, sizeof t.strides);
            break;
        }
    }
    return t;
}

/* "[2,8,128]" from @p rank values. */
static void dims_str(const int64_t *v, int rank, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%lld" : "%lld", (long long)v[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

/* What, if anything, makes a descriptor unusable: the one place that decides it. */
typedef enum layout_fault {
    LAYOUT_OK,
    LAYOUT_DTYPE,     /* not a ladder_dtype */
    LAYOUT_RANK,      /* outside 0..LADDER_MAX_RANK */
    LAYOUT_SIZE,      /* a negative size */
    LAYOUT_STRIDE,    /* a negative stride */
    LAYOUT_TOO_LARGE, /* the shape's size in bytes overflows int64 */
    LAYOUT_SPAN,      /* the strides' span in bytes overflows int64 */
    LAYOUT_WRAPS      /* data + span in bytes runs past the end of the address space */
} layout_fault;

typedef struct layout {
    layout_fault fault;
    int dim;       /* the dimension at fault (LAYOUT_SIZE, LAYOUT_STRIDE) */
    int64_t numel; /* when fault is LAYOUT_OK */
    int64_t span;  /* elements, when fault is LAYOUT_OK */
} layout;

static layout inspect(const ladder_tensor *t) {
    layout l = {LAYOUT_OK, 0, 0, 0};
    int64_t esize = (int64_t)ladder_dtype_size(t->dtype);
    if (esize == 0) return (layout){.fault = LAYOUT_DTYPE};
    if (t->rank < 0 || t->rank > LADDER_MAX_RANK) return (layout){.fault = LAYOUT_RANK};
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0) return (layout){.fault = LAYOUT_SIZE, .dim = i};
        if (t->strides[i] < 0) return (layout){.fault = LAYOUT_STRIDE, .dim = i};
    }
    int64_t bytes = ladder_shape_bytes(t->dtype, t->rank, t->shape);
    if (bytes < 0) return (layout){.fault = LAYOUT_TOO_LARGE};
    l.numel = bytes / esize;
    if (l.numel == 0) return l; /* no element, nothing addressed: the strides do not matter */
    /* the span is one past the last element's offset, 1 + sum (size - 1) * stride: every step checked */
    int64_t last = 0;
    for (int i = 0; i < t->rank; i++) {
        int64_t step;
        if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &step) || __builtin_add_overflow(last, step, &last))
            return (layout){.fault = LAYOUT_SPAN};
    }
    if (__builtin_add_overflow(last, 1, &l.span) || __builtin_mul_overflow(l.span, esize, &bytes))
        return (layout){.fault = LAYOUT_SPAN};
    /* so that [data, data + bytes) is a plain interval (ladder_check_disjoint compares such intervals) */
    if ((uintptr_t)t->data > UINTPTR_MAX - (uint64_t)bytes) return (layout){.fault = LAYOUT_WRAPS};
    return l;
}

ladder_status ladder_tensor_check_layout(const ladder_tensor *t, const char *name) {
    layout l = inspect(t);
    char shape[128], strides[128];
    switch (l.fault) {
    case LAYOUT_OK: return LADDER_OK;
    case LAYOUT_DTYPE:
        return ladder_fail(LADDER_ERR_ARG, "%s has dtype %d, which is not a ladder_dtype", name, (int)t->dtype);
    case LAYOUT_RANK:
        return ladder_fail(LADDER_ERR_ARG, "%s has rank %d, outside 0..%d", name, t->rank, LADDER_MAX_RANK);
    case LAYOUT_SIZE:
        return ladder_fail(LADDER_ERR_ARG, "%s has size %lld in dimension %d: sizes must be >= 0", name,
                           (long long)t->shape[l.dim], l.dim);
    case LAYOUT_STRIDE:
        return ladder_fail(LADDER_ERR_ARG, "%s has stride %lld in dimension %d: strides must be >= 0", name,
                           (long long)t->strides[l.dim], l.dim);
    case LAYOUT_TOO_LARGE:
        dims_str(t->shape, t->rank, shape, sizeof shape);
        return ladder_fail(LADDER_ERR_ARG, "%s has shape %s, too large to address (its size in bytes overflows int64)",
                           name, shape);
    case LAYOUT_SPAN:
        dims_str(t->shape, t->rank, shape, sizeof shape);
        dims_str(t->strides, t->rank, strides, sizeof strides);
        return ladder_fail(LADDER_ERR_ARG,
                           "%s has strides %s for shape %s: they address more bytes than int64 can count", name,
                           strides, shape);
    case LAYOUT_WRAPS:
        return ladder_fail(LADDER_ERR_ARG, "%s at %p runs past the end of the address space", name, t->data);
    }
    return ladder_fail(LADDER_ERR_ARG, "%s: unknown layout fault", name);
}

int64_t ladder_tensor_numel(const ladder_tensor *t) {
    layout l = inspect(t);
    return l.fault == LAYOUT_OK ? l.numel : -1;
}

int64_t ladder_tensor_span(const ladder_tensor *t) {
    layout l = inspect(t);
    return l.fault == LAYOUT_OK ? l.span : -1;
}

int64_t ladder_tensor_span_bytes(const ladder_tensor *t) {
    layout l = inspect(t);
    return l.fault == LAYOUT_OK ? l.span * (int64_t)ladder_dtype_size(t->dtype) : -1; /* inspect checked it fits */
}

bool ladder_tensor_is_contiguous(const ladder_tensor *t) {
    if (inspect(t).fault != LAYOUT_OK) return false;
    /* cannot overflow: a product of trailing sizes is 0 or divides numel, which fits */
    int64_t stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != stride) return false;
        stride *= t->shape[i];
    }
    return true;
}

int64_t ladder_tensor_offset(const ladder_tensor *t, const int64_t *idx) {
    if (t->rank < 0 || t->rank > LADDER_MAX_RANK) return -1;
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++) {
        int64_t step;
        if (idx[i] < 0 || idx[i] >= t->shape[i] || __builtin_mul_overflow(idx[i], t->strides[i], &step) ||
            __builtin_add_overflow(off, step, &off))
            return -1;
    }
    return off;
}

int64_t ladder_tensor_offset_of_flat(const ladder_tensor *t, int64_t flat) {
    if (t->rank < 0 || t->rank > LADDER_MAX_RANK || flat < 0) return -1;
    int64_t off = 0;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] <= 0) return -1; /* an empty tensor has no element (and flat % 0 is undefined) */
        int64_t step;
        if (__builtin_mul_overflow(flat % t->shape[i], t->strides[i], &step) || __builtin_add_overflow(off, step, &off))
            return -1;
        flat /= t->shape[i];
    }
    return flat == 0 ? off : -1; /* something left over: flat was past the last element */
}

void ladder_tensor_shape_str(const ladder_tensor *t, char *buf, size_t n) {
    if (t->rank < 0 || t->rank > LADDER_MAX_RANK) snprintf(buf, n, "(rank %d)", t->rank);
    else dims_str(t->shape, t->rank, buf, n);
}

int64_t ladder_shape_bytes(ladder_dtype dtype, int rank, const int64_t *shape) {
    int64_t bytes = (int64_t)ladder_dtype_size(dtype);
    if (bytes == 0 || rank < 0 || rank > LADDER_MAX_RANK) return -1;
    /* Sizes of 0 are skipped while multiplying and applied at the end, as NumPy does: [0, 2^62, 8] has no element
       but its C-order strides overflow all the same, so it is refused like [2^62, 8, 0]. */
    bool empty = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] == 0) empty = true;
        else if (__builtin_mul_overflow(bytes, shape[i], &bytes)) return -1;
    }
    return empty ? 0 : bytes;
}

ladder_status ladder_tensor_alloc(ladder_tensor *t, ladder_dtype dtype, int rank, const int64_t *shape) {
    *t = ladder_tensor_make(NULL, dtype, rank, shape);
    ladder_status st = ladder_tensor_check_layout(t, "the tensor to allocate");
    if (st != LADDER_OK) return st;
    int64_t need = ladder_shape_bytes(dtype, rank, shape);
    size_t bytes = need > 0 ? (size_t)need : ladder_dtype_size(dtype); /* a valid, non-null pointer when empty */
    t->data = malloc(bytes);
    if (!t->data) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %zu bytes of host memory", bytes);
    return LADDER_OK;
}

void ladder_tensor_free(ladder_tensor *t) {
    free(t->data);
    t->data = NULL;
}

double ladder_tensor_get(const ladder_tensor *t, int64_t off) {
    switch (t->dtype) {
    case LADDER_F32: return ((const float *)t->data)[off];
    case LADDER_F16: return ladder_f16_to_f32(((const uint16_t *)t->data)[off]);
    case LADDER_BF16: return ladder_bf16_to_f32(((const uint16_t *)t->data)[off]);
    case LADDER_I32: return ((const int32_t *)t->data)[off];
    case LADDER_I64: return (double)((const int64_t *)t->data)[off];
    }
    return NAN;
}

void ladder_tensor_set(ladder_tensor *t, int64_t off, double v) {
    switch (t->dtype) {
    case LADDER_F32: ((float *)t->data)[off] = (float)v; break;
    case LADDER_F16: ((uint16_t *)t->data)[off] = ladder_f32_to_f16((float)v); break;
    case LADDER_BF16: ((uint16_t *)t->data)[off] = ladder_f32_to_bf16((float)v); break;
    case LADDER_I32: ((int32_t *)t->data)[off] = (int32_t)v; break;
    case LADDER_I64: ((int64_t *)t->data)[off] = (int64_t)v; break;
    }
}

void ladder_tensor_poison(ladder_tensor *t) {
    int64_t n = ladder_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) ladder_tensor_set(t, ladder_tensor_offset_of_flat(t, i), NAN);
}

ladder_status ladder_tensor_convert(const ladder_tensor *src, ladder_tensor *dst, ladder_dtype to) {
    ladder_status st = ladder_tensor_alloc(dst, to, src->rank, src->shape);
    if (st != LADDER_OK) return st;
    int64_t n = ladder_tensor_numel(src);
    for (int64_t i = 0; i < n; i++) ladder_tensor_set(dst, i, ladder_tensor_get(src, ladder_tensor_offset_of_flat(src, i)));
    return LADDER_OK;
}

void ladder_tensor_round_to(ladder_tensor *t, ladder_dtype precision) {
    float *p = (float *)t->data;
    int64_t n = ladder_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = ladder_tensor_offset_of_flat(t, i);
        p[off] = precision == LADDER_BF16 ? ladder_bf16_to_f32(ladder_f32_to_bf16(p[off]))
                                          : ladder_f16_to_f32(ladder_f32_to_f16(p[off]));
    }
}
