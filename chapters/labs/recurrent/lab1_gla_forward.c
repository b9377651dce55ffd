/*
 * chapters/labs/recurrent/lab1_gla_forward.c: Lab 1, the gated recurrence forward, on the CPU.
 *
 * One sequence, one head, a per-key-channel gate gk in log space:
 *     S_t[i,j] = exp(gk_t[i]) * S_{t-1}[i,j] + k_t[i] * v_t[j],   S_0 = h0
 *     o_t[j]   = scale * sum_i q_t[i] * S_t[i,j]
 * Write o for every step and ht = the state after the last one. Keep the state as K*V floats: where
 * does it live, and in which order do you touch it so that each step reads memory in a straight line?
 * Shapes: q, k, gk [L,K]; v, o [L,V]; h0, ht [K,V].
 * Check it:  make lab LAB=lab1_gla_forward
 */
#include <string.h>

#include "lab.h"

void lab1_gla_forward(int64_t L, int64_t K, int64_t V, float scale, const float *q, const float *k, const float *v,
                      const float *gk, const float *h0, float *o, float *ht) {
    memcpy(ht, h0, (size_t)(K * V) * sizeof *ht); /* the state: S_0 = h0, kept in ht until the end */
    for (int64_t t = 0; t < L; t++) {
        /* TODO(lab 1): decay the state row by row, add k_t v_t^T, and write o_t. */
        (void)scale, (void)q, (void)k, (void)v, (void)gk;
        for (int64_t j = 0; j < V; j++) o[t * V + j] = 0.0f;
    }
}
