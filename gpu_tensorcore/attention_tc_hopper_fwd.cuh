/*
 * gpu_tensorcore/attention_tc_hopper_fwd.cuh: what the Hopper forwards share (sm_90a files only): where a block
 * stands before its first key tile (place_block), and idea 3's kernel, attn_fwd_wgmma_ws_kernel, for every policy of
 * the family it takes: flash's plain one (attention_fwd.sm90a.cu), memeff's hooked one without split keys (dropout
 * runs in the consumers' softmax, and a bias tile rides with each K tile, at head dims up to 128; the same file), and
 * flex's, every score mod
 * (attention_flex_fwd.sm90a.cu). Ideas 1 and 2 are flash's alone, in attention_fwd.sm90a.cu.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_FWD_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TC_HOPPER_FWD_CUH

#include <type_traits>

#include "attention_tc_fwd.cuh"
#include "attention_tc_hopper.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace attn_tc {
namespace {

/*
 * Where a block of BR query rows stands before its first key tile (every Hopper forward): its query tile (rows i0 ..
 * i0 + rows - 1 of sequence seq, head h of batch row b, whose keys and values are key head hk's), the keys that
 * some row of it sees and those that all see (span), and each row's key range [lo, hi) in @p range (shared memory,
 * visible after the block's first __syncthreads(); flex's narrowed to its interval mask mods,
 * flex_narrow_range()). False for a block past the last query tile: the whole block returns.
 */
struct block_place {
    int64_t i0, h, b, hk, rows;
    ladder_attn_seq seq;
    ladder_attn_block span;
};

template <class Pol, int BR>
__device__ __forceinline__ bool place_block(const args &a, int64_t *range, block_place &p) {
    int64_t s;
    if (!ladder_attn_tile(a.cu_q, a.n_seqs, a.Sq, BR, blockIdx.x, &s, &p.i0)) return false;
    p.h = blockIdx.y, p.b = blockIdx.z, p.hk = ladder_attn_kv_head(p.h, a.Hq, a.Hkv);
    p.seq = ladder_attn_sequence(a.cu_q, a.cu_k, s, a.Sq, a.Sk);
    p.rows = p.seq.Lq - p.i0 < BR ? p.seq.Lq - p.i0 : BR;
    p.span = ladder_attn_block_range(&a.mask, p.i0, p.rows, p.seq.Lq, p.seq.Lk);
    for (int r = threadIdx.x; r < BR; r += blockDim.x) {
        range[2 * r] = range[2 * r + 1] = 0; /* a row past the tile's end sees nothing */
        if (r >= p.rows) continue;
        ladder_attn_key_range(&a.mask, p.i0 + r, p.seq.Lq, p.seq.Lk, &range[2 * r], &range[2 * r + 1]);
        flex_narrow_range<Pol>(a, p.b, p.seq.q0 + p.i0 + r, p.seq.k0, &range[2 * r], &range[2 * r + 1]);
    }
    return true;
}

/*
 * The two products of a key tile as ideas 2 and 3 issue them, each one committed group, not waited on. The
 * descriptors' k16 steps are the callers' (core-matrix tiles in idea 2, 128-byte swizzled panels in idea 3):
 * q_step(kk) and k_step(kk) in descriptor units for Q and K, v_step for V.
 *   S = Q K^T into sc (scale-d 0 on the first step: sc needs no zeroing), both operands from shared memory;
 *   O += P V from the P fragments in registers and V (MN-major) from shared memory. O and P were last written by
 *   ordinary instructions: pinned, then fenced, before the tensor cores take them.
 */
template <class T, int BC, int HD, class QStep, class KStep>
__device__ __forceinline__ void issue_scores(float (&sc)[BC / 8][4], uint64_t dq, uint64_t dk, QStep q_step,
                                             KStep k_step) {
    ladder_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
        ladder_wgmma_ss<T, BC, false>(sc, dq + q_step(kk), dk + k_step(kk), kk > 0);
    ladder_wgmma_commit();
}

template <class T, int BC, int HDV>
__device__ __forceinline__ void issue_pv(float (&o)[HDV / 8][4], uint32_t (&pv)[BC / 16][4], uint64_t dv,
                                         uint64_t v_step) {
    ladder_wgmma_hold(o);
#pragma unroll
    for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_hold(pv[kb]);
    ladder_wgmma_fence();
#pragma unroll
    for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_rs<T, HDV, true>(o, pv[kb], dv + kb * v_step, true);
    ladder_wgmma_commit();
}

/*
 * The bias hook on the Hopper forward: S += bias for the lane's elements (rows w0 + g (+ 8), keys nb*8 + 2t (+ 1)),
 * from the key tile's bias tile that TMA copied beside K (BR rows by 64 keys, in the 128-byte swizzle: a key pair a
 * 32-bit read, the 8 rows of a warp's read in 8 different 16-byte pieces of their rows).
 */
template <class T, int BC>
__device__ __forceinline__ void swizzled_bias_scores(float (&s)[BC / 8][4], const uint16_t *bias, int w0, int lane) {
    static_assert(BC == 64, "a key tile is one box of 64 keys");
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int nb = 0; nb < BC / 8; nb++)
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const uint32_t w = *(const uint32_t *)(bias + ladder_sw128_index(w0 + g + 8 * k, nb * 8 + 2 * t));
            s[nb][2 * k] += ladder_to_float<T>((uint16_t)w);
            s[nb][2 * k + 1] += ladder_to_float<T>((uint16_t)(w >> 16));
        }
}

/*
 * A key tile as the producer walks it (key_tiles()), for the consumers: its first key, and whether it is full (no
 * mask) or applies flex's mask mods. With flex's policy the producer writes it beside the tile's K, in its ring
 * position, before it counts K's copy on the "full" mbarrier (an arrival, which releases the write); a consumer
 * reads it once that phase is complete, before it frees the position. So the consumers never walk flex's block
 * lists themselves: a walk loads list entries from global memory, and a consumer waiting for them waits with its
 * products. The other policies' consumers walk their interval themselves, a sum a tile.
 */
struct ring_tile {
    int32_t j0;
    bool is_full, with_mods;
    __device__ bool full() const { return is_full; }
    __device__ bool mods() const { return with_mods; }
};

/* The entry at @p e, read by lane 0 of the warp alone and passed to the others by shuffles: then the only read of
 * an entry comes before its reader's own arrival on the position's "free" mbarrier, in that thread's order. */
__device__ __forceinline__ ring_tile ring_read(const ring_tile *e, int lane) {
    static_assert(sizeof(ring_tile) == 8, "an entry is two words");
    uint2 w = make_uint2(0u, 0u);
    if (lane == 0) w = *(const uint2 *)e;
    w.x = __shfl_sync(0xffffffffu, w.x, 0), w.y = __shfl_sync(0xffffffffu, w.y, 0);
    ring_tile t;
    memcpy(&t, &w, sizeof t);
    return t;
}

/*
 * Idea 3: a producer warpgroup copies, consumer warpgroups multiply (FlashAttention-3's warp specialization).
 * Ideas 1 and 2 copy with cp.async from the same warps that multiply: every warp spends instructions and registers
 * on addresses, and every key tile ends at a __syncthreads() that both warpgroups must reach. Here a block is three
 * warpgroups (two at a head dim of 64: ws_fwd_cfg). Warpgroup 0, the producer, gives most of its registers away
 * (setmaxnreg.dec) and one of its threads issues every copy as a TMA bulk tensor copy (common/tma.cuh): Q once, then
 * each key tile's K and V into a ring of STAGES buffers, each copy counted on the buffer's "full" mbarrier. The
 * others, the consumers, take those registers (setmaxnreg.inc) and run idea 2's loop, waiting on mbarriers instead
 * of barriers: V_j's "full" and K_{j+1}'s before they issue S_{j+1} and P_j V_j. Each consumer warp arrives on a
 * buffer's "free" mbarrier once the product that read it is done (a wgmma.wait_group), and the producer waits for
 * every consumer warp's arrival before it copies the tile STAGES on into the buffer. No barrier joins two consumer
 * warpgroups: each runs as fast as its own products and the copies allow.
 *
 * The tiles arrive in the 128-byte swizzle that TMA writes and the descriptors name (common/wgmma.cuh), in panels
 * of 64 columns. A ring position n % STAGES holds the n-th key tile of the block; the phase of its barriers that
 * tile n completes has parity (n / STAGES) % 2, which is what both sides wait for.
 *
 * Preconditions beyond ideas 1 and 2 (the launcher checks them and takes idea 2's kernel where they fail): no packed
 * sequences (a TMA box would read across into the next sequence), and q, k, v whose inner stride is 1 and whose
 * other strides are multiples of 16 bytes.
 */
template <class Pol, int HD, int HDV> struct ws_fwd_cfg {
    /* consumer warpgroups a block. At a head dim of 64 a block has one, and three blocks share a multiprocessor
     * (two with flex's policy, whose score mods need more registers): a block's key tile is half the work it is at
     * 128, so the start of a block (its barriers, Q's copy, the first S before anything overlaps) and its end (O's
     * stores) weigh twice as much; the other blocks on the multiprocessor run their products through them */
    static constexpr int CONSUMERS = HD == 64 ? 1 : 2, BLOCKS_PER_SM = HD == 64 ? (Pol::FLEX ? 2 : 3) : 1;
    static constexpr int THREADS = 128 * (CONSUMERS + 1), BR = 64 * CONSUMERS;
    static constexpr int BC = LADDER_ATTN_TC_FWD_KEYS(HD, HDV); /* 64 keys, or 32 at a head dim of 256 */
    static_assert(HD == HDV && (HD == 64 || HD == 128 || HD == 256), "the products are m64n{BC} and m64n{HDV}");
    static constexpr int STAGES = 2;
    /* registers a thread: the launch gives 65536 / (THREADS * BLOCKS_PER_SM), rounded down to a multiple of 8 (168
     * for two consumers, 128 or 80 for one); the producer keeps 24 and the consumers take what it frees: 2 * 128 *
     * 240 + 128 * 24 = 64512 a block, 128 * 232 + 128 * 24 = 32768 each of two blocks, 128 * 136 + 128 * 24 = 20480
     * each of three. ptxas allocates each side within its own limit (with 232, flex's rel_bias spilled at a head
     * dim of 128; with 136, three of its score mods at 64) */
    static constexpr int PRODUCER_REGS = 24,
                         CONSUMER_REGS = CONSUMERS == 2 ? 240 : BLOCKS_PER_SM == 2 ? 232 : 136;
    /* setmaxnreg.inc takes only what the block's other warps gave back: more, and a consumer waits forever */
    static_assert(128 * (CONSUMERS * CONSUMER_REGS + PRODUCER_REGS) <=
                      THREADS * (65536 / (THREADS * BLOCKS_PER_SM) / 8 * 8),
                  "the warpgroups take no more registers than the launch gives the block");
    /* with the hooks, each ring position's K tile has a bias tile beside it: the block's rows by the tile's 64 keys,
     * one TMA box (so the hooks' bias runs at head dims up to 128, where a key tile is 64 keys) */
    static constexpr uint32_t Q_BYTES = 2 * BR * HD, K_BYTES = 2 * BC * HD, V_BYTES = 2 * BC * HDV,
                              BIAS_BYTES = Pol::EXTRAS && BC == 64 ? 2 * BR * BC : 0;
    /* the tiles (1024-byte aligned: up to 1024 bytes are skipped to get there), then the mbarriers (Q's "full", and
     * per ring position K's and V's "full" and "free"), then each row's key range, then each ring position's key
     * tile (ring_tile) */
    static constexpr size_t SMEM = 1024 + Q_BYTES + STAGES * (K_BYTES + V_BYTES + BIAS_BYTES) +
                                   sizeof(uint64_t) * (1 + 4 * STAGES) + sizeof(int64_t) * 2 * BR +
                                   sizeof(ring_tile) * STAGES;
};

template <class Pol, class T, int HD, int HDV>
__global__ void __launch_bounds__(ws_fwd_cfg<Pol, HD, HDV>::THREADS, ws_fwd_cfg<Pol, HD, HDV>::BLOCKS_PER_SM)
    attn_fwd_wgmma_ws_kernel(args a, const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                             const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tb) {
    using C = ws_fwd_cfg<Pol, HD, HDV>;
    constexpr int BR = C::BR, BC = C::BC, ST = C::STAGES;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    uint16_t *Qs = (uint16_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint16_t *Ks = Qs + BR * HD, *Vs = Ks + ST * BC * HD; /* ring position s: Ks + s * BC * HD, Vs + s * BC * HDV */
    uint16_t *Bs = Vs + ST * BC * HDV; /* the hooks' bias: ring position s at Bs + s * BR * BC */
    uint64_t *q_full = (uint64_t *)(Bs + ST * (C::BIAS_BYTES / 2)), *k_full = q_full + 1, *k_free = k_full + ST,
             *v_full = k_free + ST, *v_free = v_full + ST;
    int64_t *range = (int64_t *)(v_free + ST);
    ring_tile *ring = (ring_tile *)(range + 2 * BR);
    block_place p;
    if (!place_block<Pol, BR>(a, range, p)) return; /* the whole block */
    if (threadIdx.x == 0) {
        ladder_mbarrier_init(q_full, 1); /* the producer's one arrival, with the copy's bytes */
        for (int s = 0; s < ST; s++) {
            ladder_mbarrier_init(&k_full[s], 1), ladder_mbarrier_init(&v_full[s], 1);
            ladder_mbarrier_init(&k_free[s], 4 * C::CONSUMERS), ladder_mbarrier_init(&v_free[s], 4 * C::CONSUMERS);
        }
        ladder_mbarrier_init_fence();
    }
    __syncthreads(); /* the barriers, and each row's key range: the last barrier every thread meets */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
    const int64_t khi = p.span.hi;
    auto tiles = key_tiles<Pol, BC>(a, p.span, p.b, p.h, p.i0, p.span.lo / BC * BC, khi); /* flex: the block lists' */
    const int64_t jbeg = tiles.at;
    const int n_tiles = jbeg < khi ? tiles.count() : 0;
    const bool biased = Pol::EXTRAS && a.hooks.bias; /* fwd_ws() takes a bias only where BIAS_BYTES holds its tile */

    if (wg == 0) { /* the producer: one thread issues every copy, in the order the consumers read them */
        ladder_setmaxnreg_dec<C::PRODUCER_REGS>();
        if (threadIdx.x != 0 || jbeg >= khi) return;
        ladder_mbarrier_expect(q_full, C::Q_BYTES);
        for (int c = 0; c < HD; c += 64) ladder_tma_load(Qs + c * BR, &tq, q_full, c, (int)p.i0, (int)p.h, (int)p.b);
        for (int64_t j0 = jbeg, n = 0; j0 < khi; j0 = tiles.next(), n++) {
            const int s = (int)(n % ST);
            const uint32_t parity = (uint32_t)(n / ST - 1) & 1; /* of the phase tile n - ST's readers complete */
            if (n >= ST) ladder_mbarrier_wait(&k_free[s], parity);
            if constexpr (Pol::FLEX) ring[s] = ring_tile{(int32_t)j0, tiles.full(), tiles.mods()};
            ladder_mbarrier_expect(&k_full[s], C::K_BYTES + (biased ? C::BIAS_BYTES : 0));
            for (int c = 0; c < HD; c += 64)
                ladder_tma_load(Ks + s * BC * HD + c * BC, &tk, &k_full[s], c, (int)j0, (int)p.hk, (int)p.b);
            /* the bias (its map broadcast over batch rows and heads where it is), read from DRAM once, is fetched
             * into L2 two tiles ahead */
            if (biased) {
                const int hb = ladder_tma_coord(a.bias.s[1], p.h), bb = ladder_tma_coord(a.bias.s[0], p.b);
                ladder_tma_load(Bs + s * BR * BC, &tb, &k_full[s], (int)j0, (int)p.i0, hb, bb);
                if (j0 + 2 * BC < khi) ladder_tma_prefetch(&tb, (int)(j0 + 2 * BC), (int)p.i0, hb, bb);
            }
            if (n >= ST) ladder_mbarrier_wait(&v_free[s], parity);
            ladder_mbarrier_expect(&v_full[s], C::V_BYTES);
            for (int c = 0; c < HDV; c += 64)
                ladder_tma_load(Vs + s * BC * HDV + c * BC, &tv, &v_full[s], c, (int)j0, (int)p.hk, (int)p.b);
        }
        return;
    }

    /* a consumer: warpgroup wg owns rows 64 (wg - 1) .. of the block; its warp w0 / 16 rows w0 .. w0 + 15 */
    ladder_setmaxnreg_inc<C::CONSUMER_REGS>();
    const int w0 = (warp - 4) * 16;
    /* S in natural units when something must be applied to it (softcap, a bias, a score mod), else the raw q.k */
    const bool exact = a.softcap > 0.0f || biased || has_score_mod<Pol>();
    const bool dropout = Pol::EXTRAS && a.hooks.dropout_p > 0.0f;
    const float unit = exact ? 1.0f : a.scale, sl2 = unit * LADDER_LOG2E; /* S = unit * x */
    const int64_t q0 = p.seq.q0 + p.i0, k0 = p.seq.k0; /* the block's first row and its sequence's first key */
    /* the operands in 16-byte descriptor units: Q's rows of this warpgroup and K (K-major), V (MN-major); the k16
     * step kk of Q and K is 32 bytes to the right in panel kk / 4, V's step kb 16 rows (2048 bytes) down; ring
     * position s is K_TILE or V_TILE units on */
    const uint64_t dq = ladder_wgmma_desc_sw128_k(Qs + (wg - 1) * 64 * 64), dk = ladder_wgmma_desc_sw128_k(Ks);
    const uint64_t dv = ladder_wgmma_desc_sw128_mn(Vs, BC);
    constexpr uint64_t K_TILE = 2 * BC * HD / 16, V_TILE = 2 * BC * HDV / 16, V_STEP = 2048 / 16;
    auto q_step = [](int kk) { return (uint64_t)((kk / 4) * BR * 128 + (kk % 4) * 32) / 16; };
    auto k_step = [](int kk) { return (uint64_t)((kk / 4) * BC * 128 + (kk % 4) * 32) / 16; };

    float o[1][HDV / 8][4], m[1][2], l[1][2];
    ladder_zero_tile(o);
    m[0][0] = m[0][1] = -INFINITY, l[0][0] = l[0][1] = 0.0f;
    float sc[1][BC / 8][4];     /* S of the tile whose softmax runs */
    uint32_t pv[1][BC / 16][4]; /* P of the tile whose P V runs next */
    /* the two products with ring position s's K and V */
    auto issue_s = [&](int s) { issue_scores<T, BC, HD>(sc[0], dq, dk + s * K_TILE, q_step, k_step); };
    auto issue_pv = [&](int s) { attn_tc::issue_pv<T, BC, HDV>(o[0], pv[0], dv + s * V_TILE, V_STEP); };
    /* the next key tile, at ring position @p s: flex's from the ring (read before the position is freed), the others'
     * from the consumer's own walk */
    auto tile_at = [&](int s) {
        if constexpr (Pol::FLEX) {
            return ring_read(&ring[s], lane);
        } else {
            const ring_tile t = {(int32_t)tiles.at, tiles.full(), false};
            tiles.next();
            return t;
        }
    };
    /* the softmax of the S in sc, of the key tile @p at, with the policy's hooks: the score mod or softcap, the masks
     * (the mask mods in a partial block-mask tile), dropout on the new P in pa */
    auto softmax_of = [&](const ring_tile &at, const uint16_t *bias, uint32_t(&pa)[1][BC / 16][4],
                          float(&alpha)[1][2]) {
        const int64_t j0 = at.j0;
        const int keys = (int)(p.seq.Lk - j0 < BC ? p.seq.Lk - j0 : BC);
        if constexpr (has_score_mod<Pol>())
            flex_scores<Pol::MOD, 1, BC>(a, sc, p.b, p.h, q0, w0, (int)p.rows, k0 + j0, keys, lane);
        else if (exact) softcap_scores<1, BC>(a, sc); /* scale * x, softcapped */
        if constexpr (Pol::EXTRAS && BC == 64)
            if (biased) swizzled_bias_scores<T, BC>(sc[0], bias, w0, lane);
        if (!at.full()) mask_scores<1, BC>(sc, range, w0, j0, lane);
        if constexpr (Pol::FLEX)
            if (at.mods()) flex_mask_scores<1, BC>(a, sc, p.b, p.h, q0, w0, (int)p.rows, k0 + j0, keys, lane);
        const bool grew = softmax_tile<T, 1, BC>(sc, sl2, m, l, pa, alpha);
        if constexpr (Pol::EXTRAS)
            if (dropout) drop_p<1, BC>(a, pa, p.b, p.h, q0 + w0, k0 + j0, lane);
        return grew;
    };
    auto release = [&](uint64_t *bar) { /* this warp is done with the buffer @p bar guards */
        if (lane == 0) ladder_mbarrier_arrive(bar);
    };

    if (n_tiles > 0) { /* S_0 and its softmax, with nothing to overlap yet */
        ladder_mbarrier_wait(q_full, 0);
        ladder_mbarrier_wait(&k_full[0], 0);
        issue_s(0);
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(sc[0]);
        const ring_tile at = tile_at(0);
        if (!biased) release(&k_free[0]);
        float alpha[1][2];
        softmax_of(at, Bs, pv, alpha); /* O is still 0: no rescale */
        if (biased) release(&k_free[0]); /* the bias tile beside K, read by the softmax */
    }
    /* A turn: P_n V_n and S_{n+1}, with tile n at ring position S (a constant: ring positions that ptxas cannot see
     * as constants here make it serialize the products, C7513), the parity of its phase @p ph, and of tile n + 1's
     * @p ph1. */
    auto turn = [&](auto S, uint32_t ph, uint32_t ph1) {
        constexpr int s = decltype(S)::value, s1 = (s + 1) % ST;
        ladder_mbarrier_wait(&v_full[s], ph);   /* V_n (copied before K_{n+1}) */
        ladder_mbarrier_wait(&k_full[s1], ph1); /* K_{n+1} */
        issue_s(s1);                            /* S_{n+1} */
        issue_pv(s);                            /* O += P_n V_n */
        ladder_wgmma_wait<1>(); /* S_{n+1} (the older group); P_n V_n runs on */
        ladder_wgmma_hold(sc[0]);
        const ring_tile next = tile_at(s1); /* tile n + 1 */
        if (!biased) release(&k_free[s1]);
        uint32_t pa[1][BC / 16][4];
        float alpha[1][2];
        const bool grew = softmax_of(next, Bs + s1 * BR * BC, pa, alpha);
        if (biased) release(&k_free[s1]);
        ladder_wgmma_wait<0>(); /* P_n V_n: O and pv are free, and so is V_n's buffer */
        ladder_wgmma_hold(o[0]);
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++) ladder_wgmma_hold(pv[0][kb]);
        release(&v_free[s]);
        rescale_o<1, HDV>(o, alpha, grew);
#pragma unroll
        for (int kb = 0; kb < BC / 16; kb++)
#pragma unroll
            for (int c = 0; c < 4; c++) pv[0][kb][c] = pa[0][kb][c];
    };
    auto last_pv = [&](auto S, uint32_t ph) { /* the last tile's P V, at ring position S */
        ladder_mbarrier_wait(&v_full[decltype(S)::value], ph);
        issue_pv(decltype(S)::value);
        ladder_wgmma_wait<0>();
        ladder_wgmma_hold(o[0]);
    };
    using at0 = std::integral_constant<int, 0>;
    using at1 = std::integral_constant<int, 1>;
    static_assert(ST == 2, "the loop takes the ring's two positions in turn");
    /* tile n lies at ring position n % 2, in the phase of parity (n / 2) % 2: ph, which flips every two tiles */
    uint32_t ph = 0;
    bool odd = false; /* the last tile's index is odd (ring position 1) */
    for (int n = 1; n < n_tiles; n += 2) { /* n: the tile whose S the turn issues */
        turn(at0{}, ph, ph); /* n - 1 even: tile n in the same phase */
        if (n + 1 >= n_tiles) {
            odd = true;
            break;
        }
        turn(at1{}, ph, ph ^ 1); /* n odd: tile n + 1 starts the next phase of position 0 */
        ph ^= 1;
    }
    if (n_tiles > 0) {
        if (odd) last_pv(at1{}, ph);
        else last_pv(at0{}, ph);
    }
    store_o_lse<T, 1, HDV>(a, o, m, l, unit, dropout ? a.hooks.keep_scale : 1.0f, 1, p.b, p.h, q0, p.rows, w0, lane);
}

/* Idea 3's kernel with policy Pol, where TMA can describe q, k and v (*ran then true); else nothing is launched
 * (*ran false). */
template <class Pol, class T, int HD, int HDV> ladder_status launch_ws(const args &a, bool *ran) {
    using C = ws_fwd_cfg<Pol, HD, HDV>;
    *ran = false;
    if (a.cu_q) return LADDER_OK; /* packed sequences: a box would read across a sequence's end */
    const CUtensorMapDataType type =
        std::is_same<T, __nv_bfloat16>::value ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    CUtensorMap tq, tk, tv, tb = {};
    if (!ladder_tma_map_16bit(&tq, type, a.q.p, a.B, a.Hq, a.Sq, a.D, a.q.s, C::BR) ||
        !ladder_tma_map_16bit(&tk, type, a.k.p, a.B, a.Hkv, a.Sk, a.D, a.k.s, C::BC) ||
        !ladder_tma_map_16bit(&tv, type, a.v.p, a.B, a.Hkv, a.Sk, a.Dv, a.v.s, C::BC))
        return LADDER_OK;
    /* the hooks' bias: where its tile fits (BIAS_BYTES) and TMA can describe it, broadcast over batch rows and heads
     * at most (a map of one head, or one batch row, then) */
    if (Pol::EXTRAS && a.hooks.bias &&
        (C::BIAS_BYTES == 0 ||
         !ladder_tma_map_16bit_broadcast(&tb, type, a.bias.p, a.B, a.Hq, a.Sq, a.Sk, a.bias.s, C::BR)))
        return LADDER_OK;
    const dim3 grid((unsigned)ladder_attn_tiles_bound(a.Sq, C::BR, a.n_seqs), (unsigned)a.Hq, (unsigned)a.B);
    LADDER_TRY(ladder_allow_smem(attn_fwd_wgmma_ws_kernel<Pol, T, HD, HDV>, C::SMEM));
    attn_fwd_wgmma_ws_kernel<Pol, T, HD, HDV><<<grid, C::THREADS, C::SMEM>>>(a, tq, tk, tv, tb);
    LADDER_LAUNCH_CHECK("attn_fwd_wgmma_ws_kernel");
    *ran = true;
    return LADDER_OK;
}

/* Idea 3's forward with policy Pol (flash's or memeff's) at the head dims pick_head_dims() gives: *ran false where
 * it does not apply (split keys; head dims it does not cover, fwd_ws_covers(); tensors TMA cannot describe; a bias
 * above a head dim of 128, or one TMA cannot describe), and nothing is launched then. */
template <class Pol> ladder_status fwd_ws(const args &a, ladder_dtype dtype, bool *ran) {
    *ran = false;
    if constexpr (Pol::EXTRAS)
        if (a.splits > 1) return LADDER_OK; /* the partials: the mma.sync kernel's */
    if (!fwd_ws_covers(a)) return LADDER_OK;
    const bool bf16 = dtype == LADDER_BF16;
    switch (pick_head_dims(a.D, a.Dv).hd) {
    case 64: return bf16 ? launch_ws<Pol, __nv_bfloat16, 64, 64>(a, ran) : launch_ws<Pol, __half, 64, 64>(a, ran);
    case 128: return bf16 ? launch_ws<Pol, __nv_bfloat16, 128, 128>(a, ran) : launch_ws<Pol, __half, 128, 128>(a, ran);
    default: return bf16 ? launch_ws<Pol, __nv_bfloat16, 256, 256>(a, ran) : launch_ws<Pol, __half, 256, 256>(a, ran);
    }
}

} // namespace
} // namespace attn_tc

#endif
