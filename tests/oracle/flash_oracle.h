/**
 * @file flash_oracle.h
 * @brief The float64 brute-force softmax attention: the reference every flash rung is judged by.
 *
 * Written for obviousness, not speed: every score of every row, the softmax in double, the backward as the
 * chain rule reads, and nothing shared with the rungs (its own mask predicate, its own sequence bounds). Its
 * backward is checked against central finite differences of its forward in tests/test_oracle.c.
 */
#ifndef LADDER_FLASH_ORACLE_H
#define LADDER_FLASH_ORACLE_H

#include "flash.h"

/**
 * Forward on C-order double arrays: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] in; o [B,Hq,Sq,Dv] and
 * lse [B,Hq,Sq] written. @p cu_q and @p cu_k are NULL (each batch row is one sequence) or [n_seqs+1] offsets
 * (then B = 1), held as doubles.
 */
void flash_oracle_fwd(const ladder_flash_problem *p, const double *cu_q, const double *cu_k, int n_seqs,
                      const double *q, const double *k, const double *v, double *o, double *lse);

/**
 * Backward on C-order double arrays: the forward's inputs and outputs, do [B,Hq,Sq,Dv] and dlse [B,Hq,Sq]
 * (NULL: none) in; dq, dk, dv written.
 */
void flash_oracle_bwd(const ladder_flash_problem *p, const double *cu_q, const double *cu_k, int n_seqs,
                      const double *q, const double *k, const double *v, const double *o, const double *lse,
                      const double *dout, const double *dlse, double *dq, double *dk, double *dv);

#endif
