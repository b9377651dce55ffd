/**
 * @file cuda_util.cuh
 * @brief Host helpers that the GPU launchers share: may a tensor take the 16-byte load path, the opt-in to
 *        more than 48 KB of dynamic shared memory, and scratch memory for one call.
 */
#ifndef LADDER_CUDA_UTIL_CUH
#define LADDER_CUDA_UTIL_CUH

#include <stdint.h>

#include <cuda_runtime.h>

#include "cuda_check.cuh"
#include "tensor.h"

/** Dynamic shared memory a launch gets without opting in (on every GPU since sm_70). */
constexpr size_t LADDER_DEFAULT_SMEM = 48 * 1024;

/** Whether @p p is 16-byte aligned, as a 16-byte load or cp.async needs. */
inline bool ladder_aligned16(const void *p) { return (uintptr_t)p % 16 == 0; }

/**
 * Whether @p t can be loaded 16 bytes at a time as a stack of rows, a row being its last @p row_dims dimensions:
 * the base is 16-byte aligned, each row is contiguous (unit stride innermost, and each other row dimension's
 * stride spans the dimensions inside it), and every outer stride is a whole number of 16 bytes, so that every row
 * starts on a 16-byte boundary. A dimension of one entry is never stepped along, so its stride does not count.
 * (Rows need not be a multiple of 16 bytes long: the kernels load a row's tail one element at a time.)
 */
inline bool ladder_rows16(const ladder_tensor *t, int row_dims) {
    const int64_t per16 = 16 / (int64_t)ladder_dtype_size(t->dtype); // elements in 16 bytes
    if (!ladder_aligned16(t->data) || t->strides[t->rank - 1] != 1) return false;
    int64_t inner = 1; // elements of the dimensions inside dimension i
    for (int i = t->rank - 2; i >= 0; i--) {
        inner *= t->shape[i + 1];
        if (t->shape[i] == 1) continue;
        const bool in_row = i >= t->rank - row_dims;
        if (in_row ? t->strides[i] != inner : t->strides[i] % per16 != 0) return false;
    }
    return true;
}

/**
 * Let @p kernel launch with @p bytes of dynamic shared memory. Up to LADDER_DEFAULT_SMEM every launch may;
 * above it the kernel must first raise its own limit (up to what the GPU has: 163 KB on sm_80, 227 KB on sm_90).
 */
template <class Kernel> ladder_status ladder_allow_smem(Kernel *kernel, size_t bytes) {
    if (bytes > LADDER_DEFAULT_SMEM)
        LADDER_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    return LADDER_OK;
}

/**
 * Device memory one call needs between its kernels, from the stream-ordered pool of the default stream, and
 * given back (in stream order) when it goes out of scope. The pool keeps what it was given instead of returning
 * it to the driver at each synchronization, so that a repeated call (a timed one) finds its scratch at once.
 */
struct ladder_scratch {
    void *ptr = nullptr;
    ladder_scratch() = default;
    ladder_scratch(const ladder_scratch &) = delete;
    ladder_scratch &operator=(const ladder_scratch &) = delete;
    ~ladder_scratch() {
        if (ptr) cudaFreeAsync(ptr, 0);
    }
    /** Allocate @p bytes (none when 0). */
    ladder_status alloc(size_t bytes) {
        if (bytes == 0) return LADDER_OK;
        static bool pool_keeps = false;
        if (!pool_keeps) {
            int device;
            cudaMemPool_t pool;
            uint64_t keep = UINT64_MAX;
            LADDER_CUDA_TRY(cudaGetDevice(&device));
            LADDER_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
            LADDER_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
            pool_keeps = true;
        }
        LADDER_CUDA_TRY(cudaMallocAsync(&ptr, bytes, 0));
        return LADDER_OK;
    }
};

#endif
