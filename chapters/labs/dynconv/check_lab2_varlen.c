/*
 * chapters/labs/dynconv/check_lab2_varlen.c: checks Lab 2 (lab2_varlen_fwd) against the cpu rung.
 * Run:  make lab LAB=lab2_varlen      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dynconv.h"
#include "lab.h"
#include "rng.h"

static const char *const LAB = "lab2_varlen";

#define MAX_SEQS 8

/* D, W and the sequence lengths: one sequence, empty ones (also first and last), length 1, W longer than a sequence. */
static const struct {
    int64_t D;
    int W, n_seqs;
    int32_t len[MAX_SEQS];
} cases[] = {
    {7, 4, 1, {5}},
    {7, 4, 4, {3, 0, 1, 5}},
    {3, 2, 5, {0, 1, 1, 0, 2}},
    {7, 8, 4, {2, 0, 1, 10}},
    {16, 5, 4, {64, 1, 65, 0}},
    {5, 64, 3, {1, 70, 1}},
    {129, 31, 4, {100, 0, 37, 200}},
};

int main(void) {
    int n = (int)(sizeof cases / sizeof cases[0]);
    ladder_rng rng;
    ladder_rng_seed(&rng, 2025);
    for (int i = 0; i < n; i++) {
        int32_t cu[MAX_SEQS + 1] = {0};
        for (int s = 0; s < cases[i].n_seqs; s++) cu[s + 1] = cu[s] + cases[i].len[s];
        ladder_dynconv_problem p = {1, cu[cases[i].n_seqs], cases[i].D, cases[i].W};
        int64_t btd[3] = {p.B, p.T, p.D}, btdw[4] = {p.B, p.T, p.D, p.W}, ncu[1] = {cases[i].n_seqs + 1};
        ladder_dynconv_args a = {0};
        a.x = labcheck_alloc(LADDER_F32, 3, btd);
        a.kernels = labcheck_alloc(LADDER_F32, 4, btdw);
        a.out = labcheck_alloc(LADDER_F32, 3, btd);
        a.cu_seqlens = ladder_tensor_make(cu, LADDER_I32, 1, ncu);
        ladder_tensor got = labcheck_alloc(LADDER_F32, 3, btd);
        ladder_rng_fill_normal(&rng, &a.x, 1.0);
        ladder_rng_fill_normal(&rng, &a.kernels, 0.5);
        labcheck_ok(LAB, ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), "the cpu rung's forward");

        ladder_tensor_poison(&got);
        lab2_varlen_fwd(p.T, p.D, p.W, a.x.data, a.kernels.data, cu, cases[i].n_seqs, got.data);

        char shape[160];
        int used = snprintf(shape, sizeof shape, "T=%lld D=%lld W=%d seqlens [", (long long)p.T, (long long)p.D, p.W);
        for (int s = 0; s < cases[i].n_seqs && used > 0 && used < (int)sizeof shape; s++)
            used += snprintf(shape + used, sizeof shape - (size_t)used, s ? ",%d" : "%d", (int)cases[i].len[s]);
        if (used > 0 && used < (int)sizeof shape) snprintf(shape + used, sizeof shape - (size_t)used, "]");
        bool ok = labcheck_compare(LAB, shape, "out", &got, &a.out);
        ladder_tensor *all[] = {&a.x, &a.kernels, &a.out, &got};
        for (int j = 0; j < 4; j++) ladder_tensor_free(all[j]);
        if (!ok) return LABCHECK_FAIL;
    }
    return labcheck_pass(LAB, n);
}
