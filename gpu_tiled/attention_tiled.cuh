/*
 * gpu_tiled/attention_tiled.cuh: the tiled attention family (fp32) that flash, memeff and flex share: the tile sizes,
 * the arguments every kernel takes, the policies, the key-tile schedules, the loops that stage a tile of rows in
 * shared memory, and the two passes (attention_fwd.cu, attention_bwd.cu). gpu_tiled/flash.cu, memeff.cu and flex.cu
 * only pack their arguments: flash with every hook off, memeff with its bias, its gradient and dropout
 * (common/attention_gpu.cuh), flex with its mods and block lists (common/flex_gpu.cuh). Each kernel is compiled
 * once per policy (plain, hooked, flex<MOD>: picked by the launchers): as run-time branches the hooks slowed flash's
 * backward (docs/results/h100-2026-11-28-run.md).
 *
 * A block has 256 threads and works on a tile of Br = 32 query rows (or Bc = 32 keys): 8 threads per row, each
 * owning every 8th column of that row's accumulators, so that the 8 threads of a row are 8 consecutive lanes of
 * one warp and reduce with three shuffles. Shared-memory rows are padded by one float (a row stride of D + 1),
 * so that 8 threads reading one column of 8 different rows hit 8 different banks.
 */
#ifndef LADDER_GPU_TILED_ATTENTION_TILED_CUH
#define LADDER_GPU_TILED_ATTENTION_TILED_CUH

#include <stdint.h>

#include "attention_gpu.cuh"
#include "cuda_util.cuh"
#include "flex_gpu.cuh"

namespace attn_tiled {

constexpr int BR = 32;                    /* query rows per tile */
constexpr int BC = 32;                    /* keys per tile */
constexpr int LANES = 8;                  /* threads per row */
constexpr int THREADS = BR * LANES;       /* 256; also BC * LANES */
static_assert(BR == BC, "a thread maps to (row, lane) in both the query-tile and the key-tile kernels");
static_assert(LADDER_FLEX_BLOCK % BR == 0, "a block-mask tile is a whole number of this rung's tiles");

/* A strided rank-4 input [b, h, s, e]. */
struct view4 {
    const float *p;
    int64_t s[4];
};

/* What every kernel needs: the sizes and options (ladder_attn_call), the hooks, inputs, outputs and scratch. */
struct args : ladder_attn_call {
    ladder_attn_hooks hooks;       /* zeroed: plain attention */
    view4 q, k, v, dout;
    float *o, *lse, *dq, *dk, *dv; /* contiguous */
    float *delta;                  /* [B,Hq,Sq] scratch: the preprocess writes Delta there */
    ladder_flex_hooks flex;        /* zeroed but for flex */
};

inline view4 view_of(const ladder_tensor &t) {
    return view4{(const float *)t.data, {t.strides[0], t.strides[1], t.strides[2], t.strides[3]}};
}

/* The tensors every attention algorithm has, packed (the hooks stay zeroed). */
inline args pack(const ladder_attention_problem *p, const ladder_tensor &q, const ladder_tensor &k,
                 const ladder_tensor &v, const ladder_tensor &cu_q, const ladder_tensor &cu_k, const ladder_tensor &o,
                 const ladder_tensor &lse, const ladder_tensor &dout, const ladder_tensor &dlse,
                 const ladder_tensor &dq, const ladder_tensor &dk, const ladder_tensor &dv) {
    args n = {};
    static_cast<ladder_attn_call &>(n) = ladder_attn_call_of(p, &cu_q, &cu_k, &dlse);
    n.q = view_of(q), n.k = view_of(k), n.v = view_of(v);
    if (dout.data) n.dout = view_of(dout);
    n.o = (float *)o.data, n.lse = (float *)lse.data;
    n.dq = (float *)dq.data, n.dk = (float *)dk.data, n.dv = (float *)dv.data;
    return n;
}

/* The forward (attention_fwd.cu): o and lse. fwd: flash and memeff (plain or hooked, as hooks_on() says); fwd_flex:
 * flex with score mod @p mod (flex<mod>). */
ladder_status fwd(const args &a);
ladder_status fwd_flex(const args &a, int mod);
/* The backward (attention_bwd.cu): dq, dk, dv, and dS into a.hooks.dbias when set. bwd_flex: flex with score mod
 * @p mod, always the deterministic dQ pass, which sums each read's buffer shares into a.flex.part[r] when set (a row
 * per query tile of BR rows). */
ladder_status bwd(args a, bool deterministic);
ladder_status bwd_flex(args a, int mod);

/*
 * The policies: what a kernel is compiled for. Only what changes register use is a template parameter; the rest of
 * each hook is a uniform run-time branch.
 *   plain:     flash (and memeff with no hook in use): no hook compiled in;
 *   hooked:    memeff: the bias, dropout and the dbias sink, each a run-time branch;
 *   flex<MOD>: score mod MOD inlined (its buffer shares summed along lines into flex.part), the mask mods in
 *              partial tiles, the key tiles from the block lists.
 */
struct plain {
    static constexpr bool HOOKS = false, FLEX = false;
    static constexpr int MOD = LADDER_FLEX_SCORE_NONE;
};
struct hooked {
    static constexpr bool HOOKS = true, FLEX = false;
    static constexpr int MOD = LADDER_FLEX_SCORE_NONE;
};
template <int M> struct flex {
    static constexpr bool HOOKS = true, FLEX = true;
    static constexpr int MOD = M;
};

/* Does this call use a memeff hook? Each kernel is compiled without them too (plain, flash's): with them in as
 * run-time branches, flash's backward measured up to 17% slower at a head dim of 128. */
inline bool hooks_on(const args &a) { return a.hooks.bias || a.hooks.dropout_p > 0.0f || a.hooks.dbias.p; }

/*
 * S for query row i and key j (positions along Sq and Sk) of head h, batch row b, from q.k: the softcap, then
 * (hooked) the bias; flex: the score mod of s = scale * q.k. *cap_slope: dS/d(scale q.k), the softcap's derivative
 * (1 without one; flex's backward asks its mod for it instead).
 */
template <class POL>
__device__ __forceinline__ float score(const args &a, float qk, int64_t b, int64_t h, int64_t i, int64_t j,
                                       float *cap_slope) {
    if constexpr (POL::FLEX) {
        *cap_slope = 1.0f;
        return ladder_flex_score(POL::MOD, a.scale * qk, &a.flex.env, b, h, i, j);
    }
    const float c = ladder_attn_softcap(a.scale * qk, a.softcap);
    *cap_slope = ladder_attn_softcap_grad(c, a.softcap);
    if constexpr (POL::HOOKS)
        if (a.hooks.bias) return c + ladder_attn_bias_at<float>(a.hooks, b, h, i, j);
    return c;
}

/* What P[b,h,i,j] is multiplied by before it meets V (hooked, dropout: 0 or 1 / (1 - p)); 1 without dropout. */
template <class POL>
__device__ __forceinline__ float keep(const args &a, int64_t b, int64_t h, int64_t i, int64_t j) {
    if constexpr (POL::HOOKS && !POL::FLEX)
        if (a.hooks.dropout_p > 0.0f) return ladder_attn_keep(a.hooks, a, b, h, i, j);
    return 1.0f;
}

/* flex, in a partial tile: may row i see key j under the mask mods? */
__device__ __forceinline__ bool flex_allowed(const args &a, int64_t b, int64_t h, int64_t i, int64_t j) {
    return ladder_flex_masks(a.flex.masks, &a.flex.env, b, h, i, j);
}

/*
 * The key-tile schedules: the tiles a pass visits, as for (t = ...; t.more(); t.next()), t.at the tile's first
 * row or key. full(): no element of the tile is masked (its rows or keys inside the sequence too); mods(): a tile
 * that is not full applies the mask mods (flex's partial tiles) besides the bounds.
 *
 * interval: flash's and memeff's, every TILE-th position from lo up to hi; full where [at, at + TILE) lies inside
 * [all_lo, all_hi) (common/attention.h's block range). The caller adds what else full() needs.
 */
template <int TILE> struct interval_tiles {
    int64_t at, hi, all_lo, all_hi;
    __device__ bool more() const { return at < hi; }
    __device__ void next() { at += TILE; }
    __device__ bool full() const { return at >= all_lo && at + TILE <= all_hi; }
    __device__ static constexpr bool mods() { return false; }
};

/*
 * flex's: one row of block lists, its partial tiles then its full ones, each block-mask tile (LADDER_FLEX_BLOCK
 * positions) cut into tiles of TILE, the last one clipped at the length L. Full tiles skip the mask mods; partial
 * ones apply them. The order is fixed by the lists, so every sum over the tiles runs the same way every run.
 */
template <int TILE> struct list_tiles {
    const int32_t *partial, *whole; /* the row's partial and full tile indices */
    int32_t n_partial, n_whole;
    int64_t L;                       /* the length along the listed axis */
    int in_whole, e;                 /* which list (0 partial, 1 full), which entry */
    int64_t at;
    __device__ list_tiles(const int32_t *p, int32_t np, const int32_t *f, int32_t nf, int64_t len)
        : partial(p), whole(f), n_partial(np), n_whole(nf), L(len), in_whole(0), e(0), at(0) {
        settle();
    }
    /* at the first tile of entry e, moving on to the full list when the partial one is done */
    __device__ void settle() {
        if (!in_whole && e >= n_partial) in_whole = 1, e = 0;
        if (more()) at = (int64_t)(in_whole ? whole : partial)[e] * LADDER_FLEX_BLOCK;
    }
    __device__ bool more() const { return !in_whole || e < n_whole; }
    __device__ void next() {
        at += TILE;
        if (at % LADDER_FLEX_BLOCK == 0 || at >= L) e++, settle();
    }
    __device__ bool full() const { return in_whole && at + TILE <= L; }
    __device__ bool mods() const { return !in_whole; }
};

/* flex: the key tiles of query tile i0 of head h, batch row b (the forward's lists: its block-mask row). */
__device__ __forceinline__ list_tiles<BC> flex_key_tiles(const args &a, int64_t b, int64_t h, int64_t i0) {
    const flex_blocks &k = a.flex.blocks;
    const int64_t row = flex_list_row(&k, b, h, i0 / LADDER_FLEX_BLOCK, k.Tq);
    return list_tiles<BC>(k.kv_idx + row * k.Tk, k.kv_num[row], k.full_kv_idx + row * k.Tk, k.full_kv_num[row], a.Sk);
}

/* flex: the query tiles of key tile j0 of head h, batch row b (the backward's transposed lists). */
__device__ __forceinline__ list_tiles<BR> flex_query_tiles(const args &a, int64_t b, int64_t h, int64_t j0) {
    const flex_blocks &k = a.flex.blocks;
    const int64_t col = flex_list_row(&k, b, h, j0 / LADDER_FLEX_BLOCK, k.Tk);
    return list_tiles<BR>(k.q_idx + col * k.Tq, k.q_num[col], k.full_q_idx + col * k.Tq, k.full_q_num[col], a.Sq);
}

/* The key tiles a query tile visits: the interval of block range @p kb, or (flex) its block lists. */
template <class POL>
__device__ __forceinline__ auto key_tiles(const args &a, const ladder_attn_block &kb, int64_t b, int64_t h,
                                          int64_t i0) {
    if constexpr (POL::FLEX) return flex_key_tiles(a, b, h, i0);
    else return interval_tiles<BC>{kb.lo / BC * BC, kb.hi, kb.all_lo, kb.all_hi};
}

/* The query tiles the dK/dV pass visits for key tile j0 of head h: every one of the Lq rows (the pass skips those
 * whose range misses the key tile, and finds the full ones, itself), or (flex) the key tile's block lists. */
template <class POL>
__device__ __forceinline__ auto query_tiles(const args &a, int64_t b, int64_t h, int64_t j0, int64_t Lq) {
    if constexpr (POL::FLEX) return flex_query_tiles(a, b, h, j0);
    else return interval_tiles<BR>{0, Lq, 0, 0};
}

/* Accumulator columns per thread for head dims up to max(D, Dv): every 8th column, so 8, 16 or 32 of them. */
inline int cols_per_thread(int64_t D, int64_t Dv) {
    const int64_t d = D > Dv ? D : Dv;
    return d <= 64 ? 8 : d <= 128 ? 16 : 32;
}

/*
 * Rows [r0, r0 + n) of head h of batch row b of @p t (each @p width wide) into smem[TILE rows][ld], the rows
 * past n zero, so that a partial tile computes on zeros instead of reading past the sequence. Consecutive
 * threads take consecutive columns: coalesced when the last stride is 1.
 */
template <int TILE>
__device__ void load_rows(float *smem, int ld, const view4 &t, int64_t b, int64_t h, int64_t r0, int64_t n,
                          int64_t width) {
    for (int64_t x = threadIdx.x; x < TILE * width; x += blockDim.x) {
        const int64_t r = x / width, e = x % width;
        smem[r * ld + e] = r < n ? t.p[b * t.s[0] + h * t.s[1] + (r0 + r) * t.s[2] + e * t.s[3]] : 0.0f;
    }
}

/* Sum (or max) over the 8 lanes of a row: lanes 8g .. 8g+7 of one warp, so xor 4, 2, 1 stays inside the group. */
__device__ __forceinline__ float row_sum(float x) {
    for (int off = LANES / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}
__device__ __forceinline__ float row_max(float x) {
    for (int off = LANES / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

/* a . b over n entries of two shared-memory rows. */
__device__ __forceinline__ float dot(const float *a, const float *b, int64_t n) {
    float acc = 0.0f;
    for (int64_t e = 0; e < n; e++) acc += a[e] * b[e];
    return acc;
}

} // namespace attn_tiled

#endif
