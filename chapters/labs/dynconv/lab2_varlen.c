/*
 * chapters/labs/dynconv/lab2_varlen.c: Lab 2, variable-length sequences in the forward.
 *
 * Several sequences are packed one after another into one batch row of T
 * tokens; sequence i owns tokens cu_seqlens[i] .. cu_seqlens[i+1]-1 (empty
 * sequences are allowed). A token's window must never reach into the
 * sequence before its own: x counts as zero before the start of t's sequence.
 * The loop below is the forward for one sequence per row. Make it honour cu_seqlens.
 * Shapes: x [T,D], kernels [T,D,W], out [T,D], cu_seqlens [n_seqs+1], all contiguous.
 * Check it:  make lab LAB=lab2_varlen
 */
#include "lab.h"

void lab2_varlen_fwd(int64_t T, int64_t D, int W, const float *x, const float *kernels, const int32_t *cu_seqlens,
                     int n_seqs, float *out) {
    /* TODO(lab 2): start must be the first token of t's own sequence, not 0. */
    (void)cu_seqlens, (void)n_seqs;
    for (int64_t t = 0; t < T; t++) {
        int64_t start = 0;
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
