/*
 * gpu_tensorcore/attention_tf32_bwd.cu: the attention backward on fp32 inputs through the TF32 mma (what changed
 * from the 16-bit backward: attention_tf32.cuh), compiled for head dims 64 and 128, with one or three products.
 *
 * The structure of attention_tc_bwd.cuh, each tile loaded once per step (the fp32 tiles leave no room for a
 * second Q and dO buffer at a head dim of 128):
 *   1. preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i (common/attention_gpu.cuh), one warp per row;
 *   2. dK, dV: a block of 8 warps owns Bc = 64 keys of one key/value head, K and V in shared memory, dK and dV in
 *      fp32 fragments (each warp 32 keys by a quarter of the columns). It steps through the tiles of Br = 64 query
 *      rows (32 at a head dim of 128) of each head of the group whose rows see its keys: S = Q K^T and dP = dO V^T
 *      (each warp a Br/2 x 16 part), P and dS element by element with every hook into shared memory as fp32,
 *      then dV += P^T dO and dK += dS^T Q, and by default dQ += dS K into an fp32 accumulator with atomics;
 *   3. deterministic dQ: one block per query tile streams the key tiles in order (split among a.splits blocks,
 *      whose partials are added in split order), writing dQ once.
 * dS also goes to the bias's gradient from the dK/dV pass (each element once: one block owns each key tile of
 * each head).
 */
#include "attention_tc_bwd.cuh"
#include "attention_tf32.cuh"

namespace attn_tc {
namespace {

template <int HD> struct tf32_bwd_cfg {
    static constexpr int WARPS = 8, THREADS = 32 * WARPS, BC = 64, BR = HD <= 64 ? 64 : 32;
    /* each product's warp grid (2 x 4 warps) and warp tile (MT m16 blocks by NT n8 blocks): S and dP (BR x BC);
     * dK and dV (BC x HD: 32 keys, two m16 blocks, per warp); dQ (BR x HD) */
    static constexpr int S_MT = BR / 2 / 16, S_NT = BC / 4 / 8;
    static constexpr int KV_NT = HD / 4 / 8;
    static constexpr int Q_MT = BR / 2 / 16, Q_NT = HD / 4 / 8;
    static constexpr int LD = HD + 4, LDP = BC + 4; /* row strides in floats: K, V, Q, dO; P and dS */
    /* K, V, Q, dO, P, dS (fp32); per row: the key range (int64 pair), lse and Delta */
    static constexpr size_t SMEM = sizeof(float) * (size_t)(2 * BC * LD + 2 * BR * LD + 2 * BR * LDP) +
                                   (2 * sizeof(int64_t) + 2 * sizeof(float)) * BR;
};

template <int HD> struct tf32_bwd_smem {
    using C = tf32_bwd_cfg<HD>;
    float *K, *V, *Q, *dO, *P, *dS, *lse, *D;
    int64_t *range;
    __device__ explicit tf32_bwd_smem(float *base) {
        K = base, V = K + C::BC * C::LD, Q = V + C::BC * C::LD, dO = Q + C::BR * C::LD;
        P = dO + C::BR * C::LD, dS = P + C::BR * C::LDP;
        range = reinterpret_cast<int64_t *>(dS + C::BR * C::LDP); /* 16-byte aligned: every tile is */
        lse = reinterpret_cast<float *>(range + 2 * C::BR), D = lse + C::BR;
    }
};

/*
 * P and dS of the step's tile from this warp's S and dP fragments (rows r0.., keys c0..), element by element in
 * natural units as the 16-bit hooked policy computes them: S = softcap(scale q.k) + bias, P = exp(S - lse), the
 * stored P is P where dropout keeps it and 0 where it drops it (dV's 1 / (1 - p) is applied once, to the sum),
 * dS = P (dP f - Delta) times the softcap's slope, f dropout's factor; dS before the slope goes to the bias's
 * gradient when @p pos says this pass writes it. Outside the row's key range, the tile's rows or its keys, P = dS
 * = 0 and no hook looks there.
 */
template <int HD, int MT, int NT>
__device__ __forceinline__ void p_and_ds_tf32(const args &a, const tf32_bwd_smem<HD> &sm, const float (&s)[MT][NT][4],
                                              const float (&dp)[MT][NT][4], int64_t j0, int r0, int c0, int lane,
                                              const tile_pos &pos) {
    using C = tf32_bwd_cfg<HD>;
    const int g = lane / 4, t = lane % 4;
    const ladder_attn_hooks &hk = a.hooks;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        uint32_t kept[2]; /* dropout's bits of the warp's 16 rows */
        ladder_attn_kept_rows<NT>(hk, a, pos.b, pos.h, pos.q0 + r0 + mt * 16, pos.k0 + c0, lane, kept);
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int r = r0 + mt * 16 + g + 8 * k;
            const float L = ladder_attn_lse_for_bwd(sm.lse[r]), Delta = sm.D[r];
            const int lo = tile_offset<C::BC>(sm.range[2 * r], j0), hi = tile_offset<C::BC>(sm.range[2 * r + 1], j0);
            /* the row's own bases, so that each element adds a key offset */
            const int64_t qi = pos.q0 + r;
            const bool row_in = r < pos.rows;
            const int64_t bias_row = pos.b * hk.sbias[0] + pos.h * hk.sbias[1] + qi * hk.sbias[2];
            const int64_t sink_row = pos.b * hk.dbias.s[0] + pos.h * hk.dbias.s[1] + qi * hk.dbias.s[2];
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                const int c = c0 + nt * 8 + 2 * t;
                const int64_t kj = pos.k0 + c;
                float P[2] = {0.0f, 0.0f}, dS[2] = {0.0f, 0.0f};
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const bool keep = (kept[k] >> (2 * nt + e)) & 1u;
                    if (!(c + e >= lo && c + e < hi && row_in && c + e < pos.keys)) continue;
                    float S = a.scale * s[mt][nt][2 * k + e], slope = 1.0f;
                    if (a.softcap > 0.0f) {
                        S = ladder_attn_softcap(S, a.softcap);
                        slope = ladder_attn_softcap_grad(S, a.softcap);
                    }
                    if (hk.bias) S += ladder_attn_elem<float>(hk.bias, bias_row + (kj + e) * hk.sbias[3]);
                    const float p = __expf(S - L);
                    const float ds = p * (dp[mt][nt][2 * k + e] * (keep ? hk.keep_scale : 0.0f) - Delta);
                    P[e] = keep ? p : 0.0f;
                    dS[e] = ds * slope;
                    if (pos.sink && hk.dbias.p) ((float *)hk.dbias.p)[sink_row + (kj + e) * hk.dbias.s[3]] = ds;
                }
                *reinterpret_cast<float2 *>(sm.P + r * C::LDP + c) = make_float2(P[0], P[1]);
                *reinterpret_cast<float2 *>(sm.dS + r * C::LDP + c) = make_float2(dS[0], dS[1]);
            }
        }
    }
}

/* S = Q K^T and dP = dO V^T for this warp's part of the BR x BC tile, then P and dS into shared memory. */
template <int HD, bool THREE>
__device__ __forceinline__ void scores_tf32(const args &a, const tf32_bwd_smem<HD> &sm, int64_t j0, int warp,
                                            int lane, const tile_pos &pos) {
    using C = tf32_bwd_cfg<HD>;
    constexpr int MT = C::S_MT, NT = C::S_NT;
    const int r0 = warp / 4 * MT * 16, c0 = warp % 4 * NT * 8;
    float s[MT][NT][4], dp[MT][NT][4];
    ladder_zero_tile(s);
    ladder_zero_tile(dp);
    ladder_mma_warp_tile_tf32<MT, NT, HD / 8, false, false, THREE>(s, sm.Q + r0 * C::LD, C::LD, sm.K + c0 * C::LD,
                                                                    C::LD, lane);
    ladder_mma_warp_tile_tf32<MT, NT, HD / 8, false, false, THREE>(dp, sm.dO + r0 * C::LD, C::LD, sm.V + c0 * C::LD,
                                                                    C::LD, lane);
    p_and_ds_tf32<HD>(a, sm, s, dp, j0, r0, c0, lane, pos);
}

/* Rows q of Q and dO, and their stats (fetch_rows: lse, Delta, key ranges), into shared memory; committed. */
template <int HD>
__device__ __forceinline__ void load_query_tile(const args &a, const tf32_bwd_smem<HD> &sm, const ladder_attn_seq &seq,
                                                const qtile &q, int64_t b) {
    using C = tf32_bwd_cfg<HD>;
    load_rows_f32<C::BR, HD, C::THREADS>(sm.Q, C::LD, a.q, b, q.h, seq.q0 + q.i0, q.rows, a.D);
    load_rows_f32<C::BR, HD, C::THREADS>(sm.dO, C::LD, a.dout, b, q.h, seq.q0 + q.i0, q.rows, a.Dv);
    fetch_rows<C::BR>(a, seq, q, true, sm.range, sm.lse, sm.D);
    ladder_cp_async_commit();
}

/* 2. (and 3. with atomic_dq) one block per (key tile, key/value head hk, batch row b). */
template <int HD, bool THREE>
__global__ void __launch_bounds__(tf32_bwd_cfg<HD>::THREADS, 1) attn_bwd_dkdv_tf32_kernel(args a, bool atomic_dq) {
    using C = tf32_bwd_cfg<HD>;
    constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LDP = C::LDP;
    extern __shared__ __align__(16) float smem_f32[];
    const tf32_bwd_smem<HD> sm(smem_f32);
    int64_t s, j0;
    if (!ladder_attn_tile(a.cu_k, a.n_seqs, a.Sk, BC, blockIdx.x, &s, &j0)) return; /* the whole block */
    const int64_t hk = blockIdx.y, b = blockIdx.z;
    const int group = (int)(a.Hq / a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int kr = warp / 4 * 32, kc = warp % 4 * C::KV_NT * 8; /* dK, dV: keys kr.., columns kc.. */
    const int qr = warp / 4 * C::Q_MT * 16, qc = warp % 4 * C::Q_NT * 8;

    load_rows_f32<BC, HD, C::THREADS>(sm.K, LD, a.k, b, hk, seq.k0 + j0, keys, a.D);
    load_rows_f32<BC, HD, C::THREADS>(sm.V, LD, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
    ladder_cp_async_commit();
    float dk[2][C::KV_NT][4], dv[2][C::KV_NT][4];
    ladder_zero_tile(dk);
    ladder_zero_tile(dv);

    const int tiles = (int)((seq.Lq + BR - 1) / BR);
    for (int hh = 0; hh < group; hh++)
        for (int tt = 0; tt < tiles; tt++) {
            qtile q;
            q.h = hk * group + hh, q.i0 = (int64_t)tt * BR;
            q.rows = seq.Lq - q.i0 < BR ? seq.Lq - q.i0 : BR;
            q.row0 = (b * a.Hq + q.h) * a.Sq + seq.q0 + q.i0;
            /* a tile none of whose rows sees these keys is skipped by the whole block */
            const ladder_attn_block span = ladder_attn_block_range(&a.mask, q.i0, q.rows, seq.Lq, seq.Lk);
            if (span.hi <= j0 || span.lo >= j0 + keys) continue;
            __syncthreads(); /* every warp is done with the previous step's Q, dO, P and dS */
            load_query_tile<HD>(a, sm, seq, q, b);
            ladder_cp_async_wait_group<0>(); /* Q, dO, the stats (and K, V at first) */
            __syncthreads();
            const tile_pos pos = {b, q.h, seq.q0 + q.i0, seq.k0 + j0, q.rows, keys, true};
            scores_tf32<HD, THREE>(a, sm, j0, warp, lane, pos);
            __syncthreads(); /* P and dS are whole */

            /* dV += P^T dO for keys kr.., columns kc.. (P^T: the stored [row][key] tile read [k][m]) */
            ladder_mma_warp_tile_tf32<2, C::KV_NT, BR / 8, true, true, THREE>(dv, sm.P + kr, LDP, sm.dO + kc, LD,
                                                                               lane);
            if (atomic_dq) { /* dQ += dS K for rows qr.., columns qc.. (the scale is applied once, at the end) */
                float dq[C::Q_MT][C::Q_NT][4];
                ladder_zero_tile(dq);
                ladder_mma_warp_tile_tf32<C::Q_MT, C::Q_NT, BC / 8, false, true, THREE>(dq, sm.dS + qr * LDP, LDP,
                                                                                        sm.K + qc, LD, lane);
#pragma unroll
                for (int mt = 0; mt < C::Q_MT; mt++)
#pragma unroll
                    for (int k = 0; k < 2; k++) {
                        const int r = qr + mt * 16 + g + 8 * k;
                        if (r >= q.rows) continue;
                        float *row = a.dq_accum + (q.row0 + r) * a.D;
#pragma unroll
                        for (int nt = 0; nt < C::Q_NT; nt++)
#pragma unroll
                            for (int e = 0; e < 2; e++) {
                                const int col = qc + nt * 8 + 2 * t + e;
                                if (col < a.D) atomicAdd(row + col, dq[mt][nt][2 * k + e]);
                            }
                    }
            }
            /* dK += dS^T Q */
            ladder_mma_warp_tile_tf32<2, C::KV_NT, BR / 8, true, true, THREE>(dk, sm.dS + kr, LDP, sm.Q + kc, LD,
                                                                               lane);
        }
    ladder_cp_async_wait_group<0>(); /* a block that saw no query tile still has its K, V copies in flight */

    /* dK = scale * sum dS^T Q and dV (times dropout's 1 / (1 - p), which the stored P left out), keys kr + mt*16 +
     * g (+8), this warp's columns */
    const int64_t key0 = (b * a.Hkv + hk) * a.Sk + seq.k0 + j0; /* the tile's first key, as a row of dK and dV */
    const float vs = a.hooks.dropout_p > 0.0f ? a.hooks.keep_scale : 1.0f;
    float *dk_out = reinterpret_cast<float *>(a.dk), *dv_out = reinterpret_cast<float *>(a.dv);
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int key = kr + mt * 16 + g + 8 * (c / 2);
            if (key >= keys) continue;
            const int64_t at = key0 + key;
#pragma unroll
            for (int nt = 0; nt < C::KV_NT; nt++) {
                const int col = kc + nt * 8 + 2 * t + (c & 1);
                if (col < a.D) dk_out[at * a.D + col] = a.scale * dk[mt][nt][c];
                if (col < a.Dv) dv_out[at * a.Dv + col] = vs * dv[mt][nt][c];
            }
        }
}

/* 3. Deterministic dQ: one block per (query tile and split, head h, batch row b), the key tiles in order. */
template <int HD, bool THREE>
__global__ void __launch_bounds__(tf32_bwd_cfg<HD>::THREADS, 1) attn_bwd_dq_tf32_kernel(args a) {
    using C = tf32_bwd_cfg<HD>;
    constexpr int BR = C::BR, BC = C::BC, LD = C::LD, LDP = C::LDP;
    extern __shared__ __align__(16) float smem_f32[];
    const tf32_bwd_smem<HD> sm(smem_f32);
    const int splits = (int)a.splits;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x / splits, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    qtile q;
    q.h = h, q.i0 = i0, q.rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR, q.row0 = (b * a.Hq + h) * a.Sq + seq.q0 + i0;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int qr = warp / 4 * C::Q_MT * 16, qc = warp % 4 * C::Q_NT * 8;
    const ladder_attn_block span = ladder_attn_block_range(&a.mask, i0, q.rows, seq.Lq, seq.Lk);
    int64_t jbeg = span.lo / BC * BC, khi = span.hi; /* this split's share of the key tiles */
    split_share<BC>(splits, jbeg, khi);

    load_query_tile<HD>(a, sm, seq, q, b);
    float dq[C::Q_MT][C::Q_NT][4];
    ladder_zero_tile(dq);
    for (int64_t j0 = jbeg; j0 < khi; j0 += BC) {
        __syncthreads(); /* every warp is done with the previous K, V and dS tiles */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_rows_f32<BC, HD, C::THREADS>(sm.K, LD, a.k, b, hk, seq.k0 + j0, keys, a.D);
        load_rows_f32<BC, HD, C::THREADS>(sm.V, LD, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        ladder_cp_async_commit();
        ladder_cp_async_wait_group<0>();
        __syncthreads();
        const tile_pos pos = {b, h, seq.q0 + i0, seq.k0 + j0, q.rows, keys, false};
        scores_tf32<HD, THREE>(a, sm, j0, warp, lane, pos);
        __syncthreads(); /* dS is whole */
        ladder_mma_warp_tile_tf32<C::Q_MT, C::Q_NT, BC / 8, false, true, THREE>(dq, sm.dS + qr * LDP, LDP, sm.K + qc,
                                                                                LD, lane);
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q, dO copies in flight */
    float *dq_out = reinterpret_cast<float *>(a.dq);
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
                if (splits > 1) /* this split's unscaled partial */
                    a.dq_accum[((blockIdx.x % splits) * a.B * a.Hq * a.Sq + q.row0 + r) * a.D + col] = dq[mt][nt][c];
                else dq_out[(q.row0 + r) * a.D + col] = a.scale * dq[mt][nt][c];
            }
        }
}

/* dQ = scale * the sum of @p parts fp32 accumulators, in order: the atomic pass's one, or the splits' partials. */
__global__ void attn_bwd_dq_sum_tf32_kernel(args a, int64_t parts) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, n = a.B * a.Hq * a.Sq * a.D;
    if (i >= n) return;
    float acc = 0.0f;
    for (int64_t s = 0; s < parts; s++) acc += a.dq_accum[s * n + i];
    reinterpret_cast<float *>(a.dq)[i] = a.scale * acc;
}

template <int HD, bool THREE> ladder_status bwd_tf32_launch(const args &a, bool deterministic) {
    using C = tf32_bwd_cfg<HD>;
    const int64_t rows = a.B * a.Hq * a.Sq;
    LADDER_TRY(ladder_attn_delta<float>(a, a.dout.p, a.dout.s, a.o, a.delta));
    /* atomics add into dQ's fp32 accumulator: it starts at zero (fully masked rows stay so) */
    if (!deterministic) LADDER_CUDA_TRY(cudaMemsetAsync(a.dq_accum, 0, sizeof(float) * (size_t)(rows * a.D)));
    const dim3 kv_grid((unsigned)ladder_attn_tiles_bound(a.Sk, C::BC, a.n_seqs), (unsigned)a.Hkv, (unsigned)a.B);
    LADDER_TRY(ladder_allow_smem(attn_bwd_dkdv_tf32_kernel<HD, THREE>, C::SMEM));
    attn_bwd_dkdv_tf32_kernel<HD, THREE><<<kv_grid, C::THREADS, C::SMEM>>>(a, !deterministic);
    LADDER_LAUNCH_CHECK("attn_bwd_dkdv_tf32_kernel");
    int64_t parts = 1; /* accumulators left for the sum: the atomic one, or the splits' */
    if (deterministic) {
        const dim3 q_grid((unsigned)(ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs) * a.splits), (unsigned)a.Hq,
                          (unsigned)a.B);
        LADDER_TRY(ladder_allow_smem(attn_bwd_dq_tf32_kernel<HD, THREE>, C::SMEM));
        attn_bwd_dq_tf32_kernel<HD, THREE><<<q_grid, C::THREADS, C::SMEM>>>(a);
        LADDER_LAUNCH_CHECK("attn_bwd_dq_tf32_kernel");
        if (a.splits <= 1) return LADDER_OK;
        parts = a.splits;
    }
    attn_bwd_dq_sum_tf32_kernel<<<ladder_blocks(rows * a.D, 256), 256>>>(a, parts);
    LADDER_LAUNCH_CHECK("attn_bwd_dq_sum_tf32_kernel");
    return LADDER_OK;
}

} // namespace

ladder_status bwd_tf32(args a, bool deterministic, bool three) {
    /* scratch from the stream-ordered pool, freed in stream order: Delta, and dQ's fp32 accumulator for the
     * atomics or the split deterministic pass's partials */
    const int64_t rows = a.B * a.Hq * a.Sq;
    ladder_scratch delta, dq_accum;
    LADDER_TRY(delta.alloc(sizeof(float) * (size_t)rows));
    if (!deterministic || a.splits > 1)
        LADDER_TRY(dq_accum.alloc(sizeof(float) * (size_t)((deterministic ? a.splits : 1) * rows * a.D)));
    a.delta = (float *)delta.ptr, a.dq_accum = (float *)dq_accum.ptr;
    if (tf32_head_dim(a.D, a.Dv) == 64)
        return three ? bwd_tf32_launch<64, true>(a, deterministic) : bwd_tf32_launch<64, false>(a, deterministic);
    return three ? bwd_tf32_launch<128, true>(a, deterministic) : bwd_tf32_launch<128, false>(a, deterministic);
}

} // namespace attn_tc
