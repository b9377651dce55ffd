/* chapters/labs/recurrent/solutions/lab2_gate_grad.c: a reference solution of Lab 2. */
#include <stdlib.h>

#include "../lab.h"

/* dgk_t[i] = sum_{s >= t} (q_s[i] dq_s[i] - k_s[i] dk_s[i]) + sum_j ht[i,j] dht[i,j], summed in double. */
void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const float *dq,
                    const float *dk, const float *ht, const float *dht, float *dgk) {
    for (int64_t i = 0; i < K; i++) {
        double acc = 0;
        for (int64_t j = 0; j < V; j++) acc += (double)ht[i * V + j] * dht[i * V + j];
        for (int64_t t = L - 1; t >= 0; t--) {
            acc += (double)q[t * K + i] * dq[t * K + i] - (double)k[t * K + i] * dk[t * K + i];
            dgk[t * K + i] = (float)acc;
        }
    }
}
