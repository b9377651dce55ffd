/* Stand-ins for gpu.cu when ladder is built without nvcc: nothing runs on a GPU. */
#include "gpu.h"

#define NOT_BUILT ladder_fail(LADDER_ERR_UNAVAILABLE, "ladder was built without CUDA (nvcc was not found)")

bool ladder_gpu_built(void) { return false; }
int ladder_gpu_count(void) { return 0; }
const char *ladder_gpu_absent_reason(void) { return "built without CUDA"; }
ladder_status ladder_gpu_name(char *buf, size_t n) {
    if (n) buf[0] = '\0';
    return NOT_BUILT;
}
ladder_status ladder_gpu_upload(const ladder_tensor *host, ladder_tensor *dev) {
    (void)host, (void)dev;
    return NOT_BUILT;
}
ladder_status ladder_gpu_alloc_poisoned(ladder_tensor *dev, ladder_dtype dtype, int rank, const int64_t *shape) {
    (void)dev, (void)dtype, (void)rank, (void)shape;
    return NOT_BUILT;
}
ladder_status ladder_gpu_download(const ladder_tensor *dev, ladder_tensor *host) {
    (void)dev, (void)host;
    return NOT_BUILT;
}
void ladder_gpu_free(ladder_tensor *dev) { (void)dev; }
ladder_status ladder_gpu_read_i32(const void *dev, int64_t n, int32_t *host) {
    (void)dev, (void)n, (void)host;
    return NOT_BUILT;
}
ladder_status ladder_gpu_sync(void) { return NOT_BUILT; }
ladder_status ladder_gpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, bool flush_l2,
                                   double *median_ms) {
    (void)fn, (void)ctx, (void)warmup, (void)reps, (void)flush_l2, (void)median_ms;
    return NOT_BUILT;
}
ladder_status ladder_gpu_copy_bandwidth(size_t bytes, double *bytes_per_s) {
    (void)bytes, (void)bytes_per_s;
    return NOT_BUILT;
}
