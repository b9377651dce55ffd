/* Host-side GPU helpers (see gpu.h): device query, mirrors, poison, event timing. */
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "cuda_check.cuh"
#include "gpu.h"

extern "C" {

bool ladder_gpu_built(void) { return true; }

static char absent_reason[256];

/* cudaMalloc, with out-of-memory reported as LADDER_ERR_NOMEM and any other failure as LADDER_ERR_CUDA. */
static ladder_status device_alloc(void **p, size_t bytes) {
    cudaError_t err = cudaMalloc(p, bytes);
    if (err == cudaSuccess) return LADDER_OK;
    cudaGetLastError();
    *p = NULL;
    if (err == cudaErrorMemoryAllocation)
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %zu bytes of device memory", bytes);
    return ladder_fail(LADDER_ERR_CUDA, "cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(err));
}

int ladder_gpu_count(void) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) {
        /* without a GPU there is no NVIDIA driver either, and CUDA reports that as an old driver */
        snprintf(absent_reason, sizeof absent_reason, "no NVIDIA driver is loaded (cudaGetDeviceCount: %s)",
                 cudaGetErrorString(err));
        cudaGetLastError();
        return 0;
    }
    if (err != cudaSuccess) {
        snprintf(absent_reason, sizeof absent_reason, "no usable CUDA driver or device: %s", cudaGetErrorString(err));
        cudaGetLastError(); /* clear the sticky error so later calls are not blamed */
        return 0;
    }
    if (n == 0) snprintf(absent_reason, sizeof absent_reason, "no CUDA device");
    return n;
}

const char *ladder_gpu_absent_reason(void) { return absent_reason; }

ladder_status ladder_gpu_name(char *buf, size_t n) {
    cudaDeviceProp prop;
    LADDER_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    snprintf(buf, n, "%s", prop.name);
    return LADDER_OK;
}

ladder_status ladder_gpu_upload(const ladder_tensor *host, ladder_tensor *dev) {
    *dev = *host;
    dev->data = NULL;
    int64_t span = ladder_tensor_span_bytes(host);
    if (span < 0) return ladder_fail(LADDER_ERR_ARG, "cannot upload a tensor whose layout is invalid");
    size_t bytes = span > 0 ? (size_t)span : ladder_dtype_size(host->dtype); /* a valid pointer for empty tensors */
    LADDER_TRY(device_alloc(&dev->data, bytes));
    if (span > 0) LADDER_CUDA_TRY(cudaMemcpy(dev->data, host->data, bytes, cudaMemcpyHostToDevice));
    return LADDER_OK;
}

ladder_status ladder_gpu_alloc_poisoned(ladder_tensor *dev, ladder_dtype dtype, int rank, const int64_t *shape) {
    *dev = ladder_tensor_make(NULL, dtype, rank, shape);
    int64_t n = ladder_tensor_numel(dev);
    size_t bytes = (size_t)(n > 0 ? n : 1) * ladder_dtype_size(dtype);
    LADDER_TRY(device_alloc(&dev->data, bytes));
    LADDER_CUDA_TRY(cudaMemset(dev->data, 0xff, bytes)); /* all-ones is NaN in f32, f16 and bf16 */
    return LADDER_OK;
}

ladder_status ladder_gpu_download(const ladder_tensor *dev, ladder_tensor *host) {
    int64_t span = ladder_tensor_span_bytes(dev);
    if (span < 0) return ladder_fail(LADDER_ERR_ARG, "cannot download a tensor whose layout is invalid");
    if (span > 0) LADDER_CUDA_TRY(cudaMemcpy(host->data, dev->data, (size_t)span, cudaMemcpyDeviceToHost));
    return LADDER_OK;
}

void ladder_gpu_free(ladder_tensor *dev) {
    if (dev->data) cudaFree(dev->data);
    dev->data = NULL;
}

ladder_status ladder_gpu_read_i32(const void *dev, int64_t n, int32_t *host) {
    LADDER_CUDA_TRY(cudaMemcpy(host, dev, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    return LADDER_OK;
}

ladder_status ladder_gpu_sync(void) {
    LADDER_CUDA_TRY(cudaDeviceSynchronize());
    return LADDER_OK;
}

/*
 * Two device buffers twice the L2 size each, NULL (and size 0) if they cannot be had. Between timed runs the
 * first is overwritten, which evicts the inputs, and the second is read, which evicts the first's lines: a memset
 * leaves L2 holding up to its size in dirty lines (50 MB on an H100), and their write-back would otherwise
 * land inside the next timed run, a cost that weighs most on the shortest kernels (docs/results/h100-2026-11-24-run.md
 * measured it).
 */
static ladder_status l2_flush_buffers(void **buf, void **clean, size_t *bytes) {
    int dev = 0, l2 = 0;
    LADDER_CUDA_TRY(cudaGetDevice(&dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    *bytes = 2 * (size_t)(l2 > 0 ? l2 : 1);
    LADDER_TRY(device_alloc(buf, *bytes));
    ladder_status st = device_alloc(clean, *bytes);
    if (st != LADDER_OK) cudaFree(*buf), *buf = NULL;
    return st;
}

/* Reads n 16-byte words and keeps nothing (the store into the scratch buffer sink is all but never taken, but the
 * loads cannot be dropped). */
static __global__ void read_pass(const uint4 *p, size_t n, unsigned *sink) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = acc;
}

ladder_status ladder_gpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, bool flush_l2,
                                   double *median_ms) {
    for (int i = 0; i < warmup; i++) {
        ladder_status st = fn(ctx);
        if (st != LADDER_OK) return st;
    }
    void *flush = NULL, *clean = NULL;
    size_t flush_bytes = 0;
    if (flush_l2) LADDER_TRY(l2_flush_buffers(&flush, &clean, &flush_bytes));
    cudaEvent_t start, stop;
    LADDER_CUDA_TRY(cudaEventCreate(&start));
    LADDER_CUDA_TRY(cudaEventCreate(&stop));
    std::vector<double> ms(reps);
    ladder_status st = LADDER_OK;
    for (int i = 0; i < reps && st == LADDER_OK; i++) {
        if (flush) { /* before the start event: not timed */
            cudaMemsetAsync(flush, i & 0xff, flush_bytes);
            read_pass<<<1024, 256>>>((const uint4 *)clean, flush_bytes / 16, (unsigned *)flush);
        }
        cudaEventRecord(start);
        st = fn(ctx);
        cudaEventRecord(stop);
        float t = 0;
        cudaError_t err = cudaEventSynchronize(stop);
        if (err == cudaSuccess) err = cudaEventElapsedTime(&t, start, stop);
        if (st == LADDER_OK && err != cudaSuccess)
            st = ladder_fail(LADDER_ERR_CUDA, "timing with CUDA events failed: %s", cudaGetErrorString(err));
        ms[i] = t;
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaFree(flush);
    cudaFree(clean);
    if (st != LADDER_OK) return st;
    std::sort(ms.begin(), ms.end());
    *median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    return LADDER_OK;
}

struct copy_ctx {
    void *dst;
    const void *src;
    size_t bytes;
};

static ladder_status copy_once(void *p) {
    copy_ctx *c = (copy_ctx *)p;
    LADDER_CUDA_TRY(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice));
    return LADDER_OK;
}

ladder_status ladder_gpu_copy_bandwidth(size_t bytes, double *bytes_per_s) {
    copy_ctx c = {NULL, NULL, bytes};
    void *src = NULL;
    if (cudaMalloc(&c.dst, bytes) != cudaSuccess || cudaMalloc(&src, bytes) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(c.dst);
        return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate 2 x %zu bytes for the copy benchmark", bytes);
    }
    c.src = src;
    cudaMemset(src, 0x3c, bytes); /* not zeros: some paths are faster on zeros */
    double ms = 0;
    ladder_status st = ladder_gpu_median_ms(copy_once, &c, 3, 20, false, &ms);
    cudaFree(c.dst);
    cudaFree(src);
    if (st != LADDER_OK) return st;
    *bytes_per_s = 2.0 * (double)bytes / (ms * 1e-3);
    return LADDER_OK;
}

} /* extern "C" */
