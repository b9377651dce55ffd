/*
 * gpu_tensorcore/flash_tc_fwd.cuh: the FlashAttention-2 forward on the tensor cores (mma.sync m16n8k16),
 * included by the flash_fwd_*.cu files, each of which compiles it for a few head dims.
 *
 * What changed since gpu_tiled/: the two products, S = Q K^T and O += P V, run on the matrix units with
 * bf16 or fp16 operands and fp32 accumulators. A block of 4 warps owns Br = 64 query rows, 16 per warp; each
 * lane holds two rows' worth of the S tile and of O in mma fragments (common/mma.cuh), so the row max and
 * the row sum take two shuffles across the 4 lanes that share a row. Q, K and V tiles are staged in shared
 * memory by cp.async (16 bytes per copy, rows padded by 16 bytes so that ldmatrix's 8 row addresses hit 8
 * different bank groups), and fed to the mma by ldmatrix: K's rows as they lie for K^T, V through
 * ldmatrix.trans. P never leaves registers: the fp32 C fragments of S, rounded to 16 bits, are the A
 * fragments of P V. As in gpu_tiled, tiles that every row sees whole skip the mask.
 */
#ifndef LADDER_GPU_TENSORCORE_FLASH_TC_FWD_CUH
#define LADDER_GPU_TENSORCORE_FLASH_TC_FWD_CUH

#include "flash_tc.cuh"

namespace flash_tc {

template <int HD, int HDV> struct fwd_cfg {
    static constexpr int WARPS = 4, THREADS = 32 * WARPS, BR = 16 * WARPS;
    static constexpr int BC = HD <= 128 && HDV <= 128 ? 64 : 32; /* fewer S registers beside 128 of O at 256 */
    static constexpr int LDQ = HD + 8, LDV = HDV + 8;             /* shared-memory row strides, in elements */
    static constexpr size_t SMEM = sizeof(uint16_t) * (size_t)((BR + BC) * LDQ + BC * LDV);
};

/* Scale, softcap and (MASKED) mask the S fragments of one key tile: row_lo/hi[0] for row g, [1] for row g+8. */
template <int BC, bool MASKED>
__device__ __forceinline__ void finish_scores(const args &a, float (&s)[BC / 8][4], int64_t j0, int t,
                                              const int64_t (&lo)[2], const int64_t (&hi)[2]) {
#pragma unroll
    for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int64_t j = j0 + nb * 8 + 2 * t + (c & 1);
            float v = ladder_attn_softcap(a.scale * s[nb][c], a.softcap);
            if (MASKED && !(j >= lo[c / 2] && j < hi[c / 2])) v = -INFINITY;
            s[nb][c] = v;
        }
}

template <class T, int HD, int HDV>
__global__ void __launch_bounds__(fwd_cfg<HD, HDV>::THREADS) flash_fwd_tc_kernel(args a) {
    using C = fwd_cfg<HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, LDQ = C::LDQ, LDV = C::LDV;
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t *Qs = smem, *Ks = Qs + BR * LDQ, *Vs = Ks + BC * LDQ;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

    /* the keys of the block, and of this lane's two rows (warp*16 + g and + 8; none past the tile's end) */
    int64_t klo, khi, lo_last, hi_first, lo[2] = {0, 0}, hi[2] = {0, 0};
    ladder_attn_key_range(i0, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &klo, &hi_first);
    ladder_attn_key_range(i0 + rows - 1, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo_last, &khi);
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int r = warp * 16 + g + 8 * k;
        if (r < rows) ladder_attn_key_range(i0 + r, seq.Lq, seq.Lk, a.causal, a.wl, a.wr, &lo[k], &hi[k]);
    }

    load_tile<BR>(Qs, LDQ, a.q, b, h, seq.q0 + i0, rows, a.D, HD);
    ladder_cp_async_commit();
    float o[HDV / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nd = 0; nd < HDV / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;

    for (int64_t j0 = klo / BC * BC; j0 < khi; j0 += BC) {
        __syncthreads(); /* every warp is done with the previous K and V tiles */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_tile<BC>(Ks, LDQ, a.k, b, hk, seq.k0 + j0, keys, a.D, HD);
        load_tile<BC>(Vs, LDV, a.v, b, hk, seq.k0 + j0, keys, a.Dv, HDV);
        ladder_cp_async_commit();
        ladder_cp_async_wait_group<0>();
        __syncthreads(); /* every thread's copies (and the Q tile) have landed */

        /* S = Q K^T for the warp's 16 rows: A from Q's rows, B from K's rows as they lie (two key blocks per
         * ldmatrix) */
        float sc[BC / 8][4];
#pragma unroll
        for (int nb = 0; nb < BC / 8; nb++) sc[nb][0] = sc[nb][1] = sc[nb][2] = sc[nb][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            uint32_t qa[4];
            ladder_ldsm_x4(qa, Qs + (warp * 16 + lane % 16) * LDQ + kk * 16 + (lane / 16) * 8);
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb += 2) {
                uint32_t kb[4];
                ladder_ldsm_x4(kb, Ks + (nb * 8 + lane % 8 + (lane / 16) * 8) * LDQ + kk * 16 + (lane / 8 % 2) * 8);
                ladder_mma_m16n8k16<T>(sc[nb], qa, kb[0], kb[1]);
                ladder_mma_m16n8k16<T>(sc[nb + 1], qa, kb[2], kb[3]);
            }
        }
        if (j0 >= lo_last && j0 + BC <= hi_first) finish_scores<BC, false>(a, sc, j0, t, lo, hi);
        else finish_scores<BC, true>(a, sc, j0, t, lo, hi);

        /* online softmax for rows g (k = 0) and g + 8 (k = 1): the 4 lanes of a row are lanes 4g .. 4g+3 */
        float alpha[2];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            float mx = -INFINITY;
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++) mx = fmaxf(mx, fmaxf(sc[nb][2 * k], sc[nb][2 * k + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[k], mx);
            /* no key seen yet: m stays -inf and exp(-inf - -inf) would be NaN, so P = 0 and alpha = 1 */
            alpha[k] = m_new == -INFINITY ? 1.0f : __expf(m[k] - m_new);
            float sum = 0.0f;
#pragma unroll
            for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
                for (int c = 2 * k; c < 2 * k + 2; c++) {
                    sc[nb][c] = m_new == -INFINITY ? 0.0f : __expf(sc[nb][c] - m_new);
                    sum += sc[nb][c];
                }
            l[k] = alpha[k] * l[k] + sum; /* this lane's part of the row sum: the 4 lanes add up at the end */
            m[k] = m_new;
        }
#pragma unroll
        for (int nd = 0; nd < HDV / 8; nd++) {
            o[nd][0] *= alpha[0], o[nd][1] *= alpha[0];
            o[nd][2] *= alpha[1], o[nd][3] *= alpha[1];
        }
        /* O += P V: two adjacent 8-key C tiles of P are one 16-key A fragment; V's B fragments through .trans */
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++) {
            const uint32_t pa[4] = {ladder_pack2_float<T>(sc[2 * kb][0], sc[2 * kb][1]),
                                    ladder_pack2_float<T>(sc[2 * kb][2], sc[2 * kb][3]),
                                    ladder_pack2_float<T>(sc[2 * kb + 1][0], sc[2 * kb + 1][1]),
                                    ladder_pack2_float<T>(sc[2 * kb + 1][2], sc[2 * kb + 1][3])};
#pragma unroll
            for (int nd = 0; nd < HDV / 8; nd += 2) {
                uint32_t vb[4];
                const int key = kb * 16 + lane % 8 + (lane / 8 % 2) * 8;
                ladder_ldsm_x4_trans(vb, Vs + key * LDV + nd * 8 + (lane / 16) * 8);
                ladder_mma_m16n8k16<T>(o[nd], pa, vb[0], vb[1]);
                ladder_mma_m16n8k16<T>(o[nd + 1], pa, vb[2], vb[3]);
            }
        }
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q copies in flight */

    /* O / l, rounded to T; lse = m + log l. A row that saw no key: l = 0, o = 0, lse = -inf. */
#pragma unroll
    for (int k = 0; k < 2; k++) {
        l[k] += __shfl_xor_sync(0xffffffffu, l[k], 1);
        l[k] += __shfl_xor_sync(0xffffffffu, l[k], 2);
        const int r = warp * 16 + g + 8 * k;
        if (r >= rows) continue;
        const int64_t row = (b * a.Hq + h) * a.Sq + seq.q0 + i0 + r;
        const float inv = l[k] > 0.0f ? 1.0f / l[k] : 0.0f;
#pragma unroll
        for (int nd = 0; nd < HDV / 8; nd++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int col = nd * 8 + 2 * t + c;
                if (col < a.Dv) a.o[row * a.Dv + col] = ladder_from_float<T>(o[nd][2 * k + c] * inv);
            }
        if (t == 0) a.lse[row] = ladder_attn_lse(m[k], l[k]);
    }
}

template <class T, int HD, int HDV> ladder_status fwd_launch(const args &a) {
    using C = fwd_cfg<HD, HDV>;
    LADDER_TRY(ladder_allow_smem(flash_fwd_tc_kernel<T, HD, HDV>, C::SMEM));
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    flash_fwd_tc_kernel<T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a);
    LADDER_LAUNCH_CHECK("flash_fwd_tc_kernel");
    return LADDER_OK;
}

} // namespace flash_tc

#endif
