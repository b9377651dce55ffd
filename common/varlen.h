/**
 * @file varlen.h
 * @brief Variable-length batches: which packed sequence a token belongs to.
 *
 * With cu_seqlens [N+1] (i32, cu_seqlens[0] = 0, non-decreasing,
 * cu_seqlens[N] = T), sequence i owns tokens cu_seqlens[i] .. cu_seqlens[i+1]-1
 * of a batch of one. Usable from C and from CUDA device code.
 */
#ifndef LADDER_VARLEN_H
#define LADDER_VARLEN_H

#include <stdint.h>

#include "host_device.h"

/**
 * The first token of the sequence holding token @p t (binary search over the
 * @p n_seqs + 1 offsets). Empty sequences own no token and are skipped.
 */
LADDER_HOST_DEVICE int64_t ladder_seq_start(const int32_t *cu_seqlens, int n_seqs, int64_t t) {
    int lo = 0, hi = n_seqs; /* invariant: cu_seqlens[lo] <= t < cu_seqlens[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (cu_seqlens[mid] <= t) lo = mid;
        else hi = mid;
    }
    return cu_seqlens[lo];
}

/** One past the last token of the sequence holding token @p t. */
LADDER_HOST_DEVICE int64_t ladder_seq_end(const int32_t *cu_seqlens, int n_seqs, int64_t t) {
    int lo = 0, hi = n_seqs;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (cu_seqlens[mid] <= t) lo = mid;
        else hi = mid;
    }
    return cu_seqlens[hi];
}

/**
 * The tokens [*start, *end) of the sequence holding token @p t: from the
 * @p n_seqs + 1 offsets in @p cu_seqlens when there are any, else (a null
 * @p cu_seqlens) the whole batch row [0, @p T).
 */
LADDER_HOST_DEVICE void ladder_sequence_bounds(const int32_t *cu_seqlens, int n_seqs, int64_t T, int64_t t,
                                               int64_t *start, int64_t *end) {
    if (cu_seqlens) {
        *start = ladder_seq_start(cu_seqlens, n_seqs, t);
        *end = ladder_seq_end(cu_seqlens, n_seqs, t);
    } else {
        *start = 0;
        *end = T;
    }
}

#endif
