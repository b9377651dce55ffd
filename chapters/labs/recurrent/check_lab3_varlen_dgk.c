/*
 * chapters/labs/recurrent/check_lab3_varlen_dgk.c: checks Lab 3 (lab3_varlen_dgk).
 * Run:  make lab LAB=lab3_varlen_dgk      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The expected dgk is the cpu rung's, on the engine's seeded packed case with gk, h0, ht and dht (gates
 * logsigmoid(N(0,1)) / 10, as in Lab 2), forwards and in reverse. The packings hold an empty sequence, a
 * length-1 one, and sequences whose final states differ, so a state taken from the wrong sequence shows.
 */
#include <stdio.h>

#include "../labcheck.h"
#include "lab.h"
#include "recurrent.h"

static const char *const LAB = "lab3_varlen_dgk";
extern const ladder_algo ladder_recurrent_algo;

static const struct {
    int64_t H, K, V;
    int n;
    int64_t lens[4];
} cases[] = {
    {1, 4, 4, 2, {3, 5}}, {2, 7, 5, 4, {0, 9, 1, 20}}, {3, 16, 33, 3, {64, 1, 65}}, {2, 64, 128, 2, {200, 100}},
};

static bool check_one(int s, bool reverse) {
    const ladder_algo *a = &ladder_recurrent_algo;
    ladder_recurrent_problem p = {.B = 1, .H = cases[s].H, .K = cases[s].K, .V = cases[s].V, .reverse = reverse};
    ladder_case_opts opts = {.seed = 5 + (uint64_t)s, .gate_normalizer = 10, .n_seqs = cases[s].n};
    for (int i = 0; i < cases[s].n; i++) opts.seqlens[i] = cases[s].lens[i];
    const char *names[] = {"gk", "h0", "ht", "dht"};
    for (int i = 0; i < 4; i++) opts.with |= 1u << ladder_algo_tensor(a, names[i]);
    ladder_case c;
    ladder_result ref;
    labcheck_ok(LAB, ladder_case_make(&c, a, &p, &opts), "making random inputs");
    ladder_run_opts once = {0};
    labcheck_ok(LAB, ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &once, &ref), "the cpu rung");
    const ladder_recurrent_problem *cp = (const ladder_recurrent_problem *)c.problem; /* T = the packed total */
    ladder_tensor *want = labcheck_tensor(&c, &ref, "dgk");
    ladder_tensor got = labcheck_alloc(LADDER_F32, want->rank, want->shape);
    ladder_tensor_poison(&got);
    lab3_varlen_dgk(cp->T, p.H, p.K, p.V, cases[s].n, labcheck_tensor(&c, &ref, "cu_seqlens")->data, reverse,
                    labcheck_tensor(&c, &ref, "q")->data, labcheck_tensor(&c, &ref, "k")->data,
                    labcheck_tensor(&c, &ref, "dq")->data, labcheck_tensor(&c, &ref, "dk")->data,
                    labcheck_tensor(&c, &ref, "ht")->data, labcheck_tensor(&c, &ref, "dht")->data, got.data);
    char shape[96];
    snprintf(shape, sizeof shape, "H=%lld K=%lld V=%lld, %d sequences%s", (long long)p.H, (long long)p.K,
             (long long)p.V, cases[s].n, reverse ? ", reverse" : "");
    bool ok = labcheck_compare(LAB, shape, "dgk", &got, want);
    ladder_tensor_free(&got);
    ladder_result_free(&ref);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int s = 0; s < n; s++)
        for (int reverse = 0; reverse < 2; reverse++)
            if (!check_one(s, reverse)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, 2 * n);
}
