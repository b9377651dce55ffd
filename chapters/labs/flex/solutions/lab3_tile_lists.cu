/*
 * chapters/labs/flex/solutions/lab3_tile_lists.cu: a reference solution of Lab 3 (one query tile's block lists,
 * one thread block per query tile).
 *
 * Each group of THREADS key tiles is compacted in order: a warp's ballot says which of its lanes hold a partial
 * (a full) tile, so a lane's place among its warp is the count of such lanes below it (popc of the ballot under its
 * lane mask); the warps' counts go through shared memory, and a lane adds those of the warps before its own and of
 * the groups before this one. Every thread runs every ballot and barrier, tiles past Tk counting as empty.
 */
#include "cuda_check.cuh"
#include "../lab.h"

constexpr int THREADS = 128;
constexpr int WARPS = THREADS / 32;

__global__ void lab3_tile_lists_kernel(unsigned masks, ladder_flex_env e, int64_t Tk, int32_t *kv_num,
                                       int32_t *kv_idx, int32_t *full_kv_num, int32_t *full_kv_idx) {
    __shared__ int32_t warp_partial[WARPS], warp_full[WARPS];
    const int64_t tq = blockIdx.x;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned below = (1u << lane) - 1u; /* the lanes before this one */
    int32_t n_partial = 0, n_full = 0;        /* entries the earlier groups wrote: the same in every thread */
    for (int64_t t0 = 0; t0 < Tk; t0 += THREADS) {
        const int64_t tk = t0 + threadIdx.x;
        const int kind = tk < Tk ? ladder_flex_tile_kind(masks, &e, 0, 0, tq, tk) : LADDER_FLEX_TILE_EMPTY;
        const unsigned partial = __ballot_sync(0xffffffffu, kind == LADDER_FLEX_TILE_PARTIAL);
        const unsigned full = __ballot_sync(0xffffffffu, kind == LADDER_FLEX_TILE_FULL);
        if (lane == 0) warp_partial[warp] = __popc(partial), warp_full[warp] = __popc(full);
        __syncthreads(); /* every warp's counts written before any is read */
        int32_t at_partial = n_partial + __popc(partial & below), at_full = n_full + __popc(full & below);
        for (int w = 0; w < WARPS; w++) {
            if (w < warp) at_partial += warp_partial[w], at_full += warp_full[w];
            n_partial += warp_partial[w], n_full += warp_full[w];
        }
        if (kind == LADDER_FLEX_TILE_PARTIAL) kv_idx[tq * Tk + at_partial] = (int32_t)tk;
        else if (kind == LADDER_FLEX_TILE_FULL) full_kv_idx[tq * Tk + at_full] = (int32_t)tk;
        __syncthreads(); /* every warp has read the counts before the next group overwrites them */
    }
    if (threadIdx.x == 0) kv_num[tq] = n_partial, full_kv_num[tq] = n_full;
}

extern "C" ladder_status lab3_tile_lists(unsigned masks, const ladder_flex_env *e, int64_t Tq, int64_t Tk,
                                         int32_t *kv_num, int32_t *kv_idx, int32_t *full_kv_num,
                                         int32_t *full_kv_idx) {
    lab3_tile_lists_kernel<<<(unsigned)Tq, THREADS>>>(masks, *e, Tk, kv_num, kv_idx, full_kv_num, full_kv_idx);
    LADDER_LAUNCH_CHECK("lab3_tile_lists_kernel");
    return LADDER_OK;
}
