/*
 * gpu_tensorcore/attention_tc_bwd.cuh: the FlashAttention-2 backward on the tensor cores (mma.sync m16n8k16),
 * included by the attention_bwd_*.cu files, each of which compiles it for a few head dims and both policies.
 *
 * The structure of gpu_tiled/attention_bwd.cu, with the five products on the matrix units, laid out as
 * FlashAttention-2 lays them out:
 *   1. preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i (fp32), one warp per row;
 *   2. dK, dV: a block of 8 warps owns Bc = 128 keys of one key/value head (64 above a head dim of 128): K, V
 *      in shared memory, dK, dV in fp32 fragments spread over the 8 warps. It streams the tiles of Br = 64
 *      query rows (128 at a head dim of 64, 32 above 128) of each head of the group that see its keys, the next
 *      Q and dO tiles fetched into second buffers while the current ones are used. Per tile: S = Q K^T and
 *      dP = dO V^T (each warp a Br/2 x 32 part), P = exp(S - lse) and dS = P (dP - Delta) into shared memory in
 *      16 bits, then dV += P^T dO and dK += dS^T Q (each warp 32 keys by half of the columns);
 *   3. dQ: by default the same block adds dS K into an fp32 dQ accumulator with atomicAdd (each warp a 32-row
 *      part), and a last kernel multiplies it by scale and rounds it to the output dtype; in deterministic mode a
 *      separate pass owns each query tile and streams the key tiles past in order, writing dQ once.
 * Every product is ladder_mma_warp_tile (common/mma.cuh) over a warp tile of two m16 row blocks by 4 or more
 * n8 column blocks, so that each fragment loaded from shared memory feeds two or more mmas. On an sm_90 GPU,
 * bwd_launch runs the Hopper kernel of the dK/dV pass in place of steps 2 and 3 where it covers the problem
 * (attention_tc_hopper_bwd.cuh: every policy, head dims up to 128; flex's without a buffer's gradient): dQ by the copy
 * engine's bulk reductions, in deterministic mode in a fixed order of turns; step 1 and dQ's rounding stay these.
 *
 * With the hooked policy (memeff): S gains the bias, V meets P f (dropout's factor f, 0 or 1 / (1 - p)), so the
 * stored P tile is P where kept and 0 where dropped (dV = (P f)^T dO: the 1 / (1 - p) multiplies dV's sum once,
 * as it multiplies O in the forward) and dS = P (dP f - Delta); the dK/dV pass also writes dS, before the
 * softcap's slope, to the bias's gradient (each element once: one block owns each key tile of each head).
 *
 * With flex's policy: S is the score mod of s = scale q.k and the stored dS' is dS times the mod's slope dS/ds; the
 * dK/dV pass walks its key tile's query lists (the transposed block mask) for every query head of its group; the dQ
 * pass, always the deterministic one, walks the forward's lists and sums each buffer read's shares dS dS/dx: per
 * tile, in shared memory, along the lines the buffer's elements follow, into its own row of partials
 * (common/flex_gpu.cuh). It does so, not the dK/dV pass, because its registers have room beside one accumulator.
 * Partial tiles apply the mask mods, full ones no mask.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_BWD_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_BWD_CUH

#include <type_traits>

#include "attention_tc.cuh"
#include "attention_tc_hopper.cuh"

namespace attn_tc {

/* The keys per block of the backward that policy @p Pol asks for, at head dims up to 128: flex's BWD_KEYS, or 128. */
template <class Pol> constexpr int bwd_keys() {
    if constexpr (Pol::FLEX) return Pol::BWD_KEYS;
    else return 128;
}

/* The query rows per step that policy @p Pol asks for at head dims up to 128, @p full being flash's: the hooks'
 * per-element work needs registers beside S and dP, so half with them (at 64 and 128 the full tiles spilled);
 * flex's BWD_ROWS. */
template <class Pol> constexpr int bwd_rows(int full) {
    if constexpr (Pol::FLEX) return Pol::BWD_ROWS;
    else return Pol::EXTRAS ? full / 2 : full;
}

template <class Pol, int HD, int HDV> struct bwd_cfg {
    static constexpr bool WIDE = HD > 128 || HDV > 128; /* half the keys and rows, so that dK and dV fit */
    static constexpr int WARPS = 8, THREADS = 32 * WARPS;
    /* keys per block, query rows per step: at head dim 64, 128 rows, twice the products per step and per barrier;
     * fewer where the policy asks (bwd_keys, bwd_rows) */
    static constexpr int BC = WIDE ? 64 : bwd_keys<Pol>();
    static constexpr int BR = WIDE ? 32 : bwd_rows<Pol>(HD <= 64 && HDV <= 64 ? 128 : 64);
    /* Each product's warp grid and warp tile (MT m16 row blocks by NT n8 column blocks):
     * S, dP (BR x BC): 2 x 4 warps; dK, dV (BC x HD, BC x HDV): BC/32 x KV_WN warps, 32 keys each;
     * dQ (BR x HD): 2 x 4 warps */
    static constexpr int S_WN = 4, S_MT = BR / 2 / 16, S_NT = BC / S_WN / 8;
    static constexpr int KV_WN = WARPS / (BC / 32), KV_MT = 2, K_NT = HD / KV_WN / 8, V_NT = HDV / KV_WN / 8;
    static constexpr int Q_WN = 4, Q_MT = BR / 2 / 16, Q_NT = HD / Q_WN / 8;
    static constexpr int LDK = HD + 8, LDV = HDV + 8, LDP = BC + 8; /* row strides in elements (16-byte pads) */
    /* K, V; Q and dO twice (the next tile lands while this one is used); P and dS, 16-bit; with the hooks, the
     * bias tile twice (it lands with Q and dO); per row of the two buffers: the key range (int64 pairs), lse and
     * Delta (fp32) */
    static constexpr int BIAS_TILES = Pol::EXTRAS ? 2 : 0;
    static constexpr size_t SMEM = sizeof(uint16_t) * (size_t)(BC * (LDK + LDV) + 2 * BR * (LDK + LDV) +
                                                               (2 + BIAS_TILES) * BR * LDP) +
                                   (2 * sizeof(int64_t) + 2 * sizeof(float)) * 2 * BR;
};

/*
 * The shared-memory tiles of both backward kernels (the dQ pass uses buffer 0 of Q and of the row stats, and with
 * flex's policy, past C::SMEM, the share tiles of the buffer reads whose gradient is asked). The two buffers are
 * found by arithmetic, not by indexing an array of pointers: a runtime index into an array would put the array in
 * local memory.
 */
template <class Pol, int HD, int HDV> struct bwd_smem {
    using C = bwd_cfg<Pol, HD, HDV>;
    uint16_t *K, *V, *Q0, *dO0, *P, *dS, *bias0;
    int64_t *range0; /* [lo, hi) of each row */
    float *lse0, *D0;
    float *shares; /* flex's dQ pass: flex_share_tile<BR, BC> per read (16-byte aligned, as every tile above) */
    __device__ explicit bwd_smem(uint16_t *base) {
        K = base, V = K + C::BC * C::LDK, Q0 = V + C::BC * C::LDV;
        dO0 = Q0 + 2 * C::BR * C::LDK, P = dO0 + 2 * C::BR * C::LDV, dS = P + C::BR * C::LDP;
        bias0 = dS + C::BR * C::LDP;
        /* 16-byte aligned: every tile above is a multiple of 16 bytes */
        range0 = (int64_t *)(bias0 + C::BIAS_TILES * C::BR * C::LDP);
        lse0 = (float *)(range0 + 2 * 2 * C::BR), D0 = lse0 + 2 * C::BR;
        shares = D0 + 2 * C::BR;
    }
    __device__ uint16_t *Q(int st) const { return Q0 + st * C::BR * C::LDK; }
    __device__ uint16_t *dO(int st) const { return dO0 + st * C::BR * C::LDV; }
    __device__ uint16_t *bias(int st) const { return bias0 + st * C::BR * C::LDP; }
    __device__ int64_t *range(int st) const { return range0 + st * 2 * C::BR; }
    __device__ float *lse(int st) const { return lse0 + st * C::BR; }
    __device__ float *D(int st) const { return D0 + st * C::BR; }
};

/* The query rows one step works on: rows [i0, i0 + rows) of head h; row0 indexes its first row in lse and Delta. */
struct qtile {
    int64_t h, i0, rows, row0;
};

/* Where a step's tile lies, for the hooks: batch row b, head h, its first query and key positions along Sq and
 * Sk, how many rows and keys are real, whether this pass writes dS to the bias's gradient from registers
 * (p_and_ds_hooked; the dK/dV pass, unless sink_tile does it) or flex's buffers' shares to its share tiles
 * (p_and_ds_flex; the dQ pass), and (flex) whether the tile is a partial one, whose elements the mask mods decide. */
struct tile_pos {
    int64_t b, h, q0, k0, rows, keys;
    bool sink;
    bool mods;
};

/*
 * Each row of @p q into shared memory: its lse and Delta by cp.async (committed by the caller; zero past the
 * tile's end, where the steps are masked), and, for a MASKED step, the keys [lo, hi) it sees (none past the
 * end). Fetched without registers, the next step's stats land while this step's products run; loaded and
 * stored by the threads of the rows, they stalled those 2 warps on the loads each step while the other 6
 * waited at the next barrier. The unmasked steps, most of them, never read the ranges, so they skip the
 * 64-bit arithmetic that finds them.
 */
template <int BR>
__device__ __forceinline__ void fetch_rows(const args &a, const ladder_attn_seq &seq, const qtile &q, bool masked,
                                           int64_t *range, float *lse, float *D) {
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
        const bool in = r < q.rows;
        ladder_cp_async4(lse + r, a.lse + (in ? q.row0 + r : 0), in);
        ladder_cp_async4(D + r, a.delta + (in ? q.row0 + r : 0), in);
        if (!masked) continue;
        range[2 * r] = range[2 * r + 1] = 0;
        if (in) ladder_attn_key_range(&a.mask, q.i0 + r, seq.Lq, seq.Lk, &range[2 * r], &range[2 * r + 1]);
    }
}

/*
 * P = exp(S - lse) and dS = P (dP - Delta), times the softcap's slope when CAPPED, from this warp's S and dP
 * fragments (rows r0.., keys c0..) into shared memory as 16-bit [row][key] tiles. As in the forward the exponent
 * is one FFMA: x * sl2 - lse * log2(e), x the raw q.k (without softcap) or the capped S. MASKED: keys outside a
 * row's range get P = 0 (FULL steps, most of them, skip the test).
 */
template <class Pol, class T, int HD, int HDV, bool MASKED, bool CAPPED, int MT, int NT>
__device__ __forceinline__ void p_and_ds(const args &a, const bwd_smem<Pol, HD, HDV> &sm, const float (&s)[MT][NT][4],
                                         const float (&dp)[MT][NT][4], int st, int64_t j0, int r0, int c0, int lane) {
    /* the plain policy's loop; the hooked one is p_and_ds_hooked */
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int LDP = C::LDP;
    const int g = lane / 4, t = lane % 4;
    const float sl2 = (CAPPED ? 1.0f : a.scale) * LADDER_LOG2E; /* S = sl2 / log2(e) * x */
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < 2; k++) { /* row r; keys c, c + 1 of each n8 block */
            const int r = r0 + mt * 16 + g + 8 * k;
            const float L2 = ladder_attn_lse_for_bwd(sm.lse(st)[r]) * LADDER_LOG2E, Delta = sm.D(st)[r];
            const int lo = MASKED ? tile_offset<C::BC>(sm.range(st)[2 * r], j0) : 0;
            const int hi = MASKED ? tile_offset<C::BC>(sm.range(st)[2 * r + 1], j0) : 0;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int c = c0 + nt * 8 + 2 * t;
                float P[2], dS[2];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float x = s[mt][nt][2 * k + e];
                    P[e] = ladder_ex2_ftz(fmaf(x, sl2, -L2));
                    if (MASKED && !(c + e >= lo && c + e < hi)) P[e] = 0.0f;
                    dS[e] = P[e] * (dp[mt][nt][2 * k + e] - Delta);
                    if (CAPPED) dS[e] *= ladder_attn_softcap_grad(x, a.softcap);
                }
                *(uint32_t *)(sm.P + r * LDP + c) = ladder_pack2_float<T>(P[0], P[1]);
                *(uint32_t *)(sm.dS + r * LDP + c) = ladder_pack2_float<T>(dS[0], dS[1]);
            }
        }
}

/*
 * p_and_ds with the hooks, element by element in natural units: S = scale q.k (softcapped with CAPPED, x being
 * the capped S then) plus the bias; P = exp(S - lse); the stored P is P where kept and 0 where dropped (the
 * kept elements' 1 / (1 - p) multiplies dV once, at the end) and dS = P (dP f - Delta), f dropout's factor. dS
 * before the softcap's slope goes to the bias's gradient when this pass writes it. Elements outside the row's
 * range (MASKED) get P = dS = 0, and 0 in the bias's gradient, which was cleared anyway; past @p pos's rows and
 * keys (another sequence's or the tensor's end) nothing is read or written. The bias comes from the step's tile in
 * shared memory (bias_tile), its gradient goes out a key pair at a time, and dropout's bits come for the warp's
 * rows at once (ladder_attn_kept_rows).
 */
template <class Pol, class T, int HD, int HDV, bool MASKED, bool CAPPED, int MT, int NT>
__device__ __forceinline__ void p_and_ds_hooked(const args &a, const bwd_smem<Pol, HD, HDV> &sm,
                                                const float (&s)[MT][NT][4], const float (&dp)[MT][NT][4], int st,
                                                int64_t j0, int r0, int c0, int lane, const tile_pos &pos) {
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int LDP = C::LDP;
    const int g = lane / 4, t = lane % 4;
    const ladder_attn_hooks &hk = a.hooks;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        uint32_t kept[2]; /* dropout's bits of the warp's 16 rows */
        ladder_attn_kept_rows<NT>(hk, a, pos.b, pos.h, pos.q0 + r0 + mt * 16, pos.k0 + c0, lane, kept);
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int r = r0 + mt * 16 + g + 8 * k;
            const float L = ladder_attn_lse_for_bwd(sm.lse(st)[r]), Delta = sm.D(st)[r];
            const int lo = MASKED ? tile_offset<C::BC>(sm.range(st)[2 * r], j0) : 0;
            const int hi = MASKED ? tile_offset<C::BC>(sm.range(st)[2 * r + 1], j0) : C::BC;
            /* the row's own bases, so that each element adds a key offset: 64-bit products per element spilled */
            const int64_t qi = pos.q0 + r;
            const bool row_in = r < pos.rows;
            const int64_t sink_row = pos.b * hk.dbias.s[0] + pos.h * hk.dbias.s[1] + qi * hk.dbias.s[2];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int c = c0 + nt * 8 + 2 * t;
                const int64_t kj = pos.k0 + c;
                /* are keys c and c + 1 the tile's? Past its keys lie another sequence's, or the tensor's end */
                const bool first = row_in && c < pos.keys, second = c + 1 < pos.keys;
                float bias[2] = {0.0f, 0.0f};
                if (hk.bias) { /* zero past the tile's rows and keys */
                    const uint32_t w = *(const uint32_t *)(sm.bias(st) + r * LDP + c);
                    bias[0] = ladder_to_float<T>((uint16_t)w), bias[1] = ladder_to_float<T>((uint16_t)(w >> 16));
                }
                float P[2], dS[2], sunk[2]; /* sunk: dS before the softcap's slope, the bias's gradient */
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    P[e] = dS[e] = sunk[e] = 0.0f;
                    if (!(c + e >= lo && c + e < hi && row_in && c + e < pos.keys)) continue;
                    const float x = s[mt][nt][2 * k + e];
                    const float p = __expf((CAPPED ? x : a.scale * x) + bias[e] - L);
                    const bool keep = (kept[k] >> (2 * nt + e)) & 1u;
                    sunk[e] = p * (dp[mt][nt][2 * k + e] * (keep ? hk.keep_scale : 0.0f) - Delta);
                    P[e] = keep ? p : 0.0f; /* dV's 1 / (1 - p) is applied once, to the sum */
                    dS[e] = CAPPED ? sunk[e] * ladder_attn_softcap_grad(x, a.softcap) : sunk[e];
                }
                if (pos.sink && hk.dbias.p && first) ladder_attn_sink_pair<T>(hk.dbias, sink_row + kj * hk.dbias.s[3], second, sunk);
                *(uint32_t *)(sm.P + r * LDP + c) = ladder_pack2_float<T>(P[0], P[1]);
                *(uint32_t *)(sm.dS + r * LDP + c) = ladder_pack2_float<T>(dS[0], dS[1]);
            }
        }
    }
}

/*
 * p_and_ds with flex's policy, element by element in natural units: S = MOD(s) for s = scale q.k, P = exp(S - lse),
 * dS = P (dP - Delta), and the stored dS' = dS dS/ds, the mod's slope. In the dQ pass (pos.sink) each buffer read
 * rd's share dS dS/dx, in f32, goes to its share tile in shared memory, a pair of keys at a time, for every element
 * of the tile (flex_store_tile_sums() then sums them along lines). MASKED: the elements past @p pos's rows and keys, and in a
 * partial tile (pos.mods) those the mask mods forbid, get P = dS = 0 and a share of 0, and their mod is not called:
 * past the tile's rows and keys it would read past its buffers.
 */
template <class Pol, class T, int HD, int HDV, bool MASKED, int MT, int NT>
__device__ __forceinline__ void p_and_ds_flex(const args &a, const bwd_smem<Pol, HD, HDV> &sm,
                                              const float (&s)[MT][NT][4], const float (&dp)[MT][NT][4], int st,
                                              int r0, int c0, int lane, const tile_pos &pos) {
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int LDP = C::LDP;
    const int g = lane / 4, t = lane % 4;
    const ladder_flex_hooks &f = a.flex;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int r = r0 + mt * 16 + g + 8 * k;
            const float L = ladder_attn_lse_for_bwd(sm.lse(st)[r]), Delta = sm.D(st)[r];
            const int64_t qi = pos.q0 + r;
            const bool row_in = r < pos.rows;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int c = c0 + nt * 8 + 2 * t;
                float P[2], dS[2], share[LADDER_FLEX_MAX_READS][2];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int64_t kj = pos.k0 + c + e;
                    P[e] = dS[e] = 0.0f;
#pragma unroll
                    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) share[rd][e] = 0.0f;
                    if (MASKED && !(row_in && c + e < pos.keys &&
                                    (!pos.mods || ladder_flex_masks(f.masks, &f.env, pos.b, pos.h, qi, kj))))
                        continue;
                    const float x = a.scale * s[mt][nt][2 * k + e];
                    const ladder_flex_grad d = ladder_flex_score_grad(Pol::MOD, x, &f.env, pos.b, pos.h, qi, kj);
                    P[e] = __expf(ladder_flex_score(Pol::MOD, x, &f.env, pos.b, pos.h, qi, kj) - L);
                    const float ds = P[e] * (dp[mt][nt][2 * k + e] - Delta);
                    dS[e] = ds * d.dscore;
#pragma unroll
                    for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++) share[rd][e] = ds * d.d[rd];
                }
                *(uint32_t *)(sm.P + r * LDP + c) = ladder_pack2_float<T>(P[0], P[1]);
                *(uint32_t *)(sm.dS + r * LDP + c) = ladder_pack2_float<T>(dS[0], dS[1]);
#pragma unroll
                for (int rd = 0; rd < LADDER_FLEX_MAX_READS; rd++)
                    if (pos.sink && f.part[rd])
                        *(float2 *)flex_share_tile<C::BR, C::BC>::at(sm.shares, rd, r, c) =
                            make_float2(share[rd][0], share[rd][1]);
            }
        }
}

/*
 * S = Q K^T and dP = dO V^T for this warp's part of the BR x BC tile, then P and dS (p_and_ds). With softcap,
 * S is capped for the whole tile behind one uniform branch, and P and dS come from their own copy of the loop:
 * a branch per score (the first version's) put the tanh's code between the scores, and the forward's profile
 * showed warps stalled on branches and instruction fetch more than on anything else.
 */
template <class Pol, class T, int HD, int HDV, bool MASKED>
__device__ __forceinline__ void scores(const args &a, const bwd_smem<Pol, HD, HDV> &sm, const uint16_t *Qs, int st,
                                       int64_t j0, int warp, int lane, const tile_pos &pos) {
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int MT = C::S_MT, NT = C::S_NT, LDK = C::LDK, LDV = C::LDV;
    const int r0 = warp / C::S_WN * MT * 16, c0 = warp % C::S_WN * NT * 8;
    float s[MT][NT][4], dp[MT][NT][4];
    ladder_zero_tile(s);
    ladder_zero_tile(dp);
    ladder_mma_warp_tile<T, MT, NT, HD / 16, false, false>(s, Qs + r0 * LDK, LDK, sm.K + c0 * LDK, LDK, lane);
    ladder_mma_warp_tile<T, MT, NT, HDV / 16, false, false>(dp, sm.dO(st) + r0 * LDV, LDV, sm.V + c0 * LDV, LDV, lane);
    if constexpr (Pol::FLEX) { /* flex has no softcap of its own: a score mod caps */
        p_and_ds_flex<Pol, T, HD, HDV, MASKED>(a, sm, s, dp, st, r0, c0, lane, pos);
        return;
    }
    if (a.softcap > 0.0f) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int c = 0; c < 4; c++) s[mt][nt][c] = ladder_attn_softcap(a.scale * s[mt][nt][c], a.softcap);
        if constexpr (Pol::EXTRAS) p_and_ds_hooked<Pol, T, HD, HDV, MASKED, true>(a, sm, s, dp, st, j0, r0, c0, lane, pos);
        else p_and_ds<Pol, T, HD, HDV, MASKED, true>(a, sm, s, dp, st, j0, r0, c0, lane);
    } else {
        if constexpr (Pol::EXTRAS) p_and_ds_hooked<Pol, T, HD, HDV, MASKED, false>(a, sm, s, dp, st, j0, r0, c0, lane, pos);
        else p_and_ds<Pol, T, HD, HDV, MASKED, false>(a, sm, s, dp, st, j0, r0, c0, lane);
    }
}

/*
 * The step's dS tile, from shared memory, into the bias's gradient @p d, 8 keys (16 bytes) a store, by the whole
 * block: where the gradient has the problem's full shape in storage of T with 16-byte aligned rows, and dS needs
 * no softcap slope (the stored dS is then the gradient's value, rounded as a store from registers rounds it).
 * Stored a key pair at a time from p_and_ds_hooked's registers, each warp's stores covered 8 rows with 16 bytes
 * each, and the per-pair addresses held registers through the loop. Rows and keys past @p pos's are another
 * sequence's or past the tensor's end: not written.
 */
template <int BR, int BC, int THREADS>
__device__ __forceinline__ void sink_tile(const ladder_attn_ds_sink &d, const uint16_t *dS, const tile_pos &pos) {
    constexpr int CHUNKS = BC / 8;
    uint16_t *base = (uint16_t *)d.p + pos.b * d.s[0] + pos.h * d.s[1] + pos.q0 * d.s[2] + pos.k0;
#pragma unroll
    for (int x0 = 0; x0 < BR * CHUNKS; x0 += THREADS) {
        const int x = x0 + (int)threadIdx.x, r = x / CHUNKS, c = x % CHUNKS * 8;
        if (r >= pos.rows || c >= pos.keys) continue;
        const uint16_t *src = dS + r * (BC + 8) + c;
        uint16_t *dst = base + r * d.s[2] + c;
        if (c + 8 <= pos.keys) *(uint4 *)dst = *(const uint4 *)src;
        else
            for (int e = 0; e < pos.keys - c; e++) dst[e] = src[e];
    }
}

/* dq = dS K for this warp's part of the BR x HD tile (rows qr.., columns qc..), from the dS tile in shared memory. */
template <class Pol, class T, int HD, int HDV>
__device__ __forceinline__ void dq_product(float (&dq)[bwd_cfg<Pol, HD, HDV>::Q_MT][bwd_cfg<Pol, HD, HDV>::Q_NT][4],
                                           const bwd_smem<Pol, HD, HDV> &sm, int qr, int qc, int lane) {
    using C = bwd_cfg<Pol, HD, HDV>;
    ladder_mma_warp_tile<T, C::Q_MT, C::Q_NT, C::BC / 16, false, true>(dq, sm.dS + qr * C::LDP, C::LDP, sm.K + qc,
                                                                         C::LDK, lane);
}

/*
 * The first t in [0, n) with pred(t), for a pred that is false and then true as t grows (n if none), found by
 * the 32 lanes of a warp together: they test 32 evenly spaced t at once and keep the gap where pred turns
 * true, so each round divides the interval by 32 (two rounds for 64 tiles, where a binary search took six
 * dependent ones, each a 64-bit key range). Every lane of the warp calls it and gets the same answer.
 */
template <class Pred> __device__ __forceinline__ int first_true(int n, Pred pred) {
    const int lane = threadIdx.x % 32;
    int lo = 0, hi = n; /* pred false below lo, true from hi */
    while (lo < hi) {
        const int step = (hi - lo + 31) / 32; /* the probes lo + lane * step reach past hi - step */
        const int x = lo + lane * step;
        const unsigned yes = __ballot_sync(0xffffffffu, x >= hi || pred(x));
        const int f = yes ? __ffs(yes) - 1 : 32; /* the first probe where pred holds (32: none did) */
        if (f == 0) return lo;
        const int next_hi = lo + f * step; /* pred holds there (or it is past hi), and fails at the probe before */
        lo += (f - 1) * step + 1;
        hi = next_hi < hi ? next_hi : hi;
    }
    return lo;
}

/* Query tile rows [i0, i0 + BR) of head h0 + hh (the group's hh-th), in a sequence of Lq rows; row0 is the row of
 * the sequence's first query of head h0 in the [B * Hq * Sq] rows, and a head's rows lie Sq further. (Few fields:
 * the Hopper pass's producer walks these steps in 24 registers.) */
template <int BR> struct group_tiles {
    int64_t row0, Sq, Lq;
    int h0;
    __device__ qtile at(int hh, int64_t i0) const {
        qtile q;
        q.h = h0 + hh, q.i0 = i0;
        q.rows = Lq - i0 < BR ? Lq - i0 : BR;
        q.row0 = row0 + hh * Sq + i0;
        return q;
    }
};

/*
 * The dK/dV pass's steps: the query tiles of each query head of the group that see the block's keys, as
 * for (; steps.more(); steps.next(a)), steps.tile() the step's rows; masked(): the step applies the bounds and the
 * mask (every other step is a whole tile of rows and keys, each seen by each); mods(): the mask mods too (flex's
 * partial tiles).
 *
 * interval: flash's and memeff's, the tiles [t0, t1) of each head, masked outside [u0, u1) (kv_steps() finds them),
 * counted up without a division (a 64-bit n / per_head and n % per_head per step were calls to a division routine).
 */
template <int BR> struct interval_steps {
    group_tiles<BR> rows;
    int group, t0, t1, u0, u1, hh, tt;
    __device__ bool more() const { return hh < group; }
    __device__ void next(const args &) {
        if (++tt == t1) tt = t0, hh++;
    }
    __device__ qtile tile() const { return rows.at(hh, (int64_t)tt * BR); }
    /* the step after this one (where one is left: left() > 1) */
    __device__ qtile following() const {
        return tt + 1 < t1 ? rows.at(hh, (int64_t)(tt + 1) * BR) : rows.at(hh + 1, (int64_t)t0 * BR);
    }
    __device__ bool masked() const { return tt < u0 || tt >= u1; }
    __device__ static constexpr bool mods() { return false; }
    __device__ int left() const { return hh < group ? (group - hh) * (t1 - t0) - (tt - t0) : 0; } /* steps to go */
};

/* flex's: each head's query tiles from the key tile's block lists (flex_query_tiles), head after head; masked
 * but where a full tile meets a whole tile of BC keys. */
template <int BR, int BC> struct list_steps {
    group_tiles<BR> rows;
    int64_t b, j0; /* the batch row; the key tile's first key along Sk */
    int group, hh, togo; /* togo: the steps left, this one included */
    bool whole_keys;
    list_tiles<BR> tiles;
    __device__ list_steps(const args &a, const group_tiles<BR> &r, int64_t b_, int64_t key0, int64_t keys, int g)
        : rows(r), b(b_), j0(key0), group(g), hh(0), togo(0), whole_keys(keys == BC),
          tiles(flex_query_tiles<BR>(a, b_, r.h0, key0)) {
        for (int h = 0; h < group; h++) togo += flex_query_tiles<BR>(a, b, rows.h0 + h, j0).count();
        settle(a);
    }
    /* on to the next head of the group that has a tile, when this head's are done */
    __device__ void settle(const args &a) {
        while (!tiles.more() && ++hh < group) tiles = flex_query_tiles<BR>(a, b, rows.h0 + hh, j0);
    }
    __device__ bool more() const { return hh < group; }
    __device__ void next(const args &a) {
        tiles.next();
        settle(a);
        togo--;
    }
    __device__ qtile tile() const { return rows.at(hh, tiles.at); }
    __device__ int left() const { return togo; }
    __device__ bool masked() const { return !(tiles.full() && whole_keys); }
    __device__ bool mods() const { return tiles.mods(); }
};

/* The dK/dV pass's steps for the keys [j0, j0 + keys) of key/value head hk, batch row b: the interval's or (flex) the
 * block lists'. */
template <class Pol, int BR, int BC>
__device__ __forceinline__ auto kv_steps(const args &a, const ladder_attn_seq &seq, int64_t b, int64_t hk, int group,
                                         int64_t j0, int64_t keys) {
    const group_tiles<BR> rows = {(b * a.Hq + hk * group) * a.Sq + seq.q0, a.Sq, seq.Lq, (int)(hk * group)};
    if constexpr (Pol::FLEX) {
        return list_steps<BR, BC>(a, rows, b, seq.k0 + j0, keys, group);
    } else {
        /* The query tiles whose rows see some of the keys: [t0, t1), contiguous since both ends of a row's key range
         * move right with the row (a tile sees them if its last row's range ends past j0 and its first row's starts
         * before j0 + keys). Among them the tiles that need no mask, [u0, u1), contiguous for the same reason: whole
         * tiles of rows and keys whose first row's range ends at or past j0 + BC and whose last row's starts at or
         * before j0. Found here once, they let each step choose its path with two int compares, where each step
         * found its own first and last rows' key ranges in 64-bit arithmetic. Tile indices are ints: a sequence has
         * fewer than 2^31 tiles. */
        const int tiles = (int)((seq.Lq + BR - 1) / BR);
        auto lo_of = [=](int64_t i) {
            int64_t lo, hi;
            ladder_attn_key_range(&a.mask, i, seq.Lq, seq.Lk, &lo, &hi);
            return lo;
        };
        auto hi_of = [=](int64_t i) {
            int64_t lo, hi;
            ladder_attn_key_range(&a.mask, i, seq.Lq, seq.Lk, &lo, &hi);
            return hi;
        };
        const int t0 = first_true(tiles, [=](int tt) {
            const int64_t end = (int64_t)(tt + 1) * BR;
            return hi_of((end < seq.Lq ? end : seq.Lq) - 1) > j0;
        });
        const int t1 = first_true(tiles, [=](int tt) { return lo_of((int64_t)tt * BR) >= j0 + keys; });
        const int u0 = first_true(tiles, [=](int tt) { return hi_of((int64_t)tt * BR) >= j0 + BC; });
        const int u1 = keys < BC ? u0 : first_true(tiles, [=](int tt) {
            const int64_t end = (int64_t)(tt + 1) * BR;
            return end > seq.Lq || lo_of(end - 1) > j0;
        });
        return interval_steps<BR>{rows, group, t0, t1, u0, u1, t0 < t1 ? 0 : group, t0};
    }
}

/*
 * 2. (and 3. with atomic_dq) one block per (key tile, key/value head hk, batch row b). atomic_dq is a kernel
 * argument, not a template one: the branch is uniform, and one compiled kernel serves both modes.
 *
 * The steps and their two barriers: Q_n and dO_n have landed, and every warp is done with step n - 1 | fetch
 * Q_{n+1} and dO_{n+1} into the other buffers, and their rows' stats; S, dP -> P, dS | dV += P^T dO; dQ
 * atomics; dK += dS^T Q. With one dO buffer, a third barrier after dV waited for every warp before dO_{n+1}
 * could be fetched.
 */
template <class Pol, class T, int HD, int HDV>
__global__ void __launch_bounds__(bwd_cfg<Pol, HD, HDV>::THREADS, 1) attn_bwd_dkdv_tc_kernel(args a, bool atomic_dq) {
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, LDK = C::LDK, LDV = C::LDV, LDP = C::LDP;
    extern __shared__ __align__(16) uint16_t smem[];
    const bwd_smem<Pol, HD, HDV> sm(smem);
    int64_t s, j0;
    if (!ladder_attn_tile(a.cu_k, a.n_seqs, a.Sk, BC, blockIdx.x, &s, &j0)) return; /* the whole block */
    const int64_t hk = blockIdx.y, b = blockIdx.z;
    const int group = (int)(a.Hq / a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int kr = warp / C::KV_WN * 32, kc = warp % C::KV_WN * C::K_NT * 8, vc = warp % C::KV_WN * C::V_NT * 8;
    const int qr = warp / C::Q_WN * C::Q_MT * 16, qc = warp % C::Q_WN * C::Q_NT * 8;

    auto steps = kv_steps<Pol, BR, BC>(a, seq, b, hk, group, j0, keys);

    /* the hooks: is the bias read, and does dS reach its gradient through sink_tile? (uniform branches) */
    const bool biased = Pol::EXTRAS && a.hooks.bias;
    const ladder_attn_ds_sink &ds_sink = a.hooks.dbias;
    const bool by_tile = Pol::EXTRAS && ds_sink.p && !ds_sink.f32 && a.softcap <= 0.0f && ds_sink.s[3] == 1 &&
                         ds_sink.s[2] % 8 == 0 && (seq.k0 + j0) % 8 == 0 && ((uintptr_t)ds_sink.p & 15) == 0;
    /* query tile q's operands (Q, dO, the row stats, the bias tile) into buffers st */
    auto fetch_step = [&](const qtile &q, bool mask, int st) {
        load_tile<BR, HD, C::THREADS>(sm.Q(st), LDK, a.q, b, q.h, seq.q0 + q.i0, q.rows, a.D);
        load_tile<BR, HDV, C::THREADS>(sm.dO(st), LDV, a.dout, b, q.h, seq.q0 + q.i0, q.rows, a.Dv);
        fetch_rows<BR>(a, seq, q, mask, sm.range(st), sm.lse(st), sm.D(st));
        if (biased) bias_tile<BR, BC, C::THREADS>(sm.bias(st), a.bias, b, q.h, seq.q0 + q.i0, q.rows, seq.k0 + j0, keys);
    };
    load_tile<BC, HD, C::THREADS>(sm.K, LDK, a.k, b, hk, seq.k0 + j0, keys, a.D);
    load_tile<BC, HDV, C::THREADS>(sm.V, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
    if (steps.more()) fetch_step(steps.tile(), steps.masked(), 0);
    ladder_cp_async_commit();
    float dk[2][C::K_NT][4], dv[2][C::V_NT][4];
    ladder_zero_tile(dk);
    ladder_zero_tile(dv);

    /* The steps; st: the step's buffers. */
    for (int st = 0; steps.more(); st ^= 1) {
        const qtile q = steps.tile();
        const bool mask = steps.masked();
        /* the bias's gradient is written from registers here, unless sink_tile writes it; flex's shares by the dQ
         * pass, whose registers have room for them */
        const tile_pos pos = {b, q.h, seq.q0 + q.i0, seq.k0 + j0, q.rows, keys, !Pol::FLEX && !by_tile, steps.mods()};
        steps.next(a); /* the next step's, from here on */
        ladder_cp_async_wait_group<0>(); /* Q_n, dO_n (and K, V at first) */
        __syncthreads();                 /* ... for every thread; and every warp is done with step n - 1 */
        if (steps.more()) fetch_step(steps.tile(), steps.masked(), 1 - st);
        ladder_cp_async_commit();

        if (mask) scores<Pol, T, HD, HDV, true>(a, sm, sm.Q(st), st, j0, warp, lane, pos);
        else scores<Pol, T, HD, HDV, false>(a, sm, sm.Q(st), st, j0, warp, lane, pos);
        __syncthreads(); /* P and dS are whole */
        if (by_tile) sink_tile<BR, BC, C::THREADS>(ds_sink, sm.dS, pos);

        /* dV += P^T dO (and below, dK += dS^T Q) for keys kr.. (P^T, dS^T: the stored [row][key] tiles through
         * .trans) */
        ladder_mma_warp_tile<T, 2, C::V_NT, BR / 16, true, true>(dv, sm.P + kr, LDP, sm.dO(st) + vc, LDV, lane);

        /* flex's backward is always the deterministic one: its kernels compile no atomics */
        if (!Pol::FLEX && atomic_dq) { /* dQ += dS K for rows qr.., columns qc.. (the scale is applied once, when it is rounded) */
            float dq[C::Q_MT][C::Q_NT][4];
            ladder_zero_tile(dq);
            dq_product<Pol, T, HD, HDV>(dq, sm, qr, qc, lane);
            if (q.rows == BR && a.D == HD) {
                /* A whole tile, the common case: every atomic's address is one base plus a compile-time offset,
                 * and each adds the pair of columns 2t, 2t + 1 (8-byte aligned: HD is even). A 64-bit address
                 * computed per element behind a branch of its own took about 14 instructions per atomic. */
                float *base = a.dq_accum + (q.row0 + qr + g) * HD + qc + 2 * t;
#pragma unroll
                for (int mt = 0; mt < C::Q_MT; mt++)
#pragma unroll
                    for (int k = 0; k < 2; k++)
#pragma unroll
                        for (int nt = 0; nt < C::Q_NT; nt++)
                            atomic_add2(base + (mt * 16 + 8 * k) * HD + nt * 8, dq[mt][nt][2 * k],
                                        dq[mt][nt][2 * k + 1]);
            } else { /* the last rows of a sequence, or padded head dims: one address per row, a test per element */
                const int cols = (int)a.D - (qc + 2 * t); /* this lane's columns qc + 2t + nt*8 + e exist if < a.D */
                float *tile = a.dq_accum + q.row0 * a.D;  /* the step's first row; r * D fits an int */
#pragma unroll
                for (int mt = 0; mt < C::Q_MT; mt++)
#pragma unroll
                    for (int k = 0; k < 2; k++) {
                        const int r = qr + mt * 16 + g + 8 * k;
                        float *row = tile + (r * (int)a.D + qc + 2 * t);
                        if (r < q.rows)
#pragma unroll
                            for (int nt = 0; nt < C::Q_NT; nt++)
#pragma unroll
                                for (int e = 0; e < 2; e++)
                                    if (nt * 8 + e < cols) atomicAdd(row + nt * 8 + e, dq[mt][nt][2 * k + e]);
                    }
            }
        }
        /* dK after dQ, as FlashAttention-2 orders them: the atomics drain while dK's products run (issued last,
         * they held their registers into the next step, whose first instructions waited for them) */
        ladder_mma_warp_tile<T, 2, C::K_NT, BR / 16, true, true>(dk, sm.dS + kr, LDP, sm.Q(st) + kc, LDK, lane);
    }
    ladder_cp_async_wait_group<0>(); /* a block that saw no query tile still has its K, V copies in flight */

    /* dK = scale * sum dS^T Q and dV, rounded to T: keys kr + mt*16 + g (+8), this warp's columns. A whole tile
     * (every key, unpadded head dims, 4-byte aligned outputs, the common case) stores the pair of columns 2t,
     * 2t + 1 as one 32-bit word, each at one base address plus a compile-time offset; otherwise element by
     * element, a test each. */
    const int64_t key0 = (b * a.Hkv + hk) * a.Sk + seq.k0 + j0; /* the tile's first key, as a row of dK and dV */
    /* dropout's 1 / (1 - p), which the stored P left out */
    const float vs = Pol::EXTRAS && a.hooks.dropout_p > 0.0f ? a.hooks.keep_scale : 1.0f;
    if (keys == BC && a.D == HD && a.Dv == HDV && (((uintptr_t)a.dk | (uintptr_t)a.dv) & 3) == 0) {
        uint16_t *dk0 = a.dk + (key0 + kr + g) * HD + kc + 2 * t, *dv0 = a.dv + (key0 + kr + g) * HDV + vc + 2 * t;
#pragma unroll
        for (int mt = 0; mt < 2; mt++)
#pragma unroll
            for (int k = 0; k < 2; k++) { /* rows g and g + 8 of the m16 block */
#pragma unroll
                for (int nt = 0; nt < C::K_NT; nt++)
                    *(uint32_t *)(dk0 + (mt * 16 + 8 * k) * HD + nt * 8) =
                        ladder_pack2_float<T>(a.scale * dk[mt][nt][2 * k], a.scale * dk[mt][nt][2 * k + 1]);
#pragma unroll
                for (int nt = 0; nt < C::V_NT; nt++)
                    *(uint32_t *)(dv0 + (mt * 16 + 8 * k) * HDV + nt * 8) =
                        ladder_pack2_float<T>(vs * dv[mt][nt][2 * k], vs * dv[mt][nt][2 * k + 1]);
            }
        return;
    }
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int key = kr + mt * 16 + g + 8 * (c / 2);
            if (key >= keys) continue;
            const int64_t at = key0 + key;
#pragma unroll
            for (int nt = 0; nt < C::K_NT; nt++) {
                const int col = kc + nt * 8 + 2 * t + (c & 1);
                if (col < a.D) a.dk[at * a.D + col] = ladder_from_float<T>(a.scale * dk[mt][nt][c]);
            }
#pragma unroll
            for (int nt = 0; nt < C::V_NT; nt++) {
                const int col = vc + nt * 8 + 2 * t + (c & 1);
                if (col < a.Dv) a.dv[at * a.Dv + col] = ladder_from_float<T>(vs * dv[mt][nt][c]);
            }
        }
}

/*
 * 3. Deterministic dQ: one block per (query tile, head h, batch row b), the key tiles streamed in order. With
 * split keys (a.splits > 1, short sequences of queries against long ones of keys) a.splits blocks share a query
 * tile's key tiles, each writing its unscaled fp32 partial into a.dq_accum [splits][B*Hq*Sq][D], which
 * attn_bwd_dq_sum_tc_kernel adds in split order: still bitwise-repeatable.
 */
template <class Pol, class T, int HD, int HDV>
__global__ void __launch_bounds__(bwd_cfg<Pol, HD, HDV>::THREADS, 1) attn_bwd_dq_tc_kernel(args a) {
    using C = bwd_cfg<Pol, HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, LDK = C::LDK, LDV = C::LDV;
    extern __shared__ __align__(16) uint16_t smem[];
    const bwd_smem<Pol, HD, HDV> sm(smem);
    const int splits = Pol::EXTRAS ? (int)a.splits : 1;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x / splits, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    qtile q;
    q.h = h, q.i0 = i0, q.rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR, q.row0 = (b * a.Hq + h) * a.Sq + seq.q0 + i0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int qr = warp / C::Q_WN * C::Q_MT * 16, qc = warp % C::Q_WN * C::Q_NT * 8;
    const ladder_attn_block span = ladder_attn_block_range(&a.mask, i0, q.rows, seq.Lq, seq.Lk);
    int64_t jbeg = span.lo / BC * BC, khi = span.hi; /* this split's share of the key tiles */
    split_share<BC>(splits, jbeg, khi);
    auto tiles = key_tiles<Pol, BC>(a, span, b, h, i0, jbeg, khi); /* flex: the forward's block lists */

    load_tile<BR, HD, C::THREADS>(sm.Q(0), LDK, a.q, b, h, seq.q0 + i0, q.rows, a.D);
    load_tile<BR, HDV, C::THREADS>(sm.dO(0), LDV, a.dout, b, h, seq.q0 + i0, q.rows, a.Dv);
    fetch_rows<BR>(a, seq, q, true, sm.range(0), sm.lse(0), sm.D(0));
    ladder_cp_async_commit();
    float dq[C::Q_MT][C::Q_NT][4];
    ladder_zero_tile(dq);
    if constexpr (Pol::FLEX) { /* the block's rows of partials, and the share tiles' margins, start at zero */
        flex_clear_partials<Pol::MOD, BR, C::THREADS>(a.flex, a.Hq, b, h, i0 / BR);
        flex_clear_shares<BR, BC, C::THREADS, true>(a.flex, sm.shares);
    }

    for (; tiles.more(); tiles.next()) {
        const int64_t j0 = tiles.at;
        __syncthreads(); /* every warp is done with the previous K, V and dS tiles (and flex's shares and partials) */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_tile<BC, HD, C::THREADS>(sm.K, LDK, a.k, b, hk, seq.k0 + j0, keys, a.D);
        load_tile<BC, HDV, C::THREADS>(sm.V, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        if (Pol::EXTRAS && a.hooks.bias)
            bias_tile<BR, BC, C::THREADS>(sm.bias(0), a.bias, b, h, seq.q0 + i0, q.rows, seq.k0 + j0, keys);
        ladder_cp_async_commit();
        ladder_cp_async_wait_group<0>();
        __syncthreads();
        const tile_pos pos = {b, h, seq.q0 + i0, seq.k0 + j0, q.rows, keys, Pol::FLEX, tiles.mods()};
        /* no mask where every row sees every key: a whole tile of rows and keys, full */
        if (tiles.full() && q.rows == BR && keys == BC)
            scores<Pol, T, HD, HDV, false>(a, sm, sm.Q(0), 0, j0, warp, lane, pos);
        else scores<Pol, T, HD, HDV, true>(a, sm, sm.Q(0), 0, j0, warp, lane, pos);
        __syncthreads(); /* dS is whole (and flex's shares) */
        /* the buffers' line sums before dQ's products: the warps that have no line to sum run their products
         * meanwhile */
        if constexpr (Pol::FLEX)
            flex_store_tile_sums<Pol::MOD, BR, BC, C::THREADS>(a.flex, sm.shares, a.Hq, b, h, i0 / BR, seq.k0 + j0);
        dq_product<Pol, T, HD, HDV>(dq, sm, qr, qc, lane);
    }
    if constexpr (Pol::FLEX) flex_flush_lines<Pol::MOD, BR, BC>(a.flex, sm.shares, a.Hq, b, h, i0 / BR);
    ladder_cp_async_wait_group<0>();
#pragma unroll
    for (int mt = 0; mt < C::Q_MT; mt++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int r = qr + mt * 16 + g + 8 * (c / 2);
            if (r >= q.rows) continue;
#pragma unroll
            for (int nt = 0; nt < C::Q_NT; nt++) {
                const int col = qc + nt * 8 + 2 * t + (c & 1);
                if (col >= a.D) continue;
                if (splits > 1) /* this split's partial; the split found again, not kept in a register */
                    a.dq_accum[((blockIdx.x % splits) * a.B * a.Hq * a.Sq + q.row0 + r) * a.D + col] = dq[mt][nt][c];
                else a.dq[(q.row0 + r) * a.D + col] = ladder_from_float<T>(a.scale * dq[mt][nt][c]);
            }
        }
}

/* After the split deterministic dQ: scale times the sum of the splits' partials, in split order. */
template <class T> __global__ void attn_bwd_dq_sum_tc_kernel(args a) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = a.B * a.Hq * a.Sq * a.D;
    if (i >= n) return;
    float acc = 0.0f;
    for (int64_t s = 0; s < a.splits; s++) acc += a.dq_accum[s * n + i];
    a.dq[i] = ladder_from_float<T>(a.scale * acc);
}

/* After the atomic dQ: scale times the fp32 accumulator, rounded to the output dtype. */
template <class T> __global__ void attn_bwd_dq_convert_tc_kernel(args a) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.B * a.Hq * a.Sq * a.D) a.dq[i] = ladder_from_float<T>(a.scale * a.dq_accum[i]);
}

template <class Pol, class T, int HD, int HDV> ladder_status bwd_launch(args a, bool deterministic, bool *on_hopper) {
    using C = bwd_cfg<Pol, HD, HDV>;
    const int64_t rows = a.B * a.Hq * a.Sq;
    LADDER_TRY(ladder_attn_delta<T>(a, a.dout.p, a.dout.s, a.o, a.delta));
    bool hopper = false; /* the pass on Hopper, dQ included, where it runs (attention_tc_hopper_bwd.cuh) */
    ladder_scratch hopper_accum; /* its accumulator in deterministic mode, until dQ's conversion has read it */
    if constexpr (Pol::FLEX && HD == HDV && HD <= 128)
        LADDER_TRY(bwd_wgmma_flex<HD>(a, Pol::MOD, std::is_same<T, __half>::value ? LADDER_F16 : LADDER_BF16,
                                      &hopper_accum, &hopper));
    else if constexpr (HD == HDV && HD <= 128)
        LADDER_TRY((bwd_wgmma_dkdv<Pol, T, HD>(a, deterministic, &hopper_accum, &hopper)));
    if (on_hopper) *on_hopper = hopper;
    if (!hopper) {
        /* atomics add into dQ's fp32 accumulator: it starts at zero (fully masked rows stay so) */
        if (!deterministic) LADDER_CUDA_TRY(cudaMemsetAsync(a.dq_accum, 0, sizeof(float) * (size_t)(rows * a.D)));
        const dim3 kv_grid((unsigned)ladder_attn_tiles_bound(a.Sk, C::BC, a.n_seqs), (unsigned)a.Hkv, (unsigned)a.B);
        LADDER_TRY(ladder_allow_smem(attn_bwd_dkdv_tc_kernel<Pol, T, HD, HDV>, C::SMEM));
        attn_bwd_dkdv_tc_kernel<Pol, T, HD, HDV><<<kv_grid, C::THREADS, C::SMEM>>>(a, !deterministic);
        LADDER_LAUNCH_CHECK("attn_bwd_dkdv_tc_kernel");
    }
    if (deterministic && !hopper) {
        const int64_t splits = Pol::EXTRAS ? a.splits : 1;
        const dim3 q_grid((unsigned)(ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs) * splits), (unsigned)a.Hq,
                          (unsigned)a.B);
        size_t smem = C::SMEM; /* with flex's policy, the share tiles past the rest (none when no gradient is asked) */
        if constexpr (Pol::FLEX) smem += flex_share_bytes<C::BR, C::BC, true>(a.flex);
        LADDER_TRY(ladder_allow_smem(attn_bwd_dq_tc_kernel<Pol, T, HD, HDV>, smem));
        attn_bwd_dq_tc_kernel<Pol, T, HD, HDV><<<q_grid, C::THREADS, smem>>>(a);
        LADDER_LAUNCH_CHECK("attn_bwd_dq_tc_kernel");
        if (splits <= 1) return LADDER_OK;
        attn_bwd_dq_sum_tc_kernel<T><<<ladder_blocks(rows * a.D, 256), 256>>>(a);
        LADDER_LAUNCH_CHECK("attn_bwd_dq_sum_tc_kernel");
        return LADDER_OK;
    }
    attn_bwd_dq_convert_tc_kernel<T><<<ladder_blocks(rows * a.D, 256), 256>>>(a);
    LADDER_LAUNCH_CHECK("attn_bwd_dq_convert_tc_kernel");
    return LADDER_OK;
}

/* flex's backward at head dims (HD, HD): the policy flex<mod>, every registered score mod compiled; always the
 * deterministic dQ pass (attention_tc.cuh). */
template <int HD> ladder_status bwd_flex(const args &a, int mod, ladder_dtype dtype, bool *hopper) {
    return ladder_flex_with_mod(mod, [&](auto m) {
        using Pol = flex<decltype(m)::value>;
        return dtype == LADDER_BF16 ? bwd_launch<Pol, __nv_bfloat16, HD, HD>(a, true, hopper)
                                    : bwd_launch<Pol, __half, HD, HD>(a, true, hopper);
    });
}

/* The query rows of a tile of flex's dQ pass at head dims (HD, HD) with score mod @p mod: the buffer gradients'
 * partials have a row per such tile (common/flex_gpu.cuh). */
template <int HD> int bwd_flex_rows(int mod) {
    return ladder_flex_with_mod(mod, [](auto m) { return bwd_cfg<flex<decltype(m)::value>, HD, HD>::BR; });
}

} // namespace attn_tc

#endif
