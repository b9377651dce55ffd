/*
 * gpu_tensorcore/attention_tc.cuh: the tensor-core attention family that flash, memeff and flex share: the
 * arguments, the policies, the head-dim configurations, the key-tile schedules, and the loop that stages a tile of
 * 16-bit rows in shared memory. The kernels are in attention_tc_fwd.cuh and attention_tc_bwd.cuh, compiled per head
 * dims by the attention_*.cu files; gpu_tensorcore/flash.cu, memeff.cu and flex.cu pack their arguments and pick a
 * policy.
 *
 * Policies: the kernels take one as a template parameter, and it says only whether the hooks of
 * common/attention_gpu.cuh (bias, dropout, dS into the bias's gradient) and split keys are compiled in at all
 * (EXTRAS): they add registers and instructions to the inner loops, so that plain attention (flash, and memeff
 * without any of them) runs kernels without them. Within a policy, which hooks are on is a uniform run-time
 * branch. flex's policy (FLEX) carries its score mod as a compile-time id, so that the mod inlines; its mask mods
 * are run-time data, checked in partial tiles only, and its key tiles come from the block lists.
 *
 * Head dims: a kernel is compiled for a padded pair (HD, HDV) of multiples of 16: (64,64), (128,128),
 * (192,192), (192,128) and (256,256). Any D, Dv <= 256 runs on the smallest pair that holds both (32 on 64,
 * 96 on 128): the padding columns are zero in shared memory, so they add nothing to a dot product and produce
 * output columns that are never written. Fewer pairs keep the library small; a pair of its own for 32 or 96
 * would save their padding's work.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_CUH

#include <stdint.h>

#include "attention_gpu.cuh"
#include "cuda_util.cuh"
#include "fast_exp.cuh"
#include "flex_gpu.cuh"
#include "mma.cuh"

namespace attn_tc {

/* Plain attention: no hook is compiled in, and every block of the forward and the deterministic dQ owns all the
 * key tiles of its query tile. */
struct plain {
    static constexpr bool EXTRAS = false, FLEX = false;
};
/* Memory-efficient attention's hooks: the bias, dropout and dS into the bias's gradient (each when set), and
 * split keys (args::splits blocks per query tile). */
struct hooked {
    static constexpr bool EXTRAS = true, FLEX = false;
};
/* flex's: score mod M inlined (common/flex_mods.h's switch folds away), the mask mods in partial tiles, the tiles from
 * the block lists, each buffer read's shares of dS summed along lines into args::flex.part; no memeff hook, no split
 * keys. */
template <int M> struct flex {
    static constexpr bool EXTRAS = false, FLEX = true;
    static constexpr int MOD = M;
    /* The backward's tiles: 128 keys a block and 64 query rows a step without a score mod (flash's at a head dim of
     * 128; with flash's 128 rows at 64 the dK/dV pass spilled on sm_80). With one, 32 rows (with 64 at a head dim
     * of 64, rel_bias and bias_qk spilled) and 128 keys, but 64 for rel_bias, whose strided read of a 2-D table
     * per score spilled beside 128 keys' dK and dV on sm_80, and for t5_bias, whose logarithm per score has not
     * run faster with 128 (timed in separate leases so far) */
    static constexpr int BWD_ROWS = M == LADDER_FLEX_SCORE_NONE ? 64 : 32;
    static constexpr int BWD_KEYS = M == LADDER_FLEX_REL_BIAS || M == LADDER_FLEX_T5_BIAS ? 64 : 128;
};

/* Does policy Pol change the scores (flex with a score mod)? Without one, flex's S is flash's scale q.k, which the
 * Hopper kernels fold into the exponential's multiply-add as flash's do. */
template <class Pol> __host__ __device__ constexpr bool has_score_mod() {
    if constexpr (Pol::FLEX) return Pol::MOD != LADDER_FLEX_SCORE_NONE;
    else return false;
}

/* Does policy Pol add a term to the scores (flex with an additive mod: S = s + S(0), ladder_flex_additive())? */
template <class Pol> __host__ __device__ constexpr bool has_additive_mod() {
    if constexpr (Pol::FLEX) return ladder_flex_additive(Pol::MOD);
    else return false;
}

/* Is policy Pol flex with the alibi mod (whose slopes' gradient the Hopper backward sums per head)? */
template <class Pol> __host__ __device__ constexpr bool is_alibi() {
    if constexpr (Pol::FLEX) return Pol::MOD == LADDER_FLEX_ALIBI;
    else return false;
}

/* *p += x, atomically, as a reduction (red): no value comes back, so nothing waits for one. (CUDA's atomicAdd is
 * compiled to red only where the compiler sees the value unused and no fence after it that would wait for it.) */
__device__ __forceinline__ void atomic_add1(float *p, float x) {
    asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(p), "f"(x) : "memory");
}

/*
 * p[0] += x and p[1] += y, the same way, @p p 8-byte aligned in global memory: one vector reduction on sm_90 (red's
 * .v2.f32, which exists from that architecture on), two scalar ones before it. Half the atomics means half the
 * instructions that hold their registers until the memory system has taken them (chapter 3).
 */
__device__ __forceinline__ void atomic_add2(float *p, float x, float y) {
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(p), "f"(x), "f"(y) : "memory");
#else
    atomic_add1(p, x);
    atomic_add1(p + 1, y);
#endif
}

/* A strided rank-4 input of 16-bit elements [b, h, s, e]; rows16: each row may be copied 16 bytes at a time. */
struct view4 {
    const uint16_t *p;
    int64_t s[4];
    bool rows16;
};

/* What every kernel needs: the sizes and options (ladder_attn_call), the hooks, and the tensors. q, k, v, dout
 * and the outputs o, dq, dk, dv hold 16-bit elements. */
struct args : ladder_attn_call {
    ladder_attn_hooks hooks; /* zeroed: plain attention */
    view4 bias;              /* the hooks' bias as the kernels stage it (hooks.bias, hooks.sbias) */
    view4 q, k, v, dout;
    uint16_t *o, *dq, *dk, *dv; /* contiguous */
    float *lse;                 /* contiguous, f32 */
    float *delta;               /* [B,Hq,Sq] scratch: Delta from the preprocess */
    int64_t splits;             /* blocks per query tile (split keys) of the forward and the deterministic dQ; 1: none */
    float *o_part, *lse_part;   /* with splits > 1: [splits,B,Hq,Sq,Dv] and [splits,B,Hq,Sq] partials (fp32) */
    float *dq_accum;            /* fp32 scratch: [B,Hq,Sq,D] for the atomic dQ; [splits,B,Hq,Sq,D] partials for the
                                   split deterministic one; else nullptr */
    ladder_flex_hooks flex;     /* zeroed but for flex */
};

inline view4 view_of(const ladder_tensor &t) {
    return view4{(const uint16_t *)t.data, {t.strides[0], t.strides[1], t.strides[2], t.strides[3]},
                 t.data != nullptr && ladder_rows16(&t, 1)};
}

/* The tensors every attention algorithm has, packed (the hooks stay zeroed). */
inline args pack(const ladder_attention_problem *p, const ladder_tensor &q, const ladder_tensor &k,
                 const ladder_tensor &v, const ladder_tensor &cu_q, const ladder_tensor &cu_k, const ladder_tensor &o,
                 const ladder_tensor &lse, const ladder_tensor &dout, const ladder_tensor &dlse,
                 const ladder_tensor &dq, const ladder_tensor &dk, const ladder_tensor &dv) {
    args n = {};
    static_cast<ladder_attn_call &>(n) = ladder_attn_call_of(p, &cu_q, &cu_k, &dlse);
    n.splits = 1;
    n.q = view_of(q), n.k = view_of(k), n.v = view_of(v);
    if (dout.data) n.dout = view_of(dout);
    n.o = (uint16_t *)o.data, n.lse = (float *)lse.data;
    n.dq = (uint16_t *)dq.data, n.dk = (uint16_t *)dk.data, n.dv = (uint16_t *)dv.data;
    return n;
}

/*
 * Decoding with grouped heads: one query row (Sq = 1) per head, and the G = Hq / Hkv query heads of a key/value
 * head read the same keys. Seen as G rows of one head (q [B,Hq,1,D] as [B,Hkv,G,D], and o, lse and the bias
 * alike), they share a block and its key tiles, which are loaded once instead of G times and multiplied as one
 * tile. The memory is the same, only sizes and strides change, and the dropout counter of element (b, h, 0, j),
 * ((b*Hq + h)*1 + 0)*Sk + j, is the view's ((b*Hkv + h / G)*G + h % G)*Sk + j. It applies where the mask leaves
 * the row every key, so that the view's rows need no mask (a decoding step under bottom-right causal masking);
 * the forward only. Returns whether @p a was changed.
 */
inline bool pack_gqa_rows(args &a) {
    if (a.Sq != 1 || a.Hq == a.Hkv || a.cu_q) return false;
    int64_t lo, hi;
    ladder_attn_key_range(&a.mask, 0, 1, a.Sk, &lo, &hi);
    if (lo != 0 || hi != a.Sk) return false;
    const int64_t G = a.Hq / a.Hkv;
    a.Hq = a.Hkv, a.Sq = G;
    a.mask.causal = LADDER_CAUSAL_NONE, a.mask.window_left = a.mask.window_right = -1;
    a.q.s[2] = a.q.s[1], a.q.s[1] *= G; /* rows16 holds still: the head stride was checked (Hq > 1) */
    a.bias.s[2] = a.hooks.sbias[2] = a.hooks.sbias[1];
    a.bias.s[1] = a.hooks.sbias[1] *= G;
    return true;
}

/*
 * A split-key forward (a.splits > 1): @p run (the forward's launch, args -> ladder_status) writes each split's
 * normalised o and lse into fp32 partials, which one combine then merges into a.o and a.lse (stored as T).
 */
template <class T, class Run> ladder_status fwd_split(const args &a, Run run) {
    const int64_t rows = a.B * a.Hq * a.Sq;
    ladder_scratch o_part, lse_part;
    LADDER_TRY(o_part.alloc(sizeof(float) * (size_t)(a.splits * rows * a.Dv)));
    LADDER_TRY(lse_part.alloc(sizeof(float) * (size_t)(a.splits * rows)));
    args s = a;
    s.o_part = (float *)o_part.ptr, s.lse_part = (float *)lse_part.ptr;
    LADDER_TRY(run(s));
    return ladder_attn_combine<T>(rows, a.Dv, a.splits, s.o_part, s.lse_part, a.o, a.lse);
}

/* The forward of policy Pol (attention_tc.cu): o and lse, in @p dtype (bf16 or f16). */
template <class Pol> ladder_status fwd(const args &a, ladder_dtype dtype);
/* The backward of policy Pol (attention_tc.cu): dq, dk, dv, and dS into a.hooks.dbias when set. */
template <class Pol> ladder_status bwd(args a, bool deterministic, ladder_dtype dtype);

/* The padded head dims (HD, HDV) a problem runs at: the smallest compiled pair that holds D and Dv. */
struct head_dims {
    int hd, hdv;
};
inline head_dims pick_head_dims(int64_t D, int64_t Dv) {
    if (D <= 192 && D > 128 && Dv <= 128) return {192, 128};
    const int64_t d = D > Dv ? D : Dv;
    const int hd = d <= 64 ? 64 : d <= 128 ? 128 : d <= 192 ? 192 : 256;
    return {hd, hd};
}

/*
 * Rows [r0, r0 + n) of head h of batch row b of @p t, @p width real columns each, into smem[ROWS][ld] as
 * 16-bit elements, padded with zeros to COLS columns and to ROWS rows, by a block of THREADS threads. When
 * every row may be copied 16 bytes at a time and the width is a multiple of 8, each 16-byte chunk is one
 * cp.async (committed by the caller), a zero fill where it lies past the rows or the width, in a loop with
 * compile-time bounds (a loop over blockDim.x with a branch per chunk cost the forward about as many
 * instructions as its softmax). Where the threads cover whole rows (THREADS a multiple of COLS / 8), a thread
 * keeps one column and steps down the rows: its first source address and the step between its rows are
 * computed once, and each chunk costs a pointer add, a compare and the copy. Computing a 64-bit address per
 * chunk from a signed x / CHUNKS took about 25 instructions a chunk, a quarter of the forward's key loop (the
 * profile in docs/results/h100-2026-11-28-notes-flash.md). Any other layout goes element by element.
 */
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile(uint16_t *smem, int ld, const view4 &t, int64_t b, int64_t h, int64_t r0,
                                          int64_t n, int64_t width) {
    constexpr int CHUNKS = COLS / 8, TOTAL = ROWS * CHUNKS, STEP = THREADS / CHUNKS; /* STEP: rows per pass */
    const uint16_t *base = t.p + b * t.s[0] + h * t.s[1] + r0 * t.s[2];
    if (t.rows16 && width % 8 == 0) {
        if constexpr (THREADS % CHUNKS == 0 && ROWS % STEP == 0) {
            const unsigned x = threadIdx.x;
            const int r = (int)(x / CHUNKS), c = (int)(x % CHUNKS) * 8, rows = n < ROWS ? (int)n : ROWS;
            const bool col_in = c < width;
            const uint16_t *src = base + r * t.s[2] + c;
            const int64_t step = STEP * t.s[2];
#pragma unroll
            for (int i = 0; i < ROWS / STEP; i++, src += step) {
                const bool in = col_in && r + i * STEP < rows;
                ladder_cp_async16(smem + (r + i * STEP) * ld + c, in ? src : base, in);
            }
        } else {
#pragma unroll
            for (int x0 = 0; x0 < TOTAL; x0 += THREADS) {
                const int x = x0 + (int)threadIdx.x, r = x / CHUNKS, c = x % CHUNKS * 8;
                if (TOTAL % THREADS != 0 && x >= TOTAL) break;
                const bool in = r < n && c < width;
                ladder_cp_async16(smem + r * ld + c, in ? base + r * t.s[2] + c : base, in);
            }
        }
        return;
    }
    for (int x = threadIdx.x; x < TOTAL; x += THREADS) {
        const int r = x / CHUNKS, c = x % CHUNKS * 8;
        const uint16_t *src = base + r * t.s[2];
        for (int e = 0; e < 8; e++) smem[r * ld + c + e] = r < n && c + e < width ? src[(c + e) * t.s[3]] : (uint16_t)0;
    }
}

/*
 * The bias hook's tile for query rows [q0, q0 + rows) of head h and keys [k0, k0 + keys), staged in shared memory
 * as Bs[BR][BC + 8] with the operands of the step that reads it (a cp.async group like theirs, zero past the
 * tile's rows and keys), read through its strides, so that a broadcast axis (stride 0) costs no copy. Both passes
 * read it from there, a lane's elements at a time. Read element by element from global memory instead, each score
 * needed its own 64-bit address: the forward at a head dim of 64 spilled registers, and the backward's dK/dV pass,
 * one block per SM, waited on those loads with no other block to hide them.
 */
template <int BR, int BC, int THREADS>
__device__ __forceinline__ void bias_tile(uint16_t *Bs, const view4 &bias, int64_t b, int64_t h, int64_t q0,
                                          int64_t rows, int64_t k0, int64_t keys) {
    view4 t = bias;
    t.p += k0 * t.s[3];              /* the tile's first key */
    t.rows16 &= k0 * t.s[3] % 8 == 0; /* ... where a packed sequence starts mid-chunk, element by element */
    load_tile<BR, BC, THREADS>(Bs, BC + 8, t, b, h, q0, rows, keys);
}

/* A row's key range [lo, hi) relative to a key tile that starts at j0, clamped to [0, BC]: int compares per score. */
template <int BC> __device__ __forceinline__ int tile_offset(int64_t key, int64_t j0) {
    const int64_t d = key - j0;
    return d < 0 ? 0 : d > BC ? BC : (int)d;
}

/* Split keys: this block's share [jbeg, khi) of its query tile's key tiles, when @p splits blocks share them
 * (block x takes share x % splits): whole tiles of BC keys, as many to each share as they divide. */
template <int BC> __device__ __forceinline__ void split_share(int64_t splits, int64_t &jbeg, int64_t &khi) {
    if (splits <= 1) return;
    const int64_t per = ((khi - jbeg + BC - 1) / BC + splits - 1) / splits * BC; /* keys per split */
    jbeg += (int64_t)(blockIdx.x % splits) * per;
    khi = jbeg + per < khi ? jbeg + per : khi;
}

/*
 * The tiles a pass visits, as for (; tiles.more(); tiles.next()), tiles.at the tile's first key (or row); next() also
 * returns the following tile's start, for a loop that fetches it ahead. full(): no element of the tile is masked, so
 * it skips the mask; mods(): a tile that is not full applies flex's mask mods besides the bounds.
 *
 * interval_tiles: flash's and memeff's, every TILE-th position from at up to hi; full where [at, at + TILE) lies
 * inside [all_lo, all_hi) (common/attention.h's block range). The caller adds what else full() needs.
 */
template <int TILE> struct interval_tiles {
    int64_t at, hi, all_lo, all_hi;
    __device__ bool more() const { return at < hi; }
    __device__ int64_t next() { return at += TILE; }
    __device__ bool full() const { return at >= all_lo && at + TILE <= all_hi; }
    __device__ static constexpr bool mods() { return false; }
    __device__ int count() const { return (int)((hi - at + TILE - 1) / TILE); } /* the tiles from at on (at < hi) */
};

/*
 * list_tiles: flex's, one row of block lists, its partial and full block-mask tiles (LADDER_FLEX_BLOCK positions each)
 * merged in ascending order, each cut into tiles of TILE, the last one clipped at the length L; next() returns L after
 * the last tile. full(): a tile of a full block-mask tile, inside L (it skips the mask mods); mods(): a tile of a
 * partial one (it applies them). Ascending, as the interval walks (the tiled rung takes the partial tiles first):
 * the forward rounds P to 16 bits against the running max of the keys seen so far, so here the order is part of the
 * result, and this is the order of flash's kernels and of the rung's reference (common/attention_tc_reference.h).
 */
template <int TILE> struct list_tiles {
    static_assert(LADDER_FLEX_BLOCK % TILE == 0, "a block-mask tile is a whole number of this rung's tiles");
    const int32_t *partial, *whole;     /* the row's partial and full tile indices, ascending */
    int32_t n_partial, n_whole, ep, ew; /* their counts, and the first entry of each not yet visited */
    int64_t L, at;
    bool in_whole; /* the current tile lies in a full block-mask tile */
    __device__ list_tiles(const int32_t *p, int32_t np, const int32_t *w, int32_t nw, int64_t len)
        : partial(p), whole(w), n_partial(np), n_whole(nw), ep(0), ew(0), L(len) {
        settle();
    }
    /* at the first tile of the lower of the two lists' next entries; at L when both are done */
    __device__ void settle() {
        const bool p = ep < n_partial, w = ew < n_whole;
        /* both heads read and both indices stepped without a branch: a branch here, inside the Hopper forward's
         * loop, makes ptxas serialize its products (C7513) */
        const int32_t pe = p ? partial[ep] : 0, we = w ? whole[ew] : 0;
        in_whole = w && !(p && pe < we);
        at = in_whole ? (int64_t)we * LADDER_FLEX_BLOCK : p ? (int64_t)pe * LADDER_FLEX_BLOCK : L;
        ew += in_whole, ep += !in_whole && p;
    }
    __device__ bool more() const { return at < L; }
    __device__ int64_t next() {
        at += TILE;
        if (at % LADDER_FLEX_BLOCK == 0 || at >= L) settle();
        return at;
    }
    __device__ bool full() const { return in_whole && at + TILE <= L; }
    __device__ bool mods() const { return !in_whole; }
    /* the tiles of the whole row: TILE-th parts of every listed block-mask tile, the one that holds position L - 1
     * (the last entry of either list, where it is listed) clipped at L */
    __device__ int count() const {
        constexpr int PER = LADDER_FLEX_BLOCK / TILE;
        const int32_t last = (int32_t)((L - 1) / LADDER_FLEX_BLOCK);
        const bool clipped = (n_partial > 0 && partial[n_partial - 1] == last) || (n_whole > 0 && whole[n_whole - 1] == last);
        const int in_last = (int)((L - (int64_t)last * LADDER_FLEX_BLOCK + TILE - 1) / TILE);
        return (n_partial + n_whole) * PER - (clipped ? PER - in_last : 0);
    }
};

/* flex: the key tiles of query tile i0 of head h, batch row b (the forward's lists: its block-mask row). */
template <int TILE>
__device__ __forceinline__ list_tiles<TILE> flex_key_tiles(const args &a, int64_t b, int64_t h, int64_t i0) {
    const flex_blocks &k = a.flex.blocks;
    const int64_t row = flex_list_row(&k, b, h, i0 / LADDER_FLEX_BLOCK, k.Tq);
    return {k.kv_idx + row * k.Tk, k.kv_num[row], k.full_kv_idx + row * k.Tk, k.full_kv_num[row], a.Sk};
}

/* flex: the query tiles of key tile j0 of head h, batch row b (the backward's transposed lists). */
template <int TILE>
__device__ __forceinline__ list_tiles<TILE> flex_query_tiles(const args &a, int64_t b, int64_t h, int64_t j0) {
    const flex_blocks &k = a.flex.blocks;
    const int64_t col = flex_list_row(&k, b, h, j0 / LADDER_FLEX_BLOCK, k.Tk);
    return {k.q_idx + col * k.Tq, k.q_num[col], k.full_q_idx + col * k.Tq, k.full_q_num[col], a.Sq};
}

/* The key tiles query tile i0 of head h, batch row b visits: [jbeg, khi) of block range @p span (common/attention.h),
 * or (flex) its block lists'. */
template <class Pol, int BC>
__device__ __forceinline__ auto key_tiles(const args &a, const ladder_attn_block &span, int64_t b, int64_t h,
                                          int64_t i0, int64_t jbeg, int64_t khi) {
    if constexpr (Pol::FLEX) return flex_key_tiles<BC>(a, b, h, i0);
    else return interval_tiles<BC>{jbeg, khi, span.all_lo, span.all_hi};
}

/* Forward launchers, one per compiled (Pol, T, HD, HDV); defined in attention_fwd_*.cu. */
template <class Pol, class T, int HD, int HDV> ladder_status fwd_launch(const args &a);
/* Backward launchers (preprocess, dK/dV, dQ); defined in attention_bwd_*.cu. *@p on_hopper, where given: did the dK/dV
 * pass run on the Hopper kernel (dQ with it)? */
template <class Pol, class T, int HD, int HDV>
ladder_status bwd_launch(args a, bool deterministic, bool *on_hopper = nullptr);

/* flex's passes at head dims (HD, HD), HD 64 or 128, in @p dtype (bf16 or f16), each with the policy flex<mod>: every
 * registered score mod is compiled (ladder_flex_with_mod), in attention_flex_*.cu. The backward is the deterministic
 * one; a.delta is its scratch, and its dQ pass sums each buffer read's shares into a.flex.part, a row per query tile
 * of bwd_flex_rows(mod) rows, but where the Hopper pass ran (*@p hopper set): it sums alibi's slopes gradient per
 * head into the first Hq floats of a.flex.part[0], and another mod's line sums into the first floats of each read's
 * (ladder_flex_bwd_with_dbuf(), common/flex_gpu.cuh). */
template <int HD> ladder_status fwd_flex(const args &a, int mod, ladder_dtype dtype);
template <int HD> ladder_status bwd_flex(const args &a, int mod, ladder_dtype dtype, bool *hopper);
template <int HD> int bwd_flex_rows(int mod);

} // namespace attn_tc

#endif
