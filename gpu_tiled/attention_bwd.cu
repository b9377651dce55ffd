/*
 * gpu_tiled/attention_bwd.cu: the FlashAttention-2 backward, tiled rung (fp32), for every attention algorithm
 * (flash, memeff, flex: the policies of attention_tiled.cuh).
 *
 * What changed since gpu_naive/: the backward is FlashAttention-2's three kernels.
 *   1. Preprocess: Delta_i = rowsum(dO_i * O_i) - dlse_i, one warp per row, into a scratch vector, so that
 *      dS = P * (dP - Delta) needs no sum over keys later.
 *   2. dK, dV: a block owns a tile of Bc keys of one key/value head; its K and V tiles stay in shared memory and
 *      its dK and dV accumulate in registers while the Q, dO tiles of every query head of the group stream past
 *      (recomputing P = exp(S - lse) from the forward's lse instead of reading a stored P). So dK and dV are
 *      written once, by one block, with no atomics, GQA's sum over the group included.
 *   3. dQ: by default the same block also adds its tile's share, scale * dS K, into dQ with atomicAdd (dQ
 *      zeroed first); the order in which blocks add varies from run to run, and so do the last bits of dQ. In
 *      deterministic mode a separate pass owns each query tile instead, streams the key tiles past it and sums
 *      in a fixed order: bitwise-repeatable, at the price of recomputing S and dP a second time.
 * Key tiles that every row sees whole skip the mask test; only the diagonal and window-edge tiles apply it.
 *
 * With memeff's hooks: S gains the bias; V meets P times the dropout factor f (0 or 1 / (1 - p)), so
 * dV = (P f)^T dO and dP = dO V^T f, while Delta = rowsum(dO * O) is unchanged; dS = P (dP f - Delta) is also
 * the bias's gradient (the bias enters S after the scale, so no scale multiplies it), written once per element
 * by the dK/dV pass.
 *
 * With flex's: S is the score mod of s = scale * q.k and dS' = dS * dS/ds (the mod's derivative); the dK/dV pass
 * walks its key tile's query lists (the transposed block mask); the dQ pass, always the deterministic one, walks the
 * forward's lists and sums each buffer read's shares dS * dS/dx: per tile, in shared memory, along the lines the
 * buffer's elements follow, into its own row of partials (common/flex_gpu.cuh), as the tensor-core rung does.
 *
 * Preconditions: validated by the dispatchers (f32, device pointers, any input strides, contiguous outputs,
 * D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tiled [--deterministic 1]   (or memeff)
 */
#include "attention_tiled.cuh"

namespace attn_tiled {
namespace {

/*
 * p_and_ds with flex's policy: the mod and its derivatives at s = scale q.k give P and dS' = dS dS/ds; where this
 * pass sums the buffers' shares (@p share: the element's place in read 0's share tile, flex_share_tile; nullptr: not
 * this pass), each read's share dS dS/dx goes there, 0 where the element is not seen (and its mod not called).
 */
template <class POL, bool MASKED>
__device__ __forceinline__ void p_and_ds_flex(const args &a, const float *Qrow, const float *Krow, const float *dOrow,
                                              const float *Vrow, float L, float Delta, bool seen, int64_t b, int64_t h,
                                              int64_t qi, int64_t kj, float *share, float *P, float *dS) {
    float ds = 0.0f;
    ladder_flex_grad g = ladder_flex_grad_of(0.0f);
    *P = *dS = 0.0f;
    if (!MASKED || seen) {
        const float s = a.scale * dot(Qrow, Krow, a.D);
        g = ladder_flex_score_grad(POL::MOD, s, &a.flex.env, b, h, qi, kj);
        *P = expf(ladder_flex_score(POL::MOD, s, &a.flex.env, b, h, qi, kj) - L);
        ds = *P * (dot(dOrow, Vrow, a.Dv) - Delta);
        *dS = ds * g.dscore;
    }
#pragma unroll
    for (int r = 0; r < LADDER_FLEX_MAX_READS; r++)
        if (share && a.flex.part[r]) share[r * flex_share_tile<BR, BC>::SIZE] = ds * g.d[r];
}

/*
 * For query row r of the Q tile (position qi along Sq) and key c of the K tile (position kj along Sk): the P
 * that meets dO (after dropout) and dS' (dS times the softcap's slope). lse_r is +inf for rows past the tile's
 * end and for fully masked rows, so P = 0 there. MASKED: 0 outside the row's key range too, where the hooks
 * are not called (they would look outside the sequence). @p sink: this pass writes dS to the bias's gradient;
 * @p share: flex's (p_and_ds_flex).
 */
template <class POL, bool MASKED>
__device__ __forceinline__ void p_and_ds(const args &a, const float *Qrow, const float *Krow, const float *dOrow,
                                         const float *Vrow, float L, float Delta, bool seen, int64_t b, int64_t h,
                                         int64_t qi, int64_t kj, bool sink, float *share, float *P, float *dS) {
    if constexpr (!POL::HOOKS) { /* flash: no branch around the element */
        const float S = ladder_attn_softcap(a.scale * dot(Qrow, Krow, a.D), a.softcap);
        const float p = MASKED && !seen ? 0.0f : expf(S - L);
        *P = p;
        *dS = p * (dot(dOrow, Vrow, a.Dv) - Delta) * ladder_attn_softcap_grad(S, a.softcap);
        return;
    }
    if constexpr (POL::FLEX) {
        p_and_ds_flex<POL, MASKED>(a, Qrow, Krow, dOrow, Vrow, L, Delta, seen, b, h, qi, kj, share, P, dS);
        return;
    }
    if (MASKED && !seen) {
        *P = *dS = 0.0f;
        return;
    }
    float slope;
    const float S = score<POL>(a, dot(Qrow, Krow, a.D), b, h, qi, kj, &slope);
    const float p = expf(S - L), f = keep<POL>(a, b, h, qi, kj);
    const float ds = p * (dot(dOrow, Vrow, a.Dv) * f - Delta);
    *P = p * f;
    *dS = ds * slope;
    if (sink && a.hooks.dbias.p) ladder_attn_sink_ds<float>(a.hooks.dbias, b, h, qi, kj, ds);
}

/* Rows [i0, i0 + BR) of head h: lse (as the backward uses it: +inf past the end) and Delta into smem. */
__device__ void load_stats(const args &a, float *Ls, float *Ds, int64_t b, int64_t h, int64_t q0, int64_t i0,
                           int64_t rows) {
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
        const int64_t row = (b * a.Hq + h) * a.Sq + q0 + i0 + r;
        Ls[r] = r < rows ? ladder_attn_lse_for_bwd(a.lse[row]) : INFINITY;
        Ds[r] = r < rows ? a.delta[row] : 0.0f;
    }
}

/*
 * 2. One block per (key tile, key/value head hk, batch row b). Thread (c, t8) owns key c: its dK and dV columns
 * t8, t8+8, ... in registers. With atomic_dq (a uniform branch, so one compiled kernel serves both modes) the
 * block also adds scale * dS^T K into dQ.
 */
template <class POL, int NC>
__global__ void __launch_bounds__(THREADS) attn_bwd_dkdv_tiled_kernel(args a, bool atomic_dq) {
    extern __shared__ float smem[];
    const int ld = (int)a.D + 1, ldv = (int)a.Dv + 1;
    float *Ks = smem, *Vs = Ks + BC * ld, *Qs = Vs + BC * ldv, *dOs = Qs + BR * ld;
    float *Ps = dOs + BR * ldv, *dSs = Ps + BC * (BR + 1), *Ls = dSs + BC * (BR + 1), *Ds = Ls + BR;
    int64_t s, j0;
    if (!ladder_attn_tile(a.cu_k, a.n_seqs, a.Sk, BC, blockIdx.x, &s, &j0)) return; /* the whole block */
    /* ints where they fit (Hq, B <= 65535; a tile's keys and rows <= 32): at 32 columns a thread holds 64 floats of
     * dK and dV, and with the hooks 64-bit copies of these spilled registers on sm_80 */
    const int hk = (int)blockIdx.y, b = (int)blockIdx.z, group = (int)(a.Hq / a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int keys = (int)(seq.Lk - j0 < BC ? seq.Lk - j0 : BC);
    const int c = threadIdx.x / LANES, t8 = threadIdx.x % LANES;

    load_rows<BC>(Ks, ld, a.k, b, hk, seq.k0 + j0, keys, a.D);
    load_rows<BC>(Vs, ldv, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
    float dk[NC], dv[NC];
#pragma unroll
    for (int k = 0; k < NC; k++) dk[k] = dv[k] = 0.0f;

    for (int h = hk * group; h < (hk + 1) * group; h++)
        for (auto tiles = query_tiles<POL>(a, b, h, j0, seq.Lq); tiles.more(); tiles.next()) {
            const int64_t i0 = tiles.at;
            const int rows = (int)(seq.Lq - i0 < BR ? seq.Lq - i0 : BR);
            bool full; /* no element of the tile masked: it skips the mask */
            if constexpr (POL::FLEX) {
                full = tiles.full() && keys == BC;
            } else {
                const ladder_attn_block kb = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
                if (kb.hi <= j0 || kb.lo >= j0 + keys) continue; /* the ranges move right: no row sees this tile */
                full = j0 >= kb.all_lo && j0 + BC <= kb.all_hi && rows == BR;
            }
            __syncthreads(); /* every thread is done with the previous Q, dO, P and dS tiles */
            load_rows<BR>(Qs, ld, a.q, b, h, seq.q0 + i0, rows, a.D);
            load_rows<BR>(dOs, ldv, a.dout, b, h, seq.q0 + i0, rows, a.Dv);
            load_stats(a, Ls, Ds, b, h, seq.q0, i0, rows);
            __syncthreads();
            /* P^T and dS^T of the tile: thread (c, t8) does rows t8, t8+8, ... of its key (not unrolled: the
             * registers hold dK and dV, up to 64 floats per thread) */
#pragma unroll 1
            for (int kk = 0; kk < BR / LANES; kk++) {
                const int r = t8 + LANES * kk;
                int64_t lo = 0, hi = seq.Lk; /* flex: the whole sequence, the lists cut it */
                if constexpr (!POL::FLEX) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &lo, &hi);
                bool seen = c < keys && r < rows && j0 + c >= lo && j0 + c < hi;
                float *P = Ps + c * (BR + 1) + r, *dS = dSs + c * (BR + 1) + r;
                const float *Q = Qs + r * ld, *K = Ks + c * ld, *dO = dOs + r * ldv, *V = Vs + c * ldv;
                const int64_t qi = seq.q0 + i0 + r, kj = seq.k0 + j0 + c;
                if constexpr (POL::FLEX) /* a partial tile: the mask mods too */
                    if (tiles.mods() && seen) seen = flex_allowed(a, b, h, qi, kj);
                if (full) p_and_ds<POL, false>(a, Q, K, dO, V, Ls[r], Ds[r], seen, b, h, qi, kj, true, nullptr, P, dS);
                else p_and_ds<POL, true>(a, Q, K, dO, V, Ls[r], Ds[r], seen, b, h, qi, kj, true, nullptr, P, dS);
            }
            __syncthreads(); /* dQ below reads other keys' dS */
            /* dV_c += sum_r P_rc dO_r and dK_c += sum_r dS'_rc Q_r (scale applied at the end) */
#pragma unroll
            for (int k = 0; k < NC; k++) {
                const int e = t8 + LANES * k;
                float sv = 0.0f, sk = 0.0f;
                for (int r = 0; r < BR; r++) {
                    if (e < a.Dv) sv += Ps[c * (BR + 1) + r] * dOs[r * ldv + e];
                    if (e < a.D) sk += dSs[c * (BR + 1) + r] * Qs[r * ld + e];
                }
                dv[k] += sv;
                dk[k] += sk;
            }
            if (atomic_dq) { /* thread (r, t8) now owns query row r: dQ_r += scale * sum_c dS'_rc K_c */
                const int r = c;
                if (r < rows) {
                    float *dq = a.dq + ((b * a.Hq + h) * a.Sq + seq.q0 + i0 + r) * a.D;
                    for (int64_t e = t8; e < a.D; e += LANES) {
                        float sum = 0.0f;
                        for (int cc = 0; cc < BC; cc++) sum += dSs[cc * (BR + 1) + r] * Ks[cc * ld + e];
                        atomicAdd(dq + e, a.scale * sum);
                    }
                }
            }
        }
    if (c >= keys) return;
    const int64_t key = (b * a.Hkv + hk) * a.Sk + seq.k0 + j0 + c;
#pragma unroll
    for (int k = 0; k < NC; k++) {
        const int e = t8 + LANES * k;
        if (e < a.D) a.dk[key * a.D + e] = a.scale * dk[k];
        if (e < a.Dv) a.dv[key * a.Dv + e] = dv[k];
    }
}

/*
 * 3. Deterministic dQ: one block per (query tile, head h, batch row b). Thread (r, t8) owns row r's dQ
 * columns t8, t8+8, ...; the key tiles stream past in order, so every sum runs in the same order every run.
 * With flex's policy the block also sums the buffers' shares of each tile along their lines (flex_add_tile_sums()).
 */
/* flex's mods may take every register a thread can have (one block of 256 threads an SM): left to choose, ptxas held
 * bias_qk's 16-column kernel to 128 registers for sm_80 and spilled. The other policies: no minimum (0), as ptxas
 * chooses. */
template <class POL, int NC>
__global__ void __launch_bounds__(THREADS, POL::FLEX ? 1 : 0) attn_bwd_dq_tiled_kernel(args a) {
    extern __shared__ float smem[];
    const int ld = (int)a.D + 1, ldv = (int)a.Dv + 1;
    /* flex's share tiles first, so that they are 16-byte aligned (none when no buffer gradient is asked) */
    float *shares = smem, *Qs = shares + (POL::FLEX ? flex_share_bytes<BR, BC, false>(a.flex) / sizeof(float) : 0);
    float *dOs = Qs + BR * ld, *Ks = dOs + BR * ldv, *Vs = Ks + BC * ld;
    float *dSs = Vs + BC * ldv, *Ls = dSs + BR * (BC + 1), *Ds = Ls + BR;
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    const int r = threadIdx.x / LANES, t8 = threadIdx.x % LANES;
    const ladder_attn_block kb = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
    int64_t lo = 0, hi = seq.Lk; /* flex: the whole sequence, the lists cut it */
    if constexpr (!POL::FLEX) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &lo, &hi);

    load_rows<BR>(Qs, ld, a.q, b, h, seq.q0 + i0, rows, a.D);
    load_rows<BR>(dOs, ldv, a.dout, b, h, seq.q0 + i0, rows, a.Dv);
    load_stats(a, Ls, Ds, b, h, seq.q0, i0, rows);
    float acc[NC];
#pragma unroll
    for (int k = 0; k < NC; k++) acc[k] = 0.0f;
    if constexpr (POL::FLEX) { /* the block's rows of partials, and the share tiles' margins, start at zero */
        flex_clear_partials<POL::MOD, BR, THREADS>(a.flex, a.Hq, b, h, i0 / BR);
        flex_clear_shares<BR, BC, THREADS, false>(a.flex, shares);
    }

    for (auto tiles = key_tiles<POL>(a, kb, b, h, i0); tiles.more(); tiles.next()) {
        const int64_t j0 = tiles.at;
        /* every thread is done with the previous K, V tiles (and flex's shares and partials; the first loads landed) */
        __syncthreads();
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        load_rows<BC>(Ks, ld, a.k, b, hk, seq.k0 + j0, keys, a.D);
        load_rows<BC>(Vs, ldv, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        __syncthreads();
        const bool full = tiles.full() && rows == BR; /* rows past the end: the hooks must not look there */
#pragma unroll
        for (int kk = 0; kk < BC / LANES; kk++) {
            const int c = t8 + LANES * kk;
            bool seen = r < rows && j0 + c >= lo && j0 + c < hi;
            float P, *dS = dSs + r * (BC + 1) + c;
            const float *Q = Qs + r * ld, *K = Ks + c * ld, *dO = dOs + r * ldv, *V = Vs + c * ldv;
            const int64_t qi = seq.q0 + i0 + r, kj = seq.k0 + j0 + c;
            if constexpr (POL::FLEX) /* a partial tile: the mask mods too */
                if (tiles.mods() && seen) seen = flex_allowed(a, b, h, qi, kj);
            float *share = POL::FLEX ? flex_share_tile<BR, BC>::at(shares, 0, r, c) : nullptr;
            if (full) p_and_ds<POL, false>(a, Q, K, dO, V, Ls[r], Ds[r], seen, b, h, qi, kj, false, share, &P, dS);
            else p_and_ds<POL, true>(a, Q, K, dO, V, Ls[r], Ds[r], seen, b, h, qi, kj, false, share, &P, dS);
        }
        if constexpr (POL::FLEX) { /* every warp's shares are stored: their sums along the lines */
            __syncthreads();
            flex_add_tile_sums<POL::MOD, BR, BC, THREADS>(a.flex, shares, a.Hq, b, h, i0 / BR, seq.k0 + j0);
        }
        __syncwarp(); /* row r's dS was written by its 8 lanes, all in this warp */
#pragma unroll
        for (int k = 0; k < NC; k++) {
            const int e = t8 + LANES * k;
            if (e >= a.D) break;
            float sum = 0.0f;
            for (int c = 0; c < BC; c++) sum += dSs[r * (BC + 1) + c] * Ks[c * ld + e];
            acc[k] += sum;
        }
    }
    if (r >= rows) return;
    float *dq = a.dq + ((b * a.Hq + h) * a.Sq + seq.q0 + i0 + r) * a.D;
#pragma unroll
    for (int k = 0; k < NC; k++)
        if (t8 + LANES * k < a.D) dq[t8 + LANES * k] = a.scale * acc[k];
}

template <class POL, int NC> ladder_status run(const args &a, bool deterministic) {
    const int64_t rows = a.B * a.Hq * a.Sq;
    LADDER_TRY(ladder_attn_delta<float>(a, a.dout.p, a.dout.s, a.o, a.delta));
    const size_t tiles = sizeof(float) * (size_t)((BR + BC) * (a.D + 1) + (BR + BC) * (a.Dv + 1) + 2 * BR);
    const dim3 kv_grid((unsigned)ladder_attn_tiles_bound(a.Sk, BC, a.n_seqs), (unsigned)a.Hkv, (unsigned)a.B);
    const size_t kv_smem = tiles + sizeof(float) * 2 * BC * (BR + 1);
    /* atomics add into dQ: it starts at zero (fully masked rows stay so) */
    if (!deterministic) LADDER_CUDA_TRY(cudaMemsetAsync(a.dq, 0, sizeof(float) * (size_t)(rows * a.D)));
    LADDER_TRY(ladder_allow_smem(attn_bwd_dkdv_tiled_kernel<POL, NC>, kv_smem));
    attn_bwd_dkdv_tiled_kernel<POL, NC><<<kv_grid, THREADS, kv_smem>>>(a, !deterministic);
    LADDER_LAUNCH_CHECK("attn_bwd_dkdv_tiled_kernel");
    if (!deterministic) return LADDER_OK;
    const dim3 q_grid((unsigned)ladder_attn_tiles_bound(a.Sq, BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    const size_t q_smem = tiles + sizeof(float) * BR * (BC + 1) + flex_share_bytes<BR, BC, false>(a.flex);
    LADDER_TRY(ladder_allow_smem(attn_bwd_dq_tiled_kernel<POL, NC>, q_smem));
    attn_bwd_dq_tiled_kernel<POL, NC><<<q_grid, THREADS, q_smem>>>(a);
    LADDER_LAUNCH_CHECK("attn_bwd_dq_tiled_kernel");
    return LADDER_OK;
}

/* Policy POL's backward at the columns per thread that D and Dv need, with Delta's scratch from the stream-ordered
 * pool (after the first call it costs no cudaMalloc). */
template <class POL> ladder_status run_policy(args a, bool deterministic) {
    ladder_scratch delta;
    LADDER_TRY(delta.alloc(sizeof(float) * (size_t)(a.B * a.Hq * a.Sq)));
    a.delta = (float *)delta.ptr;
    const int cols = cols_per_thread(a.D, a.Dv);
    return cols == 8 ? run<POL, 8>(a, deterministic) : cols == 16 ? run<POL, 16>(a, deterministic) : run<POL, 32>(a, deterministic);
}

} // namespace

ladder_status bwd(args a, bool deterministic) {
    return hooks_on(a) ? run_policy<hooked>(a, deterministic) : run_policy<plain>(a, deterministic);
}

ladder_status bwd_flex(args a, int mod) {
    return ladder_flex_with_mod(mod, [&](auto m) { return run_policy<flex<decltype(m)::value>>(a, true); });
}

} // namespace attn_tiled
