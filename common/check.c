#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"

ladder_status ladder_check_tensor(const ladder_tensor *t, const char *name, int rank, const int64_t *shape,
                                  const char *dims) {
    if (!t->data) return ladder_fail(LADDER_ERR_ARG, "%s is null (a required tensor)", name);
    ladder_status st = ladder_tensor_check_layout(t, name);
    if (st == LADDER_OK) st = ladder_check_aligned(t, name);
    if (st != LADDER_OK) return st;
    bool same = t->rank == rank;
    for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char got[96], want[96];
        ladder_tensor expect = ladder_tensor_make(NULL, t->dtype, rank, shape);
        ladder_tensor_shape_str(t, got, sizeof got);
        ladder_tensor_shape_str(&expect, want, sizeof want);
        return ladder_fail(LADDER_ERR_SHAPE, "%s has shape %s but the problem needs %s (%s)", name, got, want, dims);
    }
    return LADDER_OK;
}

ladder_status ladder_check_aligned(const ladder_tensor *t, const char *name) {
    const size_t size = ladder_dtype_size(t->dtype);
    if (t->data && size > 0 && (uintptr_t)t->data % size != 0)
        return ladder_fail(LADDER_ERR_ARG, "%s's data pointer %p is not a multiple of %zu bytes, the size of an %s",
                           name, t->data, size, ladder_dtype_name(t->dtype));
    return LADDER_OK;
}

ladder_status ladder_check_contiguous(const ladder_tensor *t, const char *name) {
    if (!ladder_tensor_is_contiguous(t))
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "%s is an output and must be contiguous (C order)", name);
    return LADDER_OK;
}

ladder_status ladder_check_dtype(const ladder_tensor *t, const char *name, ladder_dtype want, ladder_rung rung) {
    if (t->dtype != want)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "rung %s takes %s as %s, not %s", ladder_rung_name(rung), name,
                           ladder_dtype_name(want), ladder_dtype_name(t->dtype));
    return LADDER_OK;
}

/* The bytes [*lo, *hi) that @p t occupies; empty (lo == hi) when it is absent or has no element. */
static ladder_status byte_range(const ladder_tensor *t, const char *name, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = (uintptr_t)t->data;
    if (!t->data) return LADDER_OK;
    ladder_status st = ladder_tensor_check_layout(t, name);
    if (st != LADDER_OK) return st;
    *hi += (uintptr_t)ladder_tensor_span_bytes(t); /* the layout check made sure this does not wrap */
    return LADDER_OK;
}

ladder_status ladder_check_disjoint(const ladder_tensor *out, const char *out_name, const ladder_tensor *other,
                                    const char *other_name) {
    uintptr_t out_lo, out_hi, other_lo, other_hi;
    ladder_status st = byte_range(out, out_name, &out_lo, &out_hi);
    if (st == LADDER_OK) st = byte_range(other, other_name, &other_lo, &other_hi);
    if (st != LADDER_OK) return st;
    bool empty = out_lo == out_hi || other_lo == other_hi;
    if (!empty && out_lo < other_hi && other_lo < out_hi)
        return ladder_fail(LADDER_ERR_ARG,
                           "%s overlaps %s: an output must not share memory with an input or another output", out_name,
                           other_name);
    return LADDER_OK;
}

ladder_status ladder_check_outputs_disjoint(const ladder_tensor *const *outs, const char *const *out_names, int n_outs,
                                            const ladder_tensor *const *ins, const char *const *in_names, int n_ins) {
    /* every output against the inputs first: an output laid onto an input is named with that input, even when
     * it is larger and runs on into another output */
    for (int o = 0; o < n_outs; o++)
        for (int i = 0; i < n_ins; i++) {
            ladder_status st = ladder_check_disjoint(outs[o], out_names[o], ins[i], in_names[i]);
            if (st != LADDER_OK) return st;
        }
    for (int o = 0; o < n_outs; o++) {
        for (int p = o + 1; p < n_outs; p++) {
            ladder_status st = ladder_check_disjoint(outs[o], out_names[o], outs[p], out_names[p]);
            if (st != LADDER_OK) return st;
        }
    }
    return LADDER_OK;
}

ladder_status ladder_check_cu_seqlens(const ladder_tensor *cu, int64_t total, bool on_device) {
    return ladder_check_cu_seqlens_named(cu, "cu_seqlens", "T", total, on_device);
}

ladder_status ladder_check_cu_seqlens_named(const ladder_tensor *cu, const char *name, const char *total_name,
                                            int64_t total, bool on_device) {
    ladder_status st = ladder_tensor_check_layout(cu, name);
    if (st != LADDER_OK) return st;
    if (cu->dtype != LADDER_I32)
        return ladder_fail(LADDER_ERR_ARG, "%s must be i32, not %s", name, ladder_dtype_name(cu->dtype));
    LADDER_TRY(ladder_check_aligned(cu, name));
    if (cu->rank != 1 || cu->shape[0] < 2)
        return ladder_fail(LADDER_ERR_ARG, "%s must have shape [N+1] with N >= 1 sequences", name);
    if (cu->strides[0] != 1) return ladder_fail(LADDER_ERR_UNSUPPORTED, "%s must be contiguous", name);
    int64_t n = cu->shape[0];
    /* its size in bytes, as the layout check computed it without overflow: never n * 4 by hand */
    int32_t *v = malloc((size_t)ladder_tensor_span_bytes(cu));
    if (!v) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld entries to check %s", (long long)n, name);
    if (on_device) st = ladder_gpu_read_i32(cu->data, n, v);
    else
        for (int64_t i = 0; i < n; i++) v[i] = ((const int32_t *)cu->data)[i];
    if (st == LADDER_OK && v[0] != 0)
        st = ladder_fail(LADDER_ERR_ARG, "%s[0] is %d but must be 0", name, v[0]);
    for (int64_t i = 1; st == LADDER_OK && i < n; i++)
        if (v[i] < v[i - 1])
            st = ladder_fail(LADDER_ERR_ARG, "%s decreases at entry %lld (%d after %d)", name, (long long)i, v[i],
                             v[i - 1]);
    if (st == LADDER_OK && v[n - 1] != total)
        st = ladder_fail(LADDER_ERR_ARG, "%s ends at %d but must end at %s = %lld", name, v[n - 1], total_name,
                         (long long)total);
    free(v);
    return st;
}
