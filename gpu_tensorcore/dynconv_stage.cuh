/*
 * gpu_tensorcore/dynconv_stage.cuh: the dynconv tensor-core rung's call and how it stages its tiles (ideas 3 and 4
 * of dynconv.cu's opening comment, which tells the rung): the sizes and the argument block (tc_args, filled by
 * dynconv.cu's plan()), the block's place (tile_of), the copies into shared memory (stage, stage_sheared, and the
 * backward walk's stage_walk), the sequence bounds and masks of varlen (stage_bounds, mask_kernels). Included by
 * dynconv.cu alone: its kernels are the only users, so it keeps their internal linkage.
 */
#ifndef LADDER_GPU_TENSORCORE_DYNCONV_STAGE_CUH
#define LADDER_GPU_TENSORCORE_DYNCONV_STAGE_CUH

#include <stdint.h>

#include "mma.cuh"
#include "varlen.h"

namespace {

constexpr int NT = 256;                 // threads per block
constexpr int NWARPS = NT / 32;
constexpr int TT = 64;                  // tokens per block
constexpr int TT_SHEAR = 32;            // ... in a sheared backward whose tiles miss SMEM_TARGET (plan)
constexpr int NCH = 8;                  // channels per mma: the 8 columns of B
constexpr int UNIT = 4;                 // mma products a warp carries through the k loop together
constexpr int SMEM_TARGET = 56 * 1024;  // per block, when picking the channel tile: several blocks per SM
constexpr int SMEM_MAX = 160 * 1024;    // per block, for large W; below sm_80's 163 KB
constexpr int SHEAR_W = 32;             // the backward stages its kernels sheared past this W (stage_sheared)
constexpr int SHEAR_ROWS = 8;           // source rows a thread loads before it stores any, there
constexpr int WALK_W = 33;              // the backward walks down the sequence from this W on (where it can; plan)
constexpr int WALK = -1;                // ... as the backward kernel's instantiation NKC = WALK (bwd_walk)
constexpr int WALK_KC = 32;             // ... kernels rows a step (at W = 64 16 measured slower, 40 the same)
constexpr int WALK_STAGES = 2;          // ... steps staged at once: one computed while the next one's loads fly

/* Everything the kernels need, filled by plan(). Sizes and strides in elements, offsets in bytes. */
struct tc_args {
    const uint16_t *x, *k, *g;   // x [B,T,D], kernels [B,T,D,W], dout [B,T,D] (raw 16-bit patterns)
    uint16_t *out, *dx, *dk;     // outputs, contiguous
    int64_t sx[4], sk[4], sg[4]; // input strides; x and dout as [B,T,D,1]
    int64_t T, D;
    int W, We;                   // taps, and taps per staged kernels slot (W rounded up to even)
    int KS;                      // pitch of a channel's slot in the kernels tile: We, or We + 8 (layout)
    int xr;                      // forward kernels tile: channel c's row r stored at r ^ (c & xr); 7 or 0 (layout)
    int S, lgS, NK;              // token distance of rows g and g+8 of A (S = 2^lgS); k steps (of 8) per mma
    const int32_t *cu_seqlens;   // nullptr: every batch row is one sequence
    int n_seqs;
    int DT, lg_oct;              // channels per block, DT = NCH * 2^lg_oct
    int KR, krows;               // kernels tile [krows][DT][KS]: row pitch, rows
    int CR;                      // row pitch of the [token][channel] tiles: x and dout
    int OP;                      // row pitch of the [channel][token] output tile: TB + 8
    int xrows, grows;            // x and dout tile rows
    int off_x, off_k, off_g, off_o, off_b;
    bool vec_x, vec_k, vec_g, vec_out, vec_dk; // 16-byte path per tensor
    bool shear;                  // backward, W > SHEAR_W: the kernels tile is sheared, dx is fwd_mma's product
    int tt;                      // tokens per block, the kernel's template argument TB: TT or TT_SHEAR
    bool walk;                   // backward, the walk (dynconv.cu, bwd_walk): W >= WALK_W, W % 8 == 0, 16-byte paths
    int run;                     // ... tokens a block walks (pick_run), a multiple of the step
    int ng;                      // ... slots of its dx ring, a power of two (8-token groups alive at once)
    int kbuf, xbuf;              // ... elements of a stage's kernels and x tiles
    int off_r;                   // ... bytes to its dx ring
};

/* The block's place: batch row b, first token t0, first channel d0, Dv channels inside D. */
struct tile {
    int64_t b, t0;
    int d0, Dv;
};

/* The grid is (token tiles, channel tiles, batch rows). */
template <int TB> __device__ tile tile_of(const tc_args &a) {
    tile tl;
    tl.b = blockIdx.z;
    tl.t0 = (int64_t)blockIdx.x * TB;
    tl.d0 = (int)blockIdx.y * a.DT;
    tl.Dv = (int)min((int64_t)a.DT, a.D - tl.d0);
    return tl;
}

/*
 * i / n and i % n, by a shift and a mask where n is a power of two. The staging and store loops divide by counts
 * of 8-element chunks, powers of two unless W is not one, and a 32-bit division takes some 20 instructions: at
 * W = 2 as many as a warp spends on one of its units.
 */
struct quot_rem {
    int q, r;
};
__device__ __forceinline__ quot_rem divmod(int i, int n) {
    if ((n & (n - 1)) == 0) return {i >> (__ffs(n) - 1), i & (n - 1)};
    return {i / n, i % n};
}

/*
 * Stage rows tok0 .. tok0+rows-1 of a [B,T,D,nw]-strided input into dst[row * ld + c * slot + w] = src[b,
 * tok0+row, d0+c, w] for w < w_real (slot = nw, or slot > nw with nw % 8 == 0: a chunk then stays in one
 * slot), at row (row ^ (c & xr)) where xr is not 0 (then slot == nw; layout). Zero where w >= w_real (padding
 * taps), c >= Dv, row >= live, or the token lies outside [0,T): the mma multiplies them by zero weights, and
 * 0 * 0 is harmless where 0 * garbage might be NaN. x and dout are the case nw = slot = w_real = 1. A row is
 * DT*nw elements, copied 8 at a time: one 16-byte cp.async where the input is contiguous and aligned (vec),
 * element loads otherwise. Each thread keeps the same 8-element chunk of every row it copies, so the 16-byte path
 * divides nothing per chunk.
 */
__device__ void stage(uint16_t *dst, int ld, int rows, int live, const uint16_t *src, const int64_t *st, int nw,
                      int slot, int w_real, bool vec, int xr, const tc_args &a, const tile &tl, int64_t tok0) {
    const int cpr = a.DT * nw / 8, nv = tl.Dv * nw;        // chunks per row, valid elements per row
    const int per_row = min(cpr, NT), row_step = divmod(NT, per_row).q; // threads per row, rows per pass
    const quot_rem tr = divmod(threadIdx.x, per_row);                     // the thread's row and column
    const int r0 = tr.q;
    if (r0 >= row_step) return;
    const uint16_t *base = src + tl.b * st[0] + (int64_t)tl.d0 * st[2];
    // rows holding input: tokens in [0, T), rows below live
    const int row_lo = (int)max((int64_t)0, -tok0), row_hi = (int)min((int64_t)live, a.T - tok0);
    for (int f0 = 8 * tr.r; f0 < 8 * cpr; f0 += 8 * per_row) {
        // where the chunk lands in a tile row (divided only where the slot is padded: computing the quotient for
        // every chunk moved the compiler's register allocation and doubled the forward's k-loop bookkeeping)
        const int fd = slot == nw ? f0 : f0 / nw * slot + f0 % nw;
        const int cx = xr ? divmod(f0, nw).q & xr : 0; // the chunk's channel's row swizzle (xr: slot == nw)
        if (vec && f0 + 8 <= nv) { // each chunk of this column is 16 bytes of input, or a zero row
            // the source address steps down the column: no 64-bit multiply per chunk
            const uint16_t *s = base + (tok0 + r0) * st[1] + f0;
            const int64_t s_step = row_step * st[1];
            for (int row = r0; row < rows; row += row_step, s += s_step) {
                const bool in = row >= row_lo && row < row_hi;
                ladder_cp_async16(dst + (row ^ cx) * ld + fd, in ? s : src, in);
            }
            continue;
        }
        for (int row = r0; row < rows; row += row_step) {
            uint16_t *d = dst + (row ^ cx) * ld + fd;
            const bool in = row >= row_lo && row < row_hi && f0 < nv;
            uint16_t e[8];
#pragma unroll
            for (int k = 0, c = f0 / nw, w = f0 % nw; k < 8; k++) {
                e[k] = in && f0 + k < nv && w < w_real ? base[(tok0 + row) * st[1] + c * st[2] + w * st[3]] : 0;
                if (++w == nw) w = 0, c++;
            }
            *reinterpret_cast<uint4 *>(d) = ladder_pack8(e);
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
 * Past W = SHEAR_W the backward stages its kernels tile sheared: sK[j][c][p] = kernels[t0+j+p][c][W-1-p], the
 * weight through which dout[t0+j+p] reaches dx[t0+j]. Then dx[j] = sum_p sK[j][p] * dout[j+p] is the forward's
 * product (fwd_mma, with the dout tile as its x), and the tile holds TB rows of weights where the plain layout
 * holds every row the k steps reach, TB - S + 8*NK (128 at W = 64: twice the shared memory, one block per SM).
 * The copy is a transpose: tap w of source row s goes to row j = s - d, d = W-1-w, so it runs through
 * registers, not cp.async. Taps that cross a sequence start (w < wmin[s]) are stored as zeros, mask_kernels'
 * rule. Each thread keeps one chunk of taps of one channel, works out once where they land, and walks down only
 * the rows that have a tap in the tile, SHEAR_ROWS loads in flight.
 *
 * Where the kernels take the 16-byte path and W % 8 == 0, a chunk is 8 taps (one 16-byte load), and a thread
 * walks down consecutive rows: slots d and d+1 of row j (d even) are tap W-1-d of source row j+d and tap W-2-d
 * of row j+d+1, so two neighbouring source rows give 4 whole 32-bit words of the tile (their odd and even taps,
 * one byte_perm each). Half the stores of one tap at a time, and half the shared-memory wavefronts: the 8 chunks
 * of a warp's row land 16 bytes apart in the banks, so every store instruction of a warp is 4-way conflicted,
 * whatever its width. Else (odd W, strided kernels) a chunk is one tap, stored alone.
 *
 * A thread's 16 bytes are half a 32-byte sector, whose other half its neighbour (taps w0+8 ..) loads 8 rows
 * later, so a sector is fetched twice unless the L1 still holds it then. Where W % 32 == 0 (in the sheared range,
 * W = 64, a window of 95 rows of 1 KB) a thread takes 16 taps instead, a whole sector, two 16-byte loads a row.
 * W = 48 keeps 8 taps: its smaller window and tiles leave the L1 more room, and there the fewer loads in flight
 * cost more than the sectors fetched twice (both measured in
 * docs/results/h100-2026-11-24-notes-dynconv-tensorcore.md, session 16).
 */
template <int TB>
__device__ void stage_sheared(uint16_t *sK, const int *wmin, const tc_args &a, const tile &tl) {
    const int W = a.W, rows = TB + W - 1, row_hi = (int)min((int64_t)rows, a.T - tl.t0); // rows inside [0, T)
    const uint16_t *base = a.k + tl.b * a.sk[0] + tl.t0 * a.sk[1] + (int64_t)tl.d0 * a.sk[2];
    const int len = a.DT * W, nv = tl.Dv * W; // a source row's taps; those of channels inside D
    if (a.vec_k && W % 32 == 0) { // 16 taps a thread: whole 32-byte sectors (above)
        const int per_row = min(len / 16, NT), row_step = divmod(NT, per_row).q;
        const quot_rem tr = divmod(threadIdx.x, per_row);
        const int r0 = tr.q;
        if (r0 >= row_step) return;
        for (int e0 = 16 * tr.r; e0 < len; e0 += 16 * per_row) {
            const quot_rem cw = divmod(e0, W);
            const int c = cw.q, w0 = cw.r, d0 = W - 1 - w0; // taps w0 .. w0+15: slots d0 .. d0-15
            const int dst = c * a.KS + (d0 - 1) * (1 - a.KR); // as below, with words i < 8
            // word i of every lane's row lands at bank 4c - 8 (w0 / 16) + 7i + const (KS / 2 and KR / 2 are 4 mod 32):
            // in one store of all lanes' word i, 4 lanes per bank. Store k takes word (k + rot) % 8 instead, rot =
            // w0 / 16 % 4: then 4c - rot + 7k, 32 banks
            const int rot = w0 / 16 & 3;
            const bool present = e0 < nv;
            const int lo = d0 - 15, hi = min(rows, d0 + TB); // pairs r, r+1 with r in [lo, hi-1) reach the tile
            // the thread's pairs are one run of consecutive ones, NP at a time: each source row is loaded once (a
            // batch's last row is the next one's first), and 8 32-bit words of registers per row allow no more
            // than 3 rows in flight in 64 registers
            constexpr int NP = 2;
            const int np = hi - 1 - lo, seg = (np + row_step - 1) / row_step;
            const int p0 = lo + r0 * seg, p1 = min(hi - 1, p0 + seg);
            if (p0 >= p1) continue;
            const uint16_t *src = base + p0 * a.sk[1] + e0;
            uint32_t q[NP + 1][8];
            auto load = [&](int u, int su) {
                uint4 v0 = make_uint4(0, 0, 0, 0), v1 = v0;
                if (present && su < row_hi) {
                    v0 = *reinterpret_cast<const uint4 *>(src);
                    v1 = *reinterpret_cast<const uint4 *>(src + 8);
                }
                src += a.sk[1];
                q[u][0] = v0.x, q[u][1] = v0.y, q[u][2] = v0.z, q[u][3] = v0.w;
                q[u][4] = v1.x, q[u][5] = v1.y, q[u][6] = v1.z, q[u][7] = v1.w;
                if (a.cu_seqlens) { // taps before the row's sequence start: zeros (below)
                    const int lead = su < rows ? wmin[su] - w0 : 0;
                    if (lead > 0) {
#pragma unroll
                        for (int i = 0; i < 8; i++)
                            q[u][i] &= (2 * i + 1 < lead ? 0u : 0xFFFF0000u) | (2 * i < lead ? 0u : 0xFFFFu);
                    }
                }
                // rotated by rot words (q[u][k] is then word (k + rot) % 8), in two steps of selects
                uint32_t y[8];
#pragma unroll
                for (int k = 0; k < 8; k++) y[k] = rot & 1 ? q[u][(k + 1) % 8] : q[u][k];
#pragma unroll
                for (int k = 0; k < 8; k++) q[u][k] = rot & 2 ? y[(k + 2) % 8] : y[k];
            };
            load(0, p0);
            uint32_t *d = reinterpret_cast<uint32_t *>(sK + p0 * a.KR + dst);
            const int wstep = a.KR - 1;
            for (int s = p0; s < p1; s += NP) {
#pragma unroll
                for (int u = 1; u <= NP; u++) load(u, s + u); // rows s+1 .. s+NP (past hi: read, never stored)
#pragma unroll
                for (int u = 0; u < NP; u++, d += a.KR / 2) {
                    if (s + u >= p1) break;
                    const int j0 = s + u - d0 + 1;
#pragma unroll
                    for (int k = 0; k < 8; k++) {
                        const int i = (k + rot) & 7; // the word this lane stores in store k
                        if ((unsigned)(j0 + 2 * i) < (unsigned)TB)
                            d[i * wstep] = __byte_perm(q[u][k], q[u + 1][k], 0x5432);
                    }
                }
#pragma unroll
                for (int i = 0; i < 8; i++) q[0][i] = q[NP][i];
            }
        }
        return;
    }
    if (a.vec_k && W % 8 == 0) {
        const int per_row = min(len / 8, NT), row_step = divmod(NT, per_row).q;
        const quot_rem tr = divmod(threadIdx.x, per_row);
        const int r0 = tr.q;
        if (r0 >= row_step) return;
        for (int e0 = 8 * tr.r; e0 < len; e0 += 8 * per_row) {
            const quot_rem cw = divmod(e0, W);
            const int c = cw.q, w0 = cw.r, d0 = W - 1 - w0; // taps w0 .. w0+7: slots d0 .. d0-7
            // pair (r, r+1), word i: taps w0+2i+1 of row r and w0+2i of row r+1, slot d = d0-1-2i of row r-d,
            // at sK[r*KR + dst + 2i*(KR-1)]
            const int dst = c * a.KS + (d0 - 1) * (1 - a.KR);
            const bool present = e0 < nv;                 // a channel of the tile inside D
            const int lo = d0 - 7, hi = min(rows, d0 + TB); // pairs r, r+1 with r in [lo, hi-1) reach the tile
            constexpr int NP = 6; // pairs per batch, from NP + 1 rows
            for (int s = lo + NP * r0; s < hi - 1; s += NP * row_step) { // pairs s .. s+NP-1
                // the source address steps down the column, and the tile's rows follow: one 64-bit multiply and
                // one shared-memory row offset per batch, not per row (a third fewer instructions a batch, by
                // the SASS)
                const uint16_t *src = base + s * a.sk[1] + e0;
                uint4 q[NP + 1];
#pragma unroll
                for (int u = 0; u <= NP; u++, src += a.sk[1]) { // all loads first: rows s .. s+NP
                    q[u] = make_uint4(0, 0, 0, 0);
                    if (present && s + u < row_hi) q[u] = *reinterpret_cast<const uint4 *>(src);
                }
                // taps before the row's sequence start: zeros. Only with cu_seqlens: without, such a tap reaches
                // before token 0, and so lands on a tile row below 0, which no store below writes
                if (a.cu_seqlens) {
#pragma unroll
                    for (int u = 0; u <= NP; u++) {
                        const int su = s + u, lead = su < hi ? wmin[su] - w0 : 0;
                        if (lead > 0) {
                            uint32_t qw[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
                            for (int i = 0; i < 4; i++)
                                qw[i] &= (2 * i + 1 < lead ? 0u : 0xFFFF0000u) | (2 * i < lead ? 0u : 0xFFFFu);
                            q[u] = make_uint4(qw[0], qw[1], qw[2], qw[3]);
                        }
                    }
                }
                uint32_t *d = reinterpret_cast<uint32_t *>(sK + s * a.KR + dst); // word 0 of pair s
                const int j0 = s - d0 + 1, wstep = a.KR - 1; // pair r's word i lands on tile row r - d0 + 1 + 2i
#pragma unroll
                for (int u = 0; u < NP; u++, d += a.KR / 2) {
                    if (s + u >= hi - 1) break;
                    const uint32_t lo_w[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
                    const uint32_t hi_w[4] = {q[u + 1].x, q[u + 1].y, q[u + 1].z, q[u + 1].w};
#pragma unroll
                    for (int i = 0; i < 4; i++) // tap w0+2i+1 of row r (high half) below tap w0+2i of row r+1
                        if ((unsigned)(j0 + u + 2 * i) < (unsigned)TB)
                            d[i * wstep] = __byte_perm(lo_w[i], hi_w[i], 0x5432);
                }
            }
        }
        return;
    }
    const int per_row = min(len, NT), row_step = NT / per_row, r0 = threadIdx.x / per_row;
    if (r0 < row_step) {
        for (int e0 = threadIdx.x % per_row; e0 < len; e0 += per_row) {
            const int c = e0 / W, w = e0 % W, d = W - 1 - w; // tap w lands on row s - d, slot d
            const int dst = c * a.KS + d - d * a.KR;          // ... at sK[s*KR + dst]
            const int64_t col = c * a.sk[2] + w * a.sk[3];
            const bool present = e0 < nv;                     // a channel of the tile inside D
            const int hi = min(rows, d + TB);                 // rows d .. hi-1 have this tap in the tile
            for (int s = d + (r0 - d % row_step + row_step) % row_step; s < hi; s += SHEAR_ROWS * row_step) {
                uint16_t q[SHEAR_ROWS];
#pragma unroll
                for (int u = 0; u < SHEAR_ROWS; u++) { // all loads first
                    const int su = s + u * row_step;
                    q[u] = present && su < row_hi ? base[su * a.sk[1] + col] : 0;
                }
#pragma unroll
                for (int u = 0; u < SHEAR_ROWS; u++) {
                    const int su = s + u * row_step;
                    if (su >= hi) break;
                    sK[su * a.KR + dst] = w >= wmin[su] ? q[u] : 0;
                }
            }
        }
    }
    if (a.We > W) // odd W: the pad tap p = W, which the mma reads beside tap W-1
        for (int i = threadIdx.x; i < TB * a.DT; i += NT) sK[i / a.DT * a.KR + i % a.DT * a.KS + W] = 0;
}

/*
 * The walk's staging (dynconv.cu, bwd_walk): step rows t .. t+KC-1 into stage buffer sb, all with cp.async, nothing
 * through registers. Kernels rows in the plain layout, row r at sK[r*KR + c*KS + w], the KS - W taps after each slot
 * and the 8 after each row left zero (bwd_walk clears them once); dout rows t .. t+KC-1 at sG[r*8 + c]; x rows
 * t-W+1 .. t+KC-1 (x-tile row j is token t-W+1+j) at sX[xrow(j) + c], a 16-byte gap after every 8 rows (xrow) so that
 * dk_walk's loads of rows 8 apart hit different banks. Kernels and dout rows past `rows_end` (the walk's end), x rows
 * outside [0, T), are zero-filled; with cu_seqlens also each row's first in-sequence tap, wmin, as stage_bounds.
 * The 16-byte path only (plan: W % 8 == 0, D % 8 == 0), so a chunk of 8 taps never straddles two channels.
 */
__device__ __forceinline__ int xrow(int j) { return (j + (j >> 3)) * NCH; }

template <int KC>
__device__ void stage_walk(uint16_t *sK, uint16_t *sG, uint16_t *sX, int *wmin, const tc_args &a, int64_t b, int d0,
                           int64_t t, int64_t rows_end) {
    const int W = a.W, nq = W / 8, tid = threadIdx.x;
    // kernels: a row is W chunks of 16 bytes (8 channels x W taps); a thread keeps chunk f and walks rows r0, r0 +
    // row_step, ...: one division per step, where the chunk lands (fd) worked out once
    const int row_step = NT / W, r0 = tid / W, f = tid - r0 * W;
    if (r0 < row_step) {
        const int fd = f / nq * a.KS + 8 * (f % nq);
        const int64_t step = row_step * a.sk[1];
        const uint16_t *src = a.k + b * a.sk[0] + (t + r0) * a.sk[1] + (int64_t)d0 * W + 8 * f;
        for (int r = r0; r < KC; r += row_step, src += step) {
            const bool in = t + r < rows_end;
            ladder_cp_async16(sK + r * a.KR + fd, in ? src : a.k, in);
        }
    }
    if (tid < KC) { // dout row t+tid
        const bool in = t + tid < rows_end;
        ladder_cp_async16(sG + tid * NCH, in ? a.g + b * a.sg[0] + (t + tid) * a.sg[1] + d0 : a.g, in);
    } else if (tid < KC + KC + W - 1) { // x row j = tid-KC, token t-W+1+j
        const int j = tid - KC;
        const int64_t tok = t - W + 1 + j;
        const bool in = tok >= 0 && tok < a.T;
        ladder_cp_async16(sX + xrow(j), in ? a.x + b * a.sx[0] + tok * a.sx[1] + d0 : a.x, in);
    }
    if (a.cu_seqlens && tid >= NT - KC) { // wmin[r], as stage_bounds
        const int r = tid - (NT - KC);
        const int64_t tr = t + r;
        const int64_t start = tr < a.T ? ladder_seq_start(a.cu_seqlens, a.n_seqs, tr) : 0;
        wmin[r] = (int)min(max(start - tr + W - 1, (int64_t)0), (int64_t)W);
    }
}

/*
 * With cu_seqlens: zero the taps that reach across a sequence start. Tap w of token t pairs x[t+w-W+1] with
 * out[t] in the forward and dout[t] with dx[t+w-W+1] in the backward: one edge, which crosses a boundary
 * exactly when t+w-W+1 < start(t). With those taps zero, the mma loops below need no masks. (Without
 * cu_seqlens such taps reach before token 0: the forward meets zero x rows there, and dx has no output there.)
 */
__device__ void mask_kernels(uint16_t *sK, const int *wmin, int rows, const tc_args &a, int xr) {
    for (int i = threadIdx.x; i < rows * a.DT; i += NT) {
        const int r = i / a.DT, c = i % a.DT;
        for (int w = 0; w < wmin[r]; w++) sK[(r ^ (c & xr)) * a.KR + c * a.KS + w] = 0; // stage's row swizzle
    }
}

} // namespace

#endif
