/*
 * chapters/labs/recurrent/check_lab4_gla_forward_gpu.c: checks Lab 4 (lab4_gla_forward_gpu, a CUDA kernel).
 * Run:  make lab LAB=lab4_gla_forward_gpu
 * Exit code: 0 PASS, 1 FAIL, 2 no CUDA GPU here (see ../labcheck.h).
 *
 * The expected o and ht are the cpu rung's, on the engine's seeded case with gk, h0 and ht (B = 1, H heads).
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "gpu.h"
#include "lab.h"
#include "recurrent.h"

static const char *const LAB = "lab4_gla_forward_gpu";
extern const ladder_algo ladder_recurrent_algo;

/* L, H, K, V: one step, K != V, sizes that are multiples of nothing, more columns than a block has threads,
 * several heads, a long one */
static const int64_t shapes[][4] = {{1, 1, 4, 4},    {7, 3, 3, 5},     {65, 2, 16, 33},
                                    {37, 1, 20, 200}, {300, 4, 64, 128}, {1000, 2, 60, 60}};

static uint32_t with(const char *const *names, int n) {
    uint32_t w = 0;
    for (int i = 0; i < n; i++) w |= 1u << ladder_algo_tensor(&ladder_recurrent_algo, names[i]);
    return w;
}

static bool check_one(int s) {
    const int64_t *sh = shapes[s];
    ladder_recurrent_problem p = {.B = 1, .T = sh[0], .H = sh[1], .K = sh[2], .V = sh[3]};
    const char *names[] = {"gk", "h0", "ht"};
    ladder_case_opts opts = {.seed = 404 + (uint64_t)s, .with = with(names, 3)};
    ladder_case c;
    ladder_result ref;
    labcheck_ok(LAB, ladder_case_make(&c, &ladder_recurrent_algo, &p, &opts), "making random inputs");
    ladder_run_opts once = {.forward_only = true};
    labcheck_ok(LAB, ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &once, &ref), "the cpu rung");
    const char *in_names[] = {"q", "k", "v", "gk", "h0"};
    ladder_tensor in_dev[5] = {{0}};
    for (int i = 0; i < 5; i++)
        labcheck_ok(LAB, ladder_gpu_upload(labcheck_tensor(&c, &ref, in_names[i]), &in_dev[i]), "uploading an input");
    ladder_tensor *o_want = labcheck_tensor(&c, &ref, "o"), *ht_want = labcheck_tensor(&c, &ref, "ht");
    ladder_tensor o_dev = {0}, ht_dev = {0};
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&o_dev, LADDER_F32, o_want->rank, o_want->shape), "allocating o");
    labcheck_ok(LAB, ladder_gpu_alloc_poisoned(&ht_dev, LADDER_F32, ht_want->rank, ht_want->shape), "allocating ht");
    char shape[80];
    snprintf(shape, sizeof shape, "L=%lld H=%lld K=%lld V=%lld", (long long)p.T, (long long)p.H, (long long)p.K,
             (long long)p.V);
    ladder_status st = lab4_gla_forward_gpu(p.T, p.H, p.K, p.V, (float)(1.0 / sqrt((double)p.K)), in_dev[0].data,
                                            in_dev[1].data, in_dev[2].data, in_dev[3].data, in_dev[4].data,
                                            o_dev.data, ht_dev.data);
    if (st == LADDER_OK) st = ladder_gpu_sync();
    bool ok = st == LADDER_OK;
    if (!ok) printf("FAIL %s at %s: the kernel failed: %s\n", LAB, shape, ladder_last_error());
    if (ok) {
        ladder_tensor o = labcheck_alloc(LADDER_F32, o_want->rank, o_want->shape);
        ladder_tensor ht = labcheck_alloc(LADDER_F32, ht_want->rank, ht_want->shape);
        labcheck_ok(LAB, ladder_gpu_download(&o_dev, &o), "downloading o");
        labcheck_ok(LAB, ladder_gpu_download(&ht_dev, &ht), "downloading ht");
        ok = labcheck_compare(LAB, shape, "o", &o, o_want) && labcheck_compare(LAB, shape, "ht", &ht, ht_want);
        ladder_tensor_free(&o), ladder_tensor_free(&ht);
    }
    for (int i = 0; i < 5; i++) ladder_gpu_free(&in_dev[i]);
    ladder_gpu_free(&o_dev), ladder_gpu_free(&ht_dev);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    labcheck_require_gpu(LAB);
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
