/*
 * chapters/labs/recurrent/check_lab2_gate_grad.c: checks Lab 2 (lab2_gate_grad).
 * Run:  make lab LAB=lab2_gate_grad      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The inputs q, k, v, do, gk, h0 and dht are the engine's seeded case (B = H = 1), with gates drawn as
 * logsigmoid(N(0,1)) / 10; the last shape moves every gate down by 7, a decay of about e^-7 a step, the strong
 * decay of the chapter's "What the identity costs numerically". The checker runs the recurrence and its backward
 * itself, in float64 with every state kept: the lab gets dq and dk from that backward and ht from that forward, and
 * the expected dgk is the gradient by its definition, dgk_t[i] = sum_j dS_t[i,j] exp(gk_t[i]) S_{t-1}[i,j]
 * ("The gate gradients"), rounded to float.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../labcheck.h"
#include "lab.h"
#include "recurrent.h"

static const char *const LAB = "lab2_gate_grad";
extern const ladder_algo ladder_recurrent_algo;

static const struct {
    int64_t L, K, V;
    double gate_shift; /* added to every gate */
} shapes[] = {{1, 4, 4, 0}, {7, 3, 5, 0}, {65, 16, 33, 0}, {300, 64, 128, 0}, {1000, 60, 60, 0}, {2000, 32, 32, -7}};

static void *alloc_or_exit(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) {
        printf("ERROR %s: cannot allocate %zu bytes\n", LAB, bytes);
        exit(LABCHECK_ERROR);
    }
    return p;
}

static float *input(ladder_case *c, const char *name) {
    int i = ladder_algo_tensor(c->algo, name);
    if (i < 0 || !c->t[i].data) {
        printf("ERROR %s: the case has no input %s\n", LAB, name);
        exit(LABCHECK_ERROR);
    }
    return c->t[i].data;
}

static bool check_one(int s) {
    const ladder_algo *a = &ladder_recurrent_algo;
    const int64_t L = shapes[s].L, K = shapes[s].K, V = shapes[s].V, KV = K * V;
    ladder_recurrent_problem p = {.B = 1, .T = L, .H = 1, .K = K, .V = V};
    ladder_case_opts opts = {.seed = 99 + (uint64_t)s, .gate_normalizer = 10};
    const char *names[] = {"gk", "h0", "dht"};
    for (int i = 0; i < 3; i++) opts.with |= 1u << ladder_algo_tensor(a, names[i]);
    ladder_case c;
    labcheck_ok(LAB, ladder_case_make(&c, a, &p, &opts), "making random inputs");
    const float *q = input(&c, "q"), *k = input(&c, "k"), *v = input(&c, "v"), *dO = input(&c, "do");
    const float *h0 = input(&c, "h0"), *dht = input(&c, "dht");
    float *gk = input(&c, "gk");
    for (int64_t e = 0; e < L * K; e++) gk[e] = (float)(gk[e] + shapes[s].gate_shift);
    const double scale = ladder_recurrent_scale(&p);

    /* the forward, S[t] the state after step t (S[0] = h0), then the backward from dS = dht */
    double *S = alloc_or_exit(sizeof(double) * (size_t)((L + 1) * KV)), *dS = alloc_or_exit(sizeof(double) * KV);
    double *dq = alloc_or_exit(sizeof(double) * L * K), *dk = alloc_or_exit(sizeof(double) * L * K);
    for (int64_t e = 0; e < KV; e++) S[e] = h0[e];
    for (int64_t t = 0; t < L; t++)
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < V; j++)
                S[(t + 1) * KV + i * V + j] =
                    exp((double)gk[t * K + i]) * S[t * KV + i * V + j] + (double)k[t * K + i] * v[t * V + j];
    ladder_tensor want = labcheck_alloc(LADDER_F32, 2, (int64_t[]){L, K});
    for (int64_t e = 0; e < KV; e++) dS[e] = dht[e];
    for (int64_t t = L - 1; t >= 0; t--) {
        const double *St = S + (t + 1) * KV, *Sp = S + t * KV;
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < V; j++) dS[i * V + j] += scale * q[t * K + i] * dO[t * V + j];
        for (int64_t i = 0; i < K; i++) {
            const double D = exp((double)gk[t * K + i]);
            double sq = 0, sk = 0, g = 0;
            for (int64_t j = 0; j < V; j++) {
                sq += St[i * V + j] * dO[t * V + j];
                sk += dS[i * V + j] * v[t * V + j];
                g += dS[i * V + j] * D * Sp[i * V + j];
            }
            dq[t * K + i] = scale * sq, dk[t * K + i] = sk;
            ((float *)want.data)[t * K + i] = (float)g;
            for (int64_t j = 0; j < V; j++) dS[i * V + j] *= D; /* dS_{t-1} gets D_t * dS_t */
        }
    }

    ladder_tensor got = labcheck_alloc(LADDER_F32, 2, (int64_t[]){L, K});
    ladder_tensor_poison(&got);
    lab2_gate_grad(L, K, V, q, k, dq, dk, S + L * KV, dht, got.data);
    char shape[96];
    snprintf(shape, sizeof shape, "L=%lld K=%lld V=%lld%s", (long long)L, (long long)K, (long long)V,
             shapes[s].gate_shift != 0 ? " (strong gates)" : "");
    bool ok = labcheck_compare(LAB, shape, "dgk", &got, &want);
    ladder_tensor_free(&got);
    ladder_tensor_free(&want);
    free(S), free(dS), free(dq), free(dk);
    ladder_case_free(&c);
    return ok;
}

int main(void) {
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
