/*
 * chapters/labs/recurrent/check_lab1_gla_forward.c: checks Lab 1 (lab1_gla_forward).
 * Run:  make lab LAB=lab1_gla_forward      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected o and ht are the cpu rung's, on the engine's seeded case with gk, h0 and ht (B = H = 1).
 */
#include <math.h>
#include <stdio.h>

#include "../labcheck.h"
#include "lab.h"
#include "recurrent.h"

static const char *const LAB = "lab1_gla_forward";
extern const ladder_algo ladder_recurrent_algo;

/* L, K, V: one step, K != V, sizes that are multiples of nothing, a long one */
static const int64_t shapes[][3] = {{1, 4, 4}, {7, 3, 5}, {65, 16, 33}, {300, 64, 128}, {1000, 60, 60}};

static uint32_t with(const char *const *names, int n) {
    uint32_t w = 0;
    for (int i = 0; i < n; i++) w |= 1u << ladder_algo_tensor(&ladder_recurrent_algo, names[i]);
    return w;
}

static bool check_one(int s) {
    ladder_recurrent_problem p = {.B = 1, .T = shapes[s][0], .H = 1, .K = shapes[s][1], .V = shapes[s][2]};
    const char *names[] = {"gk", "h0", "ht"};
    ladder_case_opts opts = {.seed = 77 + (uint64_t)s, .with = with(names, 3)};
    ladder_case c;
    ladder_result ref;
    labcheck_ok(LAB, ladder_case_make(&c, &ladder_recurrent_algo, &p, &opts), "making random inputs");
    ladder_run_opts once = {.forward_only = true};
    labcheck_ok(LAB, ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &once, &ref), "the cpu rung");
    int64_t lv[2] = {p.T, p.V}, kv[2] = {p.K, p.V};
    ladder_tensor o = labcheck_alloc(LADDER_F32, 2, lv), ht = labcheck_alloc(LADDER_F32, 2, kv);
    ladder_tensor_poison(&o);
    ladder_tensor_poison(&ht);
    lab1_gla_forward(p.T, p.K, p.V, (float)(1.0 / sqrt((double)p.K)), labcheck_tensor(&c, &ref, "q")->data,
                     labcheck_tensor(&c, &ref, "k")->data, labcheck_tensor(&c, &ref, "v")->data,
                     labcheck_tensor(&c, &ref, "gk")->data, labcheck_tensor(&c, &ref, "h0")->data, o.data, ht.data);
    /* the same elements as the reference's [1,L,1,V] and [1,1,K,V], viewed with its shape */
    ladder_tensor o_view = *labcheck_tensor(&c, &ref, "o"), ht_view = *labcheck_tensor(&c, &ref, "ht");
    o_view.data = o.data, ht_view.data = ht.data;
    char shape[64];
    snprintf(shape, sizeof shape, "L=%lld K=%lld V=%lld", (long long)p.T, (long long)p.K, (long long)p.V);
    bool ok = labcheck_compare(LAB, shape, "o", &o_view, labcheck_tensor(&c, &ref, "o")) &&
              labcheck_compare(LAB, shape, "ht", &ht_view, labcheck_tensor(&c, &ref, "ht"));
    ladder_tensor_free(&o), ladder_tensor_free(&ht);
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
