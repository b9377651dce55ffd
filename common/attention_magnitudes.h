/*
 * common/attention_magnitudes.h: the magnitudes of an attention backward's gradients (ladder_algo::magnitudes),
 * shared by the algorithms whose gradients are sums of dS that cancel: flex (dq, dk, dv and its buffers' gradients:
 * common/flex_magnitudes.c) and memeff (its bias's gradient: common/memeff_magnitudes.c). What the magnitudes are and
 * why: common/attention_magnitudes.c.
 *
 * An algorithm says three things about an element (b, h, i, j) of its scores (attn_mag_model): whether row i sees
 * key j, the score S made from s = scale q.k (with dS/ds and dropout's factor on P), and where the element's dS goes
 * besides dq and dk (its buffers' gradients, into a task's partial). attn_magnitudes() does the rest, row by row.
 */
#ifndef LADDER_ATTENTION_MAGNITUDES_H
#define LADDER_ATTENTION_MAGNITUDES_H

#include <stdbool.h>
#include <stdint.h>

#include "attention.h"
#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What the score of one element is, from s = scale q.k. */
typedef struct attn_mag_score {
    double S;      /**< the score the softmax takes */
    double dscore; /**< dS/ds, what dq and dk take dS times */
    double keep;   /**< dropout's factor on P in O and dP: 1 without dropout, 0 dropped, 1 / (1 - p) kept */
} attn_mag_score;

/** The magnitudes of one output: both arrays (NULL: not asked), and how many elements. */
typedef struct attn_mag_out {
    double *terms;    /**< per element: the sum of |term| (NULL: not asked) */
    double *rounding; /**< per element: the sum of the terms' rounding coefficients */
    int64_t n;        /**< elements */
} attn_mag_out;

/** An algorithm's view of its scores, for attn_magnitudes(). */
typedef struct attn_mag_model {
    const ladder_attention_problem *p;            /**< the problem: sizes, mask, scale */
    const ladder_tensor *q;                       /**< f32 host tensors, any strides: the queries */
    const ladder_tensor *k;                       /**< the keys */
    const ladder_tensor *v;                       /**< the values */
    const ladder_tensor *dout;                    /**< dO */
    const ladder_tensor *dlse;                    /**< lse's gradient (no data: none) */
    double scale;                                 /**< the scale s = scale q.k is taken at */
    const void *ctx;                              /**< what the three functions read */
    /** whether row i of head h in batch row b sees key j */
    bool (*sees)(const void *ctx, int64_t b, int64_t h, int64_t i, int64_t j);
    /** the score of the element whose s = scale q.k is @p s */
    attn_mag_score (*score)(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j);
    /**
     * The element's dS goes into buffer gradients too: add @p terms and @p rounding (dS's, before dS/ds) times each
     * buffer element's derivative into the task's @p partial (width doubles: the algorithm's layout). NULL: none.
     */
    void (*buffers)(const void *ctx, double s, int64_t b, int64_t h, int64_t i, int64_t j, double terms,
                    double rounding, double *partial);
    int64_t width; /**< doubles of a task's partial (0 without buffers) */
    attn_mag_out dq; /**< the gradients to sum into (zeroed, or terms NULL where not asked): dq */
    attn_mag_out dk; /**< dk */
    attn_mag_out dv; /**< dv */
} attn_mag_model;

/**
 * Every row of every head: the terms and rounding of dq, dk and dv added into the model's outputs, and the buffer
 * terms of task t = b Hkv + hk (the rows of the query heads of kv head hk in batch row b) into @p partial + t width
 * (B Hkv width doubles, zeroed), for the caller to add up in task order. OpenMP over the tasks.
 */
ladder_status attn_magnitudes(const attn_mag_model *m, double *partial);

/** Both arrays of output @p i of case @p c, zeroed, into @p m (engine's) and @p o. */
ladder_status attn_mag_alloc(const ladder_case *c, int i, ladder_magnitudes *m, attn_mag_out *o);

#ifdef __cplusplus
}
#endif
#endif
