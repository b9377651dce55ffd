/*
 * chapters/labs/dynconv/check_lab3_naive_fwd.c: checks Lab 3 (lab3_naive_fwd, a CUDA kernel) against the cpu rung.
 * Run:  make lab LAB=lab3_naive_fwd
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dynconv.h"
#include "gpu.h"
#include "lab.h"
#include "rng.h"

static const char *const LAB = "lab3_naive_fwd";

/* B, T, D, W: length 1, W > T, D = 7, sizes that are multiples of nothing, the widest W, thousands of blocks. */
static const int64_t shapes[][4] = {
    {1, 1, 1, 1}, {1, 3, 7, 8}, {2, 5, 7, 3}, {3, 1000, 7, 4}, {2, 65, 1000, 31}, {1, 100, 129, 64}, {2, 4096, 512, 4},
};

int main(void) {
    if (!ladder_gpu_built() || ladder_gpu_count() < 1) {
        printf("SKIP %s needs a CUDA GPU: %s\n", LAB,
               ladder_gpu_built() ? ladder_gpu_absent_reason() : "ladder was built without nvcc");
        return LABCHECK_SKIP;
    }
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    ladder_rng rng;
    ladder_rng_seed(&rng, 2026);
    for (int i = 0; i < n; i++) {
        ladder_dynconv_problem p = {shapes[i][0], shapes[i][1], shapes[i][2], (int)shapes[i][3]};
        int64_t btd[3] = {p.B, p.T, p.D}, btdw[4] = {p.B, p.T, p.D, p.W};
        ladder_dynconv_args a = {0};
        a.x = labcheck_alloc(LADDER_F32, 3, btd);
        a.kernels = labcheck_alloc(LADDER_F32, 4, btdw);
        a.out = labcheck_alloc(LADDER_F32, 3, btd);
        ladder_tensor got = labcheck_alloc(LADDER_F32, 3, btd);
        ladder_rng_fill_normal(&rng, &a.x, 1.0);
        ladder_rng_fill_normal(&rng, &a.kernels, 0.5);
        labcheck_ok(LAB, ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), "the cpu rung's forward");

        char shape[96];
        snprintf(shape, sizeof shape, "B=%lld T=%lld D=%lld W=%d", (long long)p.B, (long long)p.T, (long long)p.D, p.W);
        ladder_tensor x_dev = {0}, k_dev = {0}, out_dev = {0};
        labcheck_ok(LAB, ladder_gpu_upload(&a.x, &x_dev), "uploading x");
        labcheck_ok(LAB, ladder_gpu_upload(&a.kernels, &k_dev), "uploading kernels");
        labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&out_dev, LADDER_F32, 3, btd), "allocating out");
        ladder_status st = lab3_naive_fwd(p.B, p.T, p.D, p.W, x_dev.data, k_dev.data, out_dev.data);
        if (st == LADDER_OK) st = ladder_gpu_sync();
        bool ok = st == LADDER_OK;
        if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
        if (ok) {
            labcheck_ok(LAB, ladder_gpu_download(&out_dev, &got), "downloading out");
            ok = labcheck_compare(LAB, shape, "out", &got, &a.out);
        }
        ladder_gpu_free(&x_dev);
        ladder_gpu_free(&k_dev);
        ladder_gpu_free(&out_dev);
        ladder_tensor *all[] = {&a.x, &a.kernels, &a.out, &got};
        for (int j = 0; j < 4; j++) ladder_tensor_free(all[j]);
        if (!ok) return LABCHECK_FAIL;
    }
    return labcheck_pass(LAB, n);
}
