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
 * That is idea 1, attn_fwd_wgmma_kernel. Idea 2, attn_fwd_wgmma_pipe_kernel, changes the loop and nothing else: the
 * softmax of one key tile runs while the tensor cores multiply P V of the tile before it (wgmma.wait_group 1 where
 * idea 1 waits with 0), over two K and two V buffers with one barrier per key tile; the comment above it says who
 * owns each buffer when. Idea 3, attn_fwd_wgmma_ws_kernel (attention_tc_hopper_fwd.cuh, where memeff and flex take
 * it too), keeps idea 2's loop and changes who copies: a producer warpgroup, by TMA into 128-byte swizzled tiles,
 * signalling mbarriers, for consumer warpgroups that hold the registers it gave up. All three are compiled, for
 * bf16 and fp16 at (64, 64) and (128, 128), and idea 3 at (256, 256) too, with key tiles of 32 there as the mma.sync
 * kernel's (idea 3 here with flash's plain policy and memeff's hooked one); LADDER_TC_PATH picks one
 * (attention_tc_hopper.cuh).
 *
 * Preconditions: ideas 1 and 2 plain attention (flash, and memeff without hooks; no split keys), idea 3 also
 * memeff's dropout; bf16 or fp16, D and Dv up to 128 (run at (64,64) or (128,128), padded with zeros as the
 * mma.sync kernels are) or, for idea 3, both in 193..256 (run at (256, 256)), an sm_90 GPU.
 * Run it:  LADDER_TC_PATH=wgmma build/bin/ladder run flash --rung gpu_tensorcore [--dtype fp16]   (idea 3)
 *          LADDER_TC_PATH=wgmma-2 build/bin/ladder run flash --rung gpu_tensorcore               (idea 2)
 *          LADDER_TC_PATH=wgmma-1 build/bin/ladder run flash --rung gpu_tensorcore               (idea 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <type_traits>

#include "attention_tc_hopper.cuh"
#include "attention_tc_hopper_fwd.cuh"

namespace attn_tc {
namespace {

/* PIPE: idea 2's kernel (attn_fwd_wgmma_pipe_kernel), else idea 1's (attn_fwd_wgmma_kernel). */
template <int HD, int HDV, bool PIPE = false> struct wgmma_fwd_cfg {
    static constexpr int WARPGROUPS = 2, THREADS = 128 * WARPGROUPS, BR = 64 * WARPGROUPS;
    /* keys per tile: the mma.sync forward's (64 here), whose P rounding the rung's reference follows */
    static constexpr int BC = LADDER_ATTN_TC_FWD_KEYS(HD, HDV);
    static_assert(BC == 64 && (HD == 64 || HD == 128) && (HDV == 64 || HDV == 128), "the products are m64n64 and m64n{HDV}");
    /* K and V tiles in shared memory: one of each for idea 1; two of each for idea 2 (the ones its products read, and
     * the next ones landing) */
    static constexpr int KTILES = PIPE ? 2 : 1, VTILES = PIPE ? 2 : 1;
    /* blocks per SM, for __launch_bounds__: idea 1 fits two in the registers (126 a thread at most), idea 2, whose
     * warps hold two S tiles and the P in flight beside O, one */
    static constexpr int BLOCKS = PIPE ? 1 : 2;
    /* Q, K, V as core-matrix tiles (no padding: wgmma reads whole 128-byte core matrices, free of bank conflicts);
     * each row's key range [lo, hi) */
    static constexpr size_t SMEM = sizeof(uint16_t) * (size_t)(BR * HD + KTILES * BC * HD + VTILES * BC * HDV) +
                                   sizeof(int64_t) * 2 * BR;
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

/* Idea 1: wgmma from shared memory, each product waited on as soon as it is issued (LADDER_TC_PATH=wgmma-1). */
template <class T, int HD, int HDV>
__global__ void __launch_bounds__(wgmma_fwd_cfg<HD, HDV>::THREADS, wgmma_fwd_cfg<HD, HDV>::BLOCKS)
    attn_fwd_wgmma_kernel(args a) {
    using C = wgmma_fwd_cfg<HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, THREADS = C::THREADS;
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *Qs = smem, *Ks = Qs + BR * HD, *Vs = Ks + BC * HD;
    int64_t *range = (int64_t *)(Vs + BC * HDV);
    block_place p;
    if (!place_block<plain, BR>(a, range, p)) return; /* the whole block */
    const int64_t i0 = p.i0, h = p.h, b = p.b, hk = p.hk, rows = p.rows;
    const ladder_attn_seq seq = p.seq;
    /* warpgroup wg = warps 4wg .. 4wg+3 owns rows 64wg .. 64wg+63; warp w of the block, rows w0 = 16w .. 16w+15 */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, w0 = warp * 16, wg = warp / 4;

    const int64_t khi = p.span.hi;
    auto tiles = key_tiles<plain, BC>(a, p.span, b, h, i0, p.span.lo / BC * BC, khi);
    const int64_t jbeg = tiles.at;
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

/*
 * Idea 2: the softmax of one key tile runs while the tensor cores multiply P V of the tile before it, in each
 * warpgroup (FlashAttention-3's intra-warpgroup pipelining). A turn of the loop, P_j already in registers (pv) and O
 * already rescaled for it:
 *
 *     issue S_{j+1} = Q K_{j+1}^T, commit       (its own group)
 *     issue O += P_j V_j, commit
 *     wgmma.wait_group 1                        S_{j+1} done (the older group); P_j V_j runs on
 *     softcap, mask, softmax of S_{j+1}         beside P_j V_j on the tensor cores
 *     wgmma.wait_group 0                        P_j V_j done: O and pv are free
 *     O *= alpha_{j+1}, pv = P_{j+1}
 *
 * Idea 1 waits on each product as soon as it is issued, so its softmax and its P V follow one another; here the
 * warpgroup waits only for S, and the softmax fills the time of P V. Why not go further, and issue S_{j+2} before
 * the softmax of tile j+1, so that the softmax runs beside P_j V_j and S_{j+2} both: some product would then be in
 * flight at every point of the loop, and ptxas (CUDA 13.0) serializes every wgmma of such a kernel (its advisories
 * C7513 and C7514: O rescaled, P written or S read while a group issued in an earlier turn may be pending). This
 * order drains at the second wait of every turn, and ptxas keeps it asynchronous. It holds S, the P in flight and
 * the next P beside O: more registers than two blocks an SM allow (BLOCKS).
 *
 * Who owns what, and what separates them (j counts the block's key tiles from 0; "done" means waited on by
 * wgmma.wait_group in each warpgroup; "landed" means each thread's cp.async.wait_group, then fence.proxy.async, then
 * __syncthreads(), so that the tensor cores, which read through the async proxy, see every thread's copies). B_j is
 * the barrier at the top of the turn that issues P_j V_j (the turn of tile j + 1's S):
 *   Q            copied before the loop with K_0, landed at the barrier before S_0; read by every S; never rewritten.
 *   K (2 tiles)  K_j lies in tile j % 2 (kt). Copied after B_{j-2} (K_0, K_1 before the loop), landed at B_{j-1}
 *                (K_0 at the barrier before S_0). Read by S_j, issued after B_{j-1} and done at the first wait of
 *                that turn, before B_j: so K_{j+2} may be copied into it right after B_j.
 *   V (2 tiles)  V_j lies in tile j % 2 (vt). Copied after B_{j-1} (V_0 before the loop), landed at B_j (the last
 *                tile's: at the barrier after the loop). Read by P_j V_j, issued after B_j and done at that turn's
 *                second wait, before B_{j+1}: so V_{j+2} may be copied into it right after B_{j+1}.
 *   range        written before the loop, read after its first barrier, never rewritten.
 *   registers    sc (S_{j+1}) belongs to the tensor cores from its issue to the first wait; O and pv (P_j) from
 *                P_j V_j's issue to the second wait. No ordinary instruction touches them in between: the softmax
 *                writes the next P into pa, copied to pv after the second wait (ladder_wgmma_hold pins each side).
 *   cp.async     one group a turn (K_{j+2} and V_{j+1}), waited on whole at the next barrier; before the loop two
 *                (Q and K_0, for S_0; V_0 and K_1, for B_0).
 * One barrier a tile, where idea 1 has two: a tile is copied a turn before it is read, into the buffer that the
 * products of the turn before last read, so the barrier that lands the one also frees the other.
 */
template <class T, int HD, int HDV>
__global__ void __launch_bounds__(wgmma_fwd_cfg<HD, HDV, true>::THREADS, wgmma_fwd_cfg<HD, HDV, true>::BLOCKS)
    attn_fwd_wgmma_pipe_kernel(args a) {
    using C = wgmma_fwd_cfg<HD, HDV, true>;
    constexpr int BR = C::BR, BC = C::BC, THREADS = C::THREADS;
    extern __shared__ __align__(128) uint16_t smem[];
    uint16_t *Qs = smem, *Ks = Qs + BR * HD, *Vs = Ks + C::KTILES * BC * HD;
    int64_t *range = (int64_t *)(Vs + C::VTILES * BC * HDV);
    block_place p;
    if (!place_block<plain, BR>(a, range, p)) return; /* the whole block */
    const int64_t i0 = p.i0, h = p.h, b = p.b, hk = p.hk, rows = p.rows;
    const ladder_attn_seq seq = p.seq;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, w0 = warp * 16, wg = warp / 4;
    const int64_t khi = p.span.hi;
    auto tiles = key_tiles<plain, BC>(a, p.span, b, h, i0, p.span.lo / BC * BC, khi);
    const bool exact = a.softcap > 0.0f;
    const float unit = exact ? 1.0f : a.scale, sl2 = unit * LADDER_LOG2E; /* S = unit * x */

    /* the key tile that starts at key j into K tile kt, or V tile vt */
    auto load_k = [&](int kt, int64_t j) {
        load_tile_cm<BC, HD, THREADS>(Ks + kt * BC * HD, a.k, b, hk, seq.k0 + j, seq.Lk - j < BC ? seq.Lk - j : BC,
                                      a.D);
    };
    auto load_v = [&](int vt, int64_t j) {
        load_tile_cm<BC, HDV, THREADS>(Vs + vt * BC * HDV, a.v, b, hk, seq.k0 + j, seq.Lk - j < BC ? seq.Lk - j : BC,
                                       a.Dv);
    };
    /* the operands as idea 1 describes them; K tile kt and V tile vt lie kt * K_TILE and vt * V_TILE descriptor
     * units (16 bytes) on */
    const uint64_t dq = ladder_wgmma_desc_k(Qs + wg * 64 * HD, HD), dk = ladder_wgmma_desc_k(Ks, HD);
    const uint64_t dv = ladder_wgmma_desc_mn(Vs, HDV);
    constexpr uint64_t QK_STEP = 256 / 16, V_STEP = 2 * HDV * 16 / 16, K_TILE = BC * HD / 8, V_TILE = BC * HDV / 8;

    float o[1][HDV / 8][4], m[1][2], l[1][2];
    ladder_zero_tile(o);
    m[0][0] = m[0][1] = -INFINITY, l[0][0] = l[0][1] = 0.0f;
    float sc[1][BC / 8][4];     /* S of the tile whose softmax runs */
    uint32_t pv[1][BC / 16][4]; /* P of the tile whose P V runs next */

    /* the two products (attention_tc_hopper_fwd.cuh) with K tile kt, or V tile vt */
    auto step = [](int kk) { return kk * QK_STEP; };
    auto issue_s = [&](int kt) { issue_scores<T, BC, HD>(sc[0], dq, dk + kt * K_TILE, step, step); };
    auto issue_pv = [&](int vt) { attn_tc::issue_pv<T, BC, HDV>(o[0], pv[0], dv + vt * V_TILE, V_STEP); };
    /* the softmax of the S in sc, of the tile that starts at key j0 (full: no element masked); P into pa */
    auto softmax_of = [&](int64_t j0, bool full, uint32_t(&pa)[1][BC / 16][4], float(&alpha)[1][2]) {
        if (exact) softcap_scores<1, BC>(a, sc); /* scale * x, softcapped */
        if (!full) mask_scores<1, BC>(sc, range, w0, j0, lane);
        return softmax_tile<T, 1, BC>(sc, sl2, m, l, pa, alpha);
    };

    const int64_t jbeg = tiles.at;
    auto after = tiles;
    const int64_t j1 = after.next(); /* tile 1's first key; khi past the last */
    load_tile_cm<BR, HD, THREADS>(Qs, a.q, b, h, seq.q0 + i0, rows, a.D);
    if (jbeg < khi) load_k(0, jbeg);
    ladder_cp_async_commit(); /* Q, K_0 */
    if (jbeg < khi) load_v(0, jbeg);
    if (j1 < khi) load_k(1, j1);
    ladder_cp_async_commit(); /* V_0, K_1: landed at B_0 */
    if (jbeg < khi) { /* S_0 and its softmax, with nothing to overlap yet */
        ladder_cp_async_wait_group<1>(); /* Q, K_0 */
        ladder_fence_proxy_async();
        __syncthreads();
        issue_s(0);
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(sc[0]);
        float alpha[1][2];
        softmax_of(jbeg, tiles.full(), pv, alpha); /* O is still 0: no rescale */
    }

    int kt = 0, vt = 0; /* K_j's tile and V_j's tile */
    for (int64_t next = tiles.next(); next < khi; next = tiles.next()) { /* P_j V_j and tile j+1's S, at key next */
        auto ahead = tiles;
        const int64_t after_next = ahead.next(); /* tile j+2's first key; khi past the last */
        ladder_cp_async_wait_group<0>();         /* (B_j) K_{j+1}, V_j */
        ladder_fence_proxy_async();              /* ... ordered before the tensor cores' reads of them */
        __syncthreads(); /* ... for every thread; both warpgroups are done with S_j (K tile kt) and P_{j-1} V_{j-1} */
        if (after_next < khi) load_k(kt, after_next);
        load_v(vt ^ 1, next);
        ladder_cp_async_commit();

        issue_s(kt ^ 1); /* S_{j+1} */
        issue_pv(vt);    /* O += P_j V_j */
        ladder_wgmma_wait<1>(); /* S_{j+1} (the older group); P_j V_j runs on */
        ladder_wgmma_hold(sc[0]);
        uint32_t pa[1][BC / 16][4];
        float alpha[1][2];
        const bool grew = softmax_of(next, tiles.full(), pa, alpha);
        ladder_wgmma_wait<0>(); /* P_j V_j: O and pv are free */
        ladder_wgmma_hold(o[0]);
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_hold(pv[0][kb]);
        rescale_o<1, HDV>(o, alpha, grew);
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++)
#pragma unroll
            for (int c = 0; c < 4; c++) pv[0][kb][c] = pa[0][kb][c];
        kt ^= 1, vt ^= 1;
    }
    if (jbeg < khi) {                    /* the last tile's P V */
        ladder_cp_async_wait_group<0>(); /* its V */
        ladder_fence_proxy_async();
        __syncthreads();
        issue_pv(vt);
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(o[0]);
    }
    ladder_cp_async_wait_group<0>(); /* a block with no key tile still has its Q copies in flight */

    store_o_lse<T, 1, HDV>(a, o, m, l, unit, 1.0f, 1, b, h, seq.q0 + i0, rows, w0, lane);
}

template <class T, int HD, int HDV, bool PIPE> ladder_status launch(const args &a) {
    using C = wgmma_fwd_cfg<HD, HDV, PIPE>;
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    if constexpr (PIPE) {
        LADDER_TRY(ladder_allow_smem(attn_fwd_wgmma_pipe_kernel<T, HD, HDV>, C::SMEM));
        attn_fwd_wgmma_pipe_kernel<T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a);
        LADDER_LAUNCH_CHECK("attn_fwd_wgmma_pipe_kernel");
    } else {
        LADDER_TRY(ladder_allow_smem(attn_fwd_wgmma_kernel<T, HD, HDV>, C::SMEM));
        attn_fwd_wgmma_kernel<T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a);
        LADDER_LAUNCH_CHECK("attn_fwd_wgmma_kernel");
    }
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

/*
 * How many of the Hopper ideas the forward that LADDER_TC_PATH names runs with: wgmma-1 one (wgmma from shared
 * memory, each product waited on at once: attn_fwd_wgmma_kernel), wgmma-2 two (and the softmax of one key tile
 * beside the products of the next: attn_fwd_wgmma_pipe_kernel), wgmma-3 three (and a producer warpgroup copying by
 * TMA for its consumers: attn_fwd_wgmma_ws_kernel); wgmma, and auto (or unset, or empty) where it picks
 * the Hopper kernels, every idea written so far (HOPPER_IDEAS); 0 for mma and for a value it does not know.
 */
constexpr int HOPPER_IDEAS = 3;
int hopper_ideas(const char *path) {
    if (!path || !*path || strcmp(path, "auto") == 0 || strcmp(path, "wgmma") == 0) return HOPPER_IDEAS;
    if (strcmp(path, "wgmma-1") == 0) return 1;
    if (strcmp(path, "wgmma-2") == 0) return 2;
    if (strcmp(path, "wgmma-3") == 0) return 3;
    return 0;
}

template <bool PIPE> ladder_status fwd_variant(const args &a, ladder_dtype dtype) {
    const bool bf16 = dtype == LADDER_BF16;
    if (pick_head_dims(a.D, a.Dv).hd == 64)
        return bf16 ? launch<__nv_bfloat16, 64, 64, PIPE>(a) : launch<__half, 64, 64, PIPE>(a);
    return bf16 ? launch<__nv_bfloat16, 128, 128, PIPE>(a) : launch<__half, 128, 128, PIPE>(a);
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
    if (hopper_ideas(path) > 0) {
        char why[32];
        snprintf(why, sizeof why, "LADDER_TC_PATH=%s", path); /* one of the names above: it fits */
        LADDER_TRY(require_sm90(why));
        *wgmma = true;
        return LADDER_OK;
    }
    return ladder_fail(LADDER_ERR_ARG, "LADDER_TC_PATH is '%s': expected auto, mma, wgmma, wgmma-1, wgmma-2 or wgmma-3",
                       path);
}

ladder_status use_every_idea(bool *yes) {
    LADDER_TRY(use_wgmma(yes));
    *yes = *yes && hopper_ideas(getenv("LADDER_TC_PATH")) == HOPPER_IDEAS;
    return LADDER_OK;
}

ladder_status fwd_wgmma_memeff(const args &a, bool with_hooks, ladder_dtype dtype, bool *ran) {
    bool every = false;
    *ran = false;
    LADDER_TRY(use_every_idea(&every));
    if (!every) return LADDER_OK;
    return with_hooks ? fwd_ws<hooked>(a, dtype, ran) : fwd_ws<plain>(a, dtype, ran);
}

ladder_status fwd_wgmma(const args &a, ladder_dtype dtype, bool *ran) {
    bool wgmma = false;
    *ran = false;
    LADDER_TRY(use_wgmma(&wgmma));
    if (!wgmma) return LADDER_OK;
    /* the variant LADDER_TC_PATH names (use_wgmma() has refused the values it does not know): idea 3 where it
     * covers the problem, else idea 2 */
    const int ideas = hopper_ideas(getenv("LADDER_TC_PATH"));
    if (ideas >= 3) LADDER_TRY(fwd_ws<plain>(a, dtype, ran));
    if (*ran || !fwd_wgmma_covers(a)) return LADDER_OK;
    *ran = true;
    return ideas == 1 ? fwd_variant<false>(a, dtype) : fwd_variant<true>(a, dtype);
}

} // namespace attn_tc
