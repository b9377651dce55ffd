/**
 * @file flex_oracle.h
 * @brief The float64 brute-force flex attention (score mods with their buffer gradients, mask mods, block lists):
 *        the reference every flex rung is judged by.
 *
 * Written for obviousness, not speed: every score of every row in double, the mods written again here in double
 * with their own derivatives (nothing shared with the rungs but T5's integer bucket, ladder_flex_t5_bucket()), the
 * mask as a predicate per element: with block lists, the element's tile looked up in the forward's lists (full:
 * allowed; partial: the mask mods; else not), without them the mask mods alone. Its backward is checked against
 * central finite differences of its forward, buffers included, in tests/test_oracle.c.
 */
#ifndef LADDER_FLEX_ORACLE_H
#define LADDER_FLEX_ORACLE_H

#include "flex.h"

/** The inputs and outputs of one oracle call, as C-order double arrays (NULL: absent). */
typedef struct flex_oracle_tensors {
    const double *q, *k, *v;                       /**< [B,Hq,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv] */
    const double *slopes, *rel_bias, *t5_bias, *bq, *bk; /**< the float buffers (flex.h's shapes) */
    const double *prefix, *doc_q, *doc_k;          /**< the index buffers, as doubles */
    const double *kv_num, *kv_idx, *full_kv_num, *full_kv_idx; /**< the forward's block lists, or NULL */
    int64_t MB, MH;                                /**< their batch and head sizes (1 or B, 1 or Hq) */
    double *o, *lse;                               /**< written by the forward, read by the backward */
    const double *dout, *dlse;                     /**< [B,Hq,Sq,Dv], [B,Hq,Sq] (dlse may be NULL) */
    double *dq, *dk, *dv;                          /**< written by the backward */
    double *dslopes, *drel_bias, *dt5_bias, *dbq, *dbk; /**< written by the backward when not NULL */
} flex_oracle_tensors;

/** Forward: o and lse. */
void flex_oracle_fwd(const ladder_flex_problem *p, flex_oracle_tensors *x);

/** Backward: dq, dk, dv and each buffer gradient asked for. */
void flex_oracle_bwd(const ladder_flex_problem *p, flex_oracle_tensors *x);

/** S of one score in double: the score mod of @p s (what the registry's float mods are checked against too). */
double flex_oracle_score(const ladder_flex_problem *p, const flex_oracle_tensors *x, double s, int64_t b, int64_t h,
                         int64_t i, int64_t j);

#endif
