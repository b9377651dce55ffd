/*
 * gpu_tensorcore/attention_tc.cuh: the tensor-core attention family that flash and memeff share: the arguments,
 * the policies, the head-dim configurations, and the loop that stages a tile of 16-bit rows in shared memory. The
 * kernels are in attention_tc_fwd.cuh and attention_tc_bwd.cuh, compiled per head dims by the attention_*.cu
 * files; gpu_tensorcore/flash.cu and memeff.cu pack their arguments and pick a policy.
 *
 * Policies: the kernels take one as a template parameter, and it says only whether the hooks of
 * common/attention_gpu.cuh (bias, dropout, dS into the bias's gradient) and split keys are compiled in at all
 * (EXTRAS): they add registers and instructions to the inner loops, so that plain attention (flash, and memeff
 * without any of them) runs kernels without them. Within a policy, which hooks are on is a uniform run-time
 * branch.
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
#include "mma.cuh"

namespace attn_tc {

/* Plain attention: no hook is compiled in, and every block of the forward and the deterministic dQ owns all the
 * key tiles of its query tile. */
struct plain {
    static constexpr bool EXTRAS = false;
};
/* Memory-efficient attention's hooks: the bias, dropout and dS into the bias's gradient (each when set), and
 * split keys (args::splits blocks per query tile). */
struct hooked {
    static constexpr bool EXTRAS = true;
};

/*
 * p[0] += x and p[1] += y, atomically, @p p 8-byte aligned in global memory: one vector atomic on sm_90 (CUDA's
 * float2 atomicAdd, which exists from that architecture on), two scalar ones before it. Half the atomics means
 * half the instructions that hold their registers until the memory system has taken them (chapter 3).
 */
__device__ __forceinline__ void atomic_add2(float *p, float x, float y) {
#if __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2 *>(p), make_float2(x, y));
#else
    atomicAdd(p, x);
    atomicAdd(p + 1, y);
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

/* Forward launchers, one per compiled (Pol, T, HD, HDV); defined in attention_fwd_*.cu. */
template <class Pol, class T, int HD, int HDV> ladder_status fwd_launch(const args &a);
/* Backward launchers (preprocess, dK/dV, dQ); defined in attention_bwd_*.cu. */
template <class Pol, class T, int HD, int HDV> ladder_status bwd_launch(const args &a, bool deterministic);

} // namespace attn_tc

#endif
