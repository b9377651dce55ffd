/*
 * chapters/labs/recurrent/check_lab2_gate_grad.c: checks Lab 2 (lab2_gate_grad).
 * Run:  make lab LAB=lab2_gate_grad      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected dgk is the cpu rung's, on the engine's seeded case with gk, h0, ht and dht (B = H = 1); the lab
 * gets the rung's own dq and dk. The gates are drawn as logsigmoid(N(0,1)) / 10: a decay the identity in its
 * plain form reproduces to fp32 accuracy (the chapter says what a strong decay does to it).
 */
#include <stdio.h>

#include "../labcheck.h"
#include "lab.h"
#include "recurrent.h"

static const char *const LAB = "lab2_gate_grad";
extern const ladder_algo ladder_recurrent_algo;

static const int64_t shapes[][3] = {{1, 4, 4}, {7, 3, 5}, {65, 16, 33}, {300, 64, 128}, {1000, 60, 60}};

static bool check_one(int s) {
    const ladder_algo *a = &ladder_recurrent_algo;
    ladder_recurrent_problem p = {.B = 1, .T = shapes[s][0], .H = 1, .K = shapes[s][1], .V = shapes[s][2]};
    ladder_case_opts opts = {.seed = 99 + (uint64_t)s, .gate_normalizer = 10};
    const char *names[] = {"gk", "h0", "ht", "dht"};
    for (int i = 0; i < 4; i++) opts.with |= 1u << ladder_algo_tensor(a, names[i]);
    ladder_case c;
    ladder_result ref;
    labcheck_ok(LAB, ladder_case_make(&c, a, &p, &opts), "making random inputs");
    ladder_run_opts once = {0};
    labcheck_ok(LAB, ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &once, &ref), "the cpu rung");
    ladder_tensor *want = labcheck_tensor(&c, &ref, "dgk");
    ladder_tensor got = labcheck_alloc(LADDER_F32, want->rank, want->shape);
    ladder_tensor_poison(&got);
    lab2_gate_grad(p.T, p.K, p.V, labcheck_tensor(&c, &ref, "q")->data, labcheck_tensor(&c, &ref, "k")->data,
                   labcheck_tensor(&c, &ref, "dq")->data, labcheck_tensor(&c, &ref, "dk")->data,
                   labcheck_tensor(&c, &ref, "ht")->data, labcheck_tensor(&c, &ref, "dht")->data, got.data);
    char shape[64];
    snprintf(shape, sizeof shape, "L=%lld K=%lld V=%lld", (long long)p.T, (long long)p.K, (long long)p.V);
    bool ok = labcheck_compare(LAB, shape, "dgk", &got, want);
    ladder_tensor_free(&got);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
