/* chapters/labs/recurrent/solutions/lab1_gla_forward.c: a reference solution of Lab 1. */
#include <math.h>
#include <string.h>

#include "../lab.h"

void lab1_gla_forward(int64_t L, int64_t K, int64_t V, float scale, const float *q, const float *k, const float *v,
                      const float *gk, const float *h0, float *o, float *ht) {
    float *S = ht; /* row-major: row i is S[i*V .. i*V+V-1], so each step walks the state once, in order */
    memcpy(S, h0, (size_t)(K * V) * sizeof *S);
    for (int64_t t = 0; t < L; t++) {
        for (int64_t j = 0; j < V; j++) o[t * V + j] = 0.0f;
        for (int64_t i = 0; i < K; i++) {
            const float decay = expf(gk[t * K + i]), ki = k[t * K + i], qi = q[t * K + i];
            for (int64_t j = 0; j < V; j++) {
                S[i * V + j] = decay * S[i * V + j] + ki * v[t * V + j];
                o[t * V + j] += qi * S[i * V + j];
            }
        }
        for (int64_t j = 0; j < V; j++) o[t * V + j] *= scale;
    }
}
