/**
 * @file tma.cuh
 * @brief Hopper's copy engine and the barriers that go with it (sm_90a), for the tensor-core rung's NAME.sm90a.cu
 *        kernels: the tensor map that describes a 16-bit [B, H, S, D] tensor to the Tensor Memory Accelerator (TMA,
 *        built on the host), the bulk tensor copy of one box of it into shared memory, the mbarrier that counts the
 *        copy's bytes and the arrivals of the warps that free a buffer, and setmaxnreg, which moves registers from
 *        the warpgroup that only copies to the warpgroups that multiply; the bulk reduction that adds a tile of
 *        shared memory into global memory; and turns, which order blocks' adds into the same sums.
 *
 * What changes against cp.async (cp_async.cuh): one thread issues the copy of a whole tile, and the TMA unit
 * computes every address, so the copying warps need almost no registers and no instructions per element; the copy
 * reports its completion to an mbarrier in shared memory (so the threads that read the tile wait on that barrier,
 * not on a __syncthreads() that every warp of the block must reach); and the copy writes the tile in the 128-byte
 * swizzled layout that wgmma reads (wgmma.cuh), through the async proxy that wgmma reads through, so no proxy fence
 * sits between them.
 *
 * PTX ISA: "Tensor Copy" (cp.async.bulk.tensor), "mbarrier" and "setmaxnreg"
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cp-async-bulk-tensor,
 * ...#parallel-synchronization-and-communication-instructions-mbarrier,
 * ...#miscellaneous-instructions-setmaxnreg); the tensor map: CUDA Driver API, cuTensorMapEncodeTiled.
 *
 * Only files compiled for sm_90a (NAME.sm90a.cu) may include this header.
 */
#ifndef LADDER_TMA_CUH
#define LADDER_TMA_CUH

#include <cuda.h> /* CUtensorMap and its enums: types only, the function is looked up at run time */
#include <cuda_runtime.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "common/tma.cuh needs the sm_90a target: include it from NAME.sm90a.cu files only"
#endif

/* ---- the tensor map (host) ---- */

/**
 * A tensor map for TMA copies of boxes of @p box_rows x 64 elements out of the 16-bit tensor at @p base, of sizes
 * [@p B, @p H, @p S, @p D] and element strides @p st (st[3] must be 1), written to shared memory in the 128-byte
 * swizzle: each box row is 128 bytes (64 elements), its 16-byte pieces permuted by the row's index modulo 8, the
 * layout wgmma reads with the 128-byte swizzle mode. Elements past S rows or past D columns arrive as zeros. Fails
 * (false) where TMA cannot describe the tensor: a base not 16-byte aligned, an inner stride other than 1, another
 * stride not a multiple of 16 bytes, or a driver without the call; the caller then takes a kernel that copies with
 * cp.async.
 */
inline bool ladder_tma_map_16bit(CUtensorMap *map, CUtensorMapDataType type, const void *base, int64_t B, int64_t H,
                                 int64_t S, int64_t D, const int64_t st[4], int box_rows) {
    using encode_fn = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                   const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    static encode_fn encode = [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            fn = nullptr;
        return (encode_fn)fn;
    }();
    if (!encode || (uintptr_t)base % 16 != 0 || st[3] != 1) return false;
    /* dims innermost first: D, S, H, B; a stride in bytes for each but D. A dimension of size 1 is never stepped
     * over, so its stride is set to one TMA accepts whatever the view says. */
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)S, (cuuint64_t)H, (cuuint64_t)B};
    cuuint64_t strides[3];
    for (int i = 0; i < 3; i++) {
        const int64_t bytes = 2 * st[2 - i];
        strides[i] = dims[i + 1] == 1 ? 16 : (cuuint64_t)bytes;
        if (dims[i + 1] != 1 && (bytes <= 0 || bytes % 16 != 0)) return false;
    }
    const cuuint32_t box[4] = {64, (cuuint32_t)box_rows, 1, 1}, unit[4] = {1, 1, 1, 1};
    return encode(map, type, 4, const_cast<void *>(base), dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/**
 * ladder_tma_map_16bit() for a tensor that may be broadcast over B or H (a stride of 0 there, as an attention bias
 * may be): the map then holds one batch row or one head, which ladder_tma_coord() gives as the coordinate of every b
 * or h. Fails where no box describes the tensor: broadcast over S, or an inner stride other than 1.
 */
inline bool ladder_tma_map_16bit_broadcast(CUtensorMap *map, CUtensorMapDataType type, const void *base, int64_t B,
                                           int64_t H, int64_t S, int64_t D, const int64_t st[4], int box_rows) {
    if (st[2] == 0 && S > 1) return false;
    return ladder_tma_map_16bit(map, type, base, st[0] ? B : 1, st[1] ? H : 1, S, D, st, box_rows);
}

/* ---- the copy and its barriers (device) ---- */

/** The coordinate of index @p x along a dimension of element stride @p stride, in a map of
 *  ladder_tma_map_16bit_broadcast(): 0 where the tensor is broadcast along it. */
__device__ __forceinline__ int ladder_tma_coord(int64_t stride, int64_t x) { return stride ? (int)x : 0; }

/** A shared-memory address as the instructions below take it (32 bits). */
__device__ __forceinline__ uint32_t ladder_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/**
 * Element (row @p r, column @p x < 64) of a box that TMA wrote in the 128-byte swizzle (ladder_tma_map_16bit()), as
 * an index of 16-bit elements from the box's start: row r is 128 bytes, its 16-byte pieces permuted by r % 8. Read a
 * piece at a time by lanes of different r % 8, a box meets no bank conflict.
 */
__device__ __forceinline__ int ladder_sw128_index(int r, int x) { return r * 64 + (((x / 8) ^ (r % 8)) * 8) + x % 8; }

/**
 * mbarrier.init: the barrier @p bar expects @p count arrivals a phase. One thread initialises every barrier of the
 * block, then ladder_mbarrier_init_fence() and a __syncthreads() make them visible to the other threads and to the
 * copy engine.
 */
__device__ __forceinline__ void ladder_mbarrier_init(uint64_t *bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ladder_smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void ladder_mbarrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/** One arrival on @p bar that also announces @p bytes to come by TMA copies (their completion ends the phase once
 *  every arrival and every announced byte is in). */
__device__ __forceinline__ void ladder_mbarrier_expect(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(ladder_smem_addr(bar)), "r"(bytes)
                 : "memory");
}

/** One arrival on @p bar (a warp that is done reading the buffer the barrier guards). */
__device__ __forceinline__ void ladder_mbarrier_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(ladder_smem_addr(bar)) : "memory");
}

/**
 * Wait until the phase of @p bar with parity @p parity (0 for its first phase, 1 for the second, 0 again for the
 * third, ...) has completed. try_wait suspends the thread for a while in hardware before it reports failure, so the
 * loop does not spin hot. The loop is written in PTX (its label is local to the braces): a loop in C between a
 * wgmma's issue and the instructions that last wrote its registers makes ptxas serialize the products (C7513).
 */
__device__ __forceinline__ void ladder_mbarrier_wait(uint64_t *bar, uint32_t parity) {
    asm volatile("{\n.reg .pred done;\nwait:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait;\n}\n" ::"r"(ladder_smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}

/**
 * TMA: copy the box at coordinates (@p d, @p s, @p h, @p b) (innermost first, in elements) of the tensor that
 * @p map describes into shared memory at @p smem (1024-byte aligned, for the 128-byte swizzle), and count its bytes
 * on @p bar. Issued by one thread; asynchronous.
 */
__device__ __forceinline__ void ladder_tma_load(void *smem, const CUtensorMap *map, uint64_t *bar, int d, int s,
                                                int h, int b) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(ladder_smem_addr(smem)),
                 "l"((uint64_t)map), "r"(d), "r"(s), "r"(h), "r"(b), "r"(ladder_smem_addr(bar))
                 : "memory");
}

/**
 * TMA's prefetch: bring the box at coordinates (@p d, @p s, @p h, @p b) of the tensor that @p map describes into L2,
 * so that a ladder_tma_load() of it later reads L2, not DRAM. Nothing is written to shared memory and nothing is
 * counted on a barrier; issued by one thread.
 */
__device__ __forceinline__ void ladder_tma_prefetch(const CUtensorMap *map, int d, int s, int h, int b) {
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"((uint64_t)map),
                 "r"(d), "r"(s), "r"(h), "r"(b)
                 : "memory");
}

/**
 * barrier.sync on the named barrier @p id (1 to 15; 0 is __syncthreads()'s) for @p threads threads (a multiple of
 * 32): a barrier that joins some warps of the block and not the others (a producer's warp and the consumers, or the
 * consumers alone). Not bar.sync: that is barrier.sync.aligned, which every thread must reach at the same
 * instruction, and warps that meet here from different code (a producer and its consumers) do not; synccheck calls
 * that divergent, and racecheck follows the order that the unaligned form gives a load before a later store (PTX
 * ISA, "barrier"; docs/results/sanitizers.md).
 */
__device__ __forceinline__ void ladder_named_barrier(int id, int threads) {
    asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/** barrier.arrive on the named barrier @p id for @p threads threads: this warp counts towards the barrier without
 *  waiting for it (a producer that signals what it stored); what it wrote before is visible to the threads that pass
 *  the barrier's barrier.sync. Unaligned, as ladder_named_barrier(). */
__device__ __forceinline__ void ladder_named_barrier_arrive(int id, int threads) {
    asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/**
 * Turns: blocks that add into the same sums one after another in a fixed order, so that the sums come out the same
 * bits at every run (the backward's deterministic dQ). A turn counter in global memory, zero at the start, counts
 * the blocks that have added; a block whose place in the order is @p turn waits until it reads @p turn, adds, and
 * passes the turn on. One thread of the threads that add waits and passes; a barrier of them (__syncwarp() for the
 * lanes of one warp) follows the wait and precedes the pass, so that the fence of the pass orders all their adds
 * (PTX ISA, "Memory Consistency Model": the release pattern, a fence then a relaxed atomic, is cumulative). Adds by
 * the copy engine (ladder_bulk_reduce_add()) are complete before the pass (ladder_bulk_wait()) and ordered with
 * the turn's accesses by ladder_fence_proxy_async_global() on both sides.
 *
 * The order must follow the order in which blocks start: a block waits only on blocks of a lower linear index
 * (x fastest, then y, then z), so that every block it waits on holds a multiprocessor or has finished. CUDA does not
 * promise that order, but it is the order in which the hardware hands out a grid's blocks, which FlashAttention-3's
 * deterministic backward relies on as well.
 */
__device__ __forceinline__ void ladder_turn_wait(const int *counter, int turn) {
    int seen;
    for (;;) {
        asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
        if (seen == turn) return;
        __nanosleep(32);
    }
}
__device__ __forceinline__ void ladder_turn_pass(int *counter) {
    asm volatile("fence.acq_rel.gpu;\n"
                 "red.relaxed.gpu.global.add.s32 [%0], 1;\n" ::"l"(counter)
                 : "memory");
}

/**
 * The copy engine's bulk reduction: it adds @p bytes (a multiple of 16) of floats at @p src in shared memory into
 * global memory at @p dst, element by element (each add a reduction at the memory, as `red` is), both addresses
 * 16-byte aligned. Asynchronous, like the bulk copies: the issuing thread closes its reductions into a group
 * (ladder_bulk_commit()), and waits until the engine has read the source (ladder_bulk_wait_read(): the tile may be
 * written again) or until the adds are done (ladder_bulk_wait()). The engine reads through the async proxy: the
 * threads that wrote the source fence (ladder_fence_proxy_async(), wgmma.cuh) before the barrier that lets the
 * issuing thread go. PTX ISA: "cp.reduce.async.bulk", "cp.async.bulk.wait_group".
 */
__device__ __forceinline__ void ladder_bulk_reduce_add(float *dst, const float *src, uint32_t bytes) {
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
                 "r"(ladder_smem_addr(src)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void ladder_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void ladder_bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void ladder_bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

/** fence.proxy.async.global: orders this thread's global accesses through the generic proxy (a turn's acquire and
 *  release) with those of its bulk reductions, which go through the async proxy. */
__device__ __forceinline__ void ladder_fence_proxy_async_global() {
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

/**
 * setmaxnreg: the warpgroup's threads give up registers down to @p N each (dec), or take them up to @p N (inc),
 * from the pool the block was launched with. Every thread of the warpgroup executes it; N is a multiple of 8 in
 * [24, 256].
 */
template <int N> __device__ __forceinline__ void ladder_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void ladder_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#endif
