/*
 * chapters/labs/recurrent/lab.h: the functions the recurrent labs ask for.
 *
 * Each lab file (lab1_gla_forward.c, lab2_gate_grad.c, lab3_varlen_dgk.c, lab4_gla_forward_gpu.cu) defines one
 * of them; its checker (check_<lab>.c) runs it on seeded inputs beside a reference (the cpu rung; Lab 2's own float64
 * backward) and prints PASS or FAIL.
 * Run a lab:  make lab LAB=lab1_gla_forward
 * All tensors here are contiguous, C order, fp32 (but Lab 2's dq, dk and ht, in double); host memory in Labs 1 to 3,
 * device memory in Lab 4.
 */
#ifndef LADDER_LAB_RECURRENT_H
#define LADDER_LAB_RECURRENT_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1: the forward of one sequence and one head, with a per-key-channel gate:
 *     S_t[i,j] = exp(gk_t[i]) * S_{t-1}[i,j] + k_t[i] * v_t[j],   S_0 = h0,   o_t = scale * S_t^T q_t,
 * for t = 0 .. L-1, and ht = S after the last step.
 * q, k, gk are [L,K]; v and o are [L,V]; h0 and ht are [K,V] (h0 may not be NULL here).
 */
void lab1_gla_forward(int64_t L, int64_t K, int64_t V, float scale, const float *q, const float *k, const float *v,
                      const float *gk, const float *h0, float *o, float *ht);

/*
 * Lab 2: the gradient of the gate gk of one sequence and one head, from the backward's other outputs:
 * given q, k [L,K], dq, dk [L,K] (as a float64 backward computed them, in double) and the final state ht (double)
 * with its gradient dht [K,V], write dgk [L,K]. The chapter derives the identity this needs; the lab asks you to
 * find it in the chapter's derivation and turn it into a loop.
 */
void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const double *dq,
                    const double *dk, const double *ht, const float *dht, float *dgk);

/*
 * Lab 3: Lab 2 for packed sequences and several heads: q, k, dq, dk, dgk are [T,H,K] (one batch row, B = 1),
 * ht and dht are [N,H,K,V], and sequence n owns tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 (N+1 offsets from
 * 0 to T, non-decreasing; a sequence may be empty). With reverse != 0 each sequence runs from its last token
 * to its first.
 */
void lab3_varlen_dgk(int64_t T, int64_t H, int64_t K, int64_t V, int n_seqs, const int32_t *cu_seqlens, int reverse,
                     const float *q, const float *k, const float *dq, const float *dk, const float *ht,
                     const float *dht, float *dgk);

/*
 * Lab 4: Lab 1 on the GPU, for H heads of one sequence: the launcher (written) gives a thread to each column j of
 * each head's state, and the kernel (yours) runs that column through the whole sequence.
 * q, k, gk are [L,H,K]; v and o are [L,H,V]; h0 and ht are [H,K,V]; all device memory. Returns LADDER_OK, or
 * LADDER_ERR_CUDA when the launch fails.
 */
ladder_status lab4_gla_forward_gpu(int64_t L, int64_t H, int64_t K, int64_t V, float scale, const float *q,
                                   const float *k, const float *v, const float *gk, const float *h0, float *o,
                                   float *ht);

#ifdef __cplusplus
}
#endif
#endif
