/*
 * gpu_tensorcore/flash_tc_bwd.cuh: the FlashAttention-2 backward on the tensor cores (mma.sync m16n8k16),
 * included by the flash_bwd_*.cu files, each of which compiles it for a few head dims.
 *
 * The structure of gpu_tiled/flash_bwd.cu, with the five products on the matrix units:
 *   1. preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i (fp32), one warp per row;
 *   2. dK, dV: a block owns Bc = 64 keys of one key/value head (K, V in shared memory, dK, dV in fp32
 *      fragments); per tile of 64 query rows of each head of the group it computes S^T = K Q^T and
 *      dP^T = V dO^T, then P^T = exp(S^T - lse) and dS^T = P^T (dP^T - Delta) into shared memory (16-bit),
 *      then dV += P^T dO and dK += dS^T Q. With head dims above 128, 8 warps split each product's columns in
 *      two so that the fp32 accumulators fit in registers;
 *   3. dQ: by default the same block adds scale * dS K into an fp32 dQ accumulator with atomicAdd, and a last
 *      kernel rounds it to the output dtype; in deterministic mode a separate pass owns each query tile and
 *      streams the key tiles past in order, writing dQ once.
 */
#ifndef LADDER_GPU_TENSORCORE_FLASH_TC_BWD_CUH
#define LADDER_GPU_TENSORCORE_FLASH_TC_BWD_CUH

#include "flash_tc.cuh"

namespace flash_tc {

template <int HD, int HDV> struct bwd_cfg {
    static constexpr int SPLIT = HD > 128 || HDV > 128 ? 2 : 1; /* warps per 16 rows (or keys): columns split */
    static constexpr int WARPS = 4 * SPLIT, THREADS = 32 * WARPS;
    static constexpr int BR = 64, BC = 64;                        /* query rows and keys per tile */
    static constexpr int LDK = HD + 8, LDV = HDV + 8, LDP = BR + 8; /* row strides in elements (16-byte pads) */
    /* K, V, Q, dO tiles; P^T and dS^T (dK/dV pass) or dS (dQ pass), 16-bit; lse and Delta, fp32 */
    static constexpr size_t SMEM =
        sizeof(uint16_t) * (size_t)((BR + BC) * (LDK + LDV) + 2 * BC * LDP) + sizeof(float) * 2 * BR;
};

/* 1. Delta = rowsum(dO * O) - dlse, one warp per row [b,h,i]. */
template <class T> __global__ void flash_bwd_delta_tc_kernel(args a) {
    const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= a.B * a.Hq * a.Sq) return; /* a whole warp */
    const int64_t i = row % a.Sq, h = (row / a.Sq) % a.Hq, b = row / (a.Sq * a.Hq);
    const uint16_t *dO = a.dout.p + b * a.dout.s[0] + h * a.dout.s[1] + i * a.dout.s[2];
    float acc = 0.0f;
    for (int64_t e = lane; e < a.Dv; e += 32)
        acc += ladder_to_float<T>(dO[e * a.dout.s[3]]) * ladder_to_float<T>(a.o[row * a.Dv + e]);
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) a.delta[row] = acc - (a.dlse ? a.dlse[b * a.sdlse[0] + h * a.sdlse[1] + i * a.sdlse[2]] : 0.0f);
}

/* Rows [i0, i0 + BR) of head h: lse as the backward uses it (+inf past the end: P = 0 there) and Delta. */
template <int BR>
__device__ void load_stats(const args &a, float *Ls, float *Ds, int64_t b, int64_t h, int64_t q0, int64_t i0,
                           int64_t rows) {
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
        const int64_t row = (b * a.Hq + h) * a.Sq + q0 + i0 + r;
        Ls[r] = r < rows ? ladder_attn_lse_for_bwd(a.lse[row]) : INFINITY;
        Ds[r] = r < rows ? a.delta[row] : 0.0f;
    }
}

/*
 * X Y^T for a warp: 16 rows of X (shared, row-major, stride ldx) against NB*8 rows of Y (stride ldy), over
 * DIM columns: the A fragment from X's rows, the B fragments from Y's rows as they lie.
 */
template <class T, int NB, int DIM>
__device__ __forceinline__ void mma_xyT(float (&acc)[NB][4], const uint16_t *X, int ldx, const uint16_t *Y, int ldy,
                                        int lane) {
#pragma unroll
    for (int nb = 0; nb < NB; nb++) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < DIM / 16; kk++) {
        uint32_t xa[4];
        ladder_ldsm_x4(xa, X + (lane % 16) * ldx + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int nb = 0; nb < NB; nb += 2) {
            uint32_t yb[4];
            ladder_ldsm_x4(yb, Y + (nb * 8 + lane % 8 + (lane / 16) * 8) * ldy + kk * 16 + (lane / 8 % 2) * 8);
            ladder_mma_m16n8k16<T>(acc[nb], xa, yb[0], yb[1]);
            ladder_mma_m16n8k16<T>(acc[nb + 1], xa, yb[2], yb[3]);
        }
    }
}

/*
 * acc += X Z for a warp: 16 rows of X (shared, row-major [row][k], stride ldx) times Z (shared, stored [k][n],
 * stride ldz) over K16 * 16 k's, for NB*8 columns of Z starting at z_col: B fragments through ldmatrix.trans.
 */
template <class T, int NB, int K16>
__device__ __forceinline__ void mma_xz(float (&acc)[NB][4], const uint16_t *X, int ldx, const uint16_t *Z, int ldz,
                                       int z_col, int lane) {
#pragma unroll
    for (int kb = 0; kb < K16; kb++) {
        uint32_t xa[4];
        ladder_ldsm_x4(xa, X + (lane % 16) * ldx + kb * 16 + (lane / 16) * 8);
#pragma unroll
        for (int nb = 0; nb < NB; nb += 2) {
            uint32_t zb[4];
            const int row = kb * 16 + lane % 8 + (lane / 8 % 2) * 8, col = z_col + nb * 8 + (lane / 16) * 8;
            ladder_ldsm_x4_trans(zb, Z + row * ldz + col);
            ladder_mma_m16n8k16<T>(acc[nb], xa, zb[0], zb[1]);
            ladder_mma_m16n8k16<T>(acc[nb + 1], xa, zb[2], zb[3]);
        }
    }
}

/*
 * P and dS' of one fragment: S from the fp32 score s, P = exp(S - L) (0 where not seen), dS' = P (dP - Delta)
 * times the softcap's slope.
 */
__device__ __forceinline__ void p_ds(const args &a, float s, float dP, float L, float Delta, bool seen, float *P,
                                     float *dS) {
    const float S = ladder_attn_softcap(a.scale * s, a.softcap);
    const float p = seen ? __expf(S - L) : 0.0f;
    *P = p;
    *dS = p * (dP - Delta) * ladder_attn_softcap_grad(S, a.softcap);
}

/*
 * 2. (and 3. with atomic_dq) one block per (key tile, key/value head hk, batch row b). atomic_dq is a kernel
 * argument, not a template one: the branch is uniform, and one compiled kernel serves both modes.
 */
template <class T, int HD, int HDV>
__global__ void __launch_bounds__(bwd_cfg<HD, HDV>::THREADS, 1) flash_bwd_dkdv_tc_kernel(args a, bool atomic_dq) {
    using C = bwd_cfg<HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, LDK = C::LDK, LDV = C::LDV, LDP = C::LDP, SPLIT = C::SPLIT;
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t *Ks = smem, *Vs = Ks + BC * LDK, *Qs = Vs + BC * LDV, *dOs = Qs + BR * LDK;
    uint16_t *PT = dOs + BR * LDV, *dST = PT + BC * LDP;
    float *Ls = (float *)(dST + BC * LDP), *Ds = Ls + BR;
    int64_t s, j0;
    if (!ladder_attn_tile(a.cu_k, a.n_seqs, a.Sk, BC, blockIdx.x, &s, &j0)) return; /* the whole block */
    const int64_t hk = blockIdx.y, b = blockIdx.z, group = a.Hq / a.Hkv;
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int kw = (warp % 4) * 16, part = warp / 4; /* this warp's 16 keys (or rows), and its column half */

    load_tile<BC>(Ks, LDK, a.k, b, hk, seq.k0 + j0, keys, a.D, HD);
    load_tile<BC>(Vs, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv, HDV);
    ladder_cp_async_commit();
    float dk[HD / SPLIT / 8][4], dv[HDV / SPLIT / 8][4];
#pragma unroll
    for (int n = 0; n < HD / SPLIT / 8; n++) dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0.0f;
#pragma unroll
    for (int n = 0; n < HDV / SPLIT / 8; n++) dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0.0f;

    for (int64_t h = hk * group; h < (hk + 1) * group; h++)
        for (int64_t i0 = 0; i0 < seq.Lq; i0 += BR) {
            const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
            int64_t lo_first, hi_first, lo_last, hi_last;
            ladder_attn_key_range(i0, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo_first, &hi_first);
            ladder_attn_key_range(i0 + rows - 1, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo_last, &hi_last);
            if (hi_last <= j0 || lo_first >= j0 + keys) continue; /* the ranges move right: no row sees this tile */
            /* every row of the query tile sees every key of this one: no mask test (the diagonal tiles apply it) */
            const bool full = j0 >= lo_last && j0 + BC <= hi_first && rows == BR;
            __syncthreads(); /* every warp is done with the previous Q, dO, P^T and dS^T tiles */
            load_tile<BR>(Qs, LDK, a.q, b, h, seq.q0 + i0, rows, a.D, HD);
            load_tile<BR>(dOs, LDV, a.dout, b, h, seq.q0 + i0, rows, a.Dv, HDV);
            ladder_cp_async_commit();
            load_stats<BR>(a, Ls, Ds, b, h, seq.q0, i0, rows);
            ladder_cp_async_wait_group<0>();
            __syncthreads();

            /* S^T = K Q^T and dP^T = V dO^T for keys kw.. and this warp's rows, 32 rows at a time */
#pragma unroll 1 /* one chunk's fragments live at a time, beside the accumulators */
            for (int r0 = part * (BR / SPLIT); r0 < (part + 1) * (BR / SPLIT); r0 += 32) {
                float sT[4][4], dpT[4][4];
                mma_xyT<T, 4, HD>(sT, Ks + kw * LDK, LDK, Qs + r0 * LDK, LDK, lane);
                mma_xyT<T, 4, HDV>(dpT, Vs + kw * LDV, LDV, dOs + r0 * LDV, LDV, lane);
#pragma unroll
                for (int nb = 0; nb < 4; nb++)
#pragma unroll
                    for (int k = 0; k < 2; k++) { /* key kw + g + 8k; rows r, r + 1 */
                        const int c = kw + g + 8 * k, r = r0 + nb * 8 + 2 * t;
                        float P[2], dS[2];
#pragma unroll
                        for (int e = 0; e < 2; e++) {
                            bool seen = true;
                            if (!full) {
                                int64_t lo, hi;
                                ladder_attn_key_range(i0 + r + e, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo, &hi);
                                seen = c < keys && r + e < rows && j0 + c >= lo && j0 + c < hi;
                            }
                            p_ds(a, sT[nb][2 * k + e], dpT[nb][2 * k + e], Ls[r + e], Ds[r + e], seen, &P[e], &dS[e]);
                        }
                        *(uint32_t *)(PT + c * LDP + r) = ladder_pack2_float<T>(P[0], P[1]);
                        *(uint32_t *)(dST + c * LDP + r) = ladder_pack2_float<T>(dS[0], dS[1]);
                    }
            }
            __syncthreads(); /* P^T and dS^T are whole */

            /* dV += P^T dO and dK += dS^T Q, for keys kw.. and this warp's column half */
            mma_xz<T, HDV / SPLIT / 8, BR / 16>(dv, PT + kw * LDP, LDP, dOs, LDV, part * (HDV / SPLIT), lane);
            mma_xz<T, HD / SPLIT / 8, BR / 16>(dk, dST + kw * LDP, LDP, Qs, LDK, part * (HD / SPLIT), lane);

            if (atomic_dq) { /* dQ += scale * dS K for rows kw.. (dS = (dS^T)^T: A fragments through .trans) */
#pragma unroll 1 /* one chunk's fragments live at a time, beside the accumulators */
                for (int d0 = part * (HD / SPLIT); d0 < (part + 1) * (HD / SPLIT); d0 += 32) {
                    float dq[4][4] = {};
#pragma unroll
                    for (int kb = 0; kb < BC / 16; kb++) {
                        uint32_t xa[4];
                        const int key = kb * 16 + lane % 8 + (lane / 16) * 8;
                        ladder_ldsm_x4_trans(xa, dST + key * LDP + kw + (lane / 8 % 2) * 8);
#pragma unroll
                        for (int nb = 0; nb < 4; nb += 2) {
                            uint32_t zb[4];
                            const int row = kb * 16 + lane % 8 + (lane / 8 % 2) * 8;
                            ladder_ldsm_x4_trans(zb, Ks + row * LDK + d0 + nb * 8 + (lane / 16) * 8);
                            ladder_mma_m16n8k16<T>(dq[nb], xa, zb[0], zb[1]);
                            ladder_mma_m16n8k16<T>(dq[nb + 1], xa, zb[2], zb[3]);
                        }
                    }
#pragma unroll
                    for (int nb = 0; nb < 4; nb++)
#pragma unroll
                        for (int c = 0; c < 4; c++) {
                            const int r = kw + g + 8 * (c / 2), col = d0 + nb * 8 + 2 * t + (c & 1);
                            if (r < rows && col < a.D)
                                atomicAdd(a.dq_accum + ((b * a.Hq + h) * a.Sq + seq.q0 + i0 + r) * a.D + col,
                                          a.scale * dq[nb][c]);
                        }
                }
            }
        }
    ladder_cp_async_wait_group<0>(); /* a block that saw no query tile still has its K, V copies in flight */

    /* dK = scale * sum dS^T Q and dV, rounded to T: key kw + g (+8), columns of this warp's half */
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int key = kw + g + 8 * (c / 2);
        if (key >= keys) continue;
        const int64_t at = (b * a.Hkv + hk) * a.Sk + seq.k0 + j0 + key;
#pragma unroll
        for (int n = 0; n < HD / SPLIT / 8; n++) {
            const int col = part * (HD / SPLIT) + n * 8 + 2 * t + (c & 1);
            if (col < a.D) a.dk[at * a.D + col] = ladder_from_float<T>(a.scale * dk[n][c]);
        }
#pragma unroll
        for (int n = 0; n < HDV / SPLIT / 8; n++) {
            const int col = part * (HDV / SPLIT) + n * 8 + 2 * t + (c & 1);
            if (col < a.Dv) a.dv[at * a.Dv + col] = ladder_from_float<T>(dv[n][c]);
        }
    }
}

/* 3. Deterministic dQ: one block per (query tile, head h, batch row b), the key tiles streamed in order. */
template <class T, int HD, int HDV>
__global__ void __launch_bounds__(bwd_cfg<HD, HDV>::THREADS, 1) flash_bwd_dq_tc_kernel(args a) {
    using C = bwd_cfg<HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, LDK = C::LDK, LDV = C::LDV, LDP = C::LDP, SPLIT = C::SPLIT;
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t *Ks = smem, *Vs = Ks + BC * LDK, *Qs = Vs + BC * LDV, *dOs = Qs + BR * LDK, *dSs = dOs + BR * LDV;
    float *Ls = (float *)(dSs + 2 * BC * LDP), *Ds = Ls + BR;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int rw = (warp % 4) * 16, part = warp / 4; /* this warp's 16 rows, and its key (then column) half */
    int64_t klo, khi, lo_last, hi_first, lo[2] = {0, 0}, hi[2] = {0, 0};
    ladder_attn_key_range(i0, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &klo, &hi_first);
    ladder_attn_key_range(i0 + rows - 1, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo_last, &khi);
#pragma unroll
    for (int k = 0; k < 2; k++)
        if (rw + g + 8 * k < rows)
            ladder_attn_key_range(i0 + rw + g + 8 * k, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo[k], &hi[k]);

    load_tile<BR>(Qs, LDK, a.q, b, h, seq.q0 + i0, rows, a.D, HD);
    load_tile<BR>(dOs, LDV, a.dout, b, h, seq.q0 + i0, rows, a.Dv, HDV);
    ladder_cp_async_commit();
    load_stats<BR>(a, Ls, Ds, b, h, seq.q0, i0, rows);
    float dq[HD / SPLIT / 8][4];
#pragma unroll
    for (int n = 0; n < HD / SPLIT / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;

    for (int64_t j0 = klo / BC * BC; j0 < khi; j0 += BC) {
        __syncthreads(); /* every warp is done with the previous K, V and dS tiles */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_tile<BC>(Ks, LDK, a.k, b, hk, seq.k0 + j0, keys, a.D, HD);
        load_tile<BC>(Vs, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv, HDV);
        ladder_cp_async_commit();
        ladder_cp_async_wait_group<0>();
        __syncthreads();
        const bool full = j0 >= lo_last && j0 + BC <= hi_first;
        /* S = Q K^T and dP = dO V^T for rows rw.. and this warp's keys, 32 at a time; dS into shared memory */
#pragma unroll 1 /* one chunk's fragments live at a time, beside the accumulators */
        for (int c0 = part * (BC / SPLIT); c0 < (part + 1) * (BC / SPLIT); c0 += 32) {
            float sc[4][4], dp[4][4];
            mma_xyT<T, 4, HD>(sc, Qs + rw * LDK, LDK, Ks + c0 * LDK, LDK, lane);
            mma_xyT<T, 4, HDV>(dp, dOs + rw * LDV, LDV, Vs + c0 * LDV, LDV, lane);
#pragma unroll
            for (int nb = 0; nb < 4; nb++)
#pragma unroll
                for (int k = 0; k < 2; k++) { /* row rw + g + 8k; keys c, c + 1 */
                    const int r = rw + g + 8 * k, c = c0 + nb * 8 + 2 * t;
                    float P[2], dS[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const bool seen = full || (r < rows && j0 + c + e >= lo[k] && j0 + c + e < hi[k]);
                        p_ds(a, sc[nb][2 * k + e], dp[nb][2 * k + e], Ls[r], Ds[r], seen, &P[e], &dS[e]);
                    }
                    *(uint32_t *)(dSs + r * LDP + c) = ladder_pack2_float<T>(dS[0], dS[1]);
                }
        }
        __syncthreads(); /* dS is whole */
        mma_xz<T, HD / SPLIT / 8, BC / 16>(dq, dSs + rw * LDP, LDP, Ks, LDK, part * (HD / SPLIT), lane);
    }
    ladder_cp_async_wait_group<0>();
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int r = rw + g + 8 * (c / 2);
        if (r >= rows) continue;
        const int64_t row = (b * a.Hq + h) * a.Sq + seq.q0 + i0 + r;
#pragma unroll
        for (int n = 0; n < HD / SPLIT / 8; n++) {
            const int col = part * (HD / SPLIT) + n * 8 + 2 * t + (c & 1);
            if (col < a.D) a.dq[row * a.D + col] = ladder_from_float<T>(a.scale * dq[n][c]);
        }
    }
}

/* After the atomic dQ: the fp32 accumulator rounded to the output dtype. */
template <class T> __global__ void flash_bwd_dq_convert_tc_kernel(args a) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.B * a.Hq * a.Sq * a.D) a.dq[i] = ladder_from_float<T>(a.dq_accum[i]);
}

template <class T, int HD, int HDV> ladder_status bwd_launch(const args &a, bool deterministic) {
    using C = bwd_cfg<HD, HDV>;
    const int64_t rows = a.B * a.Hq * a.Sq;
    flash_bwd_delta_tc_kernel<T><<<ladder_blocks(rows * 32, 256), 256>>>(a);
    LADDER_LAUNCH_CHECK("flash_bwd_delta_tc_kernel");
    const dim3 kv_grid((unsigned)ladder_attn_tiles_bound(a.Sk, C::BC, a.n_seqs), (unsigned)a.Hkv, (unsigned)a.B);
    /* atomics add into dQ's fp32 accumulator: it starts at zero (fully masked rows stay so) */
    if (!deterministic) LADDER_CUDA_TRY(cudaMemsetAsync(a.dq_accum, 0, sizeof(float) * (size_t)(rows * a.D)));
    LADDER_TRY(ladder_allow_smem(flash_bwd_dkdv_tc_kernel<T, HD, HDV>, C::SMEM));
    flash_bwd_dkdv_tc_kernel<T, HD, HDV><<<kv_grid, C::THREADS, C::SMEM>>>(a, !deterministic);
    LADDER_LAUNCH_CHECK("flash_bwd_dkdv_tc_kernel");
    if (deterministic) {
        const dim3 q_grid((unsigned)ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
        LADDER_TRY(ladder_allow_smem(flash_bwd_dq_tc_kernel<T, HD, HDV>, C::SMEM));
        flash_bwd_dq_tc_kernel<T, HD, HDV><<<q_grid, C::THREADS, C::SMEM>>>(a);
        LADDER_LAUNCH_CHECK("flash_bwd_dq_tc_kernel");
        return LADDER_OK;
    }
    flash_bwd_dq_convert_tc_kernel<T><<<ladder_blocks(rows * a.D, 256), 256>>>(a);
    LADDER_LAUNCH_CHECK("flash_bwd_dq_convert_tc_kernel");
    return LADDER_OK;
}

} // namespace flash_tc

#endif
