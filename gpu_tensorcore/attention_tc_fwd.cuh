/*
 * gpu_tensorcore/attention_tc_fwd.cuh: the FlashAttention-2 forward on the tensor cores (mma.sync m16n8k16),
 * included by the attention_fwd_*.cu files, each of which compiles it for a few head dims and both policies.
 *
 * What changed since gpu_tiled/: the two products, S = Q K^T and O += P V, run on the matrix units with bf16 or
 * fp16 operands and fp32 accumulators. A block of 4 warps owns Br = 128 query rows, 32 per warp (two m16 row
 * blocks) at a head dim of 128; 64 rows, 16 per warp, at 64 and above 128. Each lane holds two rows of each row
 * block in mma fragments (common/mma.cuh), so the row max and the row sum take two shuffles across the 4 lanes
 * that share a row. Q, K and V tiles are staged in shared memory by cp.async (16 bytes per copy, rows padded by
 * 16 bytes so that ldmatrix's 8 row addresses hit 8 different bank groups), and fed to the mma by ldmatrix: K's
 * rows as they lie for K^T, V through ldmatrix.trans. P never leaves registers: the fp32 C fragments of S,
 * rounded to 16 bits, are the A fragments of P V. As in gpu_tiled, tiles that every row sees whole skip the
 * mask.
 *
 *
 * With the hooked policy (memeff): the scores gain the bias (then S is formed in natural units, as with
 * softcap), and P meets V after dropout: its dropped elements are zeroed, the row sum l keeps the undropped P,
 * and O is multiplied by 1 / (1 - p) with the division by l.
 *
 * With flex's policy: S is the score mod of s = scale * q.k (natural units), and the key tiles are the query tile's
 * block lists' (list_tiles, attention_tc.cuh), partial and full merged in ascending order, each 128-key block-mask tile
 * cut into this rung's key tiles: the partial ones apply the mask mods after the bounds, the full ones no mask at all.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_FWD_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_FWD_CUH

#include "attention_tc.cuh"
#include "attention_tc_reference.h"

namespace attn_tc {

template <class Pol, int HD, int HDV> struct fwd_cfg {
    /* m16 row blocks per warp: two at a head dim of 128, so that every K and V fragment feeds two mmas (half
     * the shared-memory traffic per mma of one); one above, where O's fp32 fragments would not fit twice, and
     * at 64, where two (218 registers: 2 blocks per SM) measured slower than the first version's one; one with
     * flex's mods, whose work beside two row blocks' S and O spilled at 128 */
    static constexpr int MT = !Pol::FLEX && (HD > 64 || HDV > 64) && HD <= 128 && HDV <= 128 ? 2 : 1;
    static constexpr int WARPS = 4, THREADS = 32 * WARPS, BR = 16 * MT * WARPS;
    /* keys per tile: 64 up to a head dim of 128 (at 128, S's 64 fp32 registers per lane beside O's 128: 255 in
     * all, no spill); 32 above; the tests' emulation of this rung rounds P per tile of the same size (the macro) */
    static constexpr int BC = LADDER_ATTN_TC_FWD_KEYS(HD, HDV);
    static constexpr int LDQ = HD + 8, LDV = HDV + 8;             /* shared-memory row strides, in elements */
    static constexpr int LDB = BC + 8; /* the bias tile's row stride (the hooks only) */
    /* Q, K, V tiles; each row's key range [lo, hi); with the hooks, the bias tile that rides with K */
    static constexpr size_t SMEM = sizeof(uint16_t) * (size_t)((BR + BC) * LDQ + BC * LDV) + sizeof(int64_t) * 2 * BR +
                                   (Pol::EXTRAS ? sizeof(uint16_t) * BR * LDB : 0);
};

/*
 * The scores of one key tile are left as x, the number whose multiple by sl2 = log2(e) * (softcap ? 1 : scale)
 * is the exponent: without softcap x is the raw q.k, so that scale and log2(e) fold into the one FFMA before
 * ex2 (ex2(x * sl2 - m * sl2)), the trick FlashAttention uses. With softcap, x is the capped S, computed here
 * for the whole tile behind one uniform branch: a branch per score (the first version's) put 64 branches and
 * the tanh's code between the scores of every tile, and the profile showed warps stalled on branches and on
 * instruction fetch more than on anything else.
 */
template <int MT, int BC> __device__ __forceinline__ void softcap_scores(const args &a, float (&s)[MT][BC / 8][4]) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
            for (int c = 0; c < 4; c++) s[mt][nb][c] = ladder_attn_softcap(a.scale * s[mt][nb][c], a.softcap);
}

/*
 * The bias hook's second step: S += bias for the lane's elements (rows w0 + mt*16 + g (+ 8), keys nb*8 + 2t
 * (+ 1)), from the tile that bias_tile (attention_tc.cuh) staged with K.
 */
template <class T, int MT, int BC>
__device__ __forceinline__ void bias_scores(float (&s)[MT][BC / 8][4], const uint16_t *Bs, int w0, int lane) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int r = w0 + mt * 16 + lane / 4 + 8 * (c / 2);
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++)
                s[mt][nb][c] += ladder_to_float<T>(Bs[r * (BC + 8) + nb * 8 + 2 * (lane % 4) + (c & 1)]);
        }
}

/*
 * The dropout hook: P's dropped elements zeroed in the packed A fragments of P V, where the lane holds keys
 * nb*8 + 2t (+ 1) of rows mt*16 + g (+ 8), from query position @p q0 and key position @p k0 on. Zeroing a 16-bit
 * half is exact, and the kept elements' 1 / (1 - p) multiplies O once, at the end, so that P is rounded once, as
 * without dropout. It runs after the softmax, when the scores' registers are free.
 */
template <int MT, int BC>
__device__ __forceinline__ void drop_p(const args &a, uint32_t (&pa)[MT][BC / 16][4], int64_t b, int64_t h,
                                       int64_t q0, int64_t k0, int lane) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        uint32_t kept[2];
        ladder_attn_kept_rows<BC / 8>(a.hooks, a, b, h, q0 + mt * 16, k0, lane, kept);
#pragma unroll
        for (int k = 0; k < 2; k++)
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++)
                pa[mt][nb / 2][2 * (nb % 2) + k] &= ((kept[k] >> (2 * nb)) & 1u ? 0x0000ffffu : 0u) |
                                                    ((kept[k] >> (2 * nb + 1)) & 1u ? 0xffff0000u : 0u);
    }
}

/* f(x, r, key) for each score x the lane holds in @p s: row r of the tile (w0 + mt*16 + g (+ 8)), key nb*8 + 2t
 * (+ 1) of the key tile. */
template <int MT, int BC, class F>
__device__ __forceinline__ void each_score(float (&s)[MT][BC / 8][4], int w0, int lane, F f) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                f(s[mt][nb][c], w0 + mt * 16 + lane / 4 + 8 * (c / 2), nb * 8 + 2 * (lane % 4) + (c & 1));
}

/*
 * flex's score hook: S = MOD(s) for s = scale * x, x the raw q.k, at query position i0 + r and key position j0 + key
 * (each_score()'s). Rows past the tile's @p rows and keys past its @p keys take the mod at the last real row or key,
 * so that a mod never reads past its buffers: their scores are masked, or never stored. A function of the whole tile,
 * as softcap_scores is, with the mod inlined.
 */
template <int MOD, int MT, int BC>
__device__ __forceinline__ void flex_scores(const args &a, float (&s)[MT][BC / 8][4], int64_t b, int64_t h,
                                            int64_t i0, int w0, int rows, int64_t j0, int keys, int lane) {
    each_score<MT, BC>(s, w0, lane, [&](float &x, int r, int key) {
        const int64_t i = i0 + (r < rows ? r : rows - 1), j = j0 + (key < keys ? key : keys - 1);
        x = ladder_flex_score(MOD, a.scale * x, &a.flex.env, b, h, i, j);
    });
}

/*
 * flex, in a partial tile: -inf where the mask mods that are not intervals of keys (document) forbid the key to the
 * row, for the tile's real rows and keys (the bounds mask the rest, and the mods would read past their buffers
 * there). Positions as in flex_scores. The interval mods are in the rows' ranges (flex_narrow_range()), which
 * mask_scores() applies: with only those in the set, nothing is left to do here.
 */
template <int MT, int BC>
__device__ __forceinline__ void flex_mask_scores(const args &a, float (&s)[MT][BC / 8][4], int64_t b, int64_t h,
                                                 int64_t i0, int w0, int rows, int64_t j0, int keys, int lane) {
    const unsigned set = a.flex.masks & ~LADDER_FLEX_INTERVAL_MASKS;
    if (!set) return;
    each_score<MT, BC>(s, w0, lane, [&](float &x, int r, int key) {
        if (r < rows && key < keys && !ladder_flex_masks(set, &a.flex.env, b, h, i0 + r, j0 + key)) x = -INFINITY;
    });
}

/*
 * flex: row @p i's key range [*lo, *hi) (keys of its sequence, whose first is at position @p k0) narrowed, once a
 * block, to the interval that its interval mask mods leave it (ladder_flex_mask_interval(): causal, window,
 * prefix_lm), so that a partial tile is masked by two compares an element, as flash's, and not by asking those mods
 * at every element. Nothing for another policy.
 */
template <class Pol>
__device__ __forceinline__ void flex_narrow_range(const args &a, int64_t b, int64_t i, int64_t k0, int64_t *lo,
                                                  int64_t *hi) {
    if constexpr (Pol::FLEX) {
        int64_t l, h;
        ladder_flex_mask_interval(a.flex.masks, &a.flex.env, b, i, &l, &h);
        *lo = l - k0 > *lo ? l - k0 : *lo;
        *hi = h - k0 < *hi ? h - k0 : *hi;
    }
}

/*
 * -inf where a key lies outside its row's range. Only masked tiles (few: the diagonal, a window's edges, the
 * ends) come here; they read the key range of the lane's rows r0 + mt*16 + g (+ 8) from shared memory (@p
 * range, [lo, hi) per row of the block) rather than keep it in registers.
 */
template <int MT, int BC>
__device__ __forceinline__ void mask_scores(float (&s)[MT][BC / 8][4], const int64_t *range, int r0, int64_t j0,
                                            int lane) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int r = r0 + mt * 16 + lane / 4 + 8 * k;
            const int lo = tile_offset<BC>(range[2 * r], j0), hi = tile_offset<BC>(range[2 * r + 1], j0);
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
                for (int c = 2 * k; c < 2 * k + 2; c++) {
                    const int j = nb * 8 + 2 * (lane % 4) + (c & 1);
                    if (!(j >= lo && j < hi)) s[mt][nb][c] = -INFINITY;
                }
        }
}

/*
 * The online softmax of one key tile, for rows g (k = 0) and g + 8 (k = 1) of each row block (a row's 4 lanes are
 * 4g .. 4g+3): the running max m and the lane's part of the row sum l move on, alpha = exp2((m_old - m_new) * sl2)
 * is what O must be multiplied by, and P = exp2(S * sl2 - m_new * sl2) goes to 16 bits as soon as it is formed, as
 * the A fragments of P V (two adjacent 8-key C tiles are one 16-key A fragment), so that its packed registers, not
 * twice as many fp32 ones, wait beside O. Returns whether the max of one of this lane's rows changed.
 */
template <class T, int MT, int BC>
__device__ __forceinline__ bool softmax_tile(const float (&sc)[MT][BC / 8][4], float sl2, float (&m)[MT][2],
                                             float (&l)[MT][2], uint32_t (&pa)[MT][BC / 16][4], float (&alpha)[MT][2]) {
    bool grew = false;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            float mx = -INFINITY;
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++) mx = fmaxf(mx, fmaxf(sc[mt][nb][2 * k], sc[mt][nb][2 * k + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[mt][k], mx);
            /* no key seen yet: m_new = -inf; subtracting 0 instead keeps exp2(-inf - -inf) = NaN out: P = 0 */
            const float ms = m_new == -INFINITY ? 0.0f : m_new * sl2;
            alpha[mt][k] = ladder_ex2_ftz(m[mt][k] * sl2 - ms); /* exactly 1 where the max stayed */
            grew |= m_new != m[mt][k];
            float sum = 0.0f;
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++) {
                const float p0 = ladder_ex2_ftz(fmaf(sc[mt][nb][2 * k], sl2, -ms));
                const float p1 = ladder_ex2_ftz(fmaf(sc[mt][nb][2 * k + 1], sl2, -ms));
                sum += p0 + p1;
                pa[mt][nb / 2][2 * (nb % 2) + k] = ladder_pack2_float<T>(p0, p1);
            }
            l[mt][k] = alpha[mt][k] * l[mt][k] + sum; /* this lane's part of the row sum; the 4 add up at the end */
            m[mt][k] = m_new;
        }
    return grew;
}

/* O *= alpha only where a row's max changed (often early in a row, seldom once it has seen many keys): one vote for
 * the warp, and no multiply in the tiles where no max moved. */
template <int MT, int HDV>
__device__ __forceinline__ void rescale_o(float (&o)[MT][HDV / 8][4], const float (&alpha)[MT][2], bool grew) {
    if (__any_sync(0xffffffffu, grew))
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int nd = 0; nd < HDV / 8; nd++) {
                o[mt][nd][0] *= alpha[mt][0], o[mt][nd][1] *= alpha[mt][0];
                o[mt][nd][2] *= alpha[mt][1], o[mt][nd][3] *= alpha[mt][1];
            }
}

/*
 * The forward's end: O / l, rounded to T, and lse = unit * m + log l, for the lane's rows w0 + mt*16 + g (+ 8) of the
 * block, whose first row is query position @p q_first of head h, batch row b; rows from @p rows on are past the
 * tile's end. A row that saw no key: l = 0, o = 0, lse = -inf. With split keys, O / l stays fp32 and both go to this
 * split's partials, which ladder_attn_combine() merges.
 */
template <class T, int MT, int HDV>
__device__ __forceinline__ void store_o_lse(const args &a, const float (&o)[MT][HDV / 8][4], const float (&m)[MT][2],
                                            const float (&l)[MT][2], float unit, float keep_scale, int splits,
                                            int64_t b, int64_t h, int64_t q_first, int64_t rows, int w0, int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            float lk = l[mt][k];
            lk += __shfl_xor_sync(0xffffffffu, lk, 1);
            lk += __shfl_xor_sync(0xffffffffu, lk, 2);
            const int r = w0 + mt * 16 + g + 8 * k;
            if (r >= rows) continue;
            const int64_t row = (b * a.Hq + h) * a.Sq + q_first + r;
            const float inv = lk == 0.0f ? 0.0f : keep_scale / lk; /* a NaN row sum stays NaN */
            if (splits > 1) { /* the row in this split's partials; the split found again, not kept in a register */
                const int64_t part = (int64_t)(blockIdx.x % splits) * a.B * a.Hq * a.Sq + row;
#pragma unroll
                for (int nd = 0; nd < HDV / 8; nd++)
#pragma unroll
                    for (int c = 0; c < 2; c++)
                        if (nd * 8 + 2 * t + c < a.Dv) a.o_part[part * a.Dv + nd * 8 + 2 * t + c] = o[mt][nd][2 * k + c] * inv;
                if (t == 0) a.lse_part[part] = ladder_attn_lse(unit * m[mt][k], lk);
                continue;
            }
#pragma unroll
            for (int nd = 0; nd < HDV / 8; nd++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    const int col = nd * 8 + 2 * t + c;
                    if (col < a.Dv) a.o[row * a.Dv + col] = ladder_from_float<T>(o[mt][nd][2 * k + c] * inv);
                }
            if (t == 0) a.lse[row] = ladder_attn_lse(unit * m[mt][k], lk);
        }
}

/*
 * The loads overlap the products, with one K and one V buffer and two barriers per key tile (as
 * FlashAttention-2 does): V_j is fetched while S = Q K_jᵀ and the softmax run, K_{j+1} while O += P V_j runs.
 * The barrier that makes V_j visible also says that every warp is done with K_j, so K_{j+1} may overwrite it.
 */
template <class Pol, class T, int HD, int HDV>
__global__ void __launch_bounds__(fwd_cfg<Pol, HD, HDV>::THREADS) attn_fwd_tc_kernel(args a) {
    using C = fwd_cfg<Pol, HD, HDV>;
    constexpr int MT = C::MT, BR = C::BR, BC = C::BC, LDQ = C::LDQ, LDV = C::LDV;
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t *Qs = smem, *Ks = Qs + BR * LDQ, *Vs = Ks + BC * LDQ;
    int64_t *range = (int64_t *)(Vs + BC * LDV);
    uint16_t *Bs = (uint16_t *)(range + 2 * BR); /* the hooks' bias tile */
    /* block x = (query tile, split): with split keys, a.splits blocks share a query tile's key tiles */
    const int splits = Pol::EXTRAS ? (int)a.splits : 1;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x / splits, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, w0 = warp * 16 * MT;

    /* the keys seen by some row of the block, and those seen by all; this split's share of the key tiles */
    const ladder_attn_block span = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
    int64_t jbeg = span.lo / BC * BC, khi = span.hi;
    split_share<BC>(splits, jbeg, khi);
    auto tiles = key_tiles<Pol, BC>(a, span, b, h, i0, jbeg, khi); /* flex: the block lists' tiles, up to khi = Lk */
    jbeg = tiles.at;
    for (int r = threadIdx.x; r < BR; r += blockDim.x) { /* visible after the loop's first __syncthreads() */
        range[2 * r] = range[2 * r + 1] = 0;                 /* a row past the tile's end sees nothing */
        if (r >= rows) continue;
        ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &range[2 * r], &range[2 * r + 1]);
        flex_narrow_range<Pol>(a, b, seq.q0 + i0 + r, seq.k0, &range[2 * r], &range[2 * r + 1]);
    }
    /* S in natural units when something must be applied to it (softcap, bias, a score mod), else the raw q.k */
    const bool exact = a.softcap > 0.0f || (Pol::EXTRAS && a.hooks.bias) || Pol::FLEX;
    const bool dropout = Pol::EXTRAS && a.hooks.dropout_p > 0.0f;
    const float unit = exact ? 1.0f : a.scale, sl2 = unit * LADDER_LOG2E; /* S = unit * x */
    const float keep_scale = dropout ? a.hooks.keep_scale : 1.0f; /* O = (sum of the kept P V) / (1 - p) / l */

    load_tile<BR, HD, C::THREADS>(Qs, LDQ, a.q, b, h, seq.q0 + i0, rows, a.D);
    if (jbeg < khi) load_tile<BC, HD, C::THREADS>(Ks, LDQ, a.k, b, hk, seq.k0 + jbeg, seq.Lk - jbeg < BC ? seq.Lk - jbeg : BC, a.D);
    if constexpr (Pol::EXTRAS)
        if (a.hooks.bias && jbeg < khi)
            bias_tile<BR, BC, C::THREADS>(Bs, a.bias, b, h, seq.q0 + i0, rows, seq.k0 + jbeg, seq.Lk - jbeg < BC ? seq.Lk - jbeg : BC);
    ladder_cp_async_commit();
    float o[MT][HDV / 8][4], m[MT][2], l[MT][2];
    ladder_zero_tile(o);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;

    for (int64_t j0 = jbeg; j0 < khi; j0 = tiles.at) {
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        ladder_cp_async_wait_group<0>(); /* K_j (and Q) */
        __syncthreads();                 /* ... for every thread; and every warp is done with V_{j-1} */
        load_tile<BC, HDV, C::THREADS>(Vs, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        ladder_cp_async_commit();

        /* S = Q K^T for the warp's rows: A from Q's rows, B from K's rows as they lie */
        float sc[MT][BC / 8][4];
        ladder_zero_tile(sc);
        ladder_mma_warp_tile<T, MT, BC / 8, HD / 16, false, false>(sc, Qs + w0 * LDQ, LDQ, Ks, LDQ, lane);

        if constexpr (Pol::FLEX)
            flex_scores<Pol::MOD, MT, BC>(a, sc, b, h, seq.q0 + i0, w0, (int)rows, seq.k0 + j0, (int)keys, lane);
        else if (exact) softcap_scores<MT, BC>(a, sc); /* scale * x, softcapped when softcap > 0 */
        if constexpr (Pol::EXTRAS)
            if (a.hooks.bias) bias_scores<T, MT, BC>(sc, Bs, w0, lane);
        if (!tiles.full()) mask_scores<MT, BC>(sc, range, w0, j0, lane);
        if constexpr (Pol::FLEX) /* a partial tile: the mask mods that the ranges do not hold */
            if (tiles.mods())
                flex_mask_scores<MT, BC>(a, sc, b, h, seq.q0 + i0, w0, (int)rows, seq.k0 + j0, (int)keys, lane);

        uint32_t pa[MT][BC / 16][4];
        float alpha[MT][2];
        const bool grew = softmax_tile<T, MT, BC>(sc, sl2, m, l, pa, alpha);
        if constexpr (Pol::EXTRAS)
            if (dropout) drop_p<MT, BC>(a, pa, b, h, seq.q0 + i0 + w0, seq.k0 + j0, lane);
        ladder_cp_async_wait_group<0>(); /* V_j */
        __syncthreads();                 /* ... for every thread; and every warp is done with K_j */
        const int64_t next = tiles.next(); /* the next key tile's first key; khi past the last */
        if (next < khi) load_tile<BC, HD, C::THREADS>(Ks, LDQ, a.k, b, hk, seq.k0 + next, seq.Lk - next < BC ? seq.Lk - next : BC, a.D);
        if constexpr (Pol::EXTRAS) /* every warp is done with this tile's bias too */
            if (a.hooks.bias && next < khi)
                bias_tile<BR, BC, C::THREADS>(Bs, a.bias, b, h, seq.q0 + i0, rows, seq.k0 + next, seq.Lk - next < BC ? seq.Lk - next : BC);
        ladder_cp_async_commit();

        rescale_o<MT, HDV>(o, alpha, grew);
        /* O += P V: V's B fragments through .trans, each feeding MT mmas */
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++)
#pragma unroll
            for (int nd = 0; nd < HDV / 8; nd += 2) {
                uint32_t vb[4];
                const int key = kb * 16 + lane % 8 + (lane / 8 % 2) * 8;
                ladder_ldsm_x4_trans(vb, Vs + key * LDV + nd * 8 + (lane / 16) * 8);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    ladder_mma_m16n8k16<T>(o[mt][nd], pa[mt][kb], vb[0], vb[1]);
                    ladder_mma_m16n8k16<T>(o[mt][nd + 1], pa[mt][kb], vb[2], vb[3]);
                }
            }
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q copies in flight */

    store_o_lse<T, MT, HDV>(a, o, m, l, unit, keep_scale, splits, b, h, seq.q0 + i0, rows, w0, lane);
}

template <class Pol, class T, int HD, int HDV> ladder_status fwd_launch(const args &a) {
    using C = fwd_cfg<Pol, HD, HDV>;
    LADDER_TRY(ladder_allow_smem(attn_fwd_tc_kernel<Pol, T, HD, HDV>, C::SMEM));
    const int64_t splits = Pol::EXTRAS ? a.splits : 1;
    const dim3 grid((unsigned)(ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs) * splits), (unsigned)a.Hq,
                    (unsigned)a.B);
    attn_fwd_tc_kernel<Pol, T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a);
    LADDER_LAUNCH_CHECK("attn_fwd_tc_kernel");
    return LADDER_OK;
}

/* flex's forward at head dims (HD, HD): the policy flex<mod>, every registered score mod compiled (attention_tc.cuh) */
template <int HD> ladder_status fwd_flex(const args &a, int mod, ladder_dtype dtype) {
    return ladder_flex_with_mod(mod, [&](auto m) {
        using Pol = flex<decltype(m)::value>;
        return dtype == LADDER_BF16 ? fwd_launch<Pol, __nv_bfloat16, HD, HD>(a) : fwd_launch<Pol, __half, HD, HD>(a);
    });
}

} // namespace attn_tc

#endif
