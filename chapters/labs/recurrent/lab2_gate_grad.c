/*
 * chapters/labs/recurrent/lab2_gate_grad.c: Lab 2, the gate gradient from the backward's other outputs.
 *
 * One sequence, one head, the gate gk of Lab 1. The backward has already given dq and dk, and you hold the
 * final state ht with its gradient dht. Write dgk [L,K] without running the recurrence again: the chapter's
 * derivation ("The gate gradients") ends in an identity that needs only these. dq, dk and ht come from a float64
 * backward, so the identity's terms arrive exact to double precision. Mind which steps a gate reaches (all the
 * later ones), what ht * dht adds, and what your sum keeps of terms of order one when, under strong decay, the
 * answer is a thousandth of them.
 * Shapes: q, k, dq, dk, dgk [L,K]; ht, dht [K,V].
 * Check it:  make lab LAB=lab2_gate_grad
 */
#include "lab.h"

void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const double *dq,
                    const double *dk, const double *ht, const float *dht, float *dgk) {
    /* TODO(lab 2): dgk from q, k, dq, dk, ht and dht. */
    (void)V, (void)q, (void)k, (void)dq, (void)dk, (void)ht, (void)dht;
    for (int64_t e = 0; e < L * K; e++) dgk[e] = 0.0f;
}
