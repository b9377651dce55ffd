/*
 * gpu_tiled/attention_fwd.cu: the FlashAttention-2 forward, tiled rung (fp32), for every attention algorithm
 * (flash, memeff, flex: the policies of attention_tiled.cuh).
 *
 * What changed since gpu_naive/: a block owns a tile of Br query rows and streams the keys past it in tiles of
 * Bc, each K and V tile staged once in shared memory and read by all Br rows (the naive rung read each key
 * from global memory once per output element). The softmax is online: each row keeps its running max m, its
 * running sum l = sum exp(S - m) and its unnormalised O; when a new tile raises m, l and O are rescaled by
 * alpha = exp(m_old - m_new), and O is divided by l once, at the end. Nothing of size Sq x Sk is ever stored.
 * Key tiles that every row of the block sees whole (the common case away from a causal diagonal or a window
 * edge) skip the mask test; the diagonal tiles apply it.
 *
 * With memeff's hooks, S gains the bias and the P that meets V is P times the dropout factor (the row sum l
 * stays the undropped one, so lse is the softmax's).
 *
 * With flex's, S is the score mod of scale * q.k, and the key tiles come from the query tile's block lists: its
 * partial tiles (the mask mods checked element by element) then its full ones (no mask but the sequence's end).
 *
 * Preconditions: validated by the dispatchers (f32, device pointers, any input strides, contiguous outputs,
 * D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tiled   (or memeff)
 */
#include "attention_tiled.cuh"

namespace attn_tiled {
namespace {

/*
 * Scores of this thread's BC/8 keys of the tile for its row r (row i of its sequence, position qi along Sq):
 * the score hook of S = scale * Q_r . K_c; with MASKED, -inf where row i may not see key j0 + c. A row past the
 * tile's end (not @p valid) gets plain q.k of its zero Q row: the hooks never look outside the sequence.
 */
template <class POL, bool MASKED>
__device__ __forceinline__ void scores(const args &a, const float *Qs, const float *Ks, int ld, int r, int t8,
                                       bool valid, int64_t b, int64_t h, int64_t qi, int64_t k0, int64_t j0,
                                       int64_t lo, int64_t hi, bool mods, float (&S)[BC / LANES]) {
#pragma unroll
    for (int kk = 0; kk < BC / LANES; kk++) {
        const int c = t8 + LANES * kk;
        const float qk = dot(Qs + r * ld, Ks + c * ld, a.D);
        bool in = !MASKED || (j0 + c >= lo && j0 + c < hi);
        if constexpr (POL::FLEX) /* a partial tile: the mask mods too, for rows inside the sequence */
            if (MASKED && mods && valid) in = in && flex_allowed(a, b, h, qi, k0 + j0 + c);
        float slope, x;
        if constexpr (POL::HOOKS) x = !in ? -INFINITY : valid ? score<POL>(a, qk, b, h, qi, k0 + j0 + c, &slope) : qk;
        else x = in ? ladder_attn_softcap(a.scale * qk, a.softcap) : -INFINITY;
        S[kk] = x;
    }
}

/* One block per (query tile, head h, batch row b); thread (r, t8) owns row r and O columns t8, t8+8, ... */
template <class POL, int NV>
__global__ void __launch_bounds__(THREADS, 1) attn_fwd_tiled_kernel(args a) {
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

    /* the keys of the whole block, and of this thread's row (flex: the whole sequence, its lists cut it) */
    const ladder_attn_block kb = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
    int64_t lo = 0, hi = 0;
    if constexpr (POL::FLEX) hi = seq.Lk;
    else if (valid) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &lo, &hi);
    const int64_t qi = seq.q0 + i0 + r; /* this thread's row along Sq: where the bias and dropout look */

    load_rows<BR>(Qs, ld, a.q, b, h, seq.q0 + i0, rows, a.D);
    float m = -INFINITY, l = 0.0f, acc[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) acc[k] = 0.0f;

    for (auto tiles = key_tiles<POL>(a, kb, b, h, i0); tiles.more(); tiles.next()) {
        const int64_t j0 = tiles.at;
        __syncthreads(); /* every thread is done with the previous K, V and P tiles */
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_rows<BC>(Ks, ld, a.k, b, hk, seq.k0 + j0, keys, a.D);
        load_rows<BC>(Vs, ldv, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        __syncthreads(); /* the tiles are in place */

        /* a tile inside every row's range needs no mask: only the diagonal (and window-edge) tiles do; flex's full
         * tiles skip the mask mods, its partial ones check them */
        float S[BC / LANES];
        if (tiles.full()) scores<POL, false>(a, Qs, Ks, ld, r, t8, valid, b, h, qi, seq.k0, j0, lo, hi, false, S);
        else scores<POL, true>(a, Qs, Ks, ld, r, t8, valid, b, h, qi, seq.k0, j0, lo, hi, tiles.mods(), S);

        /* online softmax: m_new = max(m, this tile's max); rescale what was summed under the old max by alpha */
        float tile_max = -INFINITY;
#pragma unroll
        for (int kk = 0; kk < BC / LANES; kk++) tile_max = fmaxf(tile_max, S[kk]);
        const float m_new = fmaxf(m, row_max(tile_max));
        /* a row that has seen no key yet keeps m = -inf, and exp(-inf - -inf) would be NaN: subtracting 0 instead
         * gives P = exp(-inf) = 0 and alpha = 1, while a NaN score stays NaN (a NaN input must not look masked) */
        const float ms = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new);
        float tile_sum = 0.0f;
#pragma unroll
        for (int kk = 0; kk < BC / LANES; kk++) {
            const float P = expf(S[kk] - ms);
            const int c = t8 + LANES * kk;
            /* the row sum counts P; V meets P after dropout (the hook's factor, 1 without dropout) */
            Ps[r * (BC + 1) + c] = P * keep<POL>(a, b, h, qi, seq.k0 + j0 + c);
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
    /* divide by l once; a fully masked row (l = 0) gets o = 0 and lse = -inf (a NaN l stays NaN) */
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int e = t8 + LANES * k;
        if (e < a.Dv) a.o[row * a.Dv + e] = l == 0.0f ? 0.0f : acc[k] / l;
    }
    if (t8 == 0) a.lse[row] = ladder_attn_lse(m, l);
}

template <class POL, int NV> ladder_status launch(const args &a, dim3 grid) {
    const size_t smem = sizeof(float) * (size_t)((BR + BC) * (a.D + 1) + BC * (a.Dv + 1) + BR * (BC + 1));
    LADDER_TRY(ladder_allow_smem(attn_fwd_tiled_kernel<POL, NV>, smem));
    attn_fwd_tiled_kernel<POL, NV><<<grid, THREADS, smem>>>(a);
    LADDER_LAUNCH_CHECK("attn_fwd_tiled_kernel");
    return LADDER_OK;
}

/* The launch of policy POL at the columns per thread that D and Dv need. */
template <class POL> ladder_status launch_policy(const args &a) {
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    const int cols = cols_per_thread(a.D, a.Dv);
    return cols == 8 ? launch<POL, 8>(a, grid) : cols == 16 ? launch<POL, 16>(a, grid) : launch<POL, 32>(a, grid);
}

} // namespace

ladder_status fwd(const args &a) { return hooks_on(a) ? launch_policy<hooked>(a) : launch_policy<plain>(a); }

ladder_status fwd_flex(const args &a, int mod) {
    return ladder_flex_with_mod(mod, [&](auto m) { return launch_policy<flex<decltype(m)::value>>(a); });
}

} // namespace attn_tiled
