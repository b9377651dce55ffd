/**
 * @file flex_mods.h
 * @brief flex's mods: each score_mod a plain function with its hand-written derivatives, each mask_mod a plain
 *        predicate, compiled by gcc and nvcc alike (LADDER_HOST_DEVICE). The registry that names them, with the
 *        buffers they read, is common/flex_mods.c (flex.h declares it).
 *
 * A score_mod changes every score s = scale * q_i . k_j of query row i and key j, in batch row b and query head h:
 *
 *     S = score_mod(s, b, h, i, j, buffers)
 *
 * and the backward needs its derivatives: dS/ds (the chain rule carries dL/dS to dL/ds, and so to dQ and dK) and
 * dS/dx for every buffer element x that it read (the buffer's gradient: the sum of dL/dS * dS/dx over every score
 * that read x). Each mod therefore comes as two functions with one signature each:
 *
 *     float             ladder_flex_NAME(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j)
 *     ladder_flex_grad  ladder_flex_NAME_grad(the same arguments)
 *
 * where the second returns dS/ds and, for each buffer read r (at most ::LADDER_FLEX_MAX_READS), the element it
 * read as a flat index into that buffer's gradient (contiguous, the buffer's shape) and dS/d(that element). Which
 * element a score reads depends on its position (b, h, i, j) alone, never on s (a rung may look it up first). The
 * switch in ladder_flex_score() and ladder_flex_score_grad() names each mod by its ::ladder_flex_score_id; with the
 * id a compile-time constant (a kernel's template parameter), the switch folds away and the mod inlines.
 *
 * A mask_mod is a predicate: may row i of head h in batch row b see key j? ladder_flex_masks() takes their
 * conjunction (a bit set of ::ladder_flex_mask_id). Indices i and j are positions in the whole sequence (0..Sq-1,
 * 0..Sk-1): the masks are top-left aligned, as PyTorch users write them (causal is q_idx >= kv_idx).
 *
 * Adding a mod: its two functions here, one case in each switch, its id in the enum, and one line in the registry
 * (common/flex_mods.c). chapters/05-flex-attention.md walks through it.
 */
#ifndef LADDER_FLEX_MODS_H
#define LADDER_FLEX_MODS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Side of a block-mask tile in rows and keys: a multiple of every rung's tile (the tiled rungs use 64 and 128). */
#define LADDER_FLEX_BLOCK 128

/** Most buffer elements one score reads (bias_qk reads two). */
#define LADDER_FLEX_MAX_READS 2

/** The score mods, by number: a problem's score_mod field and the registry's ids. */
typedef enum ladder_flex_score_id {
    LADDER_FLEX_SCORE_NONE = 0, /**< S = s */
    LADDER_FLEX_SOFTCAP,        /**< S = softcap * tanh(s / softcap) */
    LADDER_FLEX_ALIBI,          /**< S = s + slopes[h] * (j - i) */
    LADDER_FLEX_REL_BIAS,       /**< S = s + rel_bias[h, j - i + Sq - 1] */
    LADDER_FLEX_T5_BIAS,        /**< S = s + t5_bias[h, bucket(j - i)] */
    LADDER_FLEX_BIAS_QK,        /**< S = s + bq[h, i] + bk[h, j] */
    LADDER_FLEX_SCORE_COUNT     /**< how many (not a mod) */
} ladder_flex_score_id;

/** The mask mods, by bit: a problem's mask_mods field is a set of (1 << id), their conjunction. */
typedef enum ladder_flex_mask_id {
    LADDER_FLEX_CAUSAL = 0, /**< i >= j */
    LADDER_FLEX_WINDOW,     /**< i - j <= window_left */
    LADDER_FLEX_PREFIX_LM,  /**< j < prefix[b] or i >= j */
    LADDER_FLEX_DOCUMENT,   /**< doc_q[i] == doc_k[j] */
    LADDER_FLEX_MASK_COUNT  /**< how many (not a mask) */
} ladder_flex_mask_id;

/** One buffer as a mod reads it: element (x, y) is p[x * s[0] + y * s[1]] (a 1-D buffer: y = 0). */
typedef struct ladder_flex_buf {
    const void *p; /**< its first element (f32 or i32, host or device memory); NULL: absent */
    int64_t s[2];  /**< strides in elements */
} ladder_flex_buf;

/** Everything a mod reads besides the score and the indices: the problem's sizes and options, and the buffers. */
typedef struct ladder_flex_env {
    int64_t Sq;           /**< query rows (rel_bias is indexed from -(Sq - 1)) */
    int64_t Sk;           /**< keys */
    float softcap;        /**< the softcap mod's cap (> 0 when it is used) */
    int64_t window_left;  /**< the window mask's reach to the left of the diagonal */
    int64_t num_buckets;  /**< t5_bias's buckets */
    ladder_flex_buf slopes;   /**< f32 [Hq] */
    ladder_flex_buf rel_bias; /**< f32 [Hq, Sq + Sk - 1] */
    ladder_flex_buf t5_bias;  /**< f32 [Hq, num_buckets] */
    ladder_flex_buf bq;       /**< f32 [Hq, Sq] */
    ladder_flex_buf bk;       /**< f32 [Hq, Sk] */
    ladder_flex_buf prefix;   /**< i32 [B] */
    ladder_flex_buf doc_q;    /**< i32 [Sq] */
    ladder_flex_buf doc_k;    /**< i32 [Sk] */
} ladder_flex_env;

/** What a score mod's derivative function returns for one score. */
typedef struct ladder_flex_grad {
    float dscore;                       /**< dS/ds */
    int64_t at[LADDER_FLEX_MAX_READS];  /**< read r: the element's flat index in its buffer's gradient */
    float d[LADDER_FLEX_MAX_READS];     /**< read r: dS/d(that element) */
} ladder_flex_grad;

/** Element (x, y) of an f32 buffer. */
LADDER_HOST_DEVICE float ladder_flex_f(const ladder_flex_buf *b, int64_t x, int64_t y) {
    return ((const float *)b->p)[x * b->s[0] + y * b->s[1]];
}

/** Element x of a 1-D i32 buffer. */
LADDER_HOST_DEVICE int32_t ladder_flex_i(const ladder_flex_buf *b, int64_t x) {
    return ((const int32_t *)b->p)[x * b->s[0]];
}

/** A derivative with dS/ds = @p dscore and no buffer read. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_grad_of(float dscore) {
    ladder_flex_grad g;
    g.dscore = dscore;
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++) g.at[r] = 0, g.d[r] = 0.0f;
    return g;
}

/* ---- score mods: S, then dS/ds and dS/d(buffer element) --------------------------------------------------------- */

/** softcap: S = softcap * tanh(s / softcap) (Gemma 2, Grok). */
LADDER_HOST_DEVICE float ladder_flex_softcap(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                             int64_t j) {
    (void)b, (void)h, (void)i, (void)j;
    return e->softcap * tanhf(s / e->softcap);
}

/** dS/ds = 1 - tanh(s / softcap)^2; no buffer. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_softcap_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h,
                                                             int64_t i, int64_t j) {
    (void)b, (void)h, (void)i, (void)j;
    const float t = tanhf(s / e->softcap);
    return ladder_flex_grad_of(1.0f - t * t);
}

/** alibi: S = s + slopes[h] * (j - i) (Press et al.; here with learnable slopes). */
LADDER_HOST_DEVICE float ladder_flex_alibi(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                           int64_t j) {
    (void)b;
    return s + ladder_flex_f(&e->slopes, h, 0) * (float)(j - i);
}

/** dS/ds = 1; dS/dslopes[h] = j - i. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_alibi_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h,
                                                           int64_t i, int64_t j) {
    (void)s, (void)e, (void)b;
    ladder_flex_grad g = ladder_flex_grad_of(1.0f);
    g.at[0] = h, g.d[0] = (float)(j - i);
    return g;
}

/** rel_bias: S = s + rel_bias[h, j - i + Sq - 1] (one learnable bias per head and relative position). */
LADDER_HOST_DEVICE float ladder_flex_rel_bias(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                              int64_t j) {
    (void)b;
    return s + ladder_flex_f(&e->rel_bias, h, j - i + e->Sq - 1);
}

/** dS/ds = 1; dS/drel_bias[h, j - i + Sq - 1] = 1. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_rel_bias_grad(float s, const ladder_flex_env *e, int64_t b,
                                                              int64_t h, int64_t i, int64_t j) {
    (void)s, (void)b;
    ladder_flex_grad g = ladder_flex_grad_of(1.0f);
    g.at[0] = h * (e->Sq + e->Sk - 1) + (j - i + e->Sq - 1), g.d[0] = 1.0f;
    return g;
}

/** floor(log2(@p x)) for x >= 1, from the count of leading zero bits. */
LADDER_HOST_DEVICE int64_t ladder_floor_log2(int64_t x) {
#ifdef __CUDA_ARCH__
    return 63 - __clzll(x);
#else
    return 63 - __builtin_clzll((unsigned long long)x);
#endif
}

/**
 * The bucket of relative position @p rel = j - i among @p num_buckets (>= 2), log-spaced as in T5 but with
 * integer edges, so that every rung and the oracle agree exactly: half the buckets for keys right of the query
 * (rel > 0), half for the rest; within a half of n buckets, distances below n/2 get one bucket each, and beyond,
 * each bucket is twice as wide as the one before (n/2 + floor(log2(distance / (n/2)))), the last one unbounded.
 */
LADDER_HOST_DEVICE int64_t ladder_flex_t5_bucket(int64_t rel, int64_t num_buckets) {
    const int64_t n = num_buckets / 2, exact = n / 2, base = rel > 0 ? n : 0, dist = rel > 0 ? rel : -rel;
    if (dist < exact) return base + dist;
    if (exact == 0) return base;
    /* exact + floor(log2(dist / exact)) without a division (whose 64-bit routine spilled registers where the kernels
     * call this): the difference of the two floor(log2)s, one less where exact shifted by it passes dist */
    int64_t k = ladder_floor_log2(dist) - ladder_floor_log2(exact);
    if ((exact << k) > dist) k--;
    return base + (exact + k < n - 1 ? exact + k : n - 1);
}

/** t5_bias: S = s + t5_bias[h, bucket(j - i)] (T5's bucketed relative bias). */
LADDER_HOST_DEVICE float ladder_flex_t5_bias(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                             int64_t j) {
    (void)b;
    return s + ladder_flex_f(&e->t5_bias, h, ladder_flex_t5_bucket(j - i, e->num_buckets));
}

/** dS/ds = 1; dS/dt5_bias[h, bucket(j - i)] = 1. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_t5_bias_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h,
                                                             int64_t i, int64_t j) {
    (void)s, (void)b;
    ladder_flex_grad g = ladder_flex_grad_of(1.0f);
    g.at[0] = h * e->num_buckets + ladder_flex_t5_bucket(j - i, e->num_buckets), g.d[0] = 1.0f;
    return g;
}

/** bias_qk: S = s + bq[h, i] + bk[h, j] (a score that reads two buffers). */
LADDER_HOST_DEVICE float ladder_flex_bias_qk(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                             int64_t j) {
    (void)b;
    return s + ladder_flex_f(&e->bq, h, i) + ladder_flex_f(&e->bk, h, j);
}

/** dS/ds = 1; dS/dbq[h, i] = 1 (read 0); dS/dbk[h, j] = 1 (read 1). */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_bias_qk_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h,
                                                             int64_t i, int64_t j) {
    (void)s, (void)b;
    ladder_flex_grad g = ladder_flex_grad_of(1.0f);
    g.at[0] = h * e->Sq + i, g.d[0] = 1.0f;
    g.at[1] = h * e->Sk + j, g.d[1] = 1.0f;
    return g;
}

/**
 * Is score mod @p mod additive: S = s + S(0), where the term S(0) depends on (b, h, i, j) and the buffers alone, so
 * that dS/ds = 1? Every built-in mod but softcap (and none, whose term is 0) is. A new mod of that kind is named here
 * too: the Hopper backward then reads its terms from a tile that spare warps fill
 * (gpu_tensorcore/attention_tc_hopper_bwd.cuh), and the tests check the claim.
 */
LADDER_HOST_DEVICE LADDER_CONSTEXPR bool ladder_flex_additive(int mod) {
    return mod == LADDER_FLEX_ALIBI || mod == LADDER_FLEX_REL_BIAS || mod == LADDER_FLEX_T5_BIAS ||
           mod == LADDER_FLEX_BIAS_QK;
}

/** S = score mod @p mod (a ::ladder_flex_score_id) of s; LADDER_FLEX_SCORE_NONE: s. */
LADDER_HOST_DEVICE float ladder_flex_score(int mod, float s, const ladder_flex_env *e, int64_t b, int64_t h,
                                           int64_t i, int64_t j) {
    switch (mod) {
    case LADDER_FLEX_SOFTCAP: return ladder_flex_softcap(s, e, b, h, i, j);
    case LADDER_FLEX_ALIBI: return ladder_flex_alibi(s, e, b, h, i, j);
    case LADDER_FLEX_REL_BIAS: return ladder_flex_rel_bias(s, e, b, h, i, j);
    case LADDER_FLEX_T5_BIAS: return ladder_flex_t5_bias(s, e, b, h, i, j);
    case LADDER_FLEX_BIAS_QK: return ladder_flex_bias_qk(s, e, b, h, i, j);
    default: return s;
    }
}

/** The derivatives of score mod @p mod at s; LADDER_FLEX_SCORE_NONE: dS/ds = 1 and no buffer. */
LADDER_HOST_DEVICE ladder_flex_grad ladder_flex_score_grad(int mod, float s, const ladder_flex_env *e, int64_t b,
                                                           int64_t h, int64_t i, int64_t j) {
    switch (mod) {
    case LADDER_FLEX_SOFTCAP: return ladder_flex_softcap_grad(s, e, b, h, i, j);
    case LADDER_FLEX_ALIBI: return ladder_flex_alibi_grad(s, e, b, h, i, j);
    case LADDER_FLEX_REL_BIAS: return ladder_flex_rel_bias_grad(s, e, b, h, i, j);
    case LADDER_FLEX_T5_BIAS: return ladder_flex_t5_bias_grad(s, e, b, h, i, j);
    case LADDER_FLEX_BIAS_QK: return ladder_flex_bias_qk_grad(s, e, b, h, i, j);
    default: return ladder_flex_grad_of(1.0f);
    }
}

/* ---- mask mods ----------------------------------------------------------------------------------------------- */

/** causal: row i sees keys j <= i. */
LADDER_HOST_DEVICE bool ladder_flex_causal(const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    (void)e, (void)b, (void)h;
    return i >= j;
}

/** window: row i sees keys at most window_left to its left (and, alone, every key to its right). */
LADDER_HOST_DEVICE bool ladder_flex_window(const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    (void)b, (void)h;
    return i - j <= e->window_left;
}

/** prefix_lm: the first prefix[b] keys are seen by every row, the rest causally. */
LADDER_HOST_DEVICE bool ladder_flex_prefix_lm(const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    (void)h;
    return j < ladder_flex_i(&e->prefix, b) || i >= j;
}

/** document: row i sees only keys of its own document. */
LADDER_HOST_DEVICE bool ladder_flex_document(const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j) {
    (void)b, (void)h;
    return ladder_flex_i(&e->doc_q, i) == ladder_flex_i(&e->doc_k, j);
}

/** Mask mod @p mod (a ::ladder_flex_mask_id): may row i see key j? */
LADDER_HOST_DEVICE bool ladder_flex_mask(int mod, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                         int64_t j) {
    switch (mod) {
    case LADDER_FLEX_CAUSAL: return ladder_flex_causal(e, b, h, i, j);
    case LADDER_FLEX_WINDOW: return ladder_flex_window(e, b, h, i, j);
    case LADDER_FLEX_PREFIX_LM: return ladder_flex_prefix_lm(e, b, h, i, j);
    case LADDER_FLEX_DOCUMENT: return ladder_flex_document(e, b, h, i, j);
    default: return true;
    }
}

/** The conjunction of the mask mods in @p set (bit m: mask mod m): true for the empty set. */
LADDER_HOST_DEVICE bool ladder_flex_masks(unsigned set, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i,
                                          int64_t j) {
    for (int m = 0; m < LADDER_FLEX_MASK_COUNT; m++)
        if (((set >> m) & 1u) && !ladder_flex_mask(m, e, b, h, i, j)) return false;
    return true;
}

/** The mask mods that give each row one interval of keys: causal [0, i + 1), window [i - window_left, inf), prefix_lm
 *  [0, max(prefix[b], i + 1)). Not document: a row sees its document's keys, which need not lie together. */
#define LADDER_FLEX_INTERVAL_MASKS \
    ((1u << LADDER_FLEX_CAUSAL) | (1u << LADDER_FLEX_WINDOW) | (1u << LADDER_FLEX_PREFIX_LM))

/**
 * The keys row @p i of batch row @p b sees under the interval mods in @p set (LADDER_FLEX_INTERVAL_MASKS; the others
 * are left out), as [*lo, *hi), empty when *lo >= *hi: their conjunction is the intervals' intersection, and with none
 * in the set every key, [0, INT64_MAX). A rung that masks a tile's elements narrows each row's key range to it once
 * and asks only the set's other mods at each element.
 */
LADDER_HOST_DEVICE void ladder_flex_mask_interval(unsigned set, const ladder_flex_env *e, int64_t b, int64_t i,
                                                 int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = INT64_MAX;
    if (set & (1u << LADDER_FLEX_CAUSAL)) h = i + 1;
    if (set & (1u << LADDER_FLEX_WINDOW)) l = i - e->window_left > 0 ? i - e->window_left : 0;
    if (set & (1u << LADDER_FLEX_PREFIX_LM)) {
        const int64_t p = ladder_flex_i(&e->prefix, b), end = p > i + 1 ? p : i + 1;
        h = h < end ? h : end;
    }
    *lo = l, *hi = h;
}

/* ---- block masks: what every rung's builder and reader share ---------------------------------------------------- */

/** What a tile of LADDER_FLEX_BLOCK rows and keys is under a mask: never visited, visited with the mask, or without. */
enum { LADDER_FLEX_TILE_EMPTY = 0, LADDER_FLEX_TILE_PARTIAL = 1, LADDER_FLEX_TILE_FULL = 2 };

/** What mask mod @p mod is over every element of rows [i0, i1) by keys [j0, j1) (a nonempty rectangle), where its
 * definition decides that from the rectangle's corners (and, for document, the ranges of its document ids): empty
 * or full, or LADDER_FLEX_TILE_PARTIAL when it cannot tell without the elements. Exact: it never answers empty or
 * full for a rectangle that is not. */
LADDER_HOST_DEVICE int ladder_flex_mask_bounds(int mod, const ladder_flex_env *e, int64_t b, int64_t i0, int64_t i1,
                                               int64_t j0, int64_t j1) {
    switch (mod) {
    case LADDER_FLEX_CAUSAL: /* i >= j */
        return i0 >= j1 - 1 ? LADDER_FLEX_TILE_FULL : i1 - 1 < j0 ? LADDER_FLEX_TILE_EMPTY : LADDER_FLEX_TILE_PARTIAL;
    case LADDER_FLEX_WINDOW: /* i - j <= window_left */
        return i1 - 1 - j0 <= e->window_left ? LADDER_FLEX_TILE_FULL
               : i0 - (j1 - 1) > e->window_left ? LADDER_FLEX_TILE_EMPTY
                                                : LADDER_FLEX_TILE_PARTIAL;
    case LADDER_FLEX_PREFIX_LM: { /* j < prefix[b] or i >= j */
        const int64_t prefix = ladder_flex_i(&e->prefix, b);
        if (j1 - 1 < prefix || i0 >= j1 - 1) return LADDER_FLEX_TILE_FULL;
        return j0 >= prefix && i1 - 1 < j0 ? LADDER_FLEX_TILE_EMPTY : LADDER_FLEX_TILE_PARTIAL;
    }
    case LADDER_FLEX_DOCUMENT: { /* doc_q[i] == doc_k[j]: compare the ranges of the ids */
        int32_t qlo = ladder_flex_i(&e->doc_q, i0), qhi = qlo, klo = ladder_flex_i(&e->doc_k, j0), khi = klo;
        for (int64_t i = i0 + 1; i < i1; i++) {
            const int32_t d = ladder_flex_i(&e->doc_q, i);
            qlo = d < qlo ? d : qlo, qhi = d > qhi ? d : qhi;
        }
        for (int64_t j = j0 + 1; j < j1; j++) {
            const int32_t d = ladder_flex_i(&e->doc_k, j);
            klo = d < klo ? d : klo, khi = d > khi ? d : khi;
        }
        if (qlo == qhi && klo == khi && qlo == klo) return LADDER_FLEX_TILE_FULL;
        return qhi < klo || khi < qlo ? LADDER_FLEX_TILE_EMPTY : LADDER_FLEX_TILE_PARTIAL;
    }
    default: return LADDER_FLEX_TILE_PARTIAL; /* a mask mod with no bounds here: its elements decide */
    }
}

/**
 * Tile (tq, tk) of batch row @p b and head @p h under the mask mods @p set: full when every one of its elements
 * (those inside Sq x Sk) is allowed, empty when none is, else partial. The empty set makes every tile full. Each
 * mask mod's bounds (ladder_flex_mask_bounds()) settle most tiles: one mod's empty makes the tile empty, every
 * mod's full makes it full. Otherwise it evaluates the mask on the tile's elements and stops at the first pair
 * that proves it partial. (A document mask over 128k tokens has about a million tiles, nearly all empty: their
 * elements were most of the build's time.)
 */
LADDER_HOST_DEVICE int ladder_flex_tile_kind(unsigned set, const ladder_flex_env *e, int64_t b, int64_t h, int64_t tq,
                                             int64_t tk) {
    if (set == 0) return LADDER_FLEX_TILE_FULL;
    const int64_t i0 = tq * LADDER_FLEX_BLOCK, j0 = tk * LADDER_FLEX_BLOCK;
    const int64_t i1 = i0 + LADDER_FLEX_BLOCK < e->Sq ? i0 + LADDER_FLEX_BLOCK : e->Sq;
    const int64_t j1 = j0 + LADDER_FLEX_BLOCK < e->Sk ? j0 + LADDER_FLEX_BLOCK : e->Sk;
    bool every_full = true;
    for (int m = 0; m < LADDER_FLEX_MASK_COUNT; m++) {
        if (!((set >> m) & 1u)) continue;
        const int kind = ladder_flex_mask_bounds(m, e, b, i0, i1, j0, j1);
        if (kind == LADDER_FLEX_TILE_EMPTY) return LADDER_FLEX_TILE_EMPTY;
        every_full = every_full && kind == LADDER_FLEX_TILE_FULL;
    }
    if (every_full) return LADDER_FLEX_TILE_FULL;
    bool any = false, all = true;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
            if (ladder_flex_masks(set, e, b, h, i, j)) any = true;
            else all = false;
            if (any && !all) return LADDER_FLEX_TILE_PARTIAL;
        }
    return all ? LADDER_FLEX_TILE_FULL : LADDER_FLEX_TILE_EMPTY;
}

/**
 * One row of the block lists from a row of tile kinds: the partial tiles' indices (ascending) into @p partial and
 * their count into *n_partial, the full ones into @p full and *n_full. kind[t * stride], t = 0..n-1, is tile t's
 * kind. The forward's lists are rows of kinds [Tq, Tk] (stride 1); the backward's are its columns (stride Tk).
 */
LADDER_HOST_DEVICE void ladder_flex_list_row(const unsigned char *kind, int64_t stride, int64_t n, int32_t *partial,
                                             int32_t *n_partial, int32_t *full, int32_t *n_full) {
    int32_t np = 0, nf = 0;
    for (int64_t t = 0; t < n; t++) {
        const int k = kind[t * stride];
        if (k == LADDER_FLEX_TILE_PARTIAL) partial[np++] = (int32_t)t;
        else if (k == LADDER_FLEX_TILE_FULL) full[nf++] = (int32_t)t;
    }
    *n_partial = np;
    *n_full = nf;
}

#ifdef __cplusplus
}
#endif
#endif
