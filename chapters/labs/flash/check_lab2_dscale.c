/*
 * chapters/labs/flash/check_lab2_dscale.c: checks Lab 2 (lab2_dscale).
 * Run:  make lab LAB=lab2_dscale      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected value comes from the cpu rung's backward outputs, in double, by a route that needs the dq the
 * lab does not have (chapter 3's Lab 2 asks you to find it once yours passes).
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "flash.h"
#include "lab.h"

static const char *const LAB = "lab2_dscale";
extern const ladder_algo ladder_flash_algo;

/* Sq, Sk, D, Dv, and the scale in thousandths (0: 1/sqrt(D)) */
static const int64_t shapes[][5] = {{1, 1, 4, 4, 0}, {7, 19, 16, 8, 250}, {64, 130, 32, 48, 0}, {3, 200, 5, 2, 1500}};

int main(void) {
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++) {
        const int64_t *sh = shapes[s];
        ladder_flash_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = sh[0], .Sk = sh[1], .D = sh[2],
                                           .Dv = sh[3], .scale = sh[4] / 1000.0, .mask = LADDER_ATTN_NO_MASK}};
        ladder_case c;
        ladder_result ref;
        labcheck_case(LAB, &ladder_flash_algo, &p, 303 + (uint64_t)s, &c, &ref);
        const float *q = labcheck_tensor(&c, &ref, "q")->data, *dq = labcheck_tensor(&c, &ref, "dq")->data;
        const float scale = (float)ladder_attention_scale(&p.attn);
        double want = 0.0;
        for (int64_t e = 0; e < p.attn.Sq * p.attn.D; e++) want += (double)q[e] * dq[e];
        want /= scale;
        const float *k = labcheck_tensor(&c, &ref, "k")->data, *v = labcheck_tensor(&c, &ref, "v")->data,
                    *o = labcheck_tensor(&c, &ref, "o")->data, *lse = labcheck_tensor(&c, &ref, "lse")->data,
                    *dout = labcheck_tensor(&c, &ref, "do")->data;
        double got = lab2_dscale(p.attn.Sq, p.attn.Sk, p.attn.D, p.attn.Dv, scale, q, k, v, o, lse, dout);
        ladder_result_free(&ref);
        ladder_case_free(&c);
        /* fp32 rounding in the reference's dq: relative 1e-4, with a floor for a sum that cancels to near 0 */
        if (!(fabs(got - want) <= 1e-4 * (fabs(want) + 1e-2 * sqrt((double)(p.attn.Sq * p.attn.Sk))))) {
            printf("FAIL %s at Sq=%lld Sk=%lld D=%lld Dv=%lld scale=%g: dL/dscale got %.9g want %.9g\n", LAB,
                   (long long)p.attn.Sq, (long long)p.attn.Sk, (long long)p.attn.D, (long long)p.attn.Dv, scale, got,
                   want);
            return LABCHECK_FAIL;
        }
    }
    return labcheck_pass(LAB, n);
}
