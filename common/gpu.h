/**
 * @file gpu.h
 * @brief Host-side GPU helpers callable from C: device query, mirrors, poison, timing.
 *
 * Implemented in gpu.cu when nvcc is found, and by gpu_none.c otherwise,
 * where every call returns LADDER_ERR_UNAVAILABLE (and ladder_gpu_count() 0).
 */
#ifndef LADDER_GPU_H
#define LADDER_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** True when the CUDA rungs were compiled into this build. */
bool ladder_gpu_built(void);
/** Number of CUDA devices (0 when not built or none). */
int ladder_gpu_count(void);
/** Why ladder_gpu_count() is 0, in words ("" otherwise). */
const char *ladder_gpu_absent_reason(void);
/** Name of device 0, e.g. "NVIDIA H100 80GB HBM3". */
ladder_status ladder_gpu_name(char *buf, size_t n);

/**
 * Mirror a host tensor to the device: allocates a device buffer covering the
 * tensor's span, copies it, and returns a descriptor with the same dtype,
 * shape and strides in @p dev.
 */
ladder_status ladder_gpu_upload(const ladder_tensor *host, ladder_tensor *dev);
/** Allocate a contiguous device tensor filled with NaN (0xFF bytes) so unwritten elements show. */
ladder_status ladder_gpu_alloc_poisoned(ladder_tensor *dev, ladder_dtype dtype, int rank, const int64_t *shape);
/** Copy a device tensor's span into a host tensor of the same dtype, shape and strides. */
ladder_status ladder_gpu_download(const ladder_tensor *dev, ladder_tensor *host);
/** Free a device tensor (NULL data is fine). */
void ladder_gpu_free(ladder_tensor *dev);
/** Copy @p n int32 from device memory to the host (used to validate cu_seqlens). */
ladder_status ladder_gpu_read_i32(const void *dev, int64_t n, int32_t *host);
/** Wait for the device and report any asynchronous error. */
ladder_status ladder_gpu_sync(void);

/** A piece of work to time: returns a status, takes its context. */
typedef ladder_status (*ladder_work_fn)(void *ctx);
/**
 * Median time in milliseconds of @p reps runs of @p fn after @p warmup runs,
 * each run bracketed by CUDA events on the default stream. With @p flush_l2,
 * a buffer twice the size of the L2 cache is overwritten before each timed
 * run, outside the events, so that no run finds its inputs already on chip,
 * and then another as large is read, so that L2 holds no dirty lines whose
 * write-back would land inside the timed run.
 */
ladder_status ladder_gpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, bool flush_l2,
                                   double *median_ms);
/**
 * Device-to-device copy bandwidth in bytes/s (bytes read plus bytes written),
 * measured with cudaMemcpy of @p bytes, median of 20 runs.
 */
ladder_status ladder_gpu_copy_bandwidth(size_t bytes, double *bytes_per_s);

#ifdef __cplusplus
}
#endif
#endif
