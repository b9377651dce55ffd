/*
 * chapters/labs/dynconv/solutions/lab2_varlen.c: a reference solution to Lab 2 (for instructors).
 *
 * Walk the sequences instead of the tokens: inside sequence i every token
 * knows its start, cu_seqlens[i], without a search. Empty sequences give an
 * empty inner loop. (The library's rungs search instead, with
 * ladder_seq_start() from common/varlen.h, because their parallel loops and
 * GPU threads start from a token, not from a sequence.)
 */
#include "../lab.h"

void lab2_varlen_fwd(int64_t T, int64_t D, int W, const float *x, const float *kernels, const int32_t *cu_seqlens,
                     int n_seqs, float *out) {
    (void)T; /* cu_seqlens[n_seqs] == T */
    for (int i = 0; i < n_seqs; i++) {
        int64_t start = cu_seqlens[i], end = cu_seqlens[i + 1];
        for (int64_t t = start; t < end; t++)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0.0f;
                for (int w = 0; w < W; w++) {
                    int64_t src = t + w - W + 1;
                    if (src >= start) acc += kernels[(t * D + d) * W + w] * x[src * D + d];
                }
                out[t * D + d] = acc;
            }
    }
}
