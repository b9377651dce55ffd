/**
 * @file attention.h
 * @brief What every softmax-attention algorithm shares (flash and memeff; flex later): the problem, the
 *        GQA head map, the mask, the LSE and fully-masked-row rules, the Delta preprocess and the FLOP counts.
 *
 * For each sequence, query row i (0..Lq-1) and key j (0..Lk-1), with s = scale * q_i . k_j:
 *
 *     S_ij = softcap > 0 ? softcap * tanh(s / softcap) : s        (then masked: -inf where not allowed)
 *     P_ij = exp(S_ij - lse_i),   lse_i = log sum_j exp(S_ij)      (natural log)
 *     O_i  = sum_j P_ij V_j
 *
 * Which keys a query row may see is always one interval [lo, hi) (ladder_attn_key_range()): causal masking
 * cuts it on the right at the diagonal, a window (left, right) on both sides around the diagonal. The diagonal
 * of row i is key i + Lk - Lq (aligned to the bottom-right corner, as FlashAttention-2 does when Lq != Lk) or
 * key i (top-left). A row whose interval is empty is fully masked: o = 0, lse = -inf and zero gradients.
 *
 * The helpers marked LADDER_HOST_DEVICE are compiled by gcc and nvcc alike, so that the CPU rung and every
 * kernel apply the same mask and the same rules.
 */
#ifndef LADDER_ATTENTION_H
#define LADDER_ATTENTION_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "host_device.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Causal masking: none, aligned to the bottom-right corner (FlashAttention-2's convention) or the top-left. */
typedef enum ladder_causal {
    LADDER_CAUSAL_NONE = 0,         /**< every key (within the window, if any) */
    LADDER_CAUSAL_BOTTOM_RIGHT = 1, /**< row i sees keys j <= i + Lk - Lq */
    LADDER_CAUSAL_TOP_LEFT = 2      /**< row i sees keys j <= i */
} ladder_causal;

/**
 * Which keys each query row may see, as one value: the causal kind and a window around the diagonal. Every
 * attention algorithm carries one; the key-range helpers below are the only code that reads its fields.
 */
typedef struct ladder_attn_mask {
    int causal;           /**< a ::ladder_causal */
    int64_t window_left;  /**< keys further left of the diagonal than this are masked; -1: no limit */
    int64_t window_right; /**< keys further right of the diagonal than this are masked; -1: no limit */
} ladder_attn_mask;

/** No mask at all: every key of the sequence (the C API's neutral value). */
#define LADDER_ATTN_NO_MASK ((ladder_attn_mask){LADDER_CAUSAL_NONE, -1, -1})

/** Largest head dim (D and Dv) any rung takes. */
#define LADDER_ATTN_MAX_HEAD_DIM 256

/** Sizes and options of one softmax-attention problem. */
typedef struct ladder_attention_problem {
    int64_t B;            /**< batch size (1 when cu_seqlens_q/k are given) */
    int64_t Hq;           /**< query heads */
    int64_t Hkv;          /**< key/value heads; Hq is a multiple of it (MQA/GQA) */
    int64_t Sq;           /**< query rows per batch row (the packed total with cu_seqlens_q) */
    int64_t Sk;           /**< keys per batch row (the packed total with cu_seqlens_k) */
    int64_t D;            /**< head dim of q and k, 1..LADDER_ATTN_MAX_HEAD_DIM */
    int64_t Dv;           /**< head dim of v and o, 1..LADDER_ATTN_MAX_HEAD_DIM */
    double scale;         /**< multiplies q . k; 0 means 1/sqrt(D) */
    double softcap;       /**< S = softcap * tanh(s / softcap) when > 0; 0: none */
    ladder_attn_mask mask; /**< causal kind and window */
} ladder_attention_problem;

/** The scale actually used: problem->scale, or 1/sqrt(D) when it is 0. */
double ladder_attention_scale(const ladder_attention_problem *p);

/**
 * Sizes and options alone (no tensors): B, Hq, Hkv, Sq, Sk >= 1, D and Dv in 1..LADDER_ATTN_MAX_HEAD_DIM,
 * Hq a multiple of Hkv, scale and softcap >= 0 and finite as the floats the kernels use (a positive value that
 * rounds to 0 or to infinity is refused), causal a ::ladder_causal, windows >= -1 (any size: a window wider than
 * the sequence masks nothing).
 * LADDER_ERR_ARG naming the field otherwise ("Hkv is 4 but must divide Hq = 6").
 */
ladder_status ladder_attention_check_problem(const ladder_attention_problem *p);

/**
 * The inputs every attention pass reads: q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] (any strides), and
 * cu_seqlens_q/k: both or neither, and then B = 1. Their contents are ladder_attention_check_seqlens()'s.
 */
ladder_status ladder_attention_check_inputs(const ladder_attention_problem *p, const ladder_tensor *q,
                                            const ladder_tensor *k, const ladder_tensor *v,
                                            const ladder_tensor *cu_seqlens_q, const ladder_tensor *cu_seqlens_k);

/**
 * cu_seqlens_q/k, when given: i32 [N+1] with the same N, each starting at 0, never decreasing, and ending at Sq
 * (Sk). @p on_device: they live in device memory (read through a copy), so call this once the rung is known
 * to be available.
 */
ladder_status ladder_attention_check_seqlens(const ladder_attention_problem *p, const ladder_tensor *cu_seqlens_q,
                                             const ladder_tensor *cu_seqlens_k, bool on_device);

/**
 * The sizes, options and index tensors every attention kernel reads, as plain values: each GPU rung's kernel
 * arguments extend it with their own tensors (struct args : ladder_attn_call), so that it is packed in one place.
 */
typedef struct ladder_attn_call {
    int64_t B;                  /**< batch size */
    int64_t Hq;                 /**< query heads */
    int64_t Hkv;                /**< key/value heads */
    int64_t Sq;                 /**< query rows per batch row (the packed total with cu_q) */
    int64_t Sk;                 /**< keys per batch row (the packed total with cu_k) */
    int64_t D;                  /**< head dim of q and k */
    int64_t Dv;                 /**< head dim of v and o */
    float scale;                /**< ladder_attention_scale() */
    float softcap;              /**< 0: none */
    ladder_attn_mask mask;      /**< causal kind and window */
    const int32_t *cu_q;        /**< cu_seqlens_q; NULL: every batch row is one sequence */
    const int32_t *cu_k;        /**< cu_seqlens_k; NULL with cu_q */
    int64_t n_seqs;             /**< packed sequences (0 without) */
    const float *dlse;          /**< the gradient of lse [B,Hq,Sq], f32; NULL: none */
    int64_t sdlse[3];           /**< its strides */
} ladder_attn_call;

/** @p p with its index tensors and @p dlse (any of them absent: data NULL) as kernel arguments. */
ladder_attn_call ladder_attn_call_of(const ladder_attention_problem *p, const ladder_tensor *cu_seqlens_q,
                                     const ladder_tensor *cu_seqlens_k, const ladder_tensor *dlse);

/** Bytes the forward must move at least: reads q, k, v, writes o (in @p dtype) and lse (f32). */
double ladder_attention_fwd_bytes(const ladder_attention_problem *p, ladder_dtype dtype);
/** Bytes the backward must move at least: reads q, k, v, o, do, lse, writes dq, dk, dv. */
double ladder_attention_bwd_bytes(const ladder_attention_problem *p, ladder_dtype dtype);
/**
 * The (query row, key) pairs that @p p's mask lets through in one batch row and head: the sum over the Sq rows of
 * the keys ladder_attn_key_range() gives each, counted exactly (S(S+1)/2 for a causal square, about half; Sq*Sk
 * without a mask). With packed sequences the problem is one sequence of the packed totals, so pairs across
 * sequences are counted too: an upper bound there.
 */
double ladder_attention_visible_pairs(const ladder_attention_problem *p);
/**
 * Forward FLOPs of @p pairs visible pairs per batch row and head, as FlashAttention counts them: two products,
 * 2*B*Hq*pairs*(D + Dv) (= 4*B*H*pairs*D with Dv = D). Softmax, masks, mods and exponentials are not counted, nor
 * the pairs a mask hides (what PyTorch's FlexAttention benchmarks call the useful work).
 */
double ladder_attention_pair_flops(const ladder_attention_problem *p, double pairs);
/** Forward FLOPs of the pairs @p p's mask lets through: 2*B*Hq*Sq*Sk*(D + Dv) without a mask (= 4*B*H*S^2*D), about
 *  half with a causal one (ladder_attention_visible_pairs(), ladder_attention_pair_flops()). */
double ladder_attention_fwd_flops(const ladder_attention_problem *p);
/** Backward FLOPs: 2.5 times the forward's. */
double ladder_attention_bwd_flops(const ladder_attention_problem *p);

/* ---- what the CPU rung and the kernels compute identically ---------------------------------------------------- */

/** The key/value head that query head @p h reads: query heads come in Hq/Hkv consecutive groups. */
LADDER_HOST_DEVICE int64_t ladder_attn_kv_head(int64_t h, int64_t Hq, int64_t Hkv) { return h / (Hq / Hkv); }

/** One sequence: its query rows [q0, q0 + Lq) and keys [k0, k0 + Lk) along Sq and Sk. */
typedef struct ladder_attn_seq {
    int64_t q0; /**< its first query row along Sq */
    int64_t Lq; /**< its query rows */
    int64_t k0; /**< its first key along Sk */
    int64_t Lk; /**< its keys */
} ladder_attn_seq;

/** Sequence @p s: from cu_seqlens_q/k when given (packed sequences), else the whole batch row (0..Sq, 0..Sk). */
LADDER_HOST_DEVICE ladder_attn_seq ladder_attn_sequence(const int32_t *cu_q, const int32_t *cu_k, int64_t s,
                                                        int64_t Sq, int64_t Sk) {
    ladder_attn_seq q;
    if (cu_q) {
        q.q0 = cu_q[s], q.Lq = (int64_t)cu_q[s + 1] - cu_q[s];
        q.k0 = cu_k[s], q.Lk = (int64_t)cu_k[s + 1] - cu_k[s];
    } else {
        q.q0 = 0, q.Lq = Sq, q.k0 = 0, q.Lk = Sk;
    }
    return q;
}

/**
 * The packed sequence that row @p t (0 <= t < cu[n_seqs]) belongs to: the last s with cu[s] <= t, so that empty
 * sequences, which own no row, are skipped (a binary search over the @p n_seqs + 1 offsets).
 */
LADDER_HOST_DEVICE int64_t ladder_attn_seq_index(const int32_t *cu, int64_t n_seqs, int64_t t) {
    int64_t lo = 0, hi = n_seqs; /* invariant: cu[lo] <= t < cu[hi] */
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        if (cu[mid] <= t) lo = mid;
        else hi = mid;
    }
    return lo;
}

/**
 * How a grid covers packed sequences with tiles of @p rows rows each, never letting a tile straddle two
 * sequences: tile @p tile is rows [*row0, *row0 + rows) of sequence *seq (clipped to its length). Without
 * @p cu there is one sequence of @p L rows. Returns false for a tile past the last one; a grid of
 * ladder_attn_tiles_bound() tiles covers every row.
 */
LADDER_HOST_DEVICE bool ladder_attn_tile(const int32_t *cu, int64_t n_seqs, int64_t L, int64_t rows, int64_t tile,
                                         int64_t *seq, int64_t *row0) {
    if (!cu) {
        *seq = 0, *row0 = tile * rows;
        return *row0 < L;
    }
    for (int64_t s = 0; s < n_seqs; s++) { /* a linear scan: sequences are few beside the tiles they hold */
        const int64_t n = ((int64_t)cu[s + 1] - cu[s] + rows - 1) / rows;
        if (tile < n) {
            *seq = s, *row0 = tile * rows;
            return true;
        }
        tile -= n;
    }
    return false;
}

/** Tiles enough for ladder_attn_tile(): each of the @p n_seqs sequences (0 without packing) wastes at most one. */
LADDER_HOST_DEVICE int64_t ladder_attn_tiles_bound(int64_t L, int64_t rows, int64_t n_seqs) {
    return (L + rows - 1) / rows + n_seqs;
}

/**
 * The keys [*lo, *hi) that query row @p i (0-based within its sequence of @p Lq rows and @p Lk keys) may see
 * under mask @p m. The diagonal is key i + Lk - Lq, or key i with top-left causal; causal cuts right of it, the
 * window (left, right; -1 = unbounded) keeps keys diag - left .. diag + right. Empty (lo >= hi): the row is fully
 * masked. A window is compared before it is added, so that one near INT64_MAX cannot overflow.
 */
LADDER_HOST_DEVICE void ladder_attn_key_range(const ladder_attn_mask *m, int64_t i, int64_t Lq, int64_t Lk,
                                              int64_t *lo, int64_t *hi) {
    const int64_t diag = i + (m->causal == LADDER_CAUSAL_TOP_LEFT ? 0 : Lk - Lq); /* |diag| <= Lq + Lk */
    int64_t a = 0, b = Lk;
    if (m->window_left >= 0 && m->window_left < diag) a = diag - m->window_left;
    if (m->causal != LADDER_CAUSAL_NONE && diag + 1 < b) b = diag + 1;
    if (m->window_right >= 0 && m->window_right < b - diag - 1) b = diag + m->window_right + 1;
    *lo = a;
    *hi = b;
}

/**
 * The keys row @p i (a position along Sq; with packed sequences, cu_seqlens_q/k of @p n_seqs sequences given, a packed
 * position) sees, as positions along Sk: its sequence's keys cut by mask @p m, [*lo, *hi), empty (*lo == *hi) for a
 * fully masked row.
 */
LADDER_HOST_DEVICE void ladder_attn_row_keys(const ladder_attn_mask *m, const int32_t *cu_q, const int32_t *cu_k,
                                             int64_t n_seqs, int64_t i, int64_t Sq, int64_t Sk, int64_t *lo,
                                             int64_t *hi) {
    const int64_t s = cu_q ? ladder_attn_seq_index(cu_q, n_seqs, i) : 0;
    const ladder_attn_seq q = ladder_attn_sequence(cu_q, cu_k, s, Sq, Sk);
    int64_t a, b;
    ladder_attn_key_range(m, i - q.q0, q.Lq, q.Lk, &a, &b);
    *lo = q.k0 + a;
    *hi = q.k0 + (b > a ? b : a);
}

/** The mask as a predicate: may row @p i see key @p j? (The same interval as ladder_attn_key_range().) */
LADDER_HOST_DEVICE bool ladder_attn_allowed(const ladder_attn_mask *m, int64_t i, int64_t j, int64_t Lq, int64_t Lk) {
    int64_t lo, hi;
    ladder_attn_key_range(m, i, Lq, Lk, &lo, &hi);
    return j >= lo && j < hi;
}

/**
 * The keys of a tile of query rows [i0, i0 + rows) (rows >= 1): [lo, hi) is seen by some row of the tile, and
 * [all_lo, all_hi) by every row (empty when all_lo >= all_hi). Both ends of a row's range never move left as the
 * row grows, so the first and the last row decide: a key tile inside [all_lo, all_hi) needs no element mask, a
 * key tile outside [lo, hi) is never visited.
 */
typedef struct ladder_attn_block {
    int64_t lo;     /**< the first key that some row of the tile sees */
    int64_t hi;     /**< one past the last key that some row of the tile sees */
    int64_t all_lo; /**< the first key that every row of the tile sees */
    int64_t all_hi; /**< one past the last key that every row of the tile sees */
} ladder_attn_block;

/** ladder_attn_block of the rows [i0, i0 + rows) of a sequence of @p Lq rows and @p Lk keys under @p m. */
LADDER_HOST_DEVICE ladder_attn_block ladder_attn_block_range(const ladder_attn_mask *m, int64_t i0, int64_t rows,
                                                             int64_t Lq, int64_t Lk) {
    ladder_attn_block k;
    ladder_attn_key_range(m, i0, Lq, Lk, &k.lo, &k.all_hi);
    ladder_attn_key_range(m, i0 + rows - 1, Lq, Lk, &k.all_lo, &k.hi);
    return k;
}

/** S from s = scale * q.k: softcap * tanh(s / softcap) when softcap > 0, else s. */
LADDER_HOST_DEVICE float ladder_attn_softcap(float s, float softcap) {
    return softcap > 0.0f ? softcap * tanhf(s / softcap) : s;
}

/** dS/ds of the softcap, from S itself: 1 - (S / softcap)^2 (the derivative of tanh), or 1 without softcap. */
LADDER_HOST_DEVICE float ladder_attn_softcap_grad(float S, float softcap) {
    if (softcap <= 0.0f) return 1.0f;
    const float t = S / softcap;
    return 1.0f - t * t;
}

/**
 * lse from the running max m and sum l = sum_j exp(S_ij - m): m + log(l), or -inf for a fully masked row (l = 0).
 * A NaN score makes l NaN, and so lse: a NaN input must never look like the masked-row marker.
 */
LADDER_HOST_DEVICE float ladder_attn_lse(float m, float l) { return l == 0.0f ? -INFINITY : m + logf(l); }

/**
 * The lse the backward subtracts to recompute P = exp(S - lse): a fully masked row's -inf becomes +inf, so
 * that every P of that row is exp(-inf) = 0 (never exp(-inf + inf) = NaN) and its gradients are zero.
 */
LADDER_HOST_DEVICE float ladder_attn_lse_for_bwd(float lse) { return lse == -INFINITY ? INFINITY : lse; }

/**
 * The Delta preprocess for one row: Delta_i = sum_d dO_i[d] * O_i[d] - dlse_i (dlse_i = 0 without a gradient
 * of lse). It is rowsum(P * dP) by the forward's O = P V, which is why the backward needs no rowsum over keys.
 * @p o is contiguous, @p dout has stride @p sdo along the Dv entries.
 */
LADDER_HOST_DEVICE float ladder_attn_delta(const float *o, const float *dout, int64_t sdo, int64_t Dv, float dlse) {
    float acc = 0.0f;
    for (int64_t d = 0; d < Dv; d++) acc += dout[d * sdo] * o[d];
    return acc - dlse;
}

#ifdef __cplusplus
}
#endif
#endif
