/*
 * gpu_tiled/flash_fwd.cu: the FlashAttention-2 forward, tiled rung (fp32).
 *
 * What changed since gpu_naive/: a block owns a tile of Br query rows and streams the keys past it in tiles of
 * Bc, each K and V tile staged once in shared memory and read by all Br rows (the naive rung read each key
 * from global memory once per output element). The softmax is online: each row keeps its running max m, its
 * running sum l = sum exp(S - m) and its unnormalised O; when a new tile raises m, l and O are rescaled by
 * alpha = exp(m_old - m_new), and O is divided by l once, at the end. Nothing of size Sq x Sk is ever stored.
 * Key tiles that every row of the block sees whole (the common case away from a causal diagonal or a window
 * edge) skip the mask test; the diagonal tiles apply it.
 *
 * Preconditions: validated by ladder_flash_fwd (f32, device pointers, any input strides, contiguous outputs,
 * D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tiled
 */
#include "cuda_util.cuh"
#include "flash_rungs.h"
#include "flash_tiled.cuh"

namespace flash_tiled {
namespace {

/*
 * Scores of this thread's BC/8 keys of the tile for its row r (row i of its sequence): S = scale * Q_r . K_c,
 * softcapped; with MASKED, -inf where row i may not see key j0 + c.
 */
template <bool MASKED>
__device__ __forceinline__ void scores(const args &a, const float *Qs, const float *Ks, int ld, int r, int t8,
                                       int64_t j0, int64_t lo, int64_t hi, float (&S)[BC / LANES]) {
#pragma unroll
    for (int kk = 0; kk < BC / LANES; kk++) {
        const int c = t8 + LANES * kk;
        float s = ladder_attn_softcap(a.scale * dot(Qs + r * ld, Ks + c * ld, a.D), a.softcap);
        if (MASKED && !(j0 + c >= lo && j0 + c < hi)) s = -INFINITY;
        S[kk] = s;
    }
}

/* One block per (query tile, head h, batch row b); thread (r, t8) owns row r and O columns t8, t8+8, ... */
template <int NV>
__global__ void __launch_bounds__(THREADS) flash_fwd_tiled_kernel(args a) {
    extern __shared__ float smem[];
    const int ld = (int)a.D + 1, ldv = (int)a.Dv + 1;
    float *Qs = smem, *Ks = Qs + BR * ld, *Vs = Ks + BC * ld, *Ps = Vs + BC * ldv; /* Ps: [BR][BC+1] */
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &i0)) return; /* the whole block: no sync */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int r = threadIdx.x / LANES, t8 = threadIdx.x % LANES;
    const bool valid = r < rows;

    /* the keys of the whole block (the ranges only move right as the row grows), and of this thread's row */
    int64_t klo, khi, lo_last, hi_first, lo = 0, hi = 0;
    ladder_attn_key_range(&a.mask, i0, seq.Lq, seq.Lk, &klo, &hi_first);
    ladder_attn_key_range(&a.mask, i0 + rows - 1, seq.Lq, seq.Lk, &lo_last, &khi);
    if (valid) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &lo, &hi);

    load_rows<BR>(Qs, ld, a.q, b, h, seq.q0 + i0, rows, a.D);
    float m = -INFINITY, l = 0.0f, acc[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) acc[k] = 0.0f;

    for (int64_t j0 = klo / BC * BC; j0 < khi; j0 += BC) {
        __syncthreads(); /* every thread is done with the previous K, V and P tiles */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_rows<BC>(Ks, ld, a.k, b, hk, seq.k0 + j0, keys, a.D);
        load_rows<BC>(Vs, ldv, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        __syncthreads(); /* the tiles are in place */

        /* a tile inside every row's range needs no mask: only the diagonal (and window-edge) tiles do */
        float S[BC / LANES];
        if (j0 >= lo_last && j0 + BC <= hi_first) scores<false>(a, Qs, Ks, ld, r, t8, j0, lo, hi, S);
        else scores<true>(a, Qs, Ks, ld, r, t8, j0, lo, hi, S);

        /* online softmax: m_new = max(m, this tile's max); rescale what was summed under the old max by alpha */
        float tile_max = -INFINITY;
#pragma unroll
        for (int kk = 0; kk < BC / LANES; kk++) tile_max = fmaxf(tile_max, S[kk]);
        const float m_new = fmaxf(m, row_max(tile_max));
        /* a row that has seen no key yet keeps m = -inf, and exp(-inf - -inf) would be NaN: P = 0, alpha = 1 */
        const float alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new);
        float tile_sum = 0.0f;
#pragma unroll
        for (int kk = 0; kk < BC / LANES; kk++) {
            const float P = m_new == -INFINITY ? 0.0f : expf(S[kk] - m_new);
            Ps[r * (BC + 1) + t8 + LANES * kk] = P;
            tile_sum += P;
        }
        l = alpha * l + row_sum(tile_sum);
        m = m_new;
        __syncwarp(); /* a row's P values were written by its 8 lanes, all in this warp */

        /* O_r = alpha * O_r + P_r V (unnormalised) */
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int e = t8 + LANES * k;
            if (e >= a.Dv) break;
            float sum = 0.0f;
            for (int c = 0; c < BC; c++) sum += Ps[r * (BC + 1) + c] * Vs[c * ldv + e];
            acc[k] = alpha * acc[k] + sum;
        }
    }
    if (!valid) return;
    const int64_t row = (b * a.Hq + h) * a.Sq + seq.q0 + i0 + r;
    /* divide by l once; a fully masked row (l = 0) gets o = 0 and lse = -inf */
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int e = t8 + LANES * k;
        if (e < a.Dv) a.o[row * a.Dv + e] = l > 0.0f ? acc[k] / l : 0.0f;
    }
    if (t8 == 0) a.lse[row] = ladder_attn_lse(m, l);
}

template <int NV> ladder_status launch(const args &a, dim3 grid) {
    const size_t smem = sizeof(float) * (size_t)((BR + BC) * (a.D + 1) + BC * (a.Dv + 1) + BR * (BC + 1));
    LADDER_TRY(ladder_allow_smem(flash_fwd_tiled_kernel<NV>, smem));
    flash_fwd_tiled_kernel<NV><<<grid, THREADS, smem>>>(a);
    LADDER_LAUNCH_CHECK("flash_fwd_tiled_kernel");
    return LADDER_OK;
}

} // namespace
} // namespace flash_tiled

extern "C" ladder_status flash_fwd_gpu_tiled(const ladder_flash_problem *fp, const ladder_flash_args *fa) {
    using namespace flash_tiled;
    const args a = pack(fp, fa);
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    switch (cols_per_thread(a.D, a.Dv)) {
    case 8: return launch<8>(a, grid);
    case 16: return launch<16>(a, grid);
    default: return launch<32>(a, grid);
    }
}
