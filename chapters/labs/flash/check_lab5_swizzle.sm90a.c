/*
 * chapters/labs/flash/check_lab5_swizzle.sm90a.c: checks Lab 5 (lab5_swizzle, a wgmma kernel for sm_90 GPUs).
 * Run:  make lab LAB=lab5_swizzle.sm90a
 * Exit code: 0 PASS, 1 FAIL, 2 no sm_90 GPU here (see ../labcheck.h).
 *
 * The expected s = q k^T is summed in double from the same bf16 values, on seeded inputs at both head dims the
 * lab takes; the kernel's fp32 sums of at most 128 products of magnitude under 1 must agree to 1e-3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../labcheck.h"
#include "gpu.h"
#include "half.h"
#include "lab.h"

static const char *const LAB = "lab5_swizzle.sm90a";

/* A value in [-1, 1) from a 64-bit linear congruential step. */
static float uniform(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) * (1.0 / (1ull << 24))) * 2.0f - 1.0f;
}

static bool check_one(int64_t D, uint64_t seed) {
    const int64_t shape[2] = {64, D}, s_shape[2] = {64, 64};
    ladder_tensor q = labcheck_alloc(LADDER_BF16, 2, shape), k = labcheck_alloc(LADDER_BF16, 2, shape);
    uint16_t *qh = q.data, *kh = k.data;
    for (int64_t i = 0; i < 64 * D; i++) qh[i] = ladder_f32_to_bf16(uniform(&seed)), kh[i] = ladder_f32_to_bf16(uniform(&seed));
    ladder_tensor q_dev = {0}, k_dev = {0}, s_dev = {0};
    labcheck_ok(LAB, ladder_gpu_upload(&q, &q_dev), "uploading q");
    labcheck_ok(LAB, ladder_gpu_upload(&k, &k_dev), "uploading k");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&s_dev, LADDER_F32, 2, s_shape), "allocating s");
    ladder_status st = lab5_swizzle(D, q_dev.data, k_dev.data, s_dev.data);
    if (st == LADDER_ERR_UNAVAILABLE) {
        printf("SKIP %s needs an sm_90 GPU: %s\n", LAB, ladder_last_error());
        exit(LABCHECK_SKIP);
    }
    if (st == LADDER_OK) st = ladder_gpu_sync();
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at D=%lld: the kernel failed: %s\n", LAB, (long long)D, ladder_last_error());
    if (ok) {
        ladder_tensor s = labcheck_alloc(LADDER_F32, 2, s_shape);
        labcheck_ok(LAB, ladder_gpu_download(&s_dev, &s), "downloading s");
        const float *sh = s.data;
        for (int64_t i = 0; i < 64 && ok; i++)
            for (int64_t j = 0; j < 64 && ok; j++) {
                double want = 0.0;
                for (int64_t d = 0; d < D; d++)
                    want += (double)ladder_bf16_to_f32(qh[i * D + d]) * (double)ladder_bf16_to_f32(kh[j * D + d]);
                const double got = sh[i * 64 + j];
                if (!(fabs(got - want) <= 1e-3)) { /* NaN (an element left unwritten) fails too */
                    printf("FAIL %s at D=%lld: s[%lld][%lld] is %g, want %g\n", LAB, (long long)D, (long long)i,
                           (long long)j, got, want);
                    ok = false;
                }
            }
        ladder_tensor_free(&s);
    }
    ladder_gpu_free(&q_dev), ladder_gpu_free(&k_dev), ladder_gpu_free(&s_dev);
    ladder_tensor_free(&q), ladder_tensor_free(&k);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    const int64_t dims[] = {64, 128};
    for (int i = 0; i < 2; i++)
        if (!check_one(dims[i], 5050 + (uint64_t)i)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, 2);
}
