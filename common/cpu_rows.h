/**
 * @file cpu_rows.h
 * @brief The cpu rungs' inputs as contiguous rows, and the two loops that run along a row in vector instructions.
 *
 * Inputs may have any strides; a sum along a head dim read through four strides an element stays scalar. So a
 * cpu rung that sums element by element (memeff's, flex's) first copies q, k, v and dO into contiguous rows
 * (ladder_rows_of()), once per call, and takes its dot products and row updates there: each runs in one fixed
 * order for a given build, so the bits do not depend on the thread count. flash's blocked products use the row
 * update too (ladder_axpy()).
 */
#ifndef LADDER_CPU_ROWS_H
#define LADDER_CPU_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "tensor.h"

/** A rank-4 f32 input [B, H, S, n] in contiguous rows of n entries; p NULL for an absent tensor. */
typedef struct ladder_rows {
    float *p;  /**< the rows, [B][H][S][n] */
    int64_t H; /**< heads */
    int64_t S; /**< rows a head */
    int64_t n; /**< entries a row */
} ladder_rows;

/** Copy rank-4 f32 tensor @p t into @p r (nothing for an absent one); false when the copy cannot be allocated. */
static inline bool ladder_rows_of(const ladder_tensor *t, ladder_rows *r) {
    *r = (ladder_rows){0};
    if (!t->data) return true;
    r->H = t->shape[1], r->S = t->shape[2], r->n = t->shape[3];
    const int64_t count = t->shape[0] * r->H * r->S;
    if (!(r->p = malloc((size_t)(count * r->n) * sizeof *r->p))) return false;
#pragma omp parallel for
    for (int64_t x = 0; x < count; x++) {
        const int64_t b = x / (r->H * r->S), h = x / r->S % r->H, s = x % r->S;
        const float *src = (const float *)t->data + b * t->strides[0] + h * t->strides[1] + s * t->strides[2];
        for (int64_t e = 0; e < r->n; e++) r->p[x * r->n + e] = src[e * t->strides[3]];
    }
    return true;
}

/** Row [b, h, s] of @p r: its n entries. */
static inline const float *ladder_row(const ladder_rows *r, int64_t b, int64_t h, int64_t s) {
    return r->p + ((b * r->H + h) * r->S + s) * r->n;
}

/** sum_d x[d] y[d] over @p n entries. */
static inline float ladder_dot(const float *restrict x, const float *restrict y, int64_t n) {
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t d = 0; d < n; d++) acc += x[d] * y[d];
    return acc;
}

/** acc[d] += w y[d] for d < @p n. */
static inline void ladder_axpy(int64_t n, float w, const float *restrict y, float *restrict acc) {
#pragma omp simd
    for (int64_t d = 0; d < n; d++) acc[d] += w * y[d];
}

#endif
