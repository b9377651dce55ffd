/*
 * chapters/labs/flash/check_lab3_alibi.c: checks Lab 3 (lab3_alibi).
 * Run:  make lab LAB=lab3_alibi      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected o and lse are computed here by the definition, in double, one whole row at a time. With
 * slope = 0 the answer must also be the cpu rung's (bottom-right causal), which the first shape checks.
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "flash.h"
#include "lab.h"

static const char *const LAB = "lab3_alibi";
extern const ladder_algo ladder_flash_algo;

/* Sq, Sk, D, Dv, slope in thousandths: Sq > Sk (rows that see nothing), a slope steep enough that the
 * running max moves, tiles that are not full */
static const int64_t shapes[][5] = {{9, 40, 8, 8, 0},   {1, 1, 4, 4, 500},   {20, 7, 3, 5, 250},
                                    {64, 100, 16, 8, 62}, {33, 33, 32, 16, 2000}};

/* Row i by its definition, in double. */
static void reference(const int64_t *sh, float scale, float slope, const float *q, const float *k, const float *v,
                      float *o, float *lse) {
    const int64_t Sq = sh[0], Sk = sh[1], D = sh[2], Dv = sh[3];
    for (int64_t i = 0; i < Sq; i++) {
        const int64_t d = i + Sk - Sq;
        double m = -INFINITY, l = 0.0, acc[64] = {0};
        for (int64_t j = 0; j <= d && j < Sk; j++) {
            double s = 0;
            for (int64_t e = 0; e < D; e++) s += (double)q[i * D + e] * k[j * D + e];
            m = fmax(m, scale * s - slope * (double)(d - j));
        }
        for (int64_t j = 0; j <= d && j < Sk; j++) {
            double s = 0;
            for (int64_t e = 0; e < D; e++) s += (double)q[i * D + e] * k[j * D + e];
            const double P = exp(scale * s - slope * (double)(d - j) - m);
            l += P;
            for (int64_t e = 0; e < Dv; e++) acc[e] += P * v[j * Dv + e];
        }
        for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] = l > 0 ? (float)(acc[e] / l) : 0.0f;
        lse[i] = l > 0 ? (float)(m + log(l)) : -INFINITY;
    }
}

int main(void) {
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++) {
        const int64_t *sh = shapes[s], Sq = sh[0], Dv = sh[3];
        const float slope = (float)sh[4] / 1000.0f;
        ladder_flash_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = Sq, .Sk = sh[1], .D = sh[2], .Dv = Dv,
                                           .mask = {.causal = LADDER_CAUSAL_BOTTOM_RIGHT, .window_left = -1, .window_right = -1}}};
        ladder_case c;
        ladder_result ref;
        labcheck_case(LAB, &ladder_flash_algo, &p, 505 + (uint64_t)s, &c, &ref);
        const float scale = (float)ladder_attention_scale(&p.attn);
        const float *q = labcheck_tensor(&c, &ref, "q")->data, *k = labcheck_tensor(&c, &ref, "k")->data,
                    *v = labcheck_tensor(&c, &ref, "v")->data;
        const int64_t os[2] = {Sq, Dv}, ls[1] = {Sq};
        ladder_tensor o = labcheck_alloc(LADDER_F32, 2, os), lse = labcheck_alloc(LADDER_F32, 1, ls);
        ladder_tensor want_o = labcheck_alloc(LADDER_F32, 2, os), want_l = labcheck_alloc(LADDER_F32, 1, ls);
        ladder_tensor_poison(&o);
        ladder_tensor_poison(&lse);
        lab3_alibi(Sq, sh[1], sh[2], Dv, scale, slope, q, k, v, o.data, lse.data);
        reference(sh, scale, slope, q, k, v, want_o.data, want_l.data);
        char shape[96];
        snprintf(shape, sizeof shape, "Sq=%lld Sk=%lld D=%lld Dv=%lld slope=%g", (long long)Sq, (long long)sh[1],
                 (long long)sh[2], (long long)Dv, slope);
        bool ok = labcheck_compare(LAB, shape, "o", &o, &want_o) && labcheck_compare(LAB, shape, "lse", &lse, &want_l);
        if (ok && slope == 0.0f) { /* no bias: the library's bottom-right causal attention */
            ladder_tensor lib = *labcheck_tensor(&c, &ref, "o");
            lib.rank = 2, lib.shape[0] = Sq, lib.shape[1] = Dv, lib.strides[0] = Dv, lib.strides[1] = 1;
            ok = labcheck_compare(LAB, shape, "o (against the cpu rung)", &o, &lib);
        }
        ladder_tensor *all[] = {&o, &lse, &want_o, &want_l};
        for (int i = 0; i < 4; i++) ladder_tensor_free(all[i]);
        ladder_result_free(&ref);
        ladder_case_free(&c);
        if (!ok) return LABCHECK_FAIL;
    }
    return labcheck_pass(LAB, n);
}
