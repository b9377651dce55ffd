/*
 * chapters/labs/flex/check_lab1_alibi_sym.c: checks Lab 1 (lab1_alibi_sym and its gradient).
 * Run:  make lab LAB=lab1_alibi_sym      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The value is checked against its definition in double; the derivatives against central finite differences of
 * the lab's own mod, to the score and to the slope it says it read; and moving any other slope must not move S.
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "lab.h"
#include "rng.h"

static const char *const LAB = "lab1_alibi_sym";

int main(void) {
    enum { H = 4, SQ = 40, SK = 70 };
    float slopes[H];
    ladder_rng rng;
    ladder_rng_seed(&rng, 2026);
    for (int h = 0; h < H; h++) slopes[h] = (float)(0.1 + ladder_rng_uniform(&rng));
    ladder_flex_env e = {.Sq = SQ, .Sk = SK};
    e.slopes.p = slopes, e.slopes.s[0] = 1;
    const float step = 1e-2f;
    for (int trial = 0; trial < 500; trial++) {
        const int64_t h = (int64_t)(ladder_rng_next(&rng) % H), i = (int64_t)(ladder_rng_next(&rng) % SQ);
        const int64_t j = (int64_t)(ladder_rng_next(&rng) % SK);
        const float s = (float)(3.0 * ladder_rng_normal(&rng));
        const double want = (double)s - (double)slopes[h] * (double)(i > j ? i - j : j - i);
        const float got = lab1_alibi_sym(s, &e, 0, h, i, j);
        if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want)))) {
            printf("FAIL %s: S at h=%lld i=%lld j=%lld s=%g is %.7g, want %.7g\n", LAB, (long long)h, (long long)i,
                   (long long)j, (double)s, (double)got, want);
            return LABCHECK_FAIL;
        }
        const ladder_flex_grad g = lab1_alibi_sym_grad(s, &e, 0, h, i, j);
        const double fd = (lab1_alibi_sym(s + step, &e, 0, h, i, j) - lab1_alibi_sym(s - step, &e, 0, h, i, j)) /
                          (2.0 * step);
        if (!(fabs(g.dscore - fd) <= 1e-2)) {
            printf("FAIL %s: dS/ds is %g, finite differences give %g\n", LAB, (double)g.dscore, fd);
            return LABCHECK_FAIL;
        }
        if (g.at[0] < 0 || g.at[0] >= H) {
            printf("FAIL %s: read 0 is at %lld, outside slopes [%d]\n", LAB, (long long)g.at[0], H);
            return LABCHECK_FAIL;
        }
        for (int x = 0; x < H; x++) { /* every slope: its derivative as the lab states it, against the difference */
            const float keep = slopes[x];
            slopes[x] = keep + step;
            const double up = lab1_alibi_sym(s, &e, 0, h, i, j);
            slopes[x] = keep - step;
            const double down = lab1_alibi_sym(s, &e, 0, h, i, j);
            slopes[x] = keep;
            const double said = g.at[0] == x ? g.d[0] : 0.0, fdx = (up - down) / (2.0 * step);
            if (!(fabs(said - fdx) <= 1e-2 * (1 + fabs(fdx)))) {
                printf("FAIL %s: dS/dslopes[%d] at h=%lld i=%lld j=%lld is %g by the gradient, %g by finite "
                       "differences\n", LAB, x, (long long)h, (long long)i, (long long)j, said, fdx);
                return LABCHECK_FAIL;
            }
        }
    }
    return labcheck_pass(LAB, 500);
}
