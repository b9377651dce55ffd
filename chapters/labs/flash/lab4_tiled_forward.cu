/*
 * chapters/labs/flash/lab4_tiled_forward.cu: Lab 4, the tiled forward of one head (needs a GPU).
 *
 * For query row i of one head (B = Hq = Hkv = 1), with causal = 1 masking bottom-right (row i sees keys
 * j <= i + Sk - Sq) and causal = 0 none:
 *     S_ij = scale * q_i . k_j,   lse_i = log sum_j exp(S_ij),   o_i = sum_j exp(S_ij - lse_i) v_j
 * and a row that sees no key writes o_i = 0, lse_i = -inf. The launcher is written: block x owns the BR query
 * rows x * BR .. x * BR + BR - 1, one row per thread, with room in shared memory for BC rows of k and BC rows of
 * v. Complete the kernel. The block reads k and v once for all its rows, a tile of BC keys at a time, and each
 * thread keeps what it has summed of its row in registers until the last tile: what must it hold so that a tile
 * whose scores beat its running max can still be added, and what must it do to what it has summed then? When
 * may the block overwrite a tile, and which threads must take part in staging one? Which key tiles can a causal
 * block skip without looking at them?
 * Shapes: q [Sq][D], k [Sk][D], v [Sk][Dv], o [Sq][Dv], lse [Sq]; contiguous, device memory; D, Dv <= LAB4_MAX_D.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab4_tiled_forward
 */
#include <math.h>

#include "cuda_check.cuh"
#include "lab.h"

constexpr int BR = 32; /* query rows of a block, one per thread */
constexpr int BC = 32; /* keys of a staged tile */

__global__ void lab4_tiled_forward_kernel(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, int causal,
                                          const float *q, const float *k, const float *v, float *o, float *lse) {
    extern __shared__ float tile[]; /* BC rows of k (D floats each), then BC rows of v (Dv floats each) */
    const int64_t i = (int64_t)blockIdx.x * BR + threadIdx.x; /* this thread's query row: none when i >= Sq */
    /* TODO(lab 4): stage the key tiles the block needs, run row i's online softmax over each, and write o[i][:]
     * and lse[i]. */
    (void)Sq, (void)Sk, (void)D, (void)Dv, (void)scale, (void)causal, (void)q, (void)k, (void)v, (void)o, (void)lse,
        (void)tile, (void)i;
}

extern "C" ladder_status lab4_tiled_forward(int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, float scale, int causal,
                                            const float *q, const float *k, const float *v, float *o, float *lse) {
    const unsigned blocks = (unsigned)((Sq + BR - 1) / BR);
    const size_t shared = (size_t)BC * (size_t)(D + Dv) * sizeof(float); /* at most 32 KiB */
    lab4_tiled_forward_kernel<<<blocks, BR, shared>>>(Sq, Sk, D, Dv, scale, causal, q, k, v, o, lse);
    LADDER_LAUNCH_CHECK("lab4_tiled_forward_kernel");
    return LADDER_OK;
}
