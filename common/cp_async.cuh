/**
 * @file cp_async.cuh
 * @brief cp.async (sm_80+): copies from global to shared memory that do not pass through registers, so that a
 *        block can stage its next tile while it computes on the current one. The 16- and 4-byte copies, and the
 *        commit and wait that tell a thread when its copies have landed.
 *
 * A copy is complete for the thread that issued it after a wait, and for the block after a __syncthreads()
 * that follows the wait.
 */
#ifndef LADDER_CP_ASYNC_CUH
#define LADDER_CP_ASYNC_CUH

/**
 * Copy 16 bytes from global to shared memory without passing through registers (cp.async, sm_80+),
 * or, when @p valid is false, write 16 zero bytes there and read nothing. Both addresses 16-byte
 * aligned. The copy is complete for this thread after ladder_cp_async_wait_all(), and for the block
 * after a __syncthreads() that follows it.
 */
__device__ __forceinline__ void ladder_cp_async16(void *smem, const void *global, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
                 "l"(__cvta_generic_to_global(global)), "r"(valid ? 16 : 0)
                 : "memory");
}

/**
 * The same for 4 bytes (one f32 element, any 4-byte-aligned address): cp.async.ca, which may keep the line in L1
 * (the 16-byte form must bypass it). When @p valid is false, 4 zero bytes are written and nothing is read.
 */
__device__ __forceinline__ void ladder_cp_async4(void *smem, const void *global, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"((unsigned)__cvta_generic_to_shared(smem)),
                 "l"(__cvta_generic_to_global(global)), "r"(valid ? 4 : 0)
                 : "memory");
}

/** Wait until every cp.async this thread issued has landed. */
__device__ __forceinline__ void ladder_cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/** Close the group of cp.async copies this thread issued since the last commit. */
__device__ __forceinline__ void ladder_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

/** Wait until at most @p N committed groups of this thread are still in flight (N = 0: all landed). */
template <int N> __device__ __forceinline__ void ladder_cp_async_wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif
