/*
 * gpu_tensorcore/attention_tf32_fwd.cu: the attention forward on fp32 inputs through the TF32 mma (what changed
 * from the 16-bit forward: attention_tf32.cuh), compiled for head dims 64 and 128, with one or three products.
 *
 * A block of 4 warps owns Br = 64 query rows, 16 per warp; key tiles of Bc = 64 keys (32 at a head dim of 128,
 * where O's 64 fp32 registers per lane sit beside S's). Per key tile, as in attention_tc_fwd.cuh: S = Q K^T on the
 * matrix units (Q and K through ldmatrix), the bias, the mask and the online softmax on S's C fragments, dropout
 * on P, then O += P V with P's C fragments as the A operand: the mma's k runs over the keys in the order 2t,
 * 2t + 1 of the lane's C registers (common/mma.cuh), so V's B fragments are read at keys 2t and 2t + 1, whose
 * rows lie 2 * LD floats apart: with LD = HDV + 4, the four t's reach four different groups of 8 banks.
 */
#include "attention_tc_fwd.cuh"
#include "attention_tf32.cuh"

namespace attn_tc {
namespace {

template <int HD> struct tf32_fwd_cfg {
    static constexpr int WARPS = 4, THREADS = 32 * WARPS, BR = 16 * WARPS;
    static constexpr int BC = HD <= 64 ? 64 : 32;
    static constexpr int LD = HD + 4, LDB = BC + 4; /* row strides in floats: Q, K and V; the bias tile */
    /* Q, K, V tiles, the bias tile, and each row's key range [lo, hi) */
    static constexpr size_t SMEM = sizeof(float) * (size_t)((BR + 2 * BC) * LD + BR * LDB) + sizeof(int64_t) * 2 * BR;
};

/* The bias tile of query rows [q0, q0 + rows) and keys [k0, k0 + keys) (positions along Sq and Sk) into
 * Bs[BR][BC + 4], read through the bias's strides; zero past the rows and the keys. */
template <int BR, int BC, int THREADS>
__device__ __forceinline__ void bias_tile_f32(float *Bs, const view4 &bias, int64_t b, int64_t h, int64_t q0,
                                              int64_t rows, int64_t k0, int64_t keys) {
    const float *src = f32_row(bias, b, h, q0) + k0 * bias.s[3];
    load_tile_f32<BR, BC, THREADS>(Bs, BC + 4, src, bias.s[2], bias.s[3], bias.rows16 && k0 % 4 == 0, rows, keys);
}

/* S += bias for the lane's elements of the warp's 16 rows (w0 + g, w0 + g + 8) and the tile's keys. */
template <int BC>
__device__ __forceinline__ void bias_scores_f32(float (&s)[BC / 8][4], const float *Bs, int w0, int lane) {
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const int r = w0 + lane / 4 + 8 * (c / 2);
#pragma unroll
        for (int nb = 0; nb < BC / 8; nb++) s[nb][c] += Bs[r * (BC + 4) + nb * 8 + 2 * (lane % 4) + (c & 1)];
    }
}

/*
 * Dropout on P in its C fragments: the lane's keys nb*8 + 2t (+1) of rows q0 + g (+8), from key position k0 on,
 * are zeroed where dropped, by the keep bits of ladder_attn_kept_rows() (common/attention_gpu.cuh).
 */
template <int BC>
__device__ __forceinline__ void drop_p_f32(const args &a, float (&p)[BC / 8][4], int64_t b, int64_t h, int64_t q0,
                                           int64_t k0, int lane) {
    uint32_t kept[2];
    ladder_attn_kept_rows<BC / 8>(a.hooks, a, b, h, q0, k0, lane, kept);
#pragma unroll
    for (int k = 0; k < 2; k++)
#pragma unroll
        for (int nb = 0; nb < BC / 8; nb++) {
            if (!((kept[k] >> (2 * nb)) & 1u)) p[nb][2 * k] = 0.0f;
            if (!((kept[k] >> (2 * nb + 1)) & 1u)) p[nb][2 * k + 1] = 0.0f;
        }
}

template <int HD, bool THREE>
__global__ void __launch_bounds__(tf32_fwd_cfg<HD>::THREADS) attn_fwd_tf32_kernel(args a) {
    using C = tf32_fwd_cfg<HD>;
    constexpr int BR = C::BR, BC = C::BC, LD = C::LD, NB = BC / 8;
    extern __shared__ __align__(16) float smem_f32[];
    float *Qs = smem_f32, *Ks = Qs + BR * LD, *Vs = Ks + BC * LD, *Bs = Vs + BC * LD;
    int64_t *range = reinterpret_cast<int64_t *>(Bs + BR * C::LDB);
    /* block x = (query tile, split): with split keys, a.splits blocks share a query tile's key tiles */
    const int splits = (int)a.splits;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x / splits, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, w0 = warp * 16;

    const ladder_attn_block span = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
    int64_t jbeg = span.lo / BC * BC, khi = span.hi;
    split_share<BC>(splits, jbeg, khi);
    for (int r = threadIdx.x; r < BR; r += blockDim.x) { /* visible after the loop's first __syncthreads() */
        range[2 * r] = range[2 * r + 1] = 0;
        if (r < rows) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &range[2 * r], &range[2 * r + 1]);
    }
    /* S in natural units when something must be applied to it (softcap, bias), else the raw q.k */
    const bool exact = a.softcap > 0.0f || a.hooks.bias;
    const bool dropout = a.hooks.dropout_p > 0.0f;
    const float unit = exact ? 1.0f : a.scale, sl2 = unit * LADDER_LOG2E;
    const float keep_scale = dropout ? a.hooks.keep_scale : 1.0f;

    load_rows_f32<BR, HD, C::THREADS>(Qs, LD, a.q, b, h, seq.q0 + i0, rows, a.D);
    if (jbeg < khi) {
        const int64_t keys = seq.Lk - jbeg < BC ? seq.Lk - jbeg : BC;
        load_rows_f32<BC, HD, C::THREADS>(Ks, LD, a.k, b, hk, seq.k0 + jbeg, keys, a.D);
        if (a.hooks.bias) bias_tile_f32<BR, BC, C::THREADS>(Bs, a.bias, b, h, seq.q0 + i0, rows, seq.k0 + jbeg, keys);
    }
    ladder_cp_async_commit();
    float o[HD / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nd = 0; nd < HD / 8; nd++) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;

    for (int64_t j0 = jbeg; j0 < khi; j0 += BC) {
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC, next = j0 + BC;
        ladder_cp_async_wait_group<0>(); /* K_j, its bias (and Q) */
        __syncthreads();                 /* ... for every thread; and every warp is done with V_{j-1} */
        load_rows_f32<BC, HD, C::THREADS>(Vs, LD, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        ladder_cp_async_commit();

        float sc[1][NB][4];
        ladder_zero_tile(sc);
        ladder_mma_warp_tile_tf32<1, NB, HD / 8, false, false, THREE>(sc, Qs + w0 * LD, LD, Ks, LD, lane);
        if (exact) softcap_scores<1, BC>(a, sc); /* scale * x, softcapped when softcap > 0 */
        if (a.hooks.bias) bias_scores_f32<BC>(sc[0], Bs, w0, lane);
        if (!(j0 >= span.all_lo && j0 + BC <= span.all_hi)) mask_scores<1, BC>(sc, range, w0, j0, lane);

        /* online softmax for rows g (k = 0) and g + 8 (k = 1): sc becomes P, in place, still fp32 */
        float alpha[2];
        bool grew = false;
#pragma unroll
        for (int k = 0; k < 2; k++) {
            float mx = -INFINITY;
#pragma unroll
            for (int nb = 0; nb < NB; nb++) mx = fmaxf(mx, fmaxf(sc[0][nb][2 * k], sc[0][nb][2 * k + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[k], mx);
            const float ms = m_new == -INFINITY ? 0.0f : m_new * sl2; /* no key seen yet: P = 0, not NaN */
            alpha[k] = ladder_ex2_ftz(m[k] * sl2 - ms);
            grew |= m_new != m[k];
            float sum = 0.0f;
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    sc[0][nb][2 * k + e] = ladder_ex2_ftz(fmaf(sc[0][nb][2 * k + e], sl2, -ms));
                    sum += sc[0][nb][2 * k + e];
                }
            l[k] = alpha[k] * l[k] + sum; /* this lane's part of the row sum (before dropout, as lse wants) */
            m[k] = m_new;
        }
        if (dropout) drop_p_f32<BC>(a, sc[0], b, h, seq.q0 + i0 + w0, seq.k0 + j0, lane);
        ladder_cp_async_wait_group<0>(); /* V_j */
        __syncthreads();                 /* ... for every thread; and every warp is done with K_j and its bias */
        if (next < khi) {
            const int64_t nkeys = seq.Lk - next < BC ? seq.Lk - next : BC;
            load_rows_f32<BC, HD, C::THREADS>(Ks, LD, a.k, b, hk, seq.k0 + next, nkeys, a.D);
            if (a.hooks.bias)
                bias_tile_f32<BR, BC, C::THREADS>(Bs, a.bias, b, h, seq.q0 + i0, rows, seq.k0 + next, nkeys);
        }
        ladder_cp_async_commit();

        if (__any_sync(0xffffffffu, grew))
#pragma unroll
            for (int nd = 0; nd < HD / 8; nd++) {
                o[nd][0] *= alpha[0], o[nd][1] *= alpha[0];
                o[nd][2] *= alpha[1], o[nd][3] *= alpha[1];
            }
        /* O += P V: P's C registers c[0], c[2], c[1], c[3] are the A fragment of keys 2t, 2t + 1 (in that k
         * order), split or rounded once per 8 keys; V's B fragments are read at the same keys */
#pragma unroll
        for (int kb = 0; kb < NB; kb++) {
            uint32_t pa[4] = {__float_as_uint(sc[0][kb][0]), __float_as_uint(sc[0][kb][2]),
                              __float_as_uint(sc[0][kb][1]), __float_as_uint(sc[0][kb][3])};
            uint32_t pa_small[4];
            ladder_tf32_prepare<THREE>(pa, pa_small);
#pragma unroll
            for (int nd = 0; nd < HD / 8; nd++) {
                uint32_t vb[2], vb_small[2];
                ladder_lds_b_tf32_pairs(vb, Vs + kb * 8 * LD + nd * 8, LD, lane);
                ladder_tf32_prepare<THREE>(vb, vb_small);
                ladder_mma_tf32<THREE>(o[nd], pa, pa_small, vb[0], vb[1], vb_small[0], vb_small[1]);
            }
        }
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q copies in flight */

    /* O / l (times 1 / (1 - p) with dropout); lse = unit * m + log l. A row that saw no key: o = 0, lse = -inf.
     * With split keys, both go to this split's partials, which ladder_attn_combine() merges. */
    float *out = reinterpret_cast<float *>(a.o);
#pragma unroll
    for (int k = 0; k < 2; k++) {
        float lk = l[k];
        lk += __shfl_xor_sync(0xffffffffu, lk, 1);
        lk += __shfl_xor_sync(0xffffffffu, lk, 2);
        const int r = w0 + g + 8 * k;
        if (r >= rows) continue;
        const int64_t row = (b * a.Hq + h) * a.Sq + seq.q0 + i0 + r;
        const float inv = lk == 0.0f ? 0.0f : keep_scale / lk; /* a NaN row sum stays NaN */
        const bool part = splits > 1;
        float *dst = part ? a.o_part + ((int64_t)(blockIdx.x % splits) * a.B * a.Hq * a.Sq + row) * a.Dv
                          : out + row * a.Dv;
#pragma unroll
        for (int nd = 0; nd < HD / 8; nd++)
#pragma unroll
            for (int c = 0; c < 2; c++)
                if (nd * 8 + 2 * t + c < a.Dv) dst[nd * 8 + 2 * t + c] = o[nd][2 * k + c] * inv;
        if (t == 0) {
            const float lse = ladder_attn_lse(unit * m[k], lk);
            if (part) a.lse_part[(int64_t)(blockIdx.x % splits) * a.B * a.Hq * a.Sq + row] = lse;
            else a.lse[row] = lse;
        }
    }
}

template <int HD, bool THREE> ladder_status fwd_tf32_launch(const args &a) {
    using C = tf32_fwd_cfg<HD>;
    LADDER_TRY(ladder_allow_smem(attn_fwd_tf32_kernel<HD, THREE>, C::SMEM));
    const dim3 grid((unsigned)(ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs) * a.splits), (unsigned)a.Hq,
                    (unsigned)a.B);
    attn_fwd_tf32_kernel<HD, THREE><<<grid, C::THREADS, C::SMEM>>>(a);
    LADDER_LAUNCH_CHECK("attn_fwd_tf32_kernel");
    return LADDER_OK;
}

ladder_status fwd_tf32_for(const args &a, bool three) {
    if (tf32_head_dim(a.D, a.Dv) == 64) return three ? fwd_tf32_launch<64, true>(a) : fwd_tf32_launch<64, false>(a);
    return three ? fwd_tf32_launch<128, true>(a) : fwd_tf32_launch<128, false>(a);
}

} // namespace

ladder_status fwd_tf32(const args &a, bool three) {
    if (a.splits <= 1) return fwd_tf32_for(a, three);
    return fwd_split<float>(a, [three](const args &s) { return fwd_tf32_for(s, three); });
}

} // namespace attn_tc
