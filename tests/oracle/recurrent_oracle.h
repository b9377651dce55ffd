/**
 * @file recurrent_oracle.h
 * @brief The float64 brute-force recurrent: the reference every rung is judged by.
 *
 * Written for obviousness, not speed: the recurrence of common/recurrent.h in
 * double, every state S_0..S_L of a sequence kept, and a backward that is the
 * adjoint of the forward statement by statement, with the gate gradients
 * taken where each gate acts (dL/dlog D_t = dS_t * D_t * S_{t-1}), not from
 * the reverse cumulative sums the rungs use: the two are checked against each
 * other. Its backward is checked against central finite differences of its
 * forward in tests/test_oracle.c.
 */
#ifndef LADDER_RECURRENT_ORACLE_H
#define LADDER_RECURRENT_ORACLE_H

#include <stdint.h>

#include "recurrent.h"

/** Every tensor of a call as a C-order double array (NULL when absent); the names and shapes of recurrent.h. */
typedef struct recurrent_oracle_tensors {
    double *q, *k, *v, *g, *g_gamma, *gk, *gv, *h0; /**< inputs */
    double *o, *ht;                                 /**< forward outputs (ht may be NULL) */
    double *do_, *dht;                              /**< backward inputs (dht may be NULL) */
    double *dq, *dk, *dv, *dg, *dg_gamma, *dgk, *dgv, *dh0; /**< backward outputs (NULL where the input is) */
} recurrent_oracle_tensors;

/** Forward: o (and ht). @p cu_seqlens is NULL (N = B) or [n_seqs+1] offsets (then B = 1). */
void recurrent_oracle_fwd(const ladder_recurrent_problem *p, const int32_t *cu_seqlens, int n_seqs,
                          const recurrent_oracle_tensors *x);

/** Backward: dq, dk, dv and every gradient whose array is given. */
void recurrent_oracle_bwd(const ladder_recurrent_problem *p, const int32_t *cu_seqlens, int n_seqs,
                          const recurrent_oracle_tensors *x);

#endif
