/*
 * chapters/labs/dynconv/solutions/lab2_varlen.c: a reference solution to Lab 2 (for instructors).
 *
 * One packed row whose sequences cover every boundary case: an empty sequence first, in the middle
 * and twice in a row, a sequence of length 1, sequences shorter than W-1, a last sequence that is not
 * empty, and W = 5, so that a window crosses a boundary at several tokens of each sequence, not only
 * at the first. The property: fwd on the packed row equals, token for token, fwd on each sequence
 * alone. The anchor: fwd on one sequence alone equals the library's cpu rung, which catches a bug that
 * the packed and the single-sequence paths share.
 */
#include <math.h>
#include <stdlib.h>

#include "../lab.h"
#include "dynconv.h"
#include "rng.h"

#define N_SEQS 8
#define D 3
#define W 5

static const int32_t lens[N_SEQS] = {0, 4, 1, 0, 0, 2, 7, 3};

static float *poisoned(int64_t n) {
    float *p = malloc((size_t)n * sizeof *p);
    if (p)
        for (int64_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* a and b hold the same numbers up to fp32 rounding (a NaN on either side is a difference) */
static bool same(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-5f * (fabsf(b[i]) + 1.0f))) return false;
    return true;
}

bool lab2_varlen_test(lab2_fwd_fn fwd) {
    int32_t cu[N_SEQS + 1] = {0};
    for (int i = 0; i < N_SEQS; i++) cu[i + 1] = cu[i] + lens[i];
    const int64_t T = cu[N_SEQS];
    float *x = malloc((size_t)(T * D) * sizeof *x), *k = malloc((size_t)(T * D * W) * sizeof *k);
    float *packed = poisoned(T * D), *alone = poisoned(T * D), *ref = poisoned(T * D);
    bool ok = x && k && packed && alone && ref;
    if (ok) {
        ladder_rng rng;
        ladder_rng_seed(&rng, 7);
        for (int64_t i = 0; i < T * D; i++) x[i] = (float)ladder_rng_normal(&rng);
        for (int64_t i = 0; i < T * D * W; i++) k[i] = (float)ladder_rng_normal(&rng);

        /* the property: the packed row, then each sequence alone */
        fwd(T, D, W, x, k, cu, N_SEQS, packed);
        for (int i = 0; i < N_SEQS && ok; i++) {
            const int64_t t0 = cu[i], len = lens[i];
            if (len == 0) continue;
            fwd(len, D, W, x + t0 * D, k + t0 * D * W, NULL, 0, alone + t0 * D);
            ok = same(packed + t0 * D, alone + t0 * D, len * D);
        }

        /* the anchor: the longest sequence alone against the cpu rung */
        const int64_t t0 = cu[6], len = lens[6];
        int64_t td[3] = {1, len, D}, tdw[4] = {1, len, D, W};
        ladder_dynconv_problem p = {1, len, D, W};
        ladder_dynconv_args a = {0};
        a.x = ladder_tensor_make(x + t0 * D, LADDER_F32, 3, td);
        a.kernels = ladder_tensor_make(k + t0 * D * W, LADDER_F32, 4, tdw);
        a.out = ladder_tensor_make(ref + t0 * D, LADDER_F32, 3, td);
        ok = ok && ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a) == LADDER_OK &&
             same(alone + t0 * D, ref + t0 * D, len * D);
    }
    free(x);
    free(k);
    free(packed);
    free(alone);
    free(ref);
    return ok;
}
