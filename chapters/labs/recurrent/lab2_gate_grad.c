/*
 * chapters/labs/recurrent/lab2_gate_grad.c: Lab 2, the gate gradient from the backward's other outputs.
 *
 * One sequence, one head, the gate gk of Lab 1. The backward has already given dq and dk, and you hold the
 * final state ht with its gradient dht. Write dgk [L,K] without running the recurrence again: the chapter's
 * derivation ("The gate gradients") ends in an identity that needs only these. Mind which steps a gate
 * reaches (all the later ones), what ht * dht adds, and in what precision a sum over thousands of steps
 * should run.
 * Shapes: q, k, dq, dk, dgk [L,K]; ht, dht [K,V].
 * Check it:  make lab LAB=lab2_gate_grad
 */
#include "lab.h"

void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const float *dq,
                    const float *dk, const float *ht, const float *dht, float *dgk) {
    /* TODO(lab 2): dgk from q, k, dq, dk, ht and dht. */
    (void)V, (void)q, (void)k, (void)dq, (void)dk, (void)ht, (void)dht;
    for (int64_t e = 0; e < L * K; e++) dgk[e] = 0.0f;
}
