/*
 * chapters/labs/flash/lab.h: the functions the flash labs ask for.
 *
 * Each lab file (lab1_combine.c, lab2_dscale.c, lab3_alibi.c, lab4_tiled_forward.cu, lab5_swizzle.sm90a.cu)
 * defines one of them; its checker (check_<lab>.c) runs it on seeded inputs and prints PASS or FAIL. Run a lab:
 * make lab LAB=lab1_combine
 * All tensors here are one head of one sequence: contiguous, C order, fp32 (Lab 5: bf16 in); host memory in Labs 1
 * to 3, device memory in Labs 4 and 5.
 */
#ifndef LADDER_LAB_FLASH_H
#define LADDER_LAB_FLASH_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1: the keys were split into n_splits ranges and attention was run on each range alone, giving for
 * every query row i a normalised partial output o_parts[s][i][:] ([n_splits][Sq][Dv]) and its
 * log-sum-exp lse_parts[s][i] ([n_splits][Sq]; -inf when split s holds no key the row may see, and then
 * o_parts[s][i][:] = 0). Write the output o [Sq][Dv] and lse [Sq] attention over all the keys would give.
 */
void lab1_combine(int64_t n_splits, int64_t Sq, int64_t Dv, const float *o_parts, const float *lse_parts, float *o,
                  float *lse);

/*
 * Lab 2: the gradient of the loss sum(o * dout) with respect to the scale, for unmasked attention
 * S = scale * q k^T, P = softmax(S), o = P v, given q [Sq][D], k [Sk][D], v [Sk][Dv], the forward's o [Sq][Dv]
 * and lse [Sq], and dout [Sq][Dv]. Return dL/dscale.
 */
double lab2_dscale(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q, const float *k,
                   const float *v, const float *o, const float *lse, const float *dout);

/*
 * Lab 3: the forward with an ALiBi bias and bottom-right causal masking: for row i (diagonal key
 * d = i + Sk - Sq) and key j <= d,
 *     S_ij = scale * q_i . k_j - slope * (d - j)
 * and keys j > d are masked. Write o [Sq][Dv] and lse [Sq] (a row that sees no key: o = 0, lse = -inf).
 */
void lab3_alibi(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, float slope, const float *q,
                const float *k, const float *v, float *o, float *lse);

/** Lab 4's largest head dim (D and Dv). */
#define LAB4_MAX_D 128

/*
 * Lab 4: the forward of Lab 3 without the bias, as a tiled CUDA kernel: o [Sq][Dv] and lse [Sq] from q [Sq][D],
 * k [Sk][D], v [Sk][Dv], unmasked (causal = 0) or bottom-right causal (causal = 1). Device pointers; D, Dv <=
 * LAB4_MAX_D. The launcher is written in lab4_tiled_forward.cu. Returns LADDER_OK, or LADDER_ERR_CUDA when the
 * launch fails.
 */
ladder_status lab4_tiled_forward(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, int causal,
                                 const float *q, const float *k, const float *v, float *o, float *lse);

/*
 * Lab 5 (a Hopper GPU, sm_90): the scores s = q k^T of one tile of 64 query rows and 64 keys on wgmma, from
 * q [64][D] and k [64][D] (bf16, as their 16-bit patterns; contiguous; device memory; D = 64 or 128) into
 * s [64][64] (fp32, device memory). The kernel, its TMA copies into the 128-byte swizzle and its products are
 * written in lab5_swizzle.sm90a.cu; the lab is the descriptor of one k16 step. Returns LADDER_ERR_UNAVAILABLE on
 * a GPU other than sm_90, LADDER_ERR_CUDA when the launch fails.
 */
ladder_status lab5_swizzle(int64_t D, const uint16_t *q, const uint16_t *k, float *s);

#ifdef __cplusplus
}
#endif
#endif
