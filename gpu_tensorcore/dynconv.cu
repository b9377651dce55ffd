/*
 * gpu_tensorcore/dynconv.cu: dynamic causal convolution on the tensor cores.
 *
 * What changed since gpu_tiled/:
 *
 *  1. Half precision. x, kernels and dout come in as bf16 or fp16 (one dtype for all three), out, dx and
 *     dkernels go out in it, and every sum accumulates in fp32. Moving half the bytes of fp32 is the only
 *     speed-up a memory-bound op can get, and only while the instructions keep up: on the H100 this
 *     version is still bound by issue slots (the transposing staging stores, the fragment assembly), not
 *     by DRAM (chapters/01-dynamic-conv.md, docs/results/h100-2026-11-21-run.md). Elements travel as raw 16-bit patterns; only the mma and
 *     the conversions know the format (common/mma.cuh): two instantiations, one per dtype, W at run time.
 *  2. The matrix units (fwd_mma, dx_mma). Per channel, 16 consecutive outputs are a band matrix times a
 *     slice of x,
 *
 *         out[t0+i] = sum_j A[i][j] * x[t0-W+1+j],      A[i][j] = kernels[t0+i][j-i] for 0 <= j-i < W,
 *
 *     16 x (15+W), zero elsewhere. Padded to KS = ceil((15+W)/16) steps of k, that is KS
 *     mma.sync.m16n8k16 per 16 tokens per channel. Only column 0 of B and of C carries data: n = 8 is the
 *     smallest shape the instruction has, so 7/8 of the tensor-core work multiplies zeros. That is fine:
 *     the tensor cores are far from busy, memory is the limit. dx is the same with the transposed band,
 *
 *         dx[t0+i] = sum_j A'[i][j] * dout[t0+j],       A'[i][j] = kernels[t0+j][W-1-(j-i)] for 0 <= j-i < W.
 *
 *     dkernels = dout * x has no sum and stays on plain fp32 multiplies (dkernels_mul).
 *  3. 16-byte global accesses (load8, stage_kernels, store_tokens, dkernels_mul): one uint4 per thread
 *     where the tensor is contiguous along its fast dimension and aligned (checked once, in plan()),
 *     element accesses otherwise, in the same kernel. Each thread has U loads in flight before it writes
 *     any of them to shared memory.
 *  4. Tiles staged in shared memory and laid out for the fragments. A block owns TT = 32 tokens x DT
 *     channels (DT = 64 for small W, fewer as W grows). x and dout are stored transposed, [channel][token]
 *     (stage_tokens): the two consecutive tokens of a B register are one 32-bit word. kernels are stored
 *     [channel][token][tap] with an odd token stride RK > W (stage_kernels): an A register (row i, columns
 *     j, j+1) holds taps j-i and j-i+1 of one kernels row, and j-i has the parity of i, so with an odd
 *     stride every A register is one aligned 32-bit load. The forward zeroes the pad after each row's taps
 *     (zero_padding), so pairs at the band's edge need no mask; RK is also picked so that the 32 lanes of
 *     an A load hit 32 different banks (layout()).
 *  5. Sequences end inside a tile only with cu_seqlens. Then the taps that would reach across a sequence
 *     start are zeroed in the staged kernels tile (mask_kernels), one rule for the forward and for dx.
 *  6. Coalesced output: column 0 of each C goes through shared memory (stage_column0, sO) and leaves as
 *     16-byte rows (store_tokens). Each warp carries NCH = 4 channels through its k loop at once, so the
 *     lane's fragment offsets are computed once per k step for four mma.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (x, kernels, dout and the outputs all bf16 or all
 * f16; device pointers; any non-negative input strides; contiguous outputs). Inputs must be finite: like
 * any matrix product, the mma multiplies the zeros of the band by x, and 0 * inf is NaN.
 * The 16-byte path, per tensor (else element accesses): a 16-byte aligned pointer and
 *   x, dout:  unit channel stride, token and batch strides multiples of 8, DT % 8 == 0;
 *   kernels:  unit tap stride, channel stride W, token and batch strides multiples of 8, DT*W % 8 == 0;
 *   out, dx:  D % 8 == 0 (and DT % 8 == 0);   dkernels: D*W % 8 == 0 (and DT*W % 8 == 0).
 * Deterministic: every output element is written by one thread, no atomics.
 * Run it:  build/bin/ladder run dynconv --rung gpu_tensorcore --dtype bf16
 */
#include <limits.h>
#include <stdint.h>

#include "cuda_check.cuh"
#include "dynconv_rungs.h"
#include "mma.cuh"
#include "varlen.h"

namespace {

constexpr int NT = 256;            // threads per block
constexpr int NWARPS = NT / 32;
constexpr int TT = 32;             // tokens per block: two 16-token mma tiles
constexpr int NS = TT / 16;        // 16-token subtiles per block
constexpr int NCH = 4;             // channels (of one subtile) a warp carries through the k loop at once
constexpr int U = 2;               // 16-byte loads each thread has in flight while staging (more costs registers)
constexpr int SMEM_BUDGET = 64 * 1024; // per block; below sm_80's 163 KB so W = 64 fits there too

/* Everything the kernels need, filled by plan(). Sizes and strides in elements, offsets in bytes. */
struct tc_args {
    const uint16_t *x, *k, *g;   // x [B,T,D], kernels [B,T,D,W], dout [B,T,D] (raw 16-bit patterns)
    uint16_t *out, *dx, *dk;     // outputs, contiguous
    int64_t sx[3], sk[4], sg[3]; // input strides
    int64_t T, D;
    int W;
    const int32_t *cu_seqlens; // nullptr: every batch row is one sequence
    int n_seqs;
    int DT, lgDT, KS;            // channels per block (a power of two, 2^lgDT), k steps per 16-token tile
    int n_dtiles, n_ttiles;
    int RK, CS, krows;           // kernels tile: token-row stride, channel stride, token rows
    int XS, xrows;               // x tile: channel stride, token rows
    int GS, grows;               // dout tile: channel stride, token rows
    int OS;                      // output staging: token-row stride
    int off_x, off_k, off_g, off_o, off_b;
    bool vec_x, vec_k, vec_g, vec_out, vec_dk; // 16-byte path per tensor
};

/* The block's place: batch row b, first token t0, first channel d0, Dv channels inside D. */
struct tile {
    int64_t b, t0;
    int d0, Dv;
};

__device__ tile tile_of(const tc_args &a) {
    int64_t id = blockIdx.x;
    tile tl;
    tl.d0 = (int)(id % a.n_dtiles) * a.DT;
    id /= a.n_dtiles;
    tl.t0 = (id % a.n_ttiles) * TT;
    tl.b = id / a.n_ttiles;
    tl.Dv = (int)min((int64_t)a.DT, a.D - tl.d0);
    return tl;
}

/* Eight consecutive elements of a row, p[k * step] for k < 8: one 16-byte load on the vector path,
 * element loads otherwise. Elements k >= valid are zero. */
__device__ uint4 load8(const uint16_t *p, int64_t step, int valid, bool vec) {
    if (vec && valid >= 8) return __ldg(reinterpret_cast<const uint4 *>(p));
    uint16_t e[8];
#pragma unroll
    for (int k = 0; k < 8; k++) e[k] = k < valid ? p[k * step] : 0;
    return ladder_pack8(e);
}

/*
 * Stage a token-major input (x or dout, [B,T,D]) transposed: dst[c * ld + row] = src[b, tok0 + row, d0 + c]
 * for row < rows. Transposed, the two consecutive tokens of one B register (rows 2t, 2t+1 of one column)
 * are one 32-bit word. Rows >= live, tokens outside [0,T) and channels >= Dv are zero: the mma multiplies
 * them by zero weights, and 0 * 0 is harmless where 0 * garbage might be NaN.
 */
__device__ void stage_tokens(uint16_t *dst, int ld, int rows, int live, const uint16_t *src, const int64_t *st,
                             const tc_args &a, const tile &tl, int64_t tok0, bool vec) {
    const int cpr = (a.DT + 7) / 8, rpp = NT / cpr; // 8-channel chunks per row, rows per pass
    if (threadIdx.x >= rpp * cpr) return;
    const int c = 8 * (threadIdx.x % cpr); // this thread's chunk: channels c..c+7, the same in every row
    const uint16_t *base = src + tl.b * st[0] + (int64_t)(tl.d0 + c) * st[2];
    for (int r0 = threadIdx.x / cpr; r0 < rows; r0 += U * rpp) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) { // all loads first, so U of them are in flight at once
            const int row = r0 + u * rpp;
            const int64_t tok = tok0 + row;
            v[u] = make_uint4(0, 0, 0, 0);
            if (row < live && tok >= 0 && tok < a.T) v[u] = load8(base + tok * st[1], st[2], tl.Dv - c, vec);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int row = r0 + u * rpp;
            if (row >= rows) break;
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (c + k < a.DT) dst[(c + k) * ld + row] = ladder_elem8(v[u], k);
        }
    }
}

/*
 * Stage kernels rows tok0 .. tok0+rows-1 into dst[c * CS + row * RK + w] (channel, token row, tap). A token
 * row of the tile is DT*W consecutive elements (channel-major, tap-minor) of the input; each thread owns the
 * same 8-element chunk of every row it loads, so where those 8 land in shared memory is worked out once.
 */
__device__ void stage_kernels(uint16_t *dst, const tc_args &a, const tile &tl, int rows, int live, int64_t tok0) {
    const int n = a.DT * a.W, cpr = (n + 7) / 8, rpp = NT / cpr; // the launcher keeps cpr <= NT
    if (threadIdx.x >= rpp * cpr) return;
    const int f0 = 8 * (threadIdx.x % cpr); // chunk start, as c * W + w within the row
    const int nk = min(8, n - f0);          // elements of the chunk inside the row (8 unless DT*W % 8 != 0)
    uint16_t *to[8];                        // where each element goes in row 0 of the tile
    for (int k = 0, c = f0 / a.W, w = f0 % a.W; k < 8; k++) {
        to[k] = dst + c * a.CS + w;
        if (++w == a.W) w = 0, c++;
    }
    const uint16_t *base = a.k + tl.b * a.sk[0];
    for (int r0 = threadIdx.x / cpr; r0 < rows; r0 += U * rpp) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int row = r0 + u * rpp;
            const int64_t tok = tok0 + row;
            v[u] = make_uint4(0, 0, 0, 0);
            if (row >= live || tok < 0 || tok >= a.T) continue;
            const uint16_t *p = base + tok * a.sk[1];
            if (a.vec_k && f0 + 8 <= tl.Dv * a.W) { // the chunk is 16 contiguous, aligned bytes of the input
                v[u] = __ldg(reinterpret_cast<const uint4 *>(p + (int64_t)tl.d0 * a.W + f0));
                continue;
            }
            uint16_t e[8];
            for (int k = 0, c = f0 / a.W, w = f0 % a.W; k < 8; k++) {
                e[k] = c < tl.Dv ? p[(tl.d0 + c) * a.sk[2] + w * a.sk[3]] : 0;
                if (++w == a.W) w = 0, c++;
            }
            v[u] = ladder_pack8(e);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int row = r0 + u * rpp, rb = row * a.RK;
            if (row >= rows) break;
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (k < nk) to[k][rb] = ladder_elem8(v[u], k);
        }
    }
}

/*
 * wmin[r]: the first tap of kernels row r (token t0+r) whose source token t0+r+w-W+1 lies inside the row's
 * sequence (0 when all do, W when none do). One binary search per row, here, instead of one per tap.
 */
__device__ void stage_bounds(int *wmin, int rows, const tc_args &a, const tile &tl) {
    for (int r = threadIdx.x; r < rows; r += NT) {
        const int64_t t = tl.t0 + r;
        const int64_t start = a.cu_seqlens && t < a.T ? ladder_seq_start(a.cu_seqlens, a.n_seqs, t) : 0;
        wmin[r] = (int)min(max(start - t + a.W - 1, (int64_t)0), (int64_t)a.W);
    }
}

/*
 * Zero the forward tile's padding: taps W..RK-1 of every row, and the pair after each channel's last row.
 * A fragment pair that straddles the band's edge then reads a zero for its outside half, and a pair wholly
 * outside the band is pointed at that last pair, so the fragment loop needs no masks. (Padding and taps are
 * disjoint, so this runs alongside stage_kernels.)
 */
__device__ void zero_padding(uint16_t *sK, const tc_args &a) {
    for (int i = threadIdx.x; i < a.DT * a.krows; i += NT) {
        uint16_t *row = sK + (i / a.krows) * a.CS + (i % a.krows) * a.RK;
        for (int w = a.W; w < a.RK; w++) row[w] = 0;
    }
    for (int c = threadIdx.x; c < a.DT; c += NT) ladder_sts32(sK + c * a.CS + a.krows * a.RK, 0u);
}

/*
 * With cu_seqlens: zero the taps that reach across a sequence start. Tap w of token t pairs x[t+w-W+1] with
 * out[t] in the forward and dout[t] with dx[t+w-W+1] in the backward: one edge, which crosses a boundary
 * exactly when t+w-W+1 < start(t). With those taps zero, the fragment loops below only need the band.
 * (Without cu_seqlens such taps reach before token 0: the forward meets zero x rows there, and dx has no
 * output there.)
 */
__device__ void mask_kernels(uint16_t *sK, const int *wmin, int rows, const tc_args &a) {
    for (int i = threadIdx.x; i < rows * a.DT; i += NT) {
        const int r = i / a.DT, c = i % a.DT;
        for (int w = 0; w < wmin[r]; w++) sK[c * a.CS + r * a.RK + w] = 0;
    }
}

/*
 * The mma work of a block: one item per (16-token subtile s, channel c), NS*DT of them. A warp takes a chunk
 * of NCH channels of one subtile and runs the k loop over all of them together, so that the lane's fragment
 * offsets and masks, which depend on neither s nor c, are worked out once per k step (the launcher keeps
 * DT >= NCH, both powers of two).
 */
struct chunk {
    int s, c0;
};

__device__ chunk chunk_of(int i, const tc_args &a) {
    return chunk{(i * NCH) >> a.lgDT, (i * NCH) & (a.DT - 1)};
}

/* Column 0 of C is in the lanes t == 0: c[0] row g, c[2] row g+8. Rows g and g+8 of the NCH channels go to
 * the output staging tile sO as one 8-byte store each. */
template <class T>
__device__ void stage_column0(uint16_t *sO, const tc_args &a, chunk ch, const float (&acc)[NCH][4]) {
    static_assert(NCH == 4, "one uint2 holds the four channels of a chunk");
    const int g = (threadIdx.x % 32) / 4;
    if (threadIdx.x % 4 != 0) return;
    uint16_t *o = sO + (16 * ch.s + g) * a.OS + ch.c0;
    *reinterpret_cast<uint2 *>(o) = make_uint2(ladder_pack2_float<T>(acc[0][0], acc[1][0]),
                                               ladder_pack2_float<T>(acc[2][0], acc[3][0]));
    *reinterpret_cast<uint2 *>(o + 8 * a.OS) = make_uint2(ladder_pack2_float<T>(acc[0][2], acc[1][2]),
                                                          ladder_pack2_float<T>(acc[2][2], acc[3][2]));
}

/*
 * Forward on the tensor cores. With the lane numbering of common/mma.cuh (g = lane/4, t = lane%4), register r
 * of A is row i = g + 8*(r&1), columns j = 16*ks + 8*(r>>1) + 2t and j+1 of the band matrix, that is taps
 * w = j-i and w+1 of kernels row t0+16s+i: one aligned 32-bit word of the tile (see the opening comment).
 */
template <class T>
__device__ void fwd_mma(const tc_args &a, const uint16_t *sX, const uint16_t *sK, uint16_t *sO) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t B[2] = {0u, 0u}; // columns 1..7 of B (lanes g != 0) stay zero: n = 8 is the mma's minimum
    for (int ci = threadIdx.x / 32; ci < NS * a.DT / NCH; ci += NWARPS) {
        const chunk ch = chunk_of(ci, a);
        const uint16_t *k0 = sK + ch.c0 * a.CS + 16 * ch.s * a.RK; // channel c0 + n: k0 + n * CS
        const uint16_t *x0 = sX + ch.c0 * a.XS + 16 * ch.s;
        const int zero = (a.krows - 16 * ch.s) * a.RK; // the zero pair after the rows, from k0 + n * CS
        float acc[NCH][4] = {};
        for (int ks = 0; ks < a.KS; ks++) {
            int off[4];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int i = g + 8 * (r & 1), j = 16 * ks + 8 * (r >> 1) + 2 * t;
                const int w = j - i; // A[i][j] = kernels[t0+16s+i][w], A[i][j+1] = kernels[t0+16s+i][w+1]
                // a pair touching the band (-1 <= w <= W-1) reads its row, where taps -1 and W are zero
                // padding; the others read the zero pair. The offset is even: RK is odd and w has i's parity
                off[r] = (unsigned)(w + 1) <= (unsigned)a.W ? i * a.RK + w : zero;
            }
#pragma unroll
            for (int n = 0; n < NCH; n++) {
                uint32_t A[4];
#pragma unroll
                for (int r = 0; r < 4; r++) A[r] = ladder_lds32(k0 + n * a.CS + off[r]);
                if (g == 0) { // B rows 2t, 2t+1 and 2t+8, 2t+9 of column 0: x-tile rows 16s + 16ks + 2t ..
                    const uint16_t *x = x0 + n * a.XS + 16 * ks + 2 * t;
                    B[0] = ladder_lds32(x);
                    B[1] = ladder_lds32(x + 8);
                }
                ladder_mma_m16n8k16<T>(acc[n], A, B);
            }
        }
        stage_column0<T>(sO, a, ch, acc);
    }
}

/*
 * dx on the tensor cores, the transposed band. Register r of A' is row i, columns j, j+1 as above:
 * kernels[t0+16s+j][w] and kernels[t0+16s+j+1][w-1] with w = W-1+i-j, two taps of two different token rows,
 * so two 16-bit loads joined by one byte permute, whose selector also zeroes a half outside the band.
 */
template <class T>
__device__ void dx_mma(const tc_args &a, const uint16_t *sG, const uint16_t *sK, uint16_t *sO) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t B[2] = {0u, 0u};
    for (int ci = threadIdx.x / 32; ci < NS * a.DT / NCH; ci += NWARPS) {
        const chunk ch = chunk_of(ci, a);
        const uint16_t *k0 = sK + ch.c0 * a.CS + 16 * ch.s * a.RK;
        const uint16_t *g0 = sG + ch.c0 * a.GS + 16 * ch.s;
        float acc[NCH][4] = {};
        for (int ks = 0; ks < a.KS; ks++) {
            int off[4];
            uint32_t sel[4];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int i = g + 8 * (r & 1), j = 16 * ks + 8 * (r >> 1) + 2 * t;
                const int w = a.W - 1 + i - j;
                // __byte_perm(lo, hi, sel): bytes 0-1 from lo (0x10) or zero (0x22: byte 2 of a 16-bit
                // value), bytes 2-3 from hi (0x54) or zero (0x22)
                sel[r] = ((unsigned)w < (unsigned)a.W ? 0x0010u : 0x0022u) |
                         ((unsigned)(w - 1) < (unsigned)a.W ? 0x5400u : 0x2200u);
                off[r] = j * a.RK + w;
            }
#pragma unroll
            for (int n = 0; n < NCH; n++) {
                const uint16_t *k = k0 + n * a.CS;
                uint32_t A[4];
#pragma unroll
                for (int r = 0; r < 4; r++) // tap w of row j, then tap w-1 of row j+1
                    A[r] = __byte_perm(k[off[r]], k[off[r] + a.RK - 1], sel[r]);
                if (g == 0) { // B: dout-tile rows 16s + 16ks + 2t ..
                    const uint16_t *d = g0 + n * a.GS + 16 * ks + 2 * t;
                    B[0] = ladder_lds32(d);
                    B[1] = ladder_lds32(d + 8);
                }
                ladder_mma_m16n8k16<T>(acc[n], A, B);
            }
        }
        stage_column0<T>(sO, a, ch, acc);
    }
}

/* dkernels[t,d,w] = dout[t,d] * x[t+w-W+1,d] (0 before the sequence start): no sum, so one fp32 multiply
 * each, rounded to T, written as 8 consecutive (channel, tap) elements per thread. */
template <class T>
__device__ void dkernels_mul(const tc_args &a, const tile &tl, const uint16_t *sX, const uint16_t *sG,
                             const int *wmin) {
    const int n = a.DT * a.W, nv = tl.Dv * a.W, cpr = (n + 7) / 8;
    for (int i = threadIdx.x; i < TT * cpr; i += NT) {
        const int row = i / cpr, f0 = 8 * (i % cpr);
        const int64_t tok = tl.t0 + row;
        if (tok >= a.T || f0 >= nv) continue;
        float v[8];
        for (int k = 0, c = f0 / a.W, w = f0 % a.W; k < 8; k++) {
            // x-tile row row+w is token tok+w-W+1, inside the sequence from tap wmin[row] on
            const bool in = f0 + k < nv && w >= wmin[row];
            v[k] = in ? ladder_to_float<T>(sG[c * a.GS + row]) * ladder_to_float<T>(sX[c * a.XS + row + w])
                      : 0.0f;
            if (++w == a.W) w = 0, c++;
        }
        uint16_t *p = a.dk + ((tl.b * a.T + tok) * a.D + tl.d0) * a.W + f0;
        if (a.vec_dk && f0 + 8 <= nv) {
            *reinterpret_cast<uint4 *>(p) = make_uint4(ladder_pack2_float<T>(v[0], v[1]),
                                                       ladder_pack2_float<T>(v[2], v[3]),
                                                       ladder_pack2_float<T>(v[4], v[5]),
                                                       ladder_pack2_float<T>(v[6], v[7]));
        } else {
            for (int k = 0; k < 8 && f0 + k < nv; k++) p[k] = ladder_from_float<T>(v[k]);
        }
    }
}

/* The staged [TT][OS] tile -> rows t0.. of a contiguous [B,T,D] output, 8 channels per thread. */
__device__ void store_tokens(uint16_t *dst, const uint16_t *sO, const tc_args &a, const tile &tl, bool vec) {
    const int cpr = (a.DT + 7) / 8;
    for (int i = threadIdx.x; i < TT * cpr; i += NT) {
        const int row = i / cpr, c = 8 * (i % cpr);
        const int64_t tok = tl.t0 + row;
        if (tok >= a.T || c >= tl.Dv) continue;
        uint16_t *p = dst + (tl.b * a.T + tok) * a.D + tl.d0 + c;
        const uint16_t *q = sO + row * a.OS + c;
        if (vec && c + 8 <= tl.Dv) {
            *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(q);
        } else {
            for (int k = 0; k < 8 && c + k < tl.Dv; k++) p[k] = q[k];
        }
    }
}

template <class T> __global__ void __launch_bounds__(NT) dynconv_fwd_tc_kernel(const tc_args a) {
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sX = reinterpret_cast<uint16_t *>(smem + a.off_x); // [DT][XS]: x rows t0-W+1 ..
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem + a.off_k); // [DT][TT][RK] (stride CS per channel)
    uint16_t *sO = reinterpret_cast<uint16_t *>(smem + a.off_o); // [TT][OS]
    int *wmin = reinterpret_cast<int *>(smem + a.off_b);         // [TT]
    const tile tl = tile_of(a);

    stage_tokens(sX, a.XS, a.xrows, TT + a.W - 1, a.x, a.sx, a, tl, tl.t0 - a.W + 1, a.vec_x);
    stage_kernels(sK, a, tl, a.krows, TT, tl.t0);
    zero_padding(sK, a);
    if (a.cu_seqlens) stage_bounds(wmin, TT, a, tl);
    __syncthreads(); // every tile is complete before it is masked or read
    if (a.cu_seqlens) {
        mask_kernels(sK, wmin, TT, a);
        __syncthreads();
    }
    fwd_mma<T>(a, sX, sK, sO);
    __syncthreads(); // sO holds every warp's columns before the rows go out
    store_tokens(a.out, sO, a, tl, a.vec_out);
}

template <class T> __global__ void __launch_bounds__(NT) dynconv_bwd_tc_kernel(const tc_args a) {
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sX = reinterpret_cast<uint16_t *>(smem + a.off_x); // [DT][XS]: x rows t0-W+1 .. t0+TT-1
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem + a.off_k); // [DT][krows][RK]: kernels rows t0 ..
    uint16_t *sG = reinterpret_cast<uint16_t *>(smem + a.off_g); // [DT][GS]: dout rows t0 ..
    uint16_t *sO = reinterpret_cast<uint16_t *>(smem + a.off_o); // [TT][OS]: dx
    int *wmin = reinterpret_cast<int *>(smem + a.off_b);         // [TT+W-1]
    const tile tl = tile_of(a);
    const int halo = TT + a.W - 1; // dx[t] reads dout and kernels up to token t+W-1

    stage_tokens(sX, a.XS, a.xrows, halo, a.x, a.sx, a, tl, tl.t0 - a.W + 1, a.vec_x);
    stage_tokens(sG, a.GS, a.grows, halo, a.g, a.sg, a, tl, tl.t0, a.vec_g);
    stage_kernels(sK, a, tl, a.krows, halo, tl.t0);
    stage_bounds(wmin, halo, a, tl);
    __syncthreads();
    if (a.cu_seqlens) {
        mask_kernels(sK, wmin, halo, a);
        __syncthreads();
    }
    dkernels_mul<T>(a, tl, sX, sG, wmin);
    dx_mma<T>(a, sG, sK, sO);
    __syncthreads();
    store_tokens(a.dx, sO, a, tl, a.vec_out);
}

/* -------------------------------------------------------------------------------------------------------- */

int round_up(int v, int m) { return (v + m - 1) / m * m; }
bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
bool stride8(int64_t stride, int64_t size) { return size == 1 || stride % 8 == 0; } // size 1: never stepped

/* Shared-memory layout for DT channels; returns its size in bytes. */
int layout(tc_args *a, bool bwd) {
    const int W = a->W;
    a->KS = (15 + W + 15) / 16;
    // kernels row stride: odd (aligned A pairs) and > W (a zero pad after the taps, zero_padding). Up to 9
    // that alone keeps the 32 lanes of an A load in distinct banks; past 9, a stride of 9 mod 16 does (the
    // 8 rows of a load then start 4 banks apart)
    a->RK = (W + 1) | 1;
    while (a->RK > 9 && a->RK % 16 != 9) a->RK += 2;
    const int band_rows = TT - 16 + 16 * a->KS; // rows a 16-token tile's k steps can touch
    a->xrows = bwd ? TT + W - 1 : band_rows;
    a->krows = bwd ? band_rows : TT;
    a->grows = band_rows;
    // channel strides of an odd number of words, so that staging lanes writing neighbouring channels of one
    // token row hit different banks
    a->XS = round_up(a->xrows, 4) + 2;
    a->GS = round_up(a->grows, 4) + 2;
    a->CS = round_up(a->krows * a->RK, 4) + 2;
    a->OS = round_up(a->DT, 8) + 8; // 8 lanes writing rows g = 0..7 of one column land in 8 banks
    int off = 0;
    a->off_x = off, off += round_up(a->DT * a->XS * 2, 16);
    a->off_k = off, off += round_up(a->DT * a->CS * 2, 16);
    a->off_g = off, off += bwd ? round_up(a->DT * a->GS * 2, 16) : 0;
    a->off_o = off, off += round_up(TT * a->OS * 2, 16);
    a->off_b = off, off += (TT + W - 1) * 4;
    return off;
}

/* Tile sizes, shared-memory layout and the 16-byte-path checks for one call. */
ladder_status plan(const ladder_dynconv_problem *p, const ladder_dynconv_args *args, bool bwd, tc_args *a,
                   int *smem, unsigned *blocks) {
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
    a->cu_seqlens = (const int32_t *)args->cu_seqlens.data;
    a->n_seqs = args->cu_seqlens.data ? (int)args->cu_seqlens.shape[0] - 1 : 0;

    // widest power-of-two channel tile (<= 64, and no wider than D needs) whose tiles fit the budget;
    // DT*W <= 8*NT then holds too (one staging pass covers a kernels row)
    a->DT = 64;
    while (a->DT > NCH && a->DT / 2 >= p->D) a->DT /= 2;
    while (a->DT > NCH && layout(a, bwd) > SMEM_BUDGET) a->DT /= 2;
    *smem = layout(a, bwd);
    a->lgDT = 0;
    while ((1 << a->lgDT) < a->DT) a->lgDT++;
    if (*smem > SMEM_BUDGET)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "gpu_tensorcore: W = %d needs %d bytes of shared memory", p->W,
                           *smem);
    a->n_dtiles = (int)((p->D + a->DT - 1) / a->DT);
    a->n_ttiles = (int)((p->T + TT - 1) / TT);
    const long long n_blocks = (long long)p->B * a->n_ttiles * a->n_dtiles;
    if (n_blocks > INT_MAX || p->D > INT_MAX)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "gpu_tensorcore: B*T*D too large (%lld blocks of %d x %d)",
                           n_blocks, TT, a->DT);
    *blocks = (unsigned)n_blocks;

    const int64_t *sx = a->sx, *sk = a->sk, *sg = a->sg;
    a->vec_x = aligned16(a->x) && sx[2] == 1 && stride8(sx[1], p->T) && stride8(sx[0], p->B) && a->DT % 8 == 0;
    a->vec_g = bwd && aligned16(a->g) && sg[2] == 1 && stride8(sg[1], p->T) && stride8(sg[0], p->B) &&
               a->DT % 8 == 0;
    a->vec_k = aligned16(a->k) && (p->W == 1 || sk[3] == 1) && (p->D == 1 || sk[2] == p->W) && stride8(sk[1], p->T) &&
               stride8(sk[0], p->B) && a->DT * p->W % 8 == 0;
    a->vec_out = aligned16(bwd ? (void *)a->dx : (void *)a->out) && p->D % 8 == 0 && a->DT % 8 == 0;
    a->vec_dk = bwd && aligned16(a->dk) && p->D * p->W % 8 == 0 && a->DT * p->W % 8 == 0;
    return LADDER_OK;
}

template <class T> ladder_status launch(const ladder_dynconv_problem *p, const ladder_dynconv_args *args, bool bwd) {
    tc_args a;
    int smem;
    unsigned blocks;
    ladder_status st = plan(p, args, bwd, &a, &smem, &blocks);
    if (st != LADDER_OK) return st;
    auto kernel = bwd ? dynconv_bwd_tc_kernel<T> : dynconv_fwd_tc_kernel<T>;
    if (smem > 48 * 1024) // above the default limit a block must ask for its dynamic shared memory
        LADDER_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<blocks, NT, smem>>>(a);
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
