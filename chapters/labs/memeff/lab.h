/*
 * chapters/labs/memeff/lab.h: the functions the memory-efficient attention labs ask for.
 *
 * Each lab file (lab1_dslope.c, lab2_keep_row.c, lab3_warp_rows.cu) defines one of them; its checker
 * (check_<lab>.c) runs it on seeded inputs and prints PASS or FAIL. Run a lab:  make lab LAB=lab1_dslope
 * All tensors here are contiguous, C order, fp32; host memory except in Lab 3 (device memory).
 */
#ifndef LADDER_LAB_MEMEFF_H
#define LADDER_LAB_MEMEFF_H

#include <stdint.h>

#include "philox.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1: H heads of one sequence (B = 1, Hq = Hkv = H), each with an ALiBi bias of its own slope:
 *     S_hij = scale * q_hi . k_hj + bias_hij,   bias_hij = -slopes[h] * |i - j|
 * and dropout with probability p on P (element (0, h, i, j) draws Philox output
 * offset + (h*Sq + i)*Sk + j under key seed, common/philox.h). Given q [H][Sq][D], k [H][Sk][D], v [H][Sk][Dv],
 * the forward's o [H][Sq][Dv] and lse [H][Sq], and dout [H][Sq][Dv], write dslope[h] = dL/dslopes[h] for the
 * loss L = sum(o * dout).
 */
void lab1_dslope(int64_t H, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *slopes,
                 float p, uint64_t seed, uint64_t offset, const float *q, const float *k, const float *v,
                 const float *o, const float *lse, const float *dout, double *dslope);

/*
 * Lab 2: the Philox block function your lab2_keep_row() must use, and the only one: the four outputs
 * 4*block .. 4*block + 3 of the stream keyed by seed (ladder_philox_block()). The checker defines it and counts
 * the calls.
 */
ladder_philox4 lab2_philox_block(uint64_t seed, uint64_t block);

/*
 * Lab 2: dropout's keep bits of n consecutive keys j0 .. j0 + n - 1 of query row i of head h, batch row b, of a
 * [B,Hq,Sq,Sk] problem: keep[x] = 1 when element (b, h, i, j0 + x) is kept under probability p, else 0, exactly
 * as ladder_dropout_keep() decides, calling lab2_philox_block() at most n / 4 + 2 times.
 */
void lab2_keep_row(uint64_t seed, uint64_t offset, float p, int64_t Hq, int64_t Sq, int64_t Sk, int64_t b, int64_t h,
                   int64_t i, int64_t j0, int64_t n, uint8_t *keep);

/* Lab 3: the largest Dv the kernel takes (a lane may keep a row of O in registers). */
#define LAB3_MAX_DV 64

/*
 * Lab 3 (GPU): the memeff forward of one head (B = Hq = Hkv = 1), one warp per query row: o [Sq][Dv] and
 * lse [Sq] from q [Sq][D], k [Sk][D], v [Sk][Dv] and a bias read as bias[i * sbias_i + j * sbias_j] (a stride
 * 0 broadcasts; bias NULL: none), with dropout p (element (0, 0, i, j) draws Philox output offset + i*Sk + j
 * under key seed). Device pointers; Dv <= LAB3_MAX_DV. The launcher is written in lab3_warp_rows.cu.
 */
ladder_status lab3_warp_rows(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q,
                             const float *k, const float *v, const float *bias, int64_t sbias_i, int64_t sbias_j,
                             float p, uint64_t seed, uint64_t offset, float *o, float *lse);

#ifdef __cplusplus
}
#endif
#endif
