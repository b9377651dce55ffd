/*
 * chapters/labs/recurrent/lab3_varlen_dgk.c: Lab 3, Lab 2 for packed sequences, several heads, and reverse.
 *
 * One batch row holds N sequences back to back (cu_seqlens), each with its own final state ht[n] and dht[n],
 * and H heads. Write dgk [T,H,K] for all of them. The Triton kernel this library follows gets one thing wrong
 * here when N > 1 (the chapter says what): get it right. With reverse, a sequence's recurrence runs from its
 * last token to its first, so "the later steps" are the earlier tokens.
 * Shapes: q, k, dq, dk, dgk [T,H,K]; ht, dht [N,H,K,V]; cu_seqlens [N+1].
 * Check it:  make lab LAB=lab3_varlen_dgk
 */
#include "lab.h"

void lab3_varlen_dgk(int64_t T, int64_t H, int64_t K, int64_t V, int n_seqs, const int32_t *cu_seqlens, int reverse,
                     const float *q, const float *k, const float *dq, const float *dk, const float *ht,
                     const float *dht, float *dgk) {
    /* TODO(lab 3): every sequence, every head, every key channel. */
    (void)V, (void)n_seqs, (void)cu_seqlens, (void)reverse, (void)q, (void)k, (void)dq, (void)dk, (void)ht, (void)dht;
    for (int64_t e = 0; e < T * H * K; e++) dgk[e] = 0.0f;
}
