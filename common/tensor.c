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
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.shape[i] = shape[i];
        t.strides[i] = stride;
        stride *= shape[i];
    }
    return t;
}

int64_t ladder_tensor_numel(const ladder_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

int64_t ladder_tensor_span(const ladder_tensor *t) {
    int64_t last = 0;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] <= 0) return 0;
        last += (t->shape[i] - 1) * t->strides[i];
    }
    return last + 1;
}

bool ladder_tensor_is_contiguous(const ladder_tensor *t) {
    int64_t stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != stride) return false;
        stride *= t->shape[i];
    }
    return true;
}

int64_t ladder_tensor_offset(const ladder_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
    return off;
}

int64_t ladder_tensor_offset_of_flat(const ladder_tensor *t, int64_t flat) {
    int64_t off = 0;
    for (int i = t->rank - 1; i >= 0; i--) {
        off += (flat % t->shape[i]) * t->strides[i];
        flat /= t->shape[i];
    }
    return off;
}

void ladder_tensor_shape_str(const ladder_tensor *t, char *buf, size_t n) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

int64_t ladder_shape_bytes(ladder_dtype dtype, int rank, const int64_t *shape) {
    int64_t bytes = (int64_t)ladder_dtype_size(dtype);
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || __builtin_mul_overflow(bytes, shape[i], &bytes)) return -1;
    return bytes;
}

ladder_status ladder_tensor_alloc(ladder_tensor *t, ladder_dtype dtype, int rank, const int64_t *shape) {
    *t = ladder_tensor_make(NULL, dtype, rank, shape);
    int64_t need = ladder_shape_bytes(dtype, rank, shape);
    if (need < 0) return ladder_fail(LADDER_ERR_NOMEM, "a tensor of that shape does not fit in memory (size overflows)");
    size_t bytes = need > 0 ? (size_t)need : ladder_dtype_size(dtype);
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
