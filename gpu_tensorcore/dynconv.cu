/*
 * gpu_tensorcore/dynconv.cu: dynamic causal convolution on the tensor cores.
 *
 * What changed since gpu_tiled/:
 *
 *  1. Half precision. x, kernels and dout come in as bf16 or fp16 (one dtype for all three), out, dx and
 *     dkernels go out in it, and every sum accumulates in fp32. Moving half the bytes of fp32 is the only
 *     speed-up a memory-bound op can get, and only while the instructions keep up: each byte now carries
 *     twice the elements, so the work per element has to shrink too. Elements travel as raw 16-bit
 *     patterns; only the mma and the conversions know the format (common/mma.cuh): two instantiations, one
 *     per dtype, W at run time.
 *  2. The matrix units (fwd_mma, dx_mma), one mma.sync.m16n8k8 per 2 tokens x 8 channels. The weights
 *     are per token and per channel, so no two channels share a matrix; what the mma can do is run eight
 *     channels side by side and keep the diagonal. Column n of B is channel c0+n's x, row g of A holds the
 *     weights of channel c0+g, and entry (g, g) of C is that channel's output; the other 7 entries of the
 *     row mix one channel's weights with another's x and are thrown away. Rows g+8 do the same for a
 *     second token, S tokens later, whose window sits S columns to the right:
 *
 *         k column p (a token of x:  x[r-W+1+p]):    0 .. W-1            S .. S+W-1
 *         A row g   (token r,   channel c0+g):       kernels[r][w=p]     0
 *         A row g+8 (token r+S, channel c0+g):       0                   kernels[r+S][w=p-S]
 *
 *     With S = W rounded up to even (to a power of two, at most 8), the 2 x 8 outputs of one mma need
 *     K = S + W <= 16 columns: for W <= 4 a single m16n8k8, where every lane's one A register is one aligned
 *     32-bit word of the kernels tile (taps 2t, 2t+1 of a token), loaded as it lies. dx is the same product
 *     with the window looking ahead: row g of A holds kernels[r+p][W-1-p], two taps of two tokens per
 *     register, joined from two 16-bit loads. dkernels = dout * x has no sum and stays off the matrix units
 *     (dkernels_mul): fp32 multiplies, or two products per packed half-precision multiply where a slot is whole
 *     16-byte chunks (mul2: the same bits), written into the kernels tile once dx is done with it and sent out in
 *     16-byte rows.
 *     Where one k step does (W <= 4) the kernels are instantiated with NKC = 1: the k loop unrolls away, and
 *     what depends only on the lane and the k step leaves the unit loop.
 *  3. Tiles staged with cp.async (stage; the staging is in dynconv_stage.cuh): 16 bytes per thread per
 *     instruction straight from global to shared memory, every load of the block in flight at once, no
 *     registers on the way; element loads where an input is strided or misaligned, in the same kernel. Every
 *     tile keeps the input's own layout, [token][channel] for x and dout, [token][channel][tap] for kernels
 *     (taps padded to an even count), so staging is a copy. B comes from the [token][channel] tile by
 *     ldmatrix.trans: a matrix's 8 rows are 8 consecutive tokens of the 8 channels, and the transposing load
 *     hands each lane its two tokens of one channel; one ldmatrix.x4 per k step loads the B of all UNIT = 4
 *     products of a unit. Row pitches carry 16 bytes of padding so those loads hit distinct banks, and in the
 *     backward a channel's slot of We % 32 == 0 taps carries 16 more, so that the A loads of the 8 channels
 *     of an mma do too (at W = 64 they were 8-way conflicted); the forward, where that padding would cost a
 *     block per SM, stores the rows of its W = 64 tile permuted by channel instead (layout).
 *  4. Sequences end inside a tile only with cu_seqlens. Then the taps that would reach across a sequence
 *     start are zeroed in the staged kernels tile (mask_kernels), one rule for the forward and for dx.
 *     Past W = 32 the backward stages its kernels sheared instead (stage_sheared): each dx token's W weights
 *     side by side, as the forward has its own, so that dx is the forward's product (fwd_mma) and the tile
 *     needs TT rows of weights, not the TT + W that dx_mma's k steps reach. That copy is a transpose, done
 *     through registers, two taps of two neighbouring rows to a 32-bit store; it zeroes the masked taps itself.
 *     Where even the narrowest sheared tile misses the shared-memory target (from W = 45), a block covers
 *     TT_SHEAR = 32 tokens: at W = 64 four blocks per SM instead of two. The tile size is a template argument
 *     of the backward kernel, so the fixed-size loops stay unrolled. Its 4 units of products leave half the
 *     warps idle, so there (W % 8 == 0) dkernels_mul runs on those warps meanwhile and writes dkernels straight
 *     to global memory (dk_direct, dk_overlap). At W = 64 a thread of the sheared staging loads 16 taps of a
 *     row, a whole 32-byte sector, where with 8 taps two threads fetched each sector 8 rows apart.
 *     But the tiles read each kernels row (TB + W - 1) / TB times, and the transpose runs in series with the
 *     products. So past W = 32, where W and D are multiples of 8 and every tensor takes the 16-byte path, the
 *     backward walks down the sequence instead (bwd_walk, the instantiation NKC = WALK): a block keeps one channel
 *     octet and a run of tokens, and stages WALK_KC kernels rows a step, plain, with cp.async, each row read once,
 *     the next step's loads in flight while this one computes. dx is dx_mma's product with the k steps fixed to
 *     8-row blocks of the step (dx_walk): each block of rows feeds 8 consecutive dx tokens, whose A registers come
 *     from 32-bit words of the plain tile, and taps outside a token's window read the zero padding after a slot,
 *     so nothing is masked; the sums carry from step to step in an fp32 ring. dkernels goes straight to global
 *     memory (dk_walk). The other widths and layouts keep the tiles (the chunks of 8 taps or channels would
 *     straddle a slot, or the inputs need element loads), and so does W = 56, where the walk measured slower.
 *  5. Coalesced output: the useful entries of C go to a [channel][token] tile in shared memory (out_at), where
 *     the lane that holds a channel's outputs writes 8 tokens in one 16-byte store (store_diagonal), and the
 *     tile leaves as 16-byte rows of the [token][channel] output, transposed back by ldmatrix.trans
 *     (store_tokens).
 *  6. Few instructions per element. In the bf16 forward at W = 4 an output moves 12 bytes. At the copy rate
 *     an H100 SM takes in about 14 bytes per cycle (at 1.6 GHz) and issues at most 4 warp instructions per
 *     cycle, so the kernel has 3 to 4 warp instructions per output to spend, all bookkeeping included (an earlier
 *     version spent more than twice that, issue-bound far from the copy rate). Hence: a block
 *     covers TT = 64 tokens; the grid is (token tiles, channel tiles, batch), so no division finds the tile;
 *     a warp keeps one 8-channel octet and works out its lane's offsets once (plan_warp); UNIT = 4 products
 *     share each k step's per-lane work; the fragment loops mask instead of branching; the staging and store
 *     loops keep one column per thread, so they divide nothing per iteration, and find that column by shifts
 *     where the chunk count is a power of two (divmod). At W <= 4, where an output moves the fewest bytes and
 *     so may cost the fewest instructions, also the one-k-step kernels (2.), and two channels per thread in
 *     dkernels_mul: 32-bit loads, and one 8-byte store for every 4 taps of the two. Where a slot is whole
 *     16-byte chunks (We % 8 == 0), dkernels_mul walks 8 rows of one chunk, one new x load a row.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (x, kernels, dout and the outputs all bf16 or all
 * f16; device pointers; any non-negative input strides; contiguous outputs). Inputs must be finite: like
 * any matrix product, the mma multiplies the zeros of A by x, and 0 * inf is NaN.
 * The 16-byte path, per tensor (else element accesses): a 16-byte aligned pointer and
 *   x, dout:  unit channel stride, token and batch strides multiples of 8;
 *   kernels:  W even, unit tap stride, channel stride W, token and batch strides multiples of 8;
 *   out, dx:  D % 8 == 0;   dkernels: D*W % 8 == 0.
 * Deterministic: every output element is written by one thread, no atomics.
 * Run it:  build/bin/ladder run dynconv --rung gpu_tensorcore --dtype bf16
 */
#include <limits.h>
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "dynconv_rungs.h"
#include "dynconv_stage.cuh"
#include "mma.cuh"

namespace {

/*
 * The mma work of a block, per 8-channel octet: TB/2 row pairs (r, r+S), pair m having r = 2S*(m/S) + m%S
 * (the first S rows of each run of 2S). A warp keeps one octet (NWARPS is a multiple of the DT/8 octets) and
 * takes UNIT consecutive pairs at a time, carrying all of them through the k loop together, so that what
 * depends only on the lane and the k step (which word to load, which halves to keep) is worked out once per
 * UNIT mma. Pair m0+j of a unit (m0 a multiple of UNIT) sits pair_row(j) rows below pair m0.
 */
__device__ int pair_row(int m, const tc_args &a) { return ((m >> a.lgS) << (a.lgS + 1)) + (m & (a.S - 1)); }

/*
 * Where a warp works: its octet's first channel, the row offsets (times the pitches) of a unit's pairs, and the
 * lane's row of B: one ldmatrix.x4 loads the B of all UNIT products, lanes 8j .. 8j+7 giving the 8 rows of
 * product j's (tile row pair_row(j) + lane % 8, channels c0 ..).
 */
struct warp_plan {
    int c0;
    int gx4;                // bit 2 of the lane's row swizzle g & xr (layout): XORed into a unit's first row
    int dk[UNIT];           // pair_row(j ^ its bits 0-1) * KR
    int b_row;              // (pair_row(lane / 8) + lane % 8) * CR + c0
};

__device__ warp_plan plan_warp(const tc_args &a, int xr) {
    static_assert(UNIT == 4, "one ldmatrix.x4 carries the B of a unit");
    warp_plan w;
    const int lane = threadIdx.x % 32, gx = lane / 4 & xr;
    w.c0 = NCH * ((threadIdx.x / 32) & ((1 << a.lg_oct) - 1));
    w.gx4 = gx & 4;
#pragma unroll
    for (int j = 0; j < UNIT; j++) w.dk[j] = pair_row(j ^ (gx & 3), a) * a.KR;
    w.b_row = (pair_row(lane / 8, a) + lane % 8) * a.CR + w.c0;
    return w;
}

/* Units per block (UNIT pairs of one octet each); unit u is octet u % octets, and its first pair's tile row.
 * (TB = TT_SHEAR with one octet: 4 units, so half the warps wait; the SM's other blocks fill the issue slots.)
 * With one k step S <= 4 divides UNIT, so a unit's pairs fill the 2*UNIT rows from 2*UNIT*(u / octets) on, and
 * the one-k-step kernels take that row without pair_row's shifts (with store_diagonal's branch known too: about a
 * sixth fewer instructions a unit in the forward at W <= 4, by the SASS). The kernels of several k steps keep the
 * general form: every change tried there moved the forward's register allocation and lengthened its k loop. */
template <int TB> __device__ int n_units(const tc_args &a) { return (TB / 2 / UNIT) << a.lg_oct; }
template <int NKC> __device__ int unit_row(int u, const tc_args &a) {
    return NKC == 1 ? 2 * UNIT * (u >> a.lg_oct) : pair_row(UNIT * (u >> a.lg_oct), a);
}

/*
 * The output tile sO is [channel][token], pitch OP = TB + 8 (OP / 8 odd), its 16-byte chunks of 8 tokens swizzled
 * (out_at): after a unit, the lane that holds a channel's outputs holds 8 of its tokens, which then leave in one
 * or two vector stores, where a [token][channel] tile took 8 16-bit ones. The swizzle (chunk ^ 2 * (c / 8 % 4))
 * and the odd OP / 8 put the 8 channels of store_diagonal, and the 8 rows of each of store_tokens's ldmatrix
 * loads, on 8 different groups of 4 banks (at TB = TT_SHEAR, with 4 chunks a row, the loads 2-way conflicted).
 */
template <int TB> __device__ int out_at(int c, int k, const tc_args &a) {
    return c * a.OP + 8 * ((k >> 3) ^ ((c >> 2) & 6 & (TB / 8 - 1))) + (k & 7);
}

/*
 * The useful entries of each C, (g, g) and (g+8, g) (common/mma.cuh: lane 4g + g/2, c[g%2] and c[2+g%2]), are
 * the outputs of channel c0+g at tile rows r0 + pair_row(j) and S rows further: into sO, rounded to T, two
 * neighbouring tokens a 32-bit word. The unit's rows are r0 .. r0+7 (S = 2: pairs at 0, 1, 4, 5, S rows further
 * 2, 3, 6, 7; S = 4: 0 .. 3, then 4 .. 7), one 16-byte store; at S = 8, r0 .. r0+3 and r0+8 .. r0+11, two 8-byte
 * ones. Only 8 lanes hold outputs: the others return.
 */
template <class T, int TB, int NKC>
__device__ void store_diagonal(uint16_t *sO, int r0, const tc_args &a, const warp_plan &wp,
                               const float (&acc)[UNIT][4]) {
    const int lane = threadIdx.x % 32, g = lane / 4;
    if (lane % 4 != g / 2) return;
    const bool odd = g % 2; // a select, not acc[j][g % 2]: a run-time index would put acc in local memory
    float r[UNIT], rS[UNIT]; // rows r0 + pair_row(j), and S rows further
#pragma unroll
    for (int j = 0; j < UNIT; j++) r[j] = odd ? acc[j][1] : acc[j][0], rS[j] = odd ? acc[j][3] : acc[j][2];
    const uint32_t a01 = ladder_pack2_float<T>(r[0], r[1]), a23 = ladder_pack2_float<T>(r[2], r[3]);
    const uint32_t b01 = ladder_pack2_float<T>(rS[0], rS[1]), b23 = ladder_pack2_float<T>(rS[2], rS[3]);
    const int c = wp.c0 + g;
    if (NKC == 1 || a.S <= 4) { // one store (one k step: S <= 4 known); the words' order by selects, not branches
        const bool s2 = a.S == 2;
        *reinterpret_cast<uint4 *>(sO + out_at<TB>(c, r0, a)) = make_uint4(a01, s2 ? b01 : a23, s2 ? a23 : b01, b23);
    } else {
        *reinterpret_cast<uint2 *>(sO + out_at<TB>(c, r0, a)) = make_uint2(a01, a23);
        *reinterpret_cast<uint2 *>(sO + out_at<TB>(c, r0 + 8, a)) = make_uint2(b01, b23);
    }
}

/*
 * Forward. In k step b, lane (g, t) of the warp (common/mma.cuh) holds columns p = 8b+2t and p+1 of A: for
 * row g, taps p and p+1 of kernels row r, channel c0+g, when p < We; for row g+8, taps p-S and p-S+1 of row
 * r+S when S <= p < S+We. Either is one aligned 32-bit word of the tile (taps past W are its zero padding).
 * For W <= 8 the two ranges do not overlap, so each lane loads one word per k step and product, and masks
 * it into the register(s) it belongs to.
 */
template <class T, int TB, int NKC>
__device__ void fwd_mma(const tc_args &a, const uint16_t *sX, const uint16_t *sK, uint16_t *sO, int xr) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, S = a.S;
    const int NK = NKC ? NKC : a.NK;
    const warp_plan wp = plan_warp(a, xr);
    const uint16_t *kl = sK + (wp.c0 + g) * a.KS; // kernels row 0, channel c0+g
    const uint16_t *xl = sX + wp.b_row;           // B: x-tile row r+p is token r-W+1+p
    for (int u = threadIdx.x / 32; u < n_units<TB>(a); u += NWARPS) {
        const int r0 = unit_row<NKC>(u, a);
        // the lane's tile row of pair j is (r0 + j) ^ (g & xr) = (r0 ^ gx4) + dk[j] / KR: r0 is a multiple of 4
        // and j < 4 (S = 8 wherever xr != 0), and the row S further is that plus S
        const uint16_t *kb = kl + (r0 ^ wp.gx4) * a.KR, *xb = xl + r0 * a.CR;
        float acc[UNIT][4] = {};
        for (int b = 0; b < NK; b++, xb += 8 * a.CR) {
            const int p = 8 * b + 2 * t;
            const bool lo = p < a.We, hi = (unsigned)(p - S) < (unsigned)a.We;
            // one word per lane: row g's when lo, else row g+8's when hi, else any word of the tile (masked)
            const int hi_off = S * a.KR + p - S, off = lo ? p : hi ? hi_off : 0;
            const uint32_t m0 = lo ? ~0u : 0u, m1 = hi ? ~0u : 0u;
            uint32_t B[UNIT];
            ladder_ldsm_x4_trans(B, xb);
#pragma unroll
            for (int j = 0; j < UNIT; j++) {
                const uint16_t *k = kb + wp.dk[j];
                const uint32_t v = ladder_lds32(k + off);
                // when W > 8 the windows overlap: a lane can need both words (hi_off then stays in the tile)
                const uint32_t A[2] = {v & m0, (NKC != 1 && a.W > 8 ? ladder_lds32(k + hi_off) : v) & m1};
                ladder_mma_m16n8k8<T>(acc[j], A, B[j]);
            }
        }
        store_diagonal<T, TB, NKC>(sO, r0, a, wp, acc);
    }
}

/*
 * dx: the window looks ahead. Column p of the product is dout token r+p (the dout tile starts at t0), and
 *     dx[r] = sum_{p<W} kernels[r+p][W-1-p] * dout[r+p],   dx[r+S] = sum_{S<=p<S+W} kernels[r+p][W-1-(p-S)] * dout[r+p]
 * so lane (g, t) holds, in k step b, the entries at columns p = 8b+2t and p+1: for row g (q = p) when p < W,
 * for row g+8 (q = p-S) when S <= p < S+W. Each register joins two 16-bit loads from two kernels rows: row
 * r+p, tap W-1-q, and row r+p+1, tap W-2-q (masked away when that tap is -1).
 */
template <class T, int TB, int NKC>
__device__ void dx_mma(const tc_args &a, const uint16_t *sG, const uint16_t *sK, uint16_t *sO) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, S = a.S;
    const int NK = NKC ? NKC : a.NK;
    const warp_plan wp = plan_warp(a, 0);
    const uint16_t *kl = sK + (wp.c0 + g) * a.KS; // kernels row 0, channel c0+g
    const uint16_t *gl = sG + wp.b_row;           // B: dout-tile row r+p
    for (int u = threadIdx.x / 32; u < n_units<TB>(a); u += NWARPS) {
        const int r0 = unit_row<NKC>(u, a);
        const uint16_t *kb = kl + r0 * a.KR, *gb = gl + r0 * a.CR;
        float acc[UNIT][4] = {};
        for (int b = 0; b < NK; b++, gb += 8 * a.CR) {
            const int p = 8 * b + 2 * t;
            const bool lo = p < a.W, hi = (unsigned)(p - S) < (unsigned)a.W;
            // the pair for q starts at element p*KR + W-1-q and goes on KR-1 further; its mask keeps the second
            // half only when that tap exists. Lanes that need neither read any pair and mask it away.
            const int q0 = lo ? p : p - S, q1 = p - S;
            const int e0 = lo || hi ? p * a.KR + a.W - 1 - q0 : 0, e1 = p * a.KR + a.W - 1 - q1;
            const uint32_t pm0 = q0 <= a.W - 2 ? ~0u : 0xFFFFu, pm1 = q1 <= a.W - 2 ? ~0u : 0xFFFFu;
            const uint32_t m0 = lo ? pm0 : 0u, m1 = hi ? (lo ? pm1 : pm0) : 0u;
            uint32_t B[UNIT];
            ladder_ldsm_x4_trans(B, gb);
            // the lane's two pairs in the unit's first product, once per k step: a product then adds only its row
            // offset (k = kb + dk[j], k[e0] had the compiler work out each 16-bit load's address in full)
            const uint16_t *k0 = kb + e0, *k1 = kb + e1;
#pragma unroll
            for (int j = 0; j < UNIT; j++) {
                const uint32_t v = ladder_pack2(k0[wp.dk[j]], k0[wp.dk[j] + a.KR - 1]);
                // when W > 8 the windows overlap: a lane can need both pairs
                const uint32_t A[2] = {
                    v & m0, (NKC != 1 && a.W > 8 ? ladder_pack2(k1[wp.dk[j]], k1[wp.dk[j] + a.KR - 1]) : v) & m1};
                ladder_mma_m16n8k8<T>(acc[j], A, B[j]);
            }
        }
        store_diagonal<T, TB, NKC>(sO, r0, a, wp, acc);
    }
}

/* One 16-byte shared-memory store. Where a branch has changed some of the words (the masks below), the compiler
 * splits a uint4 store into four 32-bit ones. */
__device__ __forceinline__ void sts128(uint16_t *p, const uint32_t (&v)[4]) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"((uint32_t)__cvta_generic_to_shared(p)), "r"(v[0]),
                 "r"(v[1]), "r"(v[2]), "r"(v[3])
                 : "memory");
}

/* Two products of 16-bit elements at once, each rounded once to T: a * b + (-0) on the packed half-precision FMA
 * unit. The same bits as multiplying in fp32 and rounding the product (exact in fp32: 8- or 11-bit significands),
 * in one instruction instead of two conversions in, a multiply and a conversion out per product. */
template <class T> __device__ __forceinline__ uint32_t mul2(uint32_t a, uint32_t b);
template <> __device__ __forceinline__ uint32_t mul2<__nv_bfloat16>(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}
template <> __device__ __forceinline__ uint32_t mul2<__half>(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}

/* Whether dkernels_mul sends its 16-byte rows of taps straight to global memory (TT_SHEAR blocks, W % 8 == 0, the
 * dkernels output aligned), instead of through the dkernels tile and store_dkernels: whole 32-byte sectors still,
 * and the block skips a barrier and a pass over the tile. */
template <int TB> __device__ bool dk_direct(const tc_args &a) { return TB == TT_SHEAR && a.vec_dk && a.W % 8 == 0; }

/* A TT_SHEAR block of one octet has 4 units of products for its 8 warps. Where dkernels goes straight to global
 * memory, it needs nothing of the kernels tile, so the upper half of the warps computes it while the lower half
 * runs the products, instead of waiting for them: faster at W = 48 and at W = 64 with the 16-tap sheared staging
 * (stage_sheared), where dkernels through the tile after the products waited on them (the measurements are in
 * docs/results/h100-2026-11-24-notes-dynconv-tensorcore.md, session 16). */
template <int TB> __device__ bool dk_overlap(const tc_args &a) {
    return dk_direct<TB>(a) && n_units<TB>(a) <= NWARPS / 2;
}

/*
 * One item of dkernels: taps w0 .. w0+7 of one channel in 8 consecutive rows. Row r's taps are g[r] times x values
 * xv[r] .. xv[r+7] (xv: the 15 x-tile rows from the item's first row + w0), so the next row's window is this one
 * moved by a row: the x pairs of a row's taps are (x[2k], x[2k+1]) for an even row, (x[2k+1], x[2k+2]) for an odd
 * one, built once, and each pair is one mul2. With cu_seqlens the taps before a row's sequence start (wmin[r],
 * wmin from the item's first row) are zeroed; without, they met zero x rows already. store(r, v) takes row r's 16
 * bytes. dkernels_mul and the walk's dk_walk run it, each with its own x layout and destination.
 */
template <class T, class Store>
__device__ __forceinline__ void dk_item(const uint16_t (&xv)[15], const uint16_t (&gv)[8], const int *wmin, int w0,
                                        const tc_args &a, Store store) {
    uint32_t xe[7], xo[7];
#pragma unroll
    for (int k = 0; k < 7; k++)
        xe[k] = ladder_pack2(xv[2 * k], xv[2 * k + 1]), xo[k] = ladder_pack2(xv[2 * k + 1], xv[2 * k + 2]);
#pragma unroll
    for (int r = 0; r < 8; r++) {
        const uint32_t g2 = ladder_pack2(gv[r], gv[r]);
        uint32_t v[4];
#pragma unroll
        for (int h = 0; h < 4; h++) v[h] = mul2<T>(g2, r % 2 ? xo[r / 2 + h] : xe[r / 2 + h]);
        const int lead = a.cu_seqlens ? wmin[r] - w0 : 0; // taps before the sequence start
        if (lead > 0) {
#pragma unroll
            for (int h = 0; h < 4; h++)
                v[h] &= (2 * h + 1 < lead ? 0u : 0xFFFF0000u) | (2 * h < lead ? 0u : 0xFFFFu);
        }
        store(r, v);
    }
}

/*
 * dkernels[t,d,w] = dout[t,d] * x[t+w-W+1,d] (0 before the sequence start): no sum, so one fp32 multiply
 * each, rounded to T, written into the dkernels tile sD, laid out as the kernels tile (dx_mma is done with that
 * by now); store_dkernels sends it out in 16-byte rows. Where a slot is whole 16-byte chunks (We % 8 == 0), a
 * thread takes 8 rows of one chunk of one channel (below); else one thread per (row, channel), its taps in pairs,
 * one 32-bit word each. With one k step (NKC = 1: W <= 4, a slot of 2 or 4 taps) a thread takes a row and two
 * neighbouring channels instead: its x and dout loads are then 32-bit words, and the taps of both channels one
 * 8-byte store per 4 taps: at W = 3, 4 two of them, not one 16-byte store, because with a branch per width the
 * compiler merged the two stores' code and split them into 32-bit ones (three stores at W = 4, two at W = 2).
 */
template <class T, int TB, int NKC>
__device__ void dkernels_mul(const tc_args &a, const uint16_t *sX, const uint16_t *sG, const int *wmin,
                             uint16_t *sD, const tile &tl) {
    if (NKC == 1) {
        const int lgP = a.lg_oct + 2, c = 2 * (threadIdx.x & ((1 << lgP) - 1)); // DT/2 = 2^lgP pairs; c, c+1
        for (int row = threadIdx.x >> lgP; row < TB; row += NT >> lgP) {
            const int w_lo = wmin[row];
            const uint32_t gw = ladder_lds32(sG + row * a.CR + c);
            const float g0 = ladder_to_float<T>((uint16_t)gw), g1 = ladder_to_float<T>((uint16_t)(gw >> 16));
            const uint16_t *xs = sX + row * a.CR + c; // x-tile row row+w is token t0+row+w-W+1
            uint32_t v[2][2] = {};                     // [channel c, c+1][taps 0-1, 2-3]
#pragma unroll
            for (int h = 0; h < 2; h++, xs += 2 * a.CR) { // taps 2h, 2h+1
                if (2 * h == a.We) break;
                const int w = 2 * h;
                // (odd W: tap w+1 = W is the pad, and its row lies past the x tile)
                const uint32_t x0 = ladder_lds32(xs), x1 = w + 1 < a.W ? ladder_lds32(xs + a.CR) : 0u;
                const bool k0 = w >= w_lo, k1 = w + 1 >= w_lo && w + 1 < a.W; // inside the sequence; W: pad
                v[0][h] = ladder_pack2_float<T>(k0 ? g0 * ladder_to_float<T>((uint16_t)x0) : 0.0f,
                                                k1 ? g0 * ladder_to_float<T>((uint16_t)x1) : 0.0f);
                v[1][h] = ladder_pack2_float<T>(k0 ? g1 * ladder_to_float<T>((uint16_t)(x0 >> 16)) : 0.0f,
                                                k1 ? g1 * ladder_to_float<T>((uint16_t)(x1 >> 16)) : 0.0f);
            }
            uint16_t *d = sD + row * a.KR + c * a.We; // KS = We here: the taps of channel c, then of c+1
            *reinterpret_cast<uint2 *>(d) = make_uint2(v[0][0], a.We == 2 ? v[1][0] : v[0][1]);
            if (a.We == 4) *reinterpret_cast<uint2 *>(d + 4) = make_uint2(v[1][0], v[1][1]);
        }
        return;
    }
    if (NKC == 0 && a.We % 8 == 0) {
        // a thread per channel c, chunk of 8 taps w0 .. w0+7 and run of 8 rows (dk_item): one new x load a row, 4
        // packed multiplies, one 16-byte store. By the SASS (sm_90, no cu_seqlens) about 250 instructions per 64 taps,
        // where one thread per (row, channel) takes 21 per 2. Channels are the fastest index, so a warp's loads
        // read neighbouring channels of one row. The pad tap of odd W reads x-tile row TB+W-1, staged as zeros
        // (layout)
        const bool direct = dk_direct<TB>(a), half = dk_overlap<TB>(a);
        const int tid = half ? (int)threadIdx.x - NT / 2 : (int)threadIdx.x, nthreads = half ? NT / 2 : NT;
        if (tid < 0) return; // the lower half runs the products meanwhile
        const int lgDT = a.lg_oct + 3, nch = a.We / 8, c = tid & (a.DT - 1);
        const int64_t dkr = a.D * a.W; // dkernels elements per token
        for (int i = tid >> lgDT; i < nch * (TB / 8); i += nthreads >> lgDT) {
            const quot_rem q = divmod(i, nch); // run q.q of 8 rows, chunk q.r
            const int row0 = 8 * q.q, w0 = 8 * q.r;
            const uint16_t *xs = sX + (row0 + w0) * a.CR + c, *gs = sG + row0 * a.CR + c;
            uint16_t *d = sD + row0 * a.KR + c * a.KS + w0;
            uint16_t *gd = a.dk + ((tl.b * a.T + tl.t0 + row0) * a.D + tl.d0 + c) * a.W + w0; // direct: row0's chunk
            const int rows_in = direct && c < tl.Dv ? (int)min((int64_t)8, a.T - tl.t0 - row0) : 0;
            uint16_t xv[15], gv[8]; // x-tile rows row0+w0 .. row0+w0+14, dout rows row0 .. row0+7: all loads first
#pragma unroll
            for (int k = 0; k < 15; k++) xv[k] = xs[k * a.CR];
#pragma unroll
            for (int r = 0; r < 8; r++) gv[r] = gs[r * a.CR];
            dk_item<T>(xv, gv, wmin + row0, w0, a, [&](int r, const uint32_t(&v)[4]) {
                if (!direct) sts128(d + r * a.KR, v);
                else if (r < rows_in) *reinterpret_cast<uint4 *>(gd + r * dkr) = make_uint4(v[0], v[1], v[2], v[3]);
            });
        }
        return;
    }
    // else one thread per (row, channel)
    const int lgDT = a.lg_oct + 3, c = threadIdx.x & (a.DT - 1); // DT = 2^lgDT; the thread's channel
    for (int row = threadIdx.x >> lgDT; row < TB; row += NT >> lgDT) {
        const int w_lo = wmin[row];
        const float gv = ladder_to_float<T>(sG[row * a.CR + c]);
        const uint16_t *xs = sX + row * a.CR + c; // x-tile row row+w is token t0+row+w-W+1
        uint16_t *d = sD + row * a.KR + c * a.KS;
        for (int w = 0; w < a.We; w += 2, xs += 2 * a.CR) { // taps from w_lo on are inside the sequence
            const float v0 = w >= w_lo ? gv * ladder_to_float<T>(xs[0]) : 0.0f;
            const float v1 = w + 1 >= w_lo && w + 1 < a.W ? gv * ladder_to_float<T>(xs[a.CR]) : 0.0f; // W: pad
            *reinterpret_cast<uint32_t *>(d + w) = ladder_pack2_float<T>(v0, v1);
        }
    }
}

/*
 * The walk's dx for step rows t .. t+KC-1 (staged at sK, sG by stage_walk). k block R (rows R .. R+7, R a multiple
 * of 8) feeds an mma with B = dout rows R .. R+7 (ldmatrix.trans, as in dx_mma) and, for 8 consecutive dx tokens
 * s0 .. s0+7 (a group, s0 a multiple of 8) as 4 pairs (s, s+1): row g of A holds kernels[R+k][c0+g][s-R-k+W-1] for
 * token s, row g+8 the same for s+1, one tap further. So lane (g, t) needs, in rows R+2t and R+2t+1, the taps from
 * w0 - 1 on, w0 = s0-R-2t+W-1 (odd: W and s0-R are multiples of 8): 5 and 4 aligned 32-bit words, and each A
 * register is two halves of two of them (one byte_perm). Taps outside [0, W), where the window does not reach the
 * row, land on the zero padding after a slot (s0-R from -W to 0 keeps them within 8 taps of it), so no mask. A
 * group's k blocks (R from s0 to s0+W) span two or three steps: its sums wait in an fp32 ring between them, in the
 * lane that keeps the group's outputs of channel g (lane 4g + g/2: C entries (g, g) and (g+8, g)), which alone reads
 * and writes that slot, and leave as dx after the last. Group G goes to warp G % NWARPS every step.
 */
template <class T, int KC>
__device__ void dx_walk(const uint16_t *sK, const uint16_t *sG, float *ring, const tc_args &a, int64_t b, int d0,
                        int64_t T0, int64_t t, int64_t tok_end, bool final) {
    const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4, W = a.W;
    uint32_t B[KC / 8]; // the step's k blocks
#pragma unroll
    for (int kb = 0; kb < KC / 8; kb++) B[kb] = ladder_ldsm_x1_trans(sG + (8 * kb + lane % 8) * NCH);
    // groups with k blocks in this step, among the block's tokens: s0 from max(T0, t-W) to min(t+KC-8, tok_end-1)
    const int64_t G_lo = max(T0, t - W) / 8, G_hi = min(t + KC - 8, tok_end - 1) / 8;
    const int warp = threadIdx.x / 32;
    for (int64_t G = G_lo + ((warp - G_lo) % NWARPS + NWARPS) % NWARPS; G <= G_hi; G += NWARPS) {
        const int dd = (int)(8 * G - t); // s0 - t, from -W to KC-8
        // the lane's word at tap w0-1 of row 2t of k block 0; k block R adds R*KR - R
        const uint16_t *p0 = sK + 2 * tq * a.KR + g * a.KS + dd - 2 * tq + W - 2;
        float acc[4][4] = {};
#pragma unroll
        for (int kb = 0; kb < KC / 8; kb++) {
            const int R = 8 * kb;
            if (R < dd || R > dd + W) continue; // rows R .. R+7 outside the group's windows
            const uint16_t *p = p0 + R * (a.KR - 1);
            uint32_t P[5], Q[4]; // row R+2t, taps w0-1 .. w0+8; row R+2t+1, taps w0-1 .. w0+6
#pragma unroll
            for (int i = 0; i < 5; i++) P[i] = ladder_lds32(p + 2 * i);
#pragma unroll
            for (int i = 0; i < 4; i++) Q[i] = ladder_lds32(p + a.KR + 2 * i);
#pragma unroll
            for (int j = 0; j < 4; j++) { // pair s0+2j, s0+2j+1: taps w0+2j (high half of P[j]) and w0+2j+1
                const uint32_t A[2] = {__byte_perm(P[j], Q[j], 0x5432), __byte_perm(P[j + 1], Q[j], 0x7610)};
                ladder_mma_m16n8k8<T>(acc[j], A, B[kb]);
            }
        }
        if (tq != g / 2) continue;
        const bool odd = g % 2; // C entries (g, g), (g+8, g): acc[j][g % 2], acc[j][2 + g % 2], by selects
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; j++) v[2 * j] = odd ? acc[j][1] : acc[j][0], v[2 * j + 1] = odd ? acc[j][3] : acc[j][2];
        float4 *slot = reinterpret_cast<float4 *>(ring + ((G & (a.ng - 1)) * NCH + g) * 8);
        if (dd < 0) { // not the group's first step: add what the earlier ones summed
            const float4 lo = slot[0], hi = slot[1];
            v[0] += lo.x, v[1] += lo.y, v[2] += lo.z, v[3] += lo.w, v[4] += hi.x, v[5] += hi.y, v[6] += hi.z,
                v[7] += hi.w;
        }
        if (dd + W <= KC - 8 || final) { // the group's last k block was in this step: dx[s0 ..][c0+g]
            uint16_t *dst = a.dx + (b * a.T + 8 * G) * a.D + d0 + g;
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (8 * G + k < tok_end) dst[k * a.D] = ladder_from_float<T>(v[k]);
        } else {
            slot[0] = make_float4(v[0], v[1], v[2], v[3]), slot[1] = make_float4(v[4], v[5], v[6], v[7]);
        }
    }
}

/*
 * The walk's dkernels for step rows t .. t+KC-1 that are the block's tokens (rows_dk of them): dkernels_mul's 8 x 8
 * items (channel, chunk of 8 taps, run of 8 rows: one new x load a row, mul2, one 16-byte store a row), straight to
 * global memory. x-tile row j is token t-W+1+j, so row r's tap w is x-tile row r+w, and an item's rows r0+w0 .. are
 * 8-aligned: xrow's gaps are constant offsets.
 */
template <class T, int KC>
__device__ void dk_walk(const uint16_t *sX, const uint16_t *sG, const int *wmin, const tc_args &a, int64_t b, int d0,
                        int64_t t, int rows_dk) {
    const int tid = threadIdx.x, c = tid % NCH, nq = a.W / 8;
    const int64_t dkr = a.D * a.W; // dkernels elements per token
    for (int i = tid / NCH; i < KC / 8 * nq; i += NT / NCH) {
        const quot_rem q = divmod(i, nq); // run q.q of 8 rows, chunk q.r
        const int row0 = 8 * q.q, w0 = 8 * q.r, rows_in = min(8, rows_dk - row0);
        if (rows_in <= 0) continue;
        const uint16_t *xs = sX + xrow(row0 + w0) + c, *gs = sG + row0 * NCH + c;
        uint16_t *gd = a.dk + ((b * a.T + t + row0) * a.D + d0 + c) * a.W + w0;
        uint16_t xv[15], gv[8]; // all loads first
#pragma unroll
        for (int k = 0; k < 15; k++) xv[k] = xs[xrow(k)];
#pragma unroll
        for (int r = 0; r < 8; r++) gv[r] = gs[r * NCH];
        dk_item<T>(xv, gv, wmin + row0, w0, a, [&](int r, const uint32_t(&v)[4]) {
            if (r < rows_in) *reinterpret_cast<uint4 *>(gd + r * dkr) = make_uint4(v[0], v[1], v[2], v[3]);
        });
    }
}

/*
 * The backward as a walk (W >= WALK_W, W % 8 == 0, every tensor on the 16-byte path): a block keeps one channel
 * octet of one batch row and walks down its tokens [T0, T0+run) and the W-1 rows after them (their dx needs them),
 * KC kernels rows a step, staged plain with cp.async into NS buffers, so that the next steps' loads fly while this
 * one computes. Each kernels row is read once (the W-1 rows after the run again by the next block), where the
 * 32-token tiles read it 95 / 32 times at W = 64 and transposed it through registers. At W = 56 the walk is
 * slower than the 32-token tiles: a channel's slot of dkernels is not whole 32-byte sectors there, and dk_walk's
 * stores write halves of sectors (the likely cause, not yet profiled). So plan() walks at W % 16 == 8 only in place
 * of the 64-token tiles (W <= 44). The measurements: docs/results/h100-2026-11-24-notes-dynconv-tensorcore.md,
 * session 17.
 */
template <class T, int KC, int NS> __device__ void bwd_walk(const tc_args &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem + a.off_k); // NS x [8 zeros][KC][KR]: kernels rows t ..
    uint16_t *sG = reinterpret_cast<uint16_t *>(smem + a.off_g); // NS x [KC][8]: dout rows t ..
    uint16_t *sX = reinterpret_cast<uint16_t *>(smem + a.off_x); // NS x xrow(KC+W-1): x rows t-W+1 ..
    float *ring = reinterpret_cast<float *>(smem + a.off_r);     // [ng][8 channels][8 tokens]: dx sums
    int *wmin = reinterpret_cast<int *>(smem + a.off_b);         // NS x [KC]
    const int64_t b = blockIdx.z, T0 = (int64_t)blockIdx.x * a.run;
    const int d0 = (int)blockIdx.y * NCH;
    const int64_t tok_end = min(T0 + a.run, a.T), rows_end = min(tok_end + a.W - 1, a.T);
    const int n_steps = (int)((rows_end - T0 + KC - 1) / KC);
    // zeros once: the taps after each slot (dx_walk's out-of-window taps), and the 8 before a buffer's row 0 (tap -1
    // of channel 0 there); cp.async never writes them. A barrier: the staging below writes the other taps
    for (int i = threadIdx.x; i < NS * a.kbuf / 8; i += NT) reinterpret_cast<uint4 *>(sK)[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    auto stage = [&](int s) {
        const int sb = s % NS;
        if (s < n_steps)
            stage_walk<KC>(sK + sb * a.kbuf + 8, sG + sb * KC * NCH, sX + sb * a.xbuf, wmin + sb * KC, a, b, d0,
                           T0 + (int64_t)s * KC, rows_end);
        ladder_cp_async_commit(); // one group a step, empty past the end: the wait below counts steps
    };
#pragma unroll
    for (int s = 0; s < NS - 1; s++) stage(s);
    for (int s = 0; s < n_steps; s++) {
        stage(s + NS - 1); // into the buffer that step s-1 freed
        ladder_cp_async_wait_group<NS - 1>();
        __syncthreads(); // step s's rows are complete
        const int sb = s % NS;
        const uint16_t *k = sK + sb * a.kbuf + 8, *gs = sG + sb * KC * NCH, *xs = sX + sb * a.xbuf;
        const int *wm = wmin + sb * KC;
        const int64_t t = T0 + (int64_t)s * KC;
        if (a.cu_seqlens) { // taps before the row's sequence start: zero, mask_kernels' rule
            for (int i = threadIdx.x; i < KC * NCH; i += NT)
                for (int w = 0; w < wm[i / NCH]; w++) sK[sb * a.kbuf + 8 + i / NCH * a.KR + i % NCH * a.KS + w] = 0;
            __syncthreads();
        }
        dx_walk<T, KC>(k, gs, ring, a, b, d0, T0, t, tok_end, s == n_steps - 1);
        dk_walk<T, KC>(xs, gs, wm, a, b, d0, t, (int)min((int64_t)KC, tok_end - t));
        __syncthreads(); // every warp is done with buffer sb before the next step stages into it
    }
}

/* The dkernels tile [TB][KR] (channel slots of KS) -> rows t0.. of the contiguous [B,T,D,W] output, 8 elements
 * per thread (the same 8 in every row it writes): 16-byte copies where a slot holds no padding tap (W even) and
 * the output is aligned, element copies otherwise. */
template <int TB> __device__ void store_dkernels(const uint16_t *sD, const tc_args &a, const tile &tl) {
    const int cpr = a.DT * a.W / 8, nv = tl.Dv * a.W;
    const int per_row = min(cpr, NT), row_step = divmod(NT, per_row).q;
    const quot_rem tr = divmod(threadIdx.x, per_row);
    const int r0 = tr.q;
    if (r0 >= row_step) return;
    const bool vec = a.vec_dk && a.We == a.W;
    for (int f0 = 8 * tr.r; f0 < nv; f0 += 8 * per_row) {
        const quot_rem cw = divmod(f0, a.W);
        const int fs = a.KS == a.W ? f0 : cw.q * a.KS + cw.r; // KS > W only where W % 8 == 0
        for (int row = r0; row < TB && tl.t0 + row < a.T; row += row_step) {
            uint16_t *p = a.dk + ((tl.b * a.T + tl.t0 + row) * a.D + tl.d0) * a.W + f0;
            const uint16_t *q = sD + row * a.KR;
            if (vec && f0 + 8 <= nv) {
                *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(q + fs);
                continue;
            }
            for (int k = 0; k < 8 && f0 + k < nv; k++) p[k] = q[(f0 + k) / a.W * a.KS + (f0 + k) % a.W];
        }
    }
}

/*
 * The [channel][token] tile sO -> rows t0.. of a contiguous [B,T,D] output. One ldmatrix.x4.trans per 8 tokens of
 * NM * 8 channels (NM = 4, or DT / 8 when narrower; the x4's other matrices repeat the first ones): row q of
 * matrix m is channel 2NM*(q/2) + 2m + q%2, so that the transposing load hands lane 4i+t token i of the 2NM
 * channels 2NM*t .. 2NM*t + 2NM-1 (two per matrix), which leave in one store of 4*NM bytes.
 */
template <int TB>
__device__ void store_tokens(uint16_t *dst, const uint16_t *sO, const tc_args &a, const tile &tl, bool vec) {
    const int lane = threadIdx.x % 32, lg_nm = min(a.lg_oct, 2), nm = 1 << lg_nm;
    const int lg_groups = a.lg_oct - lg_nm; // channel groups of 8 NM, 2^lg_groups of them
    const int q = lane % 8, c_row = 2 * nm * (q / 2) + 2 * (lane / 8 & (nm - 1)) + q % 2;
    // a warp keeps one channel group (NWARPS is a multiple of their count) and steps through the 8-token chunks:
    // its lanes' channels stay
    const int i = lane / 4, cg = 8 * nm * ((threadIdx.x / 32) & ((1 << lg_groups) - 1)), c = cg + 2 * nm * (lane % 4);
    for (int kc = threadIdx.x / 32 >> lg_groups; kc < TB / 8; kc += NWARPS >> lg_groups) {
        uint32_t v[4];
        ladder_ldsm_x4_trans(v, sO + out_at<TB>(cg + c_row, 8 * kc, a));
        const int64_t tok = tl.t0 + 8 * kc + i;
        if (tok >= a.T || c >= tl.Dv) continue;
        uint16_t *p = dst + (tl.b * a.T + tok) * a.D + tl.d0 + c;
        if (vec && c + 2 * nm <= tl.Dv) {
            if (nm == 4) *reinterpret_cast<uint4 *>(p) = make_uint4(v[0], v[1], v[2], v[3]);
            else if (nm == 2) *reinterpret_cast<uint2 *>(p) = make_uint2(v[0], v[1]);
            else *reinterpret_cast<uint32_t *>(p) = v[0];
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (k < 2 * nm && c + k < tl.Dv) p[k] = (uint16_t)(v[k / 2] >> (16 * (k % 2)));
        }
    }
}

// one k step: 6 blocks per SM, as many as the 37 KB of W = 2's tiles allow (at 42 registers the register file held
// 5); several k steps: no minimum (0), so the compiler keeps the allocation whose k loop is 99 instructions
template <class T, int NKC>
__global__ void __launch_bounds__(NT, NKC == 1 ? 6 : 0) dynconv_fwd_tc_kernel(const tc_args a) {
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sX = reinterpret_cast<uint16_t *>(smem + a.off_x); // [xrows][CR]: x rows t0-W+1 ..
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem + a.off_k); // [TT][KR]: kernels rows t0 ..
    uint16_t *sO = reinterpret_cast<uint16_t *>(smem + a.off_o); // [DT][OP] (out_at)
    int *wmin = reinterpret_cast<int *>(smem + a.off_b);         // [TT]
    const tile tl = tile_of<TT>(a);

    stage(sX, a.CR, a.xrows, TT + a.W - 1, a.x, a.sx, 1, 1, 1, a.vec_x, 0, a, tl, tl.t0 - a.W + 1);
    // slot We: the forward's slots are never padded (KS = We), and saying so spares the division for fd. (xr known
    // 0 here too at NKC = 1 made the sm_80 build of that kernel spill.)
    stage(sK, a.KR, a.krows, TT, a.k, a.sk, a.We, a.We, a.W, a.vec_k, a.xr, a, tl, tl.t0);
    const int xr = NKC == 1 ? 0 : a.xr; // (W <= 4: never swizzled)
    if (a.cu_seqlens) stage_bounds(wmin, TT, a, tl);
    ladder_cp_async_wait_all();
    __syncthreads(); // every tile is complete before it is masked or read
    if (a.cu_seqlens) {
        mask_kernels(sK, wmin, TT, a, xr);
        __syncthreads();
    }
    fwd_mma<T, TT, NKC>(a, sX, sK, sO, xr);
    __syncthreads(); // sO holds every warp's outputs before the rows go out
    store_tokens<TT>(a.out, sO, a, tl, a.vec_out);
}

template <class T, int TB, int NKC>
__global__ void __launch_bounds__(NT, 4) dynconv_bwd_tc_kernel(const tc_args a) {
    if constexpr (NKC == WALK) { // TB = WALK_KC: kernels rows a step
        bwd_walk<T, TB, WALK_STAGES>(a);
        return;
    }
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sX = reinterpret_cast<uint16_t *>(smem + a.off_x); // [xrows][CR]: x rows t0-W+1 .. t0+TB-1
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem + a.off_k); // [krows][KR]: kernels rows t0 .. (or sheared),
                                                                 // then dkernels
    uint16_t *sG = reinterpret_cast<uint16_t *>(smem + a.off_g); // [grows][CR]: dout rows t0 ..
    uint16_t *sO = reinterpret_cast<uint16_t *>(smem + a.off_o); // [DT][OP]: dx (out_at)
    int *wmin = reinterpret_cast<int *>(smem + a.off_b);         // [TB+W-1]
    const tile tl = tile_of<TB>(a);
    const int halo = TB + a.W - 1; // dx[t] reads dout and kernels up to token t+W-1

    stage(sX, a.CR, a.xrows, halo, a.x, a.sx, 1, 1, 1, a.vec_x, 0, a, tl, tl.t0 - a.W + 1);
    stage(sG, a.CR, a.grows, halo, a.g, a.sg, 1, 1, 1, a.vec_g, 0, a, tl, tl.t0);
    if (!a.shear) stage(sK, a.KR, a.krows, halo, a.k, a.sk, a.We, a.KS, a.W, a.vec_k, 0, a, tl, tl.t0);
    stage_bounds(wmin, halo, a, tl);
    // while x and dout are on their way. A run-time test even in the one-k-step kernel, which never shears:
    // compiled out there, the register allocation changed and the W = 2 backward was slower
    if (a.shear) {
        __syncthreads(); // wmin is complete before the sheared staging reads it
        stage_sheared<TB>(sK, wmin, a, tl);
    }
    ladder_cp_async_wait_all();
    __syncthreads();
    if (a.cu_seqlens && !a.shear) {
        mask_kernels(sK, wmin, halo, a, 0);
        __syncthreads();
    }
    if (NKC == 0 && a.shear) fwd_mma<T, TB, 0>(a, sG, sK, sO, 0); // dx[r] = sum_p sK[r][p] dout[r+p]: the forward's
    else if constexpr (TB == TT) dx_mma<T, TB, NKC>(a, sG, sK, sO); // TT_SHEAR: always sheared
    const bool overlap = dk_overlap<TB>(a); // dkernels on the warps that have no products
    if (!overlap) __syncthreads();          // dx_mma is done with sK: dkernels takes its place
    dkernels_mul<T, TB, NKC>(a, sX, sG, wmin, sK, tl);
    if (overlap) __syncthreads(); // sO holds every unit's dx before the rows go out
    store_tokens<TB>(a.dx, sO, a, tl, a.vec_out);
    if (dk_direct<TB>(a)) return; // dkernels_mul wrote dkernels itself
    __syncthreads();
    store_dkernels<TB>(sK, a, tl);
}

/* -------------------------------------------------------------------------------------------------------- */

int round_up(int v, int m) { return (v + m - 1) / m * m; }

/* Shared-memory layout for DT channels; returns its size in bytes. */
int layout(tc_args *a, bool bwd) {
    const int W = a->W;
    a->lg_oct = 0;
    while ((NCH << a->lg_oct) < a->DT) a->lg_oct++;
    a->We = W + (W & 1);
    a->lgS = a->We <= 2 ? 1 : a->We <= 4 ? 2 : 3;
    a->S = 1 << a->lgS;
    a->NK = (a->S + a->We + 7) / 8;
    const int TB = a->tt, window_rows = TB - a->S + 8 * a->NK; // tile rows the k steps reach: r + p < TB - S + 8 NK
    // (>= TB + W - 1: the rows past the input are zero; the backward's one more at odd W: dkernels_mul's pad tap)
    a->xrows = bwd ? TB + a->We - 1 : window_rows;
    a->krows = bwd && !a->shear ? window_rows : TB;
    a->grows = window_rows;
    // 16 bytes of padding per row: the 8 row addresses of an ldmatrix then fall in 8 different groups of 4
    // banks, and for W = 4 the two tokens of an A load (rows r and r+4) in different halves of the banks
    a->CR = a->DT + 8;
    // a slot of We % 32 == 0 taps (64 or 128 bytes) puts the 8 channels of an mma's A loads (lane g on channel
    // c0+g) on the same 4 or 2 banks: 8 more taps move each channel's slot 16 bytes along them. The backward
    // only: the forward keeps its blocks per SM that way
    a->KS = bwd && a->We % 32 == 0 ? a->We + 8 : a->We;
    a->KR = a->DT * a->KS + 8;
    // The forward's slots are unpadded, so at We = 64 (128 bytes) the 8 lanes of an A load, channels c0 .. c0+7 of
    // one row, all hit the same 4 banks: 8-way conflicted, most of the W = 64 forward's shared loads. 16 bytes of
    // padding a slot would take the tiles to 80 KB, two blocks per SM instead of three; instead channel c's row r
    // is stored at row r ^ (c % 8) (stage, mask_kernels, plan_warp). Rows lie 16 bytes apart in the banks (KR), so
    // the 8 lanes read 8 different groups of 4. At We = 16 and 32 the same swizzle was slower, though it removes
    // 2- and 4-way conflicts there (for a reason not found), so only We = 64 takes it
    a->xr = !bwd && a->We == 64 ? 7 : 0;
    int off = 0;
    a->off_x = off, off += round_up(a->xrows * a->CR * 2, 16);
    a->off_k = off, off += round_up(a->krows * a->KR * 2, 16);
    a->off_g = off, off += bwd ? round_up(a->grows * a->CR * 2, 16) : 0;
    a->OP = TB + 8;
    a->off_o = off, off += round_up(a->DT * a->OP * 2, 16);
    a->off_b = off, off += (TB + W - 1) * 4;
    return off;
}

/* The walk's shared-memory layout (bwd_walk, stage_walk); returns its size in bytes. */
int layout_walk(tc_args *a) {
    constexpr int KC = WALK_KC, NS = WALK_STAGES;
    const int W = a->W;
    a->DT = NCH, a->lg_oct = 0;
    // zero taps after each slot (at least 8: dx_walk reaches 8 past a slot); KS/2 an odd multiple of 4 words, so
    // that the 8 channels of an A load fall in 8 groups of 4 banks, and KR - 1 odd, the 4 rows of its lanes t in 4
    a->KS = W + (W % 16 ? 16 : 8);
    a->KR = NCH * a->KS + 8;
    a->kbuf = 8 + KC * a->KR;
    a->xbuf = round_up((KC + W - 1 + (KC + W - 1) / 8 + 1) * NCH, 8); // xrow(KC+W-1)
    // dx groups alive at once: a slot each, group G's reused by group G + ng, which the same lane (ng % NWARPS == 0)
    // starts no earlier than the step of G's last k block (8 ng >= W)
    a->ng = NWARPS;
    while (8 * a->ng < W) a->ng *= 2;
    int off = 0;
    a->off_k = off, off += NS * a->kbuf * 2;
    a->off_g = off, off += NS * KC * NCH * 2;
    a->off_x = off, off += NS * a->xbuf * 2;
    a->off_r = off, off += a->ng * NCH * 8 * 4;
    a->off_b = off, off += NS * KC * 4;
    return off;
}

/*
 * The walk's tokens per block: the cut of a batch row into runs (whole steps) that fills the SMs' block slots in
 * the fewest waves x rows walked, each run's W-1 rows after it walked again by the next (gpu_tiled's pick_walk).
 */
template <class Kernel> ladder_status pick_run(tc_args *a, int64_t B, Kernel *kernel, int smem) {
    constexpr int KC = WALK_KC;
    int dev = 0, sms = 0, per_sm = 0;
    LADDER_CUDA_TRY(cudaGetDevice(&dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    LADDER_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, NT, smem));
    const int64_t columns = B * ((a->D + NCH - 1) / NCH), slots = (int64_t)sms * max(per_sm, 1), halo = a->W - 1;
    const int64_t most = min(a->T, 8 * slots / columns + 1); // beyond eight waves the halo only grows
    int64_t best = -1;
    for (int64_t n = 1; n <= most; n++) {
        const int64_t run = ((a->T + n - 1) / n + KC - 1) / KC * KC;
        const int64_t waves = (columns * ((a->T + run - 1) / run) + slots - 1) / slots;
        const int64_t cost = waves * (run + halo);
        if (run <= INT_MAX && (best < 0 || cost < best)) best = cost, a->run = (int)run;
    }
    return LADDER_OK;
}

/* Tile sizes, shared-memory layout and the 16-byte-path checks for one call. */
ladder_status plan(const ladder_dynconv_problem *p, const ladder_dynconv_args *args, bool bwd, tc_args *a,
                   int *smem, dim3 *grid) {
    *a = tc_args{};
    a->x = (const uint16_t *)args->x.data;
    a->k = (const uint16_t *)args->kernels.data;
    a->g = (const uint16_t *)args->dout.data;
    a->out = (uint16_t *)args->out.data;
    a->dx = (uint16_t *)args->dx.data;
    a->dk = (uint16_t *)args->dkernels.data;
    for (int i = 0; i < 3; i++) a->sx[i] = args->x.strides[i], a->sg[i] = bwd ? args->dout.strides[i] : 0;
    for (int i = 0; i < 4; i++) a->sk[i] = args->kernels.strides[i];
    a->T = p->T, a->D = p->D, a->W = p->W;
    a->shear = bwd && p->W > SHEAR_W;
    a->tt = TT;
    a->cu_seqlens = (const int32_t *)args->cu_seqlens.data;
    a->n_seqs = args->cu_seqlens.data ? (int)args->cu_seqlens.shape[0] - 1 : 0;

    // the widest channel tile (64, 32, 16 or 8, no wider than D needs) whose tiles fit the target, so that
    // several blocks share an SM; for large W the narrowest, up to the maximum
    a->DT = 64;
    while (a->DT > NCH && a->DT / 2 >= p->D) a->DT /= 2;
    while (a->DT > NCH && layout(a, bwd) > SMEM_TARGET) a->DT /= 2;
    // a sheared backward that misses the target even so takes TT_SHEAR tokens a block: at W = 64, 46 KB and
    // four blocks per SM (as many as the registers allow) instead of 85 KB and two
    if (a->shear && layout(a, bwd) > SMEM_TARGET) a->tt = TT_SHEAR;
    *smem = layout(a, bwd);
    if (*smem > SMEM_MAX)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "gpu_tensorcore: W = %d needs %d bytes of shared memory", p->W,
                           *smem);
    const long long t_tiles = (p->T + a->tt - 1) / a->tt, d_tiles = (p->D + a->DT - 1) / a->DT;
    if (t_tiles > INT_MAX || d_tiles > 65535 || p->B > 65535)
        return ladder_fail(LADDER_ERR_UNSUPPORTED,
                           "gpu_tensorcore: grid too large (%lld token tiles, %lld channel tiles, B = %lld)",
                           t_tiles, d_tiles, (long long)p->B);
    *grid = dim3((unsigned)t_tiles, (unsigned)d_tiles, (unsigned)p->B);

    a->vec_x = ladder_rows16(&args->x, 1);
    a->vec_g = bwd && ladder_rows16(&args->dout, 1);
    a->vec_k = p->W % 2 == 0 && ladder_rows16(&args->kernels, 2); // a row: a token's channels, W taps each
    a->vec_out = ladder_aligned16(bwd ? (void *)a->dx : (void *)a->out) && p->D % 8 == 0;
    a->vec_dk = bwd && ladder_aligned16(a->dk) && p->D * p->W % 8 == 0;
    // the walk: whole 16-byte chunks of one channel's taps (W % 8 == 0) and of 8 channels (D % 8 == 0), every input
    // on the 16-byte path (its staging is cp.async alone), dkernels written 16 bytes at a time; else the tiles
    // (where a slot of dkernels is not whole sectors, W % 16 == 8, only against the 64-token tiles: at W = 56 the
    // 32-token ones measured faster)
    if (bwd && p->W >= WALK_W && p->W % 8 == 0 && p->D % 8 == 0 && a->vec_x && a->vec_g && a->vec_k && a->vec_dk &&
        p->W + 2 * WALK_KC <= NT && (p->W % 16 == 0 || a->tt == TT)) { // (stage_walk: a thread per x row)
        tc_args w = *a;
        const int bytes = layout_walk(&w);
        if (bytes <= SMEM_MAX) {
            *a = w, a->walk = true, *smem = bytes;
            grid->y = (unsigned)(p->D / NCH);
        }
    }
    return LADDER_OK;
}

template <class T> ladder_status launch(const ladder_dynconv_problem *p, const ladder_dynconv_args *args, bool bwd) {
    tc_args a;
    int smem;
    dim3 grid;
    LADDER_TRY(plan(p, args, bwd, &a, &smem, &grid));
    // one k step (W <= 4): the k loop unrolls, and what depends on the lane and the k step leaves the unit loop
    const bool k1 = a.NK == 1;
    auto kernel = !bwd         ? (k1 ? dynconv_fwd_tc_kernel<T, 1> : dynconv_fwd_tc_kernel<T, 0>)
                  : a.walk     ? dynconv_bwd_tc_kernel<T, WALK_KC, WALK>
                  : a.tt != TT ? dynconv_bwd_tc_kernel<T, TT_SHEAR, 0>
                  : k1         ? dynconv_bwd_tc_kernel<T, TT, 1>
                               : dynconv_bwd_tc_kernel<T, TT, 0>;
    LADDER_TRY(ladder_allow_smem(kernel, smem));
    if (a.walk) { // runs of tokens: the grid follows the GPU's block slots
        LADDER_TRY(pick_run(&a, p->B, kernel, smem));
        grid.x = (unsigned)((p->T + a.run - 1) / a.run);
    }
    kernel<<<grid, NT, smem>>>(a);
    LADDER_LAUNCH_CHECK(bwd ? "dynconv_bwd_tc_kernel" : "dynconv_fwd_tc_kernel");
    return LADDER_OK;
}

ladder_status dispatch(const ladder_dynconv_problem *p, const ladder_dynconv_args *args, bool bwd) {
    switch (args->x.dtype) {
    case LADDER_BF16: return launch<__nv_bfloat16>(p, args, bwd);
    case LADDER_F16: return launch<__half>(p, args, bwd);
    default:
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "gpu_tensorcore takes bf16 or f16, not %s",
                           ladder_dtype_name(args->x.dtype));
    }
}

} // namespace

extern "C" ladder_status dynconv_fwd_gpu_tensorcore(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    return dispatch(p, a, false);
}

extern "C" ladder_status dynconv_bwd_gpu_tensorcore(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    return dispatch(p, a, true);
}
