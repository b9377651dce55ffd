/*
 * chapters/labs/flex/lab3_tile_lists.cu: Lab 3, one query tile's block lists built by one thread block (needs a GPU).
 *
 * Block tq of the grid owns query tile tq. Its THREADS threads take the key tiles THREADS at a time, thread x the
 * tile t0 + x, and find each tile's kind with ladder_flex_tile_kind() (common/flex_mods.h); then the block writes
 * the row's partial key tiles into kv_idx[tq][..] and its full ones into full_kv_idx[tq][..], each list ascending
 * with no gap, and the two counts. The library's GPU builder gives one thread a whole row of kinds, in a loop; here
 * every thread of the block writes its own tile's entry, at once. Where does a thread's entry go, when it cannot see
 * what the other threads found? What does a warp know about its 32 lanes in one instruction, and what must the
 * warps of the block tell each other (and when may they read it)? What carries over from one group of THREADS key
 * tiles to the next? Chapter 5, "Block masks", and its Lab 3.
 * Check it (on a machine with a CUDA GPU and nvcc):  make lab LAB=lab3_tile_lists
 */
#include "cuda_check.cuh"
#include "lab.h"

constexpr int THREADS = 128; /* four warps: a row of more key tiles than this takes several groups */

__global__ void lab3_tile_lists_kernel(unsigned masks, ladder_flex_env e, int64_t Tk, int32_t *kv_num,
                                       int32_t *kv_idx, int32_t *full_kv_num, int32_t *full_kv_idx) {
    const int64_t tq = blockIdx.x;
    /* TODO(lab 3): for each group of THREADS key tiles, each thread's tile kind, then its entry written in place;
     * at the end, the two counts. */
    (void)masks, (void)e, (void)Tk, (void)kv_idx, (void)full_kv_idx;
    if (threadIdx.x == 0) kv_num[tq] = full_kv_num[tq] = 0;
}

extern "C" ladder_status lab3_tile_lists(unsigned masks, const ladder_flex_env *e, int64_t Tq, int64_t Tk,
                                         int32_t *kv_num, int32_t *kv_idx, int32_t *full_kv_num,
                                         int32_t *full_kv_idx) {
    lab3_tile_lists_kernel<<<(unsigned)Tq, THREADS>>>(masks, *e, Tk, kv_num, kv_idx, full_kv_num, full_kv_idx);
    LADDER_LAUNCH_CHECK("lab3_tile_lists_kernel");
    return LADDER_OK;
}
