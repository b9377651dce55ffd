/**
 * @file memeff_oracle.h
 * @brief The float64 brute-force memory-efficient attention (bias, its gradient, dropout): the reference every
 *        memeff rung is judged by.
 *
 * Written for obviousness, not speed: every score of every row, the softmax in double, the backward as the chain
 * rule reads (Delta as sum_j P_ij dP_ij, not through O), and nothing shared with the rungs but the dropout mask
 * (common/philox.h, which its own known-answer test pins down). Its backward is checked against central finite
 * differences of its forward in tests/test_oracle.c; the mask is a fixed function of (seed, offset, position), so
 * the differences see the same mask at every step.
 */
#ifndef LADDER_MEMEFF_ORACLE_H
#define LADDER_MEMEFF_ORACLE_H

#include "memeff.h"

/** The inputs and outputs of one oracle call, as C-order double arrays (NULL: absent). */
typedef struct memeff_oracle_tensors {
    const double *cu_q, *cu_k;  /**< [n_seqs+1] offsets of packed sequences (then B = 1), or NULL */
    int n_seqs;                 /**< packed sequences (0 without) */
    const double *q, *k, *v;    /**< [B,Hq,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv] */
    const double *bias;         /**< the bias in its own shape bias_shape (each dim the problem's or 1), or NULL */
    int64_t bias_shape[4];      /**< its shape */
    double *o, *lse;            /**< [B,Hq,Sq,Dv], [B,Hq,Sq]: written by the forward, read by the backward */
    const double *dout, *dlse;  /**< [B,Hq,Sq,Dv], [B,Hq,Sq] (dlse may be NULL) */
    double *dq, *dk, *dv;       /**< written by the backward */
    double *dbias;              /**< the bias's shape, written by the backward when not NULL */
} memeff_oracle_tensors;

/** Forward: o and lse from q, k, v, bias. */
void memeff_oracle_fwd(const ladder_memeff_problem *p, memeff_oracle_tensors *x);

/** Backward: dq, dk, dv and dbias from the forward's inputs and outputs, do and dlse. */
void memeff_oracle_bwd(const ladder_memeff_problem *p, memeff_oracle_tensors *x);

#endif
