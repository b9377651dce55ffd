/*
 * gpu_tensorcore/attention_fwd.sm90a.cu: flash's forward on Hopper's warpgroup matrix instructions, wgmma with its
 * operands read from shared memory (compiled for sm_90a alone; the launcher refuses other GPUs).
 *
 * What changed since the mma.sync forward (attention_tc_fwd.cuh), and only that: where the operands of the two
 * products come from, and which instruction multiplies them (common/wgmma.cuh draws the layouts).
 *   - A block is two warpgroups (8 warps, 256 threads), each of which owns 64 query rows: Br = 128, and warp w
 *     holds rows 16w .. 16w+15 of the block, in fragments laid out as mma.sync's (line "S = Q K^T" below).
 *   - Q, K and V are staged by cp.async as before, 16 bytes a copy, but into core-matrix tiles, the layout wgmma
 *     reads, instead of padded rows for ldmatrix (load_tile_cm).
 *   - S = Q K^T: HD/16 wgmma m64n64k16 per warpgroup, A (its 64 rows of Q) and B (K^T, K's rows K-major) both read
 *     by the tensor cores from shared memory through descriptors: no ldmatrix, no Q or K fragments in registers.
 *   - O += P V: BC/16 wgmma m64n{HDV}k16 with A = P from registers (the S accumulators rounded to 16 bits and
 *     packed, the same registers as before) and B = V read MN-major (the transpose flag) from shared memory.
 *   - Ordering: cp.async writes through the generic proxy and wgmma reads through the async proxy, so each thread
 *     waits for its copies, fences the proxies, and only then meets the others at the barrier; wgmma.fence comes
 *     before each batch whose registers ordinary instructions wrote, and wgmma.wait_group 0 before its accumulators
 *     are read and before the tile it read is overwritten.
 * Unchanged: one K and one V buffer with two barriers per key tile (V_j lands during S and the softmax, K_{j+1}
 * during P V), the key-tile schedule and its masks, softcap, GQA, packed sequences, the online softmax in exp2 with
 * P rounded per 64-key tile (so the rung's reference holds for both generations), and the O/lse epilogue: the
 * functions of attention_tc.cuh and attention_tc_fwd.cuh.
 *
 * Preconditions: plain attention (flash; no hooks, no split keys), bf16 or fp16, D and Dv up to 128 (run at (64,64)
 * or (128,128), padded with zeros as the mma.sync kernels are), an sm_90 GPU.
 * Run it:  LADDER_TC_PATH=wgmma build/bin/ladder run flash --rung gpu_tensorcore [--dtype fp16]
 */
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "attention_tc_fwd.cuh"
#include "attention_tc_hopper.cuh"
#include "wgmma.cuh"

namespace attn_tc {
namespace {

template <int HD, int HDV> struct wgmma_fwd_cfg {
    static constexpr int WARPGROUPS = 2, THREADS = 128 * WARPGROUPS, BR = 64 * WARPGROUPS;
    /* keys per tile: the mma.sync forward's (64 here), whose P rounding the rung's reference follows */
    static constexpr int BC = LADDER_ATTN_TC_FWD_KEYS(HD, HDV);
    static_assert(BC == 64 && (HD == 64 || HD == 128) && (HDV == 64 || HDV == 128), "the products are m64n64 and m64n{HDV}");
    /* Q, K, V as core-matrix tiles (no padding: wgmma reads whole 128-byte core matrices, free of bank conflicts);
     * each row's key range [lo, hi) */
    static constexpr size_t SMEM = sizeof(uint16_t) * (size_t)((BR + BC) * HD + BC * HDV) + sizeof(int64_t) * 2 * BR;
};

/*
 * Rows [r0, r0 + n) of head h of batch row b of @p t, @p width real columns each, into the ROWS x COLS core-matrix
 * tile @p smem (common/wgmma.cuh), zero past n rows and past the width, by a block of THREADS threads, as load_tile
 * (attention_tc.cuh) does for padded rows. Thread x copies 16-byte piece x + i * THREADS of the tile, which the
 * layout puts at element 8 (x + i * THREADS): the 8 rows of a core matrix go to 8 consecutive threads (128
 * contiguous bytes of shared memory a quarter warp, without bank conflicts), and a warp reads 8 rows of 4 pieces,
 * 64 contiguous bytes of each. With THREADS a multiple of 8 * (COLS / 8) (whole core matrices a pass), each thread
 * keeps its row within the core matrix and its column, and steps down by THREADS / (COLS / 8) rows a pass.
 */
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile_cm(uint16_t *smem, const view4 &t, int64_t b, int64_t h, int64_t r0,
                                             int64_t n, int64_t width) {
    constexpr int CHUNKS = COLS / 8, STEP = THREADS / CHUNKS; /* STEP: rows per pass */
    static_assert(THREADS % (8 * CHUNKS) == 0 && ROWS % STEP == 0, "whole core matrices a pass");
    const uint16_t *base = t.p + b * t.s[0] + h * t.s[1] + r0 * t.s[2];
    const unsigned x = threadIdx.x;
    const int r = (int)(x / (8 * CHUNKS)) * 8 + (int)(x % 8), c = (int)(x / 8 % CHUNKS) * 8;
    const int rows = n < ROWS ? (int)n : ROWS;
    uint16_t *dst = smem + 8 * x;
    if (t.rows16 && width % 8 == 0) {
        const bool col_in = c < width;
        const uint16_t *src = base + r * t.s[2] + c;
        const int64_t step = STEP * t.s[2];
#pragma unroll
        for (int i = 0; i < ROWS / STEP; i++, src += step) {
            const bool in = col_in && r + i * STEP < rows;
            ladder_cp_async16(dst + 8 * i * THREADS, in ? src : base, in);
        }
        return;
    }
    for (int i = 0; i < ROWS / STEP; i++) { /* element by element: any strides, any width */
        const int row = r + i * STEP;
        const uint16_t *src = base + row * t.s[2];
        for (int e = 0; e < 8; e++)
            dst[8 * i * THREADS + e] = row < rows && c + e < width ? src[(c + e) * t.s[3]] : (uint16_t)0;
    }
}

template <class T, int HD, int HDV>
__global__ void __launch_bounds__(wgmma_fwd_cfg<HD, HDV>::THREADS, 2) attn_fwd_wgmma_kernel(args a) {
    using C = wgmma_fwd_cfg<HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, THREADS = C::THREADS;
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *Qs = smem, *Ks = Qs + BR * HD, *Vs = Ks + BC * HD;
    int64_t *range = (int64_t *)(Vs + BC * HDV);
    int64_t s, i0;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &i0)) return; /* the whole block */
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = ladder_attn_kv_head(h, a.Hq, a.Hkv);
    const ladder_attn_seq seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    const int64_t rows = seq.Lq - i0 < BR ? seq.Lq - i0 : BR;
    /* warpgroup wg = warps 4wg .. 4wg+3 owns rows 64wg .. 64wg+63; warp w of the block, rows w0 = 16w .. 16w+15 */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, w0 = warp * 16, wg = warp / 4;

    /* the keys seen by some row of the block, and those seen by all */
    const ladder_attn_block span = ladder_attn_block_range(&a.mask, i0, rows, seq.Lq, seq.Lk);
    const int64_t khi = span.hi;
    auto tiles = key_tiles<plain, BC>(a, span, b, h, i0, span.lo / BC * BC, khi);
    const int64_t jbeg = tiles.at;
    for (int r = threadIdx.x; r < BR; r += blockDim.x) { /* visible after the loop's first __syncthreads() */
        range[2 * r] = range[2 * r + 1] = 0;                 /* a row past the tile's end sees nothing */
        if (r < rows) ladder_attn_key_range(&a.mask, i0 + r, seq.Lq, seq.Lk, &range[2 * r], &range[2 * r + 1]);
    }
    /* S in natural units when softcap must be applied to it, else the raw q.k */
    const bool exact = a.softcap > 0.0f;
    const float unit = exact ? 1.0f : a.scale, sl2 = unit * LADDER_LOG2E; /* S = unit * x */

    load_tile_cm<BR, HD, THREADS>(Qs, a.q, b, h, seq.q0 + i0, rows, a.D);
    if (jbeg < khi) load_tile_cm<BC, HD, THREADS>(Ks, a.k, b, hk, seq.k0 + jbeg, seq.Lk - jbeg < BC ? seq.Lk - jbeg : BC, a.D);
    ladder_cp_async_commit();
    /* the operands as the tensor cores read them: this warpgroup's 64 rows of Q and K's rows (K^T) K-major, V
     * MN-major. Step kk of the k16 steps is 2kk core matrices on: to the right (256 bytes, 16 descriptor units) in Q
     * and K, down (2 * HDV * 16 bytes) in V. */
    const uint64_t dq = ladder_wgmma_desc_k(Qs + wg * 64 * HD, HD), dk = ladder_wgmma_desc_k(Ks, HD);
    const uint64_t dv = ladder_wgmma_desc_mn(Vs, HDV);
    constexpr uint64_t QK_STEP = 256 / 16, V_STEP = 2 * HDV * 16 / 16;

    float o[1][HDV / 8][4], m[1][2], l[1][2];
    ladder_zero_tile(o);
    m[0][0] = m[0][1] = -INFINITY, l[0][0] = l[0][1] = 0.0f;

    for (int64_t j0 = jbeg; j0 < khi; j0 = tiles.at) {
        const int64_t keys = seq.Lk - j0 < BC ? seq.Lk - j0 : BC;
        ladder_cp_async_wait_group<0>(); /* K_j (and Q) */
        ladder_fence_proxy_async();      /* ... ordered before the tensor cores' reads of them */
        __syncthreads();                 /* ... for every thread; and both warpgroups are done with V_{j-1} */
        load_tile_cm<BC, HDV, THREADS>(Vs, a.v, b, hk, seq.k0 + j0, keys, a.Dv);
        ladder_cp_async_commit();

        /* S = Q K^T for the warpgroup's 64 rows, both operands from shared memory; the first step ignores what sc
         * held (scale-d 0), so it needs no zeroing. Warp w receives rows 16w.., as mma.sync's C fragments. */
        float sc[1][BC / 8][4];
        ladder_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) ladder_wgmma_ss<T, BC, false>(sc[0], dq + kk * QK_STEP, dk + kk * QK_STEP, kk > 0);
        ladder_wgmma_commit();
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(sc[0]);

        if (exact) softcap_scores<1, BC>(a, sc); /* scale * x, softcapped */
        if (!tiles.full()) mask_scores<1, BC>(sc, range, w0, j0, lane);
        uint32_t pa[1][BC / 16][4];
        float alpha[1][2];
        const bool grew = softmax_tile<T, 1, BC>(sc, sl2, m, l, pa, alpha);

        ladder_cp_async_wait_group<0>(); /* V_j */
        ladder_fence_proxy_async();
        __syncthreads(); /* ... for every thread; and both warpgroups are done with K_j (their S products waited) */
        const int64_t next = tiles.next(); /* the next key tile's first key; khi past the last */
        if (next < khi) load_tile_cm<BC, HD, THREADS>(Ks, a.k, b, hk, seq.k0 + next, seq.Lk - next < BC ? seq.Lk - next : BC, a.D);
        ladder_cp_async_commit();

        rescale_o<1, HDV>(o, alpha, grew);
        /* O += P V: P from registers, V from shared memory. O and P were just written by ordinary instructions:
         * pinned, then fenced, before the tensor cores take them. */
        ladder_wgmma_hold(o[0]);
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_hold(pa[0][kb]);
        ladder_wgmma_fence();
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_rs<T, HDV, true>(o[0], pa[0][kb], dv + kb * V_STEP, true);
        ladder_wgmma_commit();
        ladder_wgmma_wait<0>(); /* O readable, and V_j no longer read, before the next tile's barrier */
        ladder_wgmma_hold(o[0]);
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q copies in flight */

    store_o_lse<T, 1, HDV>(a, o, m, l, unit, 1.0f, 1, b, h, seq.q0 + i0, rows, w0, lane);
}

template <class T, int HD, int HDV> ladder_status launch(const args &a) {
    using C = wgmma_fwd_cfg<HD, HDV>;
    LADDER_TRY(ladder_allow_smem(attn_fwd_wgmma_kernel<T, HD, HDV>, C::SMEM));
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    attn_fwd_wgmma_kernel<T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a);
    LADDER_LAUNCH_CHECK("attn_fwd_wgmma_kernel");
    return LADDER_OK;
}

/* The current device's compute capability, as major * 10 + minor (remembered per device: a call asks once). */
ladder_status device_cc(int *cc) {
    static std::atomic<int> known[16];
    int dev = 0, major = 0, minor = 0;
    LADDER_CUDA_TRY(cudaGetDevice(&dev));
    if (dev >= 0 && dev < 16 && (*cc = known[dev].load(std::memory_order_relaxed)) != 0) return LADDER_OK;
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    *cc = 10 * major + minor;
    if (dev >= 0 && dev < 16) known[dev].store(*cc, std::memory_order_relaxed);
    return LADDER_OK;
}

/* LADDER_ERR_UNAVAILABLE unless the current device runs sm_90a code (compute capability 9.0 exactly). */
ladder_status require_sm90(const char *why) {
    int cc = 0;
    LADDER_TRY(device_cc(&cc));
    if (cc != 90)
        return ladder_fail(LADDER_ERR_UNAVAILABLE, "%s: the Hopper kernels are built for sm_90a and need an sm_90 GPU "
                           "(H100, H200), but this one is sm_%d; LADDER_TC_PATH=mma (or auto) runs the mma.sync ones",
                           why, cc);
    return LADDER_OK;
}

} // namespace

ladder_status use_wgmma(bool *wgmma) {
    const char *path = getenv("LADDER_TC_PATH");
    *wgmma = false;
    if (!path || !*path || strcmp(path, "auto") == 0) {
        if (!LADDER_TC_WGMMA_DEFAULT) return LADDER_OK;
        int cc = 0;
        LADDER_TRY(device_cc(&cc));
        *wgmma = cc == 90;
        return LADDER_OK;
    }
    if (strcmp(path, "mma") == 0) return LADDER_OK;
    if (strcmp(path, "wgmma") == 0) {
        LADDER_TRY(require_sm90("LADDER_TC_PATH=wgmma"));
        *wgmma = true;
        return LADDER_OK;
    }
    return ladder_fail(LADDER_ERR_ARG, "LADDER_TC_PATH is '%s': expected auto, mma or wgmma", path);
}

ladder_status fwd_wgmma(const args &a, ladder_dtype dtype) {
    LADDER_TRY(require_sm90("the Hopper forward"));
    const bool bf16 = dtype == LADDER_BF16;
    if (pick_head_dims(a.D, a.Dv).hd == 64)
        return bf16 ? launch<__nv_bfloat16, 64, 64>(a) : launch<__half, 64, 64>(a);
    return bf16 ? launch<__nv_bfloat16, 128, 128>(a) : launch<__half, 128, 128>(a);
}

} // namespace attn_tc
