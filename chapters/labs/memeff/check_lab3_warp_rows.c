/*
 * chapters/labs/memeff/check_lab3_warp_rows.c: checks Lab 3 (lab3_warp_rows, a CUDA kernel).
 * Run:  make lab LAB=lab3_warp_rows
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 *
 * The expected o and lse are the cpu rung's (memeff, B = Hq = Hkv = 1) on the same seeded inputs, with a full
 * bias, a bias broadcast over the query rows (read with stride 0) or none, and dropout off or on.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "gpu.h"
#include "lab.h"
#include "memeff.h"
#include "rng.h"

static const char *const LAB = "lab3_warp_rows";

/* Sq, Sk, D, Dv, bias (0 none, 1 full [Sq,Sk], 2 one row [1,Sk] broadcast over the rows), p in hundredths:
 * fewer keys than lanes, keys not a multiple of 32, several warps per block and a partial last block */
static const int64_t shapes[][6] = {{1, 1, 4, 4, 0, 0},     {5, 7, 16, 8, 1, 10},    {33, 100, 32, 64, 2, 50},
                                    {70, 257, 64, 48, 1, 0}, {9, 1000, 8, 5, 2, 10}, {130, 64, 40, 64, 0, 30}};

static bool check_one(int s) {
    const int64_t *sh = shapes[s], Sq = sh[0], Sk = sh[1], D = sh[2], Dv = sh[3], kind = sh[4];
    const float p = (float)sh[5] / 100.0f;
    const uint64_t seed = 0xC0FFEEull + (uint64_t)s, offset = s % 2 ? (1ull << 32) - 3 : 17;
    ladder_memeff_problem pr = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv,
                                         .mask = LADDER_ATTN_NO_MASK},
                                .dropout_p = p, .philox_seed = seed, .philox_offset = offset, .splits = 1};
    ladder_rng rng;
    ladder_rng_seed(&rng, 1717 + (uint64_t)s);
    const int64_t sq[4] = {1, 1, Sq, D}, sk[4] = {1, 1, Sk, D}, sv[4] = {1, 1, Sk, Dv}, so[4] = {1, 1, Sq, Dv};
    const int64_t sb[4] = {1, 1, kind == 2 ? 1 : Sq, Sk}, sl[3] = {1, 1, Sq};
    ladder_memeff_args a = {.q = labcheck_alloc(LADDER_F32, 4, sq), .k = labcheck_alloc(LADDER_F32, 4, sk),
                            .v = labcheck_alloc(LADDER_F32, 4, sv), .o = labcheck_alloc(LADDER_F32, 4, so),
                            .lse = labcheck_alloc(LADDER_F32, 3, sl)};
    ladder_rng_fill_normal(&rng, &a.q, 1.0);
    ladder_rng_fill_normal(&rng, &a.k, 1.0);
    ladder_rng_fill_normal(&rng, &a.v, 1.0);
    if (kind) {
        a.bias = labcheck_alloc(LADDER_F32, 4, sb);
        ladder_rng_fill_normal(&rng, &a.bias, 2.0);
    }
    labcheck_ok(LAB, ladder_memeff_fwd(LADDER_RUNG_CPU, &pr, &a), "the cpu rung");

    ladder_tensor q_dev = {0}, k_dev = {0}, v_dev = {0}, b_dev = {0}, o_dev = {0}, lse_dev = {0};
    labcheck_ok(LAB, ladder_gpu_upload(&a.q, &q_dev), "uploading q");
    labcheck_ok(LAB, ladder_gpu_upload(&a.k, &k_dev), "uploading k");
    labcheck_ok(LAB, ladder_gpu_upload(&a.v, &v_dev), "uploading v");
    if (kind) labcheck_ok(LAB, ladder_gpu_upload(&a.bias, &b_dev), "uploading the bias");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&o_dev, LADDER_F32, 4, so), "allocating o");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&lse_dev, LADDER_F32, 3, sl), "allocating lse");
    char shape[120];
    snprintf(shape, sizeof shape, "Sq=%lld Sk=%lld D=%lld Dv=%lld bias=%s p=%g", (long long)Sq, (long long)Sk,
             (long long)D, (long long)Dv, kind == 0 ? "none" : kind == 1 ? "[Sq,Sk]" : "[1,Sk]", p);
    ladder_status st = lab3_warp_rows(Sq, Sk, D, Dv, (float)ladder_attention_scale(&pr.attn), q_dev.data, k_dev.data,
                                      v_dev.data, kind ? b_dev.data : NULL, kind == 1 ? Sk : 0, 1, p, seed, offset,
                                      o_dev.data, lse_dev.data);
    if (st == LADDER_OK) st = ladder_gpu_sync();
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
    if (ok) {
        ladder_tensor o = labcheck_alloc(LADDER_F32, 4, so), lse = labcheck_alloc(LADDER_F32, 3, sl);
        labcheck_ok(LAB, ladder_gpu_download(&o_dev, &o), "downloading o");
        labcheck_ok(LAB, ladder_gpu_download(&lse_dev, &lse), "downloading lse");
        ok = labcheck_compare(LAB, shape, "o", &o, &a.o) && labcheck_compare(LAB, shape, "lse", &lse, &a.lse);
        ladder_tensor_free(&o), ladder_tensor_free(&lse);
    }
    ladder_tensor *dev[] = {&q_dev, &k_dev, &v_dev, &b_dev, &o_dev, &lse_dev};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) ladder_gpu_free(dev[i]);
    ladder_tensor *host[] = {&a.q, &a.k, &a.v, &a.bias, &a.o, &a.lse};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) ladder_tensor_free(host[i]);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
