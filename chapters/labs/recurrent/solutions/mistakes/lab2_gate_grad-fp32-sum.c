/*
 * chapters/labs/recurrent/solutions/mistakes/lab2_gate_grad-fp32-sum.c: a wrong answer to Lab 2, which its checker
 * must fail.
 *
 * The identity right in every respect but one: the sum runs in a float. Its products are taken in double (C
 * promotes q * dq to double), but every addition rounds to a float's 24 bits. Under gentle gates that passes; the
 * checker's strong-gate shape is there to fail it (make lab-check proves it does).
 */
#include "../../lab.h"

void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const double *dq,
                    const double *dk, const double *ht, const float *dht, float *dgk) {
    for (int64_t i = 0; i < K; i++) {
        float acc = 0;
        for (int64_t j = 0; j < V; j++) acc += ht[i * V + j] * dht[i * V + j];
        for (int64_t t = L - 1; t >= 0; t--) {
            acc += q[t * K + i] * dq[t * K + i] - k[t * K + i] * dk[t * K + i];
            dgk[t * K + i] = acc;
        }
    }
}
