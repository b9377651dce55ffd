/*
 * chapters/labs/memeff/check_lab1_dslope.c: checks Lab 1 (lab1_dslope).
 * Run:  make lab LAB=lab1_dslope      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected value comes from the cpu rung's forward and backward with dropout, run on the ALiBi bias written out
 * in full [1,H,Sq,Sk] (the tensor the lab must do without), and taken to dL/dslope in double.
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "lab.h"
#include "memeff.h"
#include "rng.h"

static const char *const LAB = "lab1_dslope";

/* H, Sq, Sk, D, Dv, dropout p in hundredths, whether the Philox offset sits just below 2^32 */
static const int64_t shapes[][7] = {
    {1, 1, 1, 4, 4, 0, 0}, {2, 7, 19, 16, 8, 10, 0}, {3, 33, 65, 8, 24, 30, 1}, {2, 64, 40, 32, 32, 50, 0},
};

static ladder_tensor normal(ladder_rng *rng, int rank, const int64_t *shape) {
    ladder_tensor t = labcheck_alloc(LADDER_F32, rank, shape);
    ladder_rng_fill_normal(rng, &t, 1.0);
    return t;
}

static bool check_one(int s) {
    const int64_t *sh = shapes[s], H = sh[0], Sq = sh[1], Sk = sh[2], D = sh[3], Dv = sh[4];
    const float p = (float)sh[5] / 100.0f;
    const uint64_t seed = 0x5eed0000u + (uint64_t)s, offset = sh[6] ? (1ull << 32) - 37 : 12345;
    ladder_memeff_problem pr = {.attn = {.B = 1, .Hq = H, .Hkv = H, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                         .mask = LADDER_ATTN_NO_MASK},
                                .dropout_p = p, .philox_seed = seed, .philox_offset = offset, .splits = 1};
    ladder_rng rng;
    ladder_rng_seed(&rng, 909 + (uint64_t)s);
    const int64_t sq[4] = {1, H, Sq, D}, sk[4] = {1, H, Sk, D}, sv[4] = {1, H, Sk, Dv}, so[4] = {1, H, Sq, Dv};
    const int64_t sb[4] = {1, H, Sq, Sk}, sl[3] = {1, H, Sq};
    ladder_memeff_args a = {.q = normal(&rng, 4, sq), .k = normal(&rng, 4, sk), .v = normal(&rng, 4, sv),
                            .bias = labcheck_alloc(LADDER_F32, 4, sb), .o = labcheck_alloc(LADDER_F32, 4, so),
                            .lse = labcheck_alloc(LADDER_F32, 3, sl), .dout = normal(&rng, 4, so),
                            .dq = labcheck_alloc(LADDER_F32, 4, sq), .dk = labcheck_alloc(LADDER_F32, 4, sk),
                            .dv = labcheck_alloc(LADDER_F32, 4, sv), .dbias = labcheck_alloc(LADDER_F32, 4, sb)};
    float slopes[8];
    for (int64_t h = 0; h < H; h++) slopes[h] = 0.5f / (float)(1 << h);
    float *bias = a.bias.data;
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < Sq; i++)
            for (int64_t j = 0; j < Sk; j++) bias[(h * Sq + i) * Sk + j] = -slopes[h] * (float)(i > j ? i - j : j - i);
    labcheck_ok(LAB, ladder_memeff_fwd(LADDER_RUNG_CPU, &pr, &a), "the cpu rung's forward");
    labcheck_ok(LAB, ladder_memeff_bwd(LADDER_RUNG_CPU, &pr, &a), "the cpu rung's backward");

    double got[8];
    lab1_dslope(H, Sq, Sk, D, Dv, (float)ladder_attention_scale(&pr.attn), slopes, p, seed, offset, a.q.data,
                a.k.data, a.v.data, a.o.data, a.lse.data, a.dout.data, got);
    bool ok = true;
    const float *dbias = a.dbias.data;
    for (int64_t h = 0; h < H && ok; h++) {
        double want = 0.0, size = 0.0; /* size: the sum of the terms' magnitudes, what fp32 rounding scales with */
        for (int64_t i = 0; i < Sq; i++)
            for (int64_t j = 0; j < Sk; j++) {
                const double term = -(double)dbias[(h * Sq + i) * Sk + j] * (double)(i > j ? i - j : j - i);
                want += term;
                size += fabs(term);
            }
        if (!(fabs(got[h] - want) <= 1e-4 * size + 1e-6)) {
            printf("FAIL %s at H=%lld Sq=%lld Sk=%lld D=%lld Dv=%lld p=%g: dslope[%lld] got %.9g want %.9g\n", LAB,
                   (long long)H, (long long)Sq, (long long)Sk, (long long)D, (long long)Dv, p, (long long)h, got[h],
                   want);
            ok = false;
        }
    }
    ladder_tensor *all[] = {&a.q, &a.k, &a.v, &a.bias, &a.o, &a.lse, &a.dout, &a.dq, &a.dk, &a.dv, &a.dbias};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ladder_tensor_free(all[i]);
    return ok;
}

int main(void) {
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
