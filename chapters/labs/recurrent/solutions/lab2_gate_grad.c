/* chapters/labs/recurrent/solutions/lab2_gate_grad.c: a reference solution of Lab 2. */
#include "../lab.h"

/* dgk_t[i] = sum_{s >= t} (q_s[i] dq_s[i] - k_s[i] dk_s[i]) + sum_j ht[i,j] dht[i,j], summed in double. */
void lab2_gate_grad(int64_t L, int64_t K, int64_t V, const float *q, const float *k, const double *dq,
                    const double *dk, const double *ht, const float *dht, float *dgk) {
    for (int64_t i = 0; i < K; i++) {
        double acc = 0;
        for (int64_t j = 0; j < V; j++) acc += ht[i * V + j] * dht[i * V + j];
        for (int64_t t = L - 1; t >= 0; t--) {
            acc += q[t * K + i] * dq[t * K + i] - k[t * K + i] * dk[t * K + i];
            dgk[t * K + i] = (float)acc;
        }
    }
}
