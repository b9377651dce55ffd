/*
 * chapters/labs/flash/check_lab4_tiled_forward.c: checks Lab 4 (lab4_tiled_forward, a CUDA kernel).
 * Run:  make lab LAB=lab4_tiled_forward
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 *
 * The expected o and lse are the cpu rung's (flash, B = Hq = Hkv = 1) on the engine's seeded inputs, unmasked and
 * bottom-right causal, on shapes with one key, sizes that are multiples of no tile, more rows than keys under the
 * causal mask (rows that see no key) and the largest head dim the lab takes.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "flash.h"
#include "gpu.h"
#include "lab.h"

static const char *const LAB = "lab4_tiled_forward";
extern const ladder_algo ladder_flash_algo;

/* Sq, Sk, D, Dv, causal */
static const int64_t shapes[][5] = {{1, 1, 8, 8, 0},      {5, 37, 16, 8, 1},     {33, 100, 32, 64, 0},
                                    {100, 40, 64, 64, 1}, {64, 64, 3, 5, 1},     {130, 257, 128, 128, 1},
                                    {70, 1000, 16, 40, 0}};

static bool check_one(int s) {
    const int64_t *sh = shapes[s], Sq = sh[0], Sk = sh[1], D = sh[2], Dv = sh[3];
    const ladder_attn_mask mask = {sh[4] ? LADDER_CAUSAL_BOTTOM_RIGHT : LADDER_CAUSAL_NONE, -1, -1};
    ladder_flash_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = Sq, .Sk = Sk, .D = D, .Dv = Dv, .mask = mask}};
    ladder_case c;
    ladder_result ref;
    labcheck_case(LAB, &ladder_flash_algo, &p, 4040 + (uint64_t)s, &c, &ref);
    const char *in_names[] = {"q", "k", "v"};
    ladder_tensor in_dev[3] = {{0}};
    for (int i = 0; i < 3; i++)
        labcheck_ok(LAB, ladder_gpu_upload(labcheck_tensor(&c, &ref, in_names[i]), &in_dev[i]), "uploading an input");
    ladder_tensor *o_want = labcheck_tensor(&c, &ref, "o"), *lse_want = labcheck_tensor(&c, &ref, "lse");
    ladder_tensor o_dev = {0}, lse_dev = {0};
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&o_dev, LADDER_F32, o_want->rank, o_want->shape), "allocating o");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&lse_dev, LADDER_F32, lse_want->rank, lse_want->shape),
                "allocating lse");
    char shape[96];
    snprintf(shape, sizeof shape, "Sq=%lld Sk=%lld D=%lld Dv=%lld causal=%lld", (long long)Sq, (long long)Sk,
             (long long)D, (long long)Dv, (long long)sh[4]);
    ladder_status st = lab4_tiled_forward(Sq, Sk, D, Dv, (float)ladder_attention_scale(&p.attn), (int)sh[4],
                                          in_dev[0].data, in_dev[1].data, in_dev[2].data, o_dev.data, lse_dev.data);
    if (st == LADDER_OK) st = ladder_gpu_sync();
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
    if (ok) {
        ladder_tensor o = labcheck_alloc(LADDER_F32, o_want->rank, o_want->shape);
        ladder_tensor lse = labcheck_alloc(LADDER_F32, lse_want->rank, lse_want->shape);
        labcheck_ok(LAB, ladder_gpu_download(&o_dev, &o), "downloading o");
        labcheck_ok(LAB, ladder_gpu_download(&lse_dev, &lse), "downloading lse");
        ok = labcheck_compare(LAB, shape, "o", &o, o_want) && labcheck_compare(LAB, shape, "lse", &lse, lse_want);
        ladder_tensor_free(&o), ladder_tensor_free(&lse);
    }
    for (int i = 0; i < 3; i++) ladder_gpu_free(&in_dev[i]);
    ladder_gpu_free(&o_dev), ladder_gpu_free(&lse_dev);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
