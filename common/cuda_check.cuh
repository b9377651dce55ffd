/**
 * @file cuda_check.cuh
 * @brief What every .cu file shares: the CUDA error check and launch check.
 */
#ifndef LADDER_CUDA_CHECK_CUH
#define LADDER_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "status.h"

/** Return LADDER_ERR_CUDA (with the call and CUDA's error string) from the enclosing function if @p call fails. */
#define LADDER_CUDA_TRY(call)                                                                                  \
    do {                                                                                                       \
        cudaError_t ladder_err_ = (call);                                                                      \
        if (ladder_err_ != cudaSuccess)                                                                        \
            return ladder_fail(LADDER_ERR_CUDA, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,          \
                               cudaGetErrorString(ladder_err_));                                               \
    } while (0)

/** After a launch: report a bad configuration (or an earlier asynchronous error) as LADDER_ERR_CUDA. */
#define LADDER_LAUNCH_CHECK(kernel_name)                                                                       \
    do {                                                                                                       \
        cudaError_t ladder_err_ = cudaGetLastError();                                                          \
        if (ladder_err_ != cudaSuccess)                                                                        \
            return ladder_fail(LADDER_ERR_CUDA, "launching %s failed: %s", kernel_name,                       \
                               cudaGetErrorString(ladder_err_));                                               \
    } while (0)

/** Blocks needed to cover @p n items with @p per_block each. */
static inline unsigned ladder_blocks(long long n, long long per_block) {
    return (unsigned)((n + per_block - 1) / per_block);
}

#endif
