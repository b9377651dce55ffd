/*
 * chapters/labs/dynconv/check_lab1_dx.c: checks Lab 1 (lab1_dx) against the cpu rung.
 * Run:  make lab LAB=lab1_dx      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dynconv.h"
#include "lab.h"
#include "rng.h"

static const char *const LAB = "lab1_dx";

/* B, T, D, W: length 1, W > T, D = 7, sizes that are multiples of nothing, the widest W. */
static const int64_t shapes[][4] = {
    {1, 1, 1, 1}, {1, 3, 7, 8}, {2, 5, 7, 3}, {3, 64, 7, 4}, {2, 65, 129, 5}, {1, 200, 16, 64}, {2, 1000, 33, 31},
};

int main(void) {
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    ladder_rng rng;
    ladder_rng_seed(&rng, 2024);
    for (int i = 0; i < n; i++) {
        ladder_dynconv_problem p = {shapes[i][0], shapes[i][1], shapes[i][2], (int)shapes[i][3]};
        int64_t btd[3] = {p.B, p.T, p.D}, btdw[4] = {p.B, p.T, p.D, p.W};
        ladder_dynconv_args a = {0};
        a.x = labcheck_alloc(LADDER_F32, 3, btd);
        a.kernels = labcheck_alloc(LADDER_F32, 4, btdw);
        a.dout = labcheck_alloc(LADDER_F32, 3, btd);
        a.dx = labcheck_alloc(LADDER_F32, 3, btd);
        a.dkernels = labcheck_alloc(LADDER_F32, 4, btdw);
        ladder_tensor got = labcheck_alloc(LADDER_F32, 3, btd);
        ladder_rng_fill_normal(&rng, &a.x, 1.0);
        ladder_rng_fill_normal(&rng, &a.kernels, 0.5);
        ladder_rng_fill_normal(&rng, &a.dout, 1.0);
        labcheck_ok(LAB, ladder_dynconv_bwd(LADDER_RUNG_CPU, &p, &a), "the cpu rung's backward");

        ladder_tensor_poison(&got);
        lab1_dx(p.B, p.T, p.D, p.W, a.dout.data, a.kernels.data, got.data);

        char shape[96];
        snprintf(shape, sizeof shape, "B=%lld T=%lld D=%lld W=%d", (long long)p.B, (long long)p.T, (long long)p.D, p.W);
        bool ok = labcheck_compare(LAB, shape, "dx", &got, &a.dx);
        ladder_tensor *all[] = {&a.x, &a.kernels, &a.dout, &a.dx, &a.dkernels, &got};
        for (int j = 0; j < 6; j++) ladder_tensor_free(all[j]);
        if (!ok) return LABCHECK_FAIL;
    }
    return labcheck_pass(LAB, n);
}
