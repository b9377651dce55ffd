/*
 * chapters/labs/flash/lab1_combine.c: Lab 1, combining attention over split keys (CPU).
 *
 * Attention ran on n_splits ranges of keys separately (as a decoding kernel does, to keep every SM busy
 * when there are few query rows). Each split s gave, for query row i, its normalised output
 * o_parts[s][i][:] and its log-sum-exp lse_parts[s][i] (-inf when the split saw no key for that row).
 * Combine them into the o and lse that attention over all the keys gives. Work it out from the definition
 * of lse and of o as a weighted average; mind rows where some splits, or all, are -inf.
 * Shapes: o_parts [n_splits][Sq][Dv], lse_parts [n_splits][Sq], o [Sq][Dv], lse [Sq].
 * Check it:  make lab LAB=lab1_combine
 */
#include "lab.h"

void lab1_combine(int64_t n_splits, int64_t Sq, int64_t Dv, const float *o_parts, const float *lse_parts, float *o,
                  float *lse) {
    for (int64_t i = 0; i < Sq; i++) {
        /* TODO(lab 1): the lse of all the keys, then o as the splits' outputs weighted by what each split's
         * keys hold of the whole softmax. */
        (void)n_splits, (void)o_parts, (void)lse_parts;
        for (int64_t e = 0; e < Dv; e++) o[i * Dv + e] = 0.0f;
        lse[i] = 0.0f;
    }
}
