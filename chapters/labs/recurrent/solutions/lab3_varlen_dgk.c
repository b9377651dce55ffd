/* chapters/labs/recurrent/solutions/lab3_varlen_dgk.c: a reference solution of Lab 3. */
#include "../lab.h"

/*
 * Per sequence n, head h and channel i: the sum over the steps from t on, in the order the recurrence runs,
 * plus rowsum(ht[n,h] * dht[n,h]): sequence n's own final state, not one broadcast from another sequence.
 */
void lab3_varlen_dgk(int64_t T, int64_t H, int64_t K, int64_t V, int n_seqs, const int32_t *cu_seqlens, int reverse,
                     const float *q, const float *k, const float *dq, const float *dk, const float *ht,
                     const float *dht, float *dgk) {
    (void)T;
    for (int n = 0; n < n_seqs; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < K; i++) {
                const float *hti = ht + ((n * H + h) * K + i) * V, *dhti = dht + ((n * H + h) * K + i) * V;
                double acc = 0;
                for (int64_t j = 0; j < V; j++) acc += (double)hti[j] * dhti[j];
                const int64_t start = cu_seqlens[n], len = cu_seqlens[n + 1] - start;
                for (int64_t step = len - 1; step >= 0; step--) { /* the last step first */
                    const int64_t t = reverse ? start + len - 1 - step : start + step, e = (t * H + h) * K + i;
                    acc += (double)q[e] * dq[e] - (double)k[e] * dk[e];
                    dgk[e] = (float)acc;
                }
            }
}
