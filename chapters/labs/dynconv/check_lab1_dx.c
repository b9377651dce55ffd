/*
 * chapters/labs/dynconv/check_lab1_dx.c: checks Lab 1 (lab1_dx).
 * Run:  make lab LAB=lab1_dx      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * With dil = 1 the expected dx is the cpu rung's backward. For every dil it is also the derivative
 * taken by its definition (dilated_ref.h), in float64, on shapes small enough for that.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "dilated_ref.h"
#include "dynconv.h"
#include "lab.h"

static const char *const LAB = "lab1_dx";

/* B, T, D, W, dil: length 1, W > T, a window wider than the row, D = 7, sizes that are multiples of
 * nothing, the widest W; the last two (dil = 1, larger) against the cpu rung only. */
static const int64_t shapes[][5] = {
    {1, 1, 1, 1, 1},   {1, 3, 7, 8, 1},    {2, 5, 7, 3, 2},    {3, 64, 7, 4, 1},   {2, 65, 9, 5, 3},
    {1, 40, 3, 4, 16}, {1, 150, 4, 64, 2}, {2, 300, 5, 31, 4}, {2, 1000, 33, 31, 1}, {1, 200, 16, 64, 1},
};
static const int n_by_definition = 8; /* shapes[0..7] also against dilated_ref.h */

extern const ladder_algo ladder_dynconv_algo;

static bool check_one(int i) {
    const int64_t *sh = shapes[i];
    ladder_dynconv_problem p = {sh[0], sh[1], sh[2], (int)sh[3]};
    const int dil = (int)sh[4];
    ladder_case c;
    ladder_result ref;
    labcheck_case(LAB, &ladder_dynconv_algo, &p, 2024 + (uint64_t)i, &c, &ref);
    const ladder_tensor *kernels = labcheck_tensor(&c, &ref, "kernels"), *dout = labcheck_tensor(&c, &ref, "dout");
    int64_t btd[3] = {p.B, p.T, p.D};
    ladder_tensor got = labcheck_alloc(LADDER_F32, 3, btd), want = labcheck_alloc(LADDER_F32, 3, btd);
    ladder_tensor_poison(&got);
    lab1_dx(p.B, p.T, p.D, p.W, dil, dout->data, kernels->data, got.data);

    char shape[112];
    snprintf(shape, sizeof shape, "B=%lld T=%lld D=%lld W=%d dil=%d", (long long)p.B, (long long)p.T,
             (long long)p.D, p.W, dil);
    bool ok = true;
    if (dil == 1) ok = labcheck_compare(LAB, shape, "dx (against the cpu rung)", &got, labcheck_tensor(&c, &ref, "dx"));
    if (ok && i < n_by_definition) {
        dilated_dx_by_definition(p.B, p.T, p.D, p.W, dil, dout->data, kernels->data, want.data);
        ok = labcheck_compare(LAB, shape, "dx (against dL/dx by definition)", &got, &want);
    }
    ladder_tensor_free(&got);
    ladder_tensor_free(&want);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int i = 0; i < n; i++)
        if (!check_one(i)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
