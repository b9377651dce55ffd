/*
 * chapters/labs/memeff/lab3_warp_rows.cu: Lab 3, the memeff forward of one head with one warp per query row
 * (needs a GPU).
 *
 * For query row i of one head (B = Hq = Hkv = 1):
 *     S_ij = scale * q_i . k_j + bias[i * sbias_i + j * sbias_j]     (no bias when bias is NULL)
 *     lse_i = log sum_j exp(S_ij),   o_i = sum_j exp(S_ij - lse_i) * f_ij * v_j
 * where f_ij is dropout's factor for element (0, 0, i, j): 1 / (1 - p) where it is kept, 0 where it is dropped
 * (Philox output offset + i*Sk + j under key seed; common/philox.h has everything you need, host and device).
 * The launcher is written: warp w of the grid owns query row w. Complete the kernel. The 32 lanes of the warp
 * should share the row's keys, each lane reading q.k for its own keys only; each lane then holds a running max,
 * sum and output over a part of the row, and the parts must become one row. Which rule from chapter 4 merges
 * them, and how do the lanes exchange what it needs? What must a lane that saw no key contribute?
 * Shapes: q [Sq][D], k [Sk][D], v [Sk][Dv], o [Sq][Dv], lse [Sq]; contiguous, device memory; Dv <= LAB3_MAX_DV.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab3_warp_rows
 */
#include <math.h>

#include "cuda_check.cuh"
#include "lab.h"

constexpr int WARPS = 4; /* warps per block */

__global__ void lab3_warp_rows_kernel(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q,
                                      const float *k, const float *v, const float *bias, int64_t sbias_i,
                                      int64_t sbias_j, float p, uint64_t seed, uint64_t offset, float *o, float *lse) {
    const int64_t i = (int64_t)blockIdx.x * WARPS + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (i >= Sq) return; /* the whole warp */
    /* TODO(lab 3): lane `lane` walks keys lane, lane + 32, ... of row i; then the warp merges the 32 parts and
     * writes o[i][:] and lse[i]. */
    (void)Sk, (void)D, (void)Dv, (void)scale, (void)q, (void)k, (void)v, (void)bias, (void)sbias_i, (void)sbias_j,
        (void)p, (void)seed, (void)offset, (void)o, (void)lse, (void)lane;
}

extern "C" ladder_status lab3_warp_rows(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, const float *q,
                                        const float *k, const float *v, const float *bias, int64_t sbias_i,
                                        int64_t sbias_j, float p, uint64_t seed, uint64_t offset, float *o,
                                        float *lse) {
    const unsigned blocks = (unsigned)((Sq + WARPS - 1) / WARPS);
    lab3_warp_rows_kernel<<<blocks, 32 * WARPS>>>(Sq, Sk, D, Dv, scale, q, k, v, bias, sbias_i, sbias_j, p, seed,
                                                  offset, o, lse);
    LADDER_LAUNCH_CHECK("lab3_warp_rows_kernel");
    return LADDER_OK;
}
