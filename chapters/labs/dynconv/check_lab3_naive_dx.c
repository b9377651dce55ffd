/*
 * chapters/labs/dynconv/check_lab3_naive_dx.c: checks Lab 3 (lab3_naive_dx, a CUDA kernel).
 * Run:  make lab LAB=lab3_naive_dx
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 *
 * With dil = 1 the expected dx is the cpu rung's backward; with dil > 1 it is the derivative taken by
 * its definition (dilated_ref.h), in float64, on shapes small enough for that.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dilated_ref.h"
#include "dynconv.h"
#include "gpu.h"
#include "lab.h"

static const char *const LAB = "lab3_naive_dx";

/* B, T, D, W, dil: length 1, W > T, D = 7, sizes that are multiples of nothing, the widest W, a
 * window wider than the row, and (dil = 1) thousands of blocks. */
static const int64_t shapes[][5] = {
    {1, 1, 1, 1, 1},   {1, 3, 7, 8, 1},       {2, 5, 7, 3, 2},       {3, 1000, 7, 4, 1}, {2, 65, 1000, 31, 1},
    {1, 40, 3, 4, 16}, {2, 300, 5, 31, 4},    {1, 150, 4, 64, 2},    {2, 4096, 512, 4, 1},
};

extern const ladder_algo ladder_dynconv_algo;

static bool check_one(int i) {
    const int64_t *sh = shapes[i];
    ladder_dynconv_problem p = {sh[0], sh[1], sh[2], (int)sh[3]};
    const int dil = (int)sh[4];
    ladder_case c;
    ladder_result ref;
    labcheck_case(LAB, &ladder_dynconv_algo, &p, 2026 + (uint64_t)i, &c, &ref);
    ladder_tensor *kernels = labcheck_tensor(&c, &ref, "kernels"), *dout = labcheck_tensor(&c, &ref, "dout");
    ladder_tensor *want = labcheck_tensor(&c, &ref, "dx"); /* the cpu rung's dx; for dil > 1, by definition */
    if (dil > 1) dilated_dx_by_definition(p.B, p.T, p.D, p.W, dil, dout->data, kernels->data, want->data);

    char shape[112];
    snprintf(shape, sizeof shape, "B=%lld T=%lld D=%lld W=%d dil=%d", (long long)p.B, (long long)p.T,
             (long long)p.D, p.W, dil);
    int64_t btd[3] = {p.B, p.T, p.D};
    ladder_tensor got = labcheck_alloc(LADDER_F32, 3, btd), g_dev = {0}, k_dev = {0}, dx_dev = {0};
    labcheck_ok(LAB, ladder_gpu_upload(dout, &g_dev), "uploading dout");
    labcheck_ok(LAB, ladder_gpu_upload(kernels, &k_dev), "uploading kernels");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&dx_dev, LADDER_F32, 3, btd), "allocating dx");
    ladder_status st = lab3_naive_dx(p.B, p.T, p.D, p.W, dil, g_dev.data, k_dev.data, dx_dev.data);
    if (st == LADDER_OK) st = ladder_gpu_sync();
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
    if (ok) {
        labcheck_ok(LAB, ladder_gpu_download(&dx_dev, &got), "downloading dx");
        ok = labcheck_compare(LAB, shape, "dx", &got, want);
    }
    ladder_gpu_free(&g_dev);
    ladder_gpu_free(&k_dev);
    ladder_gpu_free(&dx_dev);
    ladder_tensor_free(&got);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int i = 0; i < n; i++)
        if (!check_one(i)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
