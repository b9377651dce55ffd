/*
 * gpu_tiled/attention_tiled.cuh: the tiled attention family (fp32) that flash and memeff share: the tile sizes,
 * the arguments every kernel takes, the loops that stage a tile of rows in shared memory, and the two passes
 * (attention_fwd.cu, attention_bwd.cu). gpu_tiled/flash.cu and memeff.cu only pack their arguments: flash with
 * every hook off, memeff with its bias, its gradient and dropout (common/attention_gpu.cuh). Each kernel is
 * compiled with and without the hooks (HOOKS, picked by hooks_on()): as run-time branches they slowed flash's
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

namespace attn_tiled {

constexpr int BR = 32;                    /* query rows per tile */
constexpr int BC = 32;                    /* keys per tile */
constexpr int LANES = 8;                  /* threads per row */
constexpr int THREADS = BR * LANES;       /* 256; also BC * LANES */
static_assert(BR == BC, "a thread maps to (row, lane) in both the query-tile and the key-tile kernels");

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

/* The forward (attention_fwd.cu): o and lse. */
ladder_status fwd(const args &a);
/* The backward (attention_bwd.cu): dq, dk, dv, and dS into a.hooks.dbias when set. */
ladder_status bwd(args a, bool deterministic);

/* Does this call use a hook? Each kernel is compiled without them too (HOOKS = false, flash's): with them in
 * as run-time branches, flash's backward measured up to 17% slower at a head dim of 128. */
inline bool hooks_on(const args &a) { return a.hooks.bias || a.hooks.dropout_p > 0.0f || a.hooks.dbias.p; }

/*
 * S for query row i and key j (positions along Sq and Sk) of head h, batch row b, from q.k: the softcap, then
 * (HOOKS) the bias. *cap_slope: dS/d(scale q.k), the softcap's derivative (1 without one).
 */
template <bool HOOKS>
__device__ __forceinline__ float score(const args &a, float qk, int64_t b, int64_t h, int64_t i, int64_t j,
                                       float *cap_slope) {
    const float c = ladder_attn_softcap(a.scale * qk, a.softcap);
    *cap_slope = ladder_attn_softcap_grad(c, a.softcap);
    if constexpr (HOOKS)
        if (a.hooks.bias) return c + ladder_attn_bias_at<float>(a.hooks, b, h, i, j);
    return c;
}

/* What P[b,h,i,j] is multiplied by before it meets V (HOOKS, dropout: 0 or 1 / (1 - p)); 1 without dropout. */
template <bool HOOKS> __device__ __forceinline__ float keep(const args &a, int64_t b, int64_t h, int64_t i, int64_t j) {
    if constexpr (HOOKS)
        if (a.hooks.dropout_p > 0.0f) return ladder_attn_keep(a.hooks, a, b, h, i, j);
    return 1.0f;
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
