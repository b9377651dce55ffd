/*
 * gpu_tiled/dynconv.cu: dynamic causal convolution, the shared-memory tiled GPU rung.
 *
 * What changed since gpu_naive/: a block copies what its outputs need from global memory into shared memory, once,
 * with coalesced (and where possible 16-byte) loads, and computes from there. DT = 32 channels per block, one per
 * lane, so an x or dout row of the block is one 128-byte line.
 *
 *   forward   a tile of TT tokens: x rows [t0-W+1, t0+TT) (the tile plus a halo of W-1 rows) and kernels rows
 *             [t0, t0+TT), every channel's W weights; warp i computes tile rows i, i+8, ... .
 *   backward  a walk down TT tokens [T0, T0+TT), KC kernels rows a step (dynconv_bwd_tiled_kernel). Each step
 *             stages its kernels rows whole, in the forward's layout, with the dout rows and the x rows that enter.
 *             In the forward x[s] met kernels row r at tap s-r+W-1, for r = s .. s+W-1: one diagonal of the rows
 *             per x token, each weight on exactly one. A thread per (s, channel) runs down its diagonal, adds
 *             dout[r]*kernels[r,w] to dx[s] and overwrites that weight, which no other thread reads, with its
 *             dkernels dout[r]*x[s]. dx[s] sums over the steps that hold its rows in a ring of W-1+KC slots, and
 *             leaves as a row when its last row has passed; dkernels leaves as rows after each step. The walk goes
 *             W-1 rows past its tokens for their dx, rows that the next block walks again.
 *
 * Why it is faster: in gpu_naive each x value is fetched by up to W threads,
 * and neighbouring threads read kernels W floats apart, so each warp load of
 * kernels spans W times the bytes it uses. Here each x, dout and kernels value
 * is read from DRAM about once (halo rows come back from L2), each warp reads
 * whole 128-byte lines, each thread keeps several independent loads in flight
 * before it stores any, and the W-fold reuse happens in shared memory.
 *
 * Few instructions per byte: at W = 2 an output is 16 bytes, and the issue slots, not DRAM, set the pace unless
 * every copy loop is cheap. So each staging thread keeps one column of the tile and walks down its rows (its
 * offsets computed once, its addresses stepped a row at a time), a token's weights move as 16-byte units from
 * global to shared memory and back (stage_rows, stage_step, write_dkernels), the forward's compute loop reads
 * V = 4, 2 or 1 weights per shared-memory load (tap_unit), one instantiation per V, and a warp of the backward walks
 * a run of tokens, its pointers stepped from one diagonal to the next.
 *
 * Tile sizes. Forward: TT is picked at run time from W, the largest of 32, 16, 8 whose tile fits in 48 KB, and 8
 * (with the launcher opting in to more shared memory) when none does; 64 at W = 1 to 3, where the forward is bound
 * by instruction issue and a larger tile pays less often for what each tile does once (pick_tokens_per_tile).
 * W = 4: 20.6 KiB; W = 64: TT = 8 and 73.9 KiB. Each channel's weights sit Ws floats apart (weight_pitch: an odd
 * number of V-wide units), so the V-wide loads of a warp, lane c on channel c, hit different banks: no bank
 * conflicts for any W. Its registers are held to 40 a thread (FWD_BLOCKS), six blocks per SM.
 * Backward: KC is the most of 64, 32, ... rows whose step fits 56 KB (pick_step_rows: W = 2 64 rows, 49 KB; W = 64
 * 4 rows, 51 KB), at the odd pitch Ws = W|1, so that the 32 channels of one tap of a diagonal sit in 32 banks.
 * TT follows the GPU: the cut of a batch row into blocks that fills the SMs' block slots in the fewest waves x rows
 * walked, or at W <= 4 walks of 256 rows where they make eight waves or more (pick_walk; at B = 2, T = 4096,
 * D = 2048, W = 64 a third of a row a block, one wave, the W-1 rows walked again adding about a twentieth to the
 * kernels reads).
 * A step's loads are all issued before its stores (stage_step): from W = 8 on in one round trip to memory (76
 * registers, three blocks per SM), below in two (64 registers, four blocks).
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, device pointers,
 * any input strides, contiguous outputs). 16-byte paths, each taken when
 * its tensor's rows are 16-byte aligned and contiguous (ladder_rows16): x and dout rows (vr), a token's
 * kernels, its DT channels x W taps (vk), and the same rows of dkernels (vdk), whatever W is; the backward stages
 * 16 bytes at a time where x, dout and kernels all allow it. Otherwise the same kernel moves one float at a time.
 * Deterministic: no atomics, each output is written by one thread, sums run in a fixed order (the forward's over
 * w ascending, dx[s] over its rows ascending).
 * Run it:  build/bin/ladder run dynconv --rung gpu_tiled
 */
#include <climits>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "dynconv_rungs.h"
#include "varlen.h"

namespace {

constexpr int DT = 32;             /* channels per tile: one per lane */
constexpr int THREADS = 256;       /* 8 warps per block */
constexpr int WARPS = THREADS / 32;
constexpr int TT_MAX = 64;         /* most tokens per tile (the forward's from W = 4 on: TT_MAX / 2) */
constexpr int UNROLL = 4;          /* loads a thread issues before it stores any */
constexpr int FWD_BLOCKS = 6;      /* blocks per SM the registers must allow: forward 40 registers a thread, */
constexpr size_t BWD_SMEM = 56 * 1024; /* the backward's shared memory at most: four blocks per SM on sm_90 */
constexpr int PF = 8;              /* backward: 16-byte units of kernels a thread loads a step (pick_step_rows), */
constexpr int ONE_TRIP_W = 8;      /* all in one round trip to memory from W = 8 on, else in two (stage_step) */
constexpr int SHORT_WALK = 256;    /* backward: kernels rows a block walks at small W, when that makes many waves */

/* 4-byte words before the forward's float tiles: w_lo_x, TT of them (4*TT bytes keep the tiles 16-byte aligned). */
__host__ __device__ constexpr int bounds_words(int TT) { return TT; }

/* What each kernel needs: base pointers, strides, sizes, sequence offsets, tile shape. */
struct tiled_args {
    const float *x, *k, *dout;
    int64_t sx[4], sk[4], sg[4];   /* x and dout as [B,T,D,1] */
    float *out, *dx, *dk;
    int64_t B, T, D;
    int W, V, Ws, TT;  /* kernel width; taps read V at a time (forward), their pitch; tokens per tile */
    int KC;            /* backward: kernels rows staged per step of the walk */
    int64_t n_dtiles, n_ttiles;    /* tiles along D and along T */
    const int32_t *cu_seqlens;     /* nullptr: every batch row is one sequence */
    int n_seqs;
    bool vr, vk, vdk;              /* 16-byte paths: x and dout rows, kernels rows, dkernels rows */
};

/* The tile this block owns: batch row b, tokens t0 .., channels d0 .. (channel tiles vary fastest, so
 * the blocks running together read whole rows, and a tile's halo was read by a recent block, still in L2). */
struct tile { int64_t b, t0, d0; };

__device__ tile tile_of(const tiled_args &a) {
    /* 32-bit division: the launcher keeps the tile count within int (a 64-bit division is a long subroutine) */
    unsigned i = blockIdx.x;
    const unsigned n_d = (unsigned)a.n_dtiles, n_t = (unsigned)a.n_ttiles;
    tile tl;
    tl.d0 = (int64_t)(i % n_d) * DT;
    i /= n_d;
    tl.t0 = (int64_t)(i % n_t) * a.TT;
    tl.b = i / n_t;
    return tl;
}

/* Per token row of the tile, once: the first w whose term lies inside the token's sequence. Terms before it
 * are skipped, as in the CPU rung: x[t+w-W+1] needs w >= start-t+W-1 (w_lo_x), a prefix of 0..W-1, so the sums
 * start there. */
__device__ void stage_bounds(const tiled_args &a, const tile &tl, int *w_lo_x) {
    const int tt = threadIdx.x;
    const int64_t t = tl.t0 + tt;
    if (tt >= a.TT || t >= a.T) return;
    int64_t start, end;
    ladder_sequence_bounds(a.cu_seqlens, a.n_seqs, a.T, t, &start, &end);
    const int64_t lo_x = start - t + a.W - 1; /* <= W-1: start <= t */
    w_lo_x[tt] = lo_x > 0 ? (int)lo_x : 0;
}

/* Channels of the tile that exist (the last tile along D may hold fewer than DT). */
__device__ int channels_in(const tiled_args &a, const tile &tl) { return (int)min((int64_t)DT, a.D - tl.d0); }

/* Elements f .. f+3 of a contiguous row, of which the first n - f exist (16 bytes when all four do), or element f
 * alone when f < n. */
template <bool VEC>
__device__ float4 load_unit(const float *p, bool full, int f, int n) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if constexpr (VEC) {
        if (full) return *(const float4 *)p;
        if (f < n) v.x = p[0];
        if (f + 1 < n) v.y = p[1];
        if (f + 2 < n) v.z = p[2];
    } else if (f < n) {
        v.x = p[0];
    }
    return v;
}

/*
 * Copy tile rows r < n_rows (tokens tok0+r) of a [B,T,D,W]-strided input into s[r*rs + c*Ws + w], for the tile's
 * channels c and every tap w (x and dout are the case W = Ws = 1), zeros outside the tensor. A row of the tile is
 * DT*W elements; on the 16-byte path (VEC) they lie contiguously in the input and move 4 at a time. Where the pitch
 * is W itself (weight_pitch) the row lands unchanged, one 16-byte store a unit; else W % 4 == 0, so a unit stays
 * inside one channel and lands as 4 stores.
 * Each thread keeps one column (the same unit of every row it copies) and walks down the rows: its offsets are
 * worked out once, not per element. UNROLL loads are in flight per thread before it stores any.
 */
template <bool VEC>
__device__ void stage_rows(float *s, int rs, const float *g, const int64_t *st, int W, int Ws, const tiled_args &a,
                           const tile &tl, int64_t tok0, int n_rows) {
    constexpr int V = VEC ? 4 : 1;
    const int len = DT * W, n = channels_in(a, tl) * W;            /* elements per row; those that exist */
    const int per_row = min(len / V, THREADS), row_step = THREADS / per_row; /* threads per row; rows per pass */
    const int r0 = threadIdx.x / per_row;
    if (r0 >= row_step) return;
    const int r_lo = (int)max((int64_t)0, -tok0), r_hi = (int)min((int64_t)n_rows, a.T - tok0); /* rows in [0,T) */
    const float *g_tile = g + tl.b * st[0] + tl.d0 * st[2];
    for (int f = V * (threadIdx.x % per_row); f < len; f += V * per_row) {
        const int c = f / W, w = f % W;
        const bool full = f + V <= n, packed = Ws == W;
        const int64_t step = row_step * st[1];      /* from one of this thread's rows to the next */
        if (VEC && full && packed) {
            /* the common case, kept lean (at W = 2 the forward is bound by instruction issue): a unit is one
             * 16-byte load and one 16-byte store, both addresses stepped, not recomputed, from row to row; no
             * check of the channels or of the unit's alignment in shared memory per unit, as below */
            const float *src = g_tile + f + (tok0 + r0) * st[1];
            float *dst = s + f + r0 * rs;
            for (int r = r0; r < n_rows; r += UNROLL * row_step, src += UNROLL * step, dst += UNROLL * row_step * rs) {
                float4 v[UNROLL];
#pragma unroll
                for (int u = 0; u < UNROLL; u++) { /* all loads first */
                    const int ru = r + u * row_step;
                    v[u] = ru >= r_lo && ru < r_hi ? *(const float4 *)(src + u * step)
                                                   : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
#pragma unroll
                for (int u = 0; u < UNROLL; u++)
                    if (r + u * row_step < n_rows) *(float4 *)(dst + u * row_step * rs) = v[u];
            }
            continue;
        }
        const float *src = g_tile + (VEC ? f : c * st[2] + w * st[3]); /* VEC: st[2] == W, st[3] == 1 */
        float *dst = s + c * Ws + w;
        int64_t off = (tok0 + r0) * st[1];
        for (int r = r0; r < n_rows; r += UNROLL * row_step, off += UNROLL * step) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) { /* all loads first */
                const int ru = r + u * row_step;
                v[u] = ru >= r_lo && ru < r_hi ? load_unit<VEC>(src + off + u * step, full, f, n)
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                const int ru = r + u * row_step;
                if (ru >= n_rows) break;
                float *d = dst + ru * rs;
                if (VEC && packed) {
                    *(float4 *)d = v[u];
                } else if (VEC) { /* a pitch of W+1: the unit's 4 taps are not 16-byte aligned in shared memory */
                    d[0] = v[u].x, d[1] = v[u].y, d[2] = v[u].z, d[3] = v[u].w;
                } else {
                    d[0] = v[u].x;
                }
            }
        }
    }
}

/* One call site for both paths: the branch is the same for the whole block. */
__device__ void stage(bool vec, float *s, int rs, const float *g, const int64_t *st, int W, int Ws,
                      const tiled_args &a, const tile &tl, int64_t tok0, int n_rows) {
    if (vec) stage_rows<true>(s, rs, g, st, W, Ws, a, tl, tok0, n_rows);
    else stage_rows<false>(s, rs, g, st, W, Ws, a, tl, tok0, n_rows);
}

/* V consecutive taps of one channel with one V-wide load (from shared or global memory; aligned by the caller). */
template <int V>
__device__ void load_taps(const float *p, float (&k)[V]) {
    if constexpr (V == 4) {
        const float4 v = *(const float4 *)p;
        k[0] = v.x, k[1] = v.y, k[2] = v.z, k[3] = v.w;
    } else if constexpr (V == 2) {
        const float2 v = *(const float2 *)p;
        k[0] = v.x, k[1] = v.y;
    } else {
        k[0] = p[0];
    }
}

/* acc + sum_{i_lo <= i < n} k[i] * v[i * v_step]: one channel's taps k (from a V-aligned tap on), read V at a
 * time, against its x (or dout) values v_step floats apart. Taps before the first whole unit go one at a time;
 * the order is ascending i. */
template <int V>
__device__ float tap_sum(const float *k, const float *v, int v_step, int i_lo, int n, float acc) {
    int i = i_lo;
    for (; i < n && i % V != 0; i++) acc += k[i] * v[i * v_step]; /* i_lo may lie past a chunk's n taps */
#pragma unroll 2
    for (; i < n; i += V) {
        float kv[V];
        load_taps<V>(k + i, kv);
#pragma unroll
        for (int e = 0; e < V; e++) acc += kv[e] * v[(i + e) * v_step];
    }
    return acc;
}

/* out[b,t,d] = sum_w kernels[b,t,d,w] * x[b,t+w-W+1,d]: one block per tile, each thread TT/8 outputs.
 * V: taps per shared-memory load of the weights (tap_unit). */
template <int V>
__global__ void __launch_bounds__(THREADS, FWD_BLOCKS) dynconv_fwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    int *w_lo_x = (int *)smem;                      /* [TT] */
    float *ks = (float *)smem + bounds_words(a.TT); /* [TT][DT][Ws]: kernels[b, t0+j, d0+c, w] */
    float *xs = ks + a.TT * DT * a.Ws;                  /* [TT+W-1][DT]: x[b, t0-W+1+r, d0+c] */
    const tile tl = tile_of(a);

    stage_bounds(a, tl, w_lo_x);
    stage(a.vr, xs, DT, a.x, a.sx, 1, 1, a, tl, tl.t0 - (a.W - 1), a.TT + a.W - 1);
    stage(a.vk, ks, DT * a.Ws, a.k, a.sk, a.W, a.Ws, a, tl, tl.t0, a.TT);
    __syncthreads(); /* each output reads W rows and bounds that other threads staged */

    const int c = threadIdx.x % 32, tt0 = threadIdx.x / 32;
    const int64_t d = tl.d0 + c;
    if (d >= a.D) return; /* safe: no barrier follows */
    float *out = a.out + (tl.b * a.T + tl.t0 + tt0) * a.D + d; /* lanes write neighbouring channels */
    const int rows = (int)min((int64_t)a.TT, a.T - tl.t0), k_step = DT * a.Ws; /* rows inside T; a row of ks */
    const float *k_t = ks + tt0 * k_step + c * a.Ws, *x_t = xs + tt0 * DT + c; /* this output's weights and x */
    for (int tt = tt0; tt < rows; tt += WARPS, out += WARPS * a.D, k_t += WARPS * k_step, x_t += WARPS * DT)
        *out = tap_sum<V>(k_t, x_t, DT, w_lo_x[tt], a.W, 0.0f);
}

/* Where elements f .. f+V-1 of a tile row of kernels (channel f/W, tap f%W, and on) lie in the backward's shared
 * tile, whose channels sit Ws floats apart: once per column, since a staging thread keeps its column. */
template <int V>
__device__ void unit_slots(int f, int W, int Ws, int (&o)[V]) {
    int c = f / W, w = f % W;
#pragma unroll
    for (int e = 0; e < V; e++) {
        o[e] = c * Ws + w;
        if (++w == W) w = 0, c++;
    }
}

/*
 * Backward: copy kernels rows t .. t+n_rows-1 (all inside [0,T)) into ks[r*DT*Ws + c*Ws + w], the forward's layout of a
 * tile row at an odd pitch Ws (the walk below reads it along diagonals, one tap of each of 32 channels at a time),
 * for any strides, a float at a time. Each thread keeps its column (one element of the row) and walks down the rows,
 * UNROLL loads in flight before it stores any. The 16-byte path is stage_step's.
 */
__device__ void stage_weights(float *ks, const tiled_args &a, const tile &tl, int64_t t, int n_rows) {
    const int W = a.W, len = DT * W, n = channels_in(a, tl) * W, rs = DT * a.Ws; /* elements a row; existing */
    const int per_row = min(len, THREADS), row_step = THREADS / per_row, r0 = threadIdx.x / per_row;
    if (r0 >= row_step) return;
    const int64_t step = row_step * a.sk[1]; /* from one of this thread's rows to the next */
    const float *k_tile = a.k + tl.b * a.sk[0] + (t + r0) * a.sk[1] + tl.d0 * a.sk[2];
    for (int f = threadIdx.x % per_row; f < len; f += per_row) {
        int o[1];
        unit_slots<1>(f, W, a.Ws, o);
        const float *src = k_tile + f / W * a.sk[2] + f % W * a.sk[3];
        float *dst = ks + r0 * rs + o[0];
        for (int r = r0; r < n_rows; r += UNROLL * row_step, src += UNROLL * step, dst += UNROLL * row_step * rs) {
            float v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) /* all loads first */
                v[u] = r + u * row_step < n_rows && f < n ? src[u * step] : 0.0f;
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                if (r + u * row_step < n_rows) dst[u * row_step * rs] = v[u];
        }
    }
}

/*
 * The 16-byte path of a backward step's staging: kernels rows t .. t+n-1 as stage_weights lays them out, dout rows
 * t .. t+n-1 into gs, and x rows t .. t+n-1 into the ring from slot s_new on. A thread's units (at most PF of
 * kernels, pick_step_rows, and 2 each of dout and x, n <= 64) are loaded KB kernels units at a time, all of a batch
 * before any of it is stored: with KB = PF the step waits for memory once, not once per copy; KB = PF/2 takes two
 * round trips and fewer registers. A thread walks down its column of kernels units as in stage_weights, over at
 * most two columns (a row is at most 512 units).
 */
template <int KB>
__device__ void stage_step(float *ks, float *gs, float *xr, int s_new, int R, const tiled_args &a, const tile &tl,
                           int64_t t, int n) {
    const int W = a.W, len = DT * W, n_c = channels_in(a, tl), n_k = n_c * W, rs = DT * a.Ws;
    const int per_row = min(len / 4, THREADS), row_step = THREADS / per_row, r0 = threadIdx.x / per_row;
    const int f0 = r0 < row_step ? 4 * (threadIdx.x % per_row) : len; /* threads past the last whole row: none */
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float *k_tile = a.k + tl.b * a.sk[0] + t * a.sk[1] + tl.d0 * W; /* sk[2] == W, sk[3] == 1 */
    const float *g_tile = a.dout + tl.b * a.sg[0] + t * a.sg[1] + tl.d0, *x_tile = a.x + tl.b * a.sx[0] + t * a.sx[1] + tl.d0;
    float4 gv[2], xv[2];
#pragma unroll
    for (int i = 0; i < 2; i++) { /* unit u: row u/8, channels 4*(u%8) .. */
        const int u = threadIdx.x + i * THREADS, ru = u / 8, fu = 4 * (u % 8);
        gv[i] = ru < n ? load_unit<true>(g_tile + ru * a.sg[1] + fu, fu + 4 <= n_c, fu, n_c) : zero;
        xv[i] = ru < n ? load_unit<true>(x_tile + ru * a.sx[1] + fu, fu + 4 <= n_c, fu, n_c) : zero;
    }
    int f = f0, r = r0, o[4]; /* the next unit to store, and where its elements land */
#pragma unroll
    for (int half = 0; half < PF / KB; half++) {
        float4 kv[KB];
        int fl = f, rl = r;
#pragma unroll
        for (int i = 0; i < KB; i++) { /* all loads first */
            kv[i] = fl < len && rl < n ? load_unit<true>(k_tile + rl * a.sk[1] + fl, fl + 4 <= n_k, fl, n_k) : zero;
            if ((rl += row_step) >= n) rl = r0, fl += 4 * per_row;
        }
        if (half == 0) {
            unit_slots<4>(f0, W, a.Ws, o);
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const int u = threadIdx.x + i * THREADS, ru = u / 8, fu = 4 * (u % 8), sl = s_new + ru;
                if (ru >= n) break;
                *(float4 *)(gs + ru * DT + fu) = gv[i];
                *(float4 *)(xr + (sl < R ? sl : sl - R) * DT + fu) = xv[i];
            }
        }
#pragma unroll
        for (int i = 0; i < KB; i++) {
            if (f < len && r < n) {
                float *d = ks + r * rs;
                d[o[0]] = kv[i].x, d[o[1]] = kv[i].y, d[o[2]] = kv[i].z, d[o[3]] = kv[i].w;
            }
            if ((r += row_step) >= n) r = r0, f += 4 * per_row, unit_slots<4>(f, W, a.Ws, o);
        }
    }
}

/* Write dkernels rows t .. t+n_rows-1, held in ks as stage_weights laid the kernels out, to the contiguous
 * [B,T,D,W] output: the same columns, 16 bytes a unit on the 16-byte path (VEC). */
template <bool VEC>
__device__ void write_dkernels(const float *ks, const tiled_args &a, const tile &tl, int64_t t, int n_rows) {
    constexpr int V = VEC ? 4 : 1;
    const int W = a.W, len = DT * W, n_valid = channels_in(a, tl) * W, rs = DT * a.Ws;
    const int per_row = min(len / V, THREADS), row_step = THREADS / per_row, r0 = threadIdx.x / per_row;
    if (r0 >= row_step) return;
    const int64_t pitch = a.D * W; /* elements from one token's dkernels row to the next */
    float *dk_tile = a.dk + ((tl.b * a.T + t) * a.D + tl.d0) * W;
    for (int f = V * (threadIdx.x % per_row); f < n_valid; f += V * per_row) {
        int o[V];
        unit_slots<V>(f, W, a.Ws, o);
        for (int r = r0; r < n_rows; r += row_step) {
            const float *src = ks + r * rs;
            float *dst = dk_tile + r * pitch + f;
            if constexpr (VEC) {
                if (f + V <= n_valid) {
                    *(float4 *)dst = make_float4(src[o[0]], src[o[1]], src[o[2]], src[o[3]]);
                    continue;
                }
            }
            for (int e = 0; e < V && f + e < n_valid; e++) dst[e] = src[o[e]];
        }
    }
}

/*
 * dx[b,s,d] = sum_w dout[b,s+W-1-w,d] * kernels[b,s+W-1-w,d,w] and dkernels[b,r,d,w] = dout[b,r,d] * x[b,r+w-W+1,d]
 * for the block's tokens [T0, T0+TT), walking down the sequence KC kernels rows at a time. In the forward, x[s]
 * met kernels row r at tap w = s-r+W-1 (for r = s .. s+W-1): one diagonal of the step's rows per x token s, and
 * each weight on exactly one diagonal. So one thread per (s, channel) runs down its diagonal: it adds
 * dout[r]*kernels[r,w] to dx[s], and overwrites that weight, which no other thread reads, with its dkernels,
 * dout[r]*x[s]. A token's dx is summed over the steps that hold its rows in a ring of R = W-1+KC slots (and x with
 * it), and leaves when its last row has passed. The walk goes on W-1 rows past the block's tokens, for the dx of its
 * last ones; their dkernels belong to the next block. VARLEN: the sums stop at sequence ends. KB: stage_step's batch,
 * PF from W = ONE_TRIP_W on (76 registers, three blocks per SM), PF/2 below (64 registers, four blocks).
 */
template <bool VARLEN, int KB>
__global__ void __launch_bounds__(THREADS, KB == PF ? 3 : 4) dynconv_bwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    const int W = a.W, Ws = a.Ws, KC = a.KC, R = W - 1 + KC;
    float *ks = (float *)smem;     /* [KC][DT][Ws]: kernels[b, t+j, d0+c, w] of the step, then its dkernels */
    float *gs = ks + KC * DT * Ws; /* [KC][DT]: dout[b, t+j, d0+c] */
    float *xr = gs + KC * DT;      /* [R][DT] ring: x[b, s, d0+c] at slot (s-T0+W-1) mod R */
    float *dr = xr + R * DT;       /* [R][DT] ring: dx[b, s, d0+c] summed over the steps so far, same slots */
    const tile tl = tile_of(a);
    const int64_t T0 = tl.t0; /* below, tokens and rows count from T0: they fit an int */
    const int n_tok = (int)(min(T0 + a.TT, a.T) - T0), n_walk = (int)(min(T0 + n_tok + W - 1, a.T) - T0);
    const int c = threadIdx.x % 32, warp = threadIdx.x / 32, k_step = DT * Ws - 1; /* ks: next row, previous tap */
    const bool c_in = tl.d0 + c < a.D;
    float *ks_c = ks + c * Ws, *xr_c = xr + c, *dr_c = dr + c; /* this lane's channel in each tile */
    const float *gs_c = gs + c;
    float *dx = a.dx + (tl.b * a.T + T0) * a.D + tl.d0 + c; /* dx[b, T0, d0+c] */
    /* x tokens T0-W+1 .. T0-1, whose diagonals reach into the block's rows: ring slots 0 .. W-2 */
    stage(a.vr, xr, DT, a.x, a.sx, 1, 1, a, tl, T0 - (W - 1), W - 1);
    for (int i = threadIdx.x; i < (W - 1) * DT; i += THREADS) dr[i] = 0.0f;
    int q = 0; /* tt mod R: the slot of x token T0+tt-W+1, the first a step's diagonals start from */
    for (int tt = 0;; tt += KC) {
        const int64_t t = T0 + tt;
        const int n = min(KC, n_walk - tt); /* this step's kernels rows: t .. t+n-1 */
        const bool last = tt + n == n_walk;
        /* kernels and dout rows t .. t+n-1, and the x tokens t .. t+n-1, whose diagonals start in this step, into
         * the ring from slot q+W-1 on (around its end), their dx sums set to 0 */
        const int s_new = q + W - 1 < R ? q + W - 1 : q + W - 1 - R;
        if (a.vk && a.vr) {
            stage_step<KB>(ks, gs, xr, s_new, R, a, tl, t, n);
        } else { /* any strides: the same copies one after the other, a float at a time */
            stage_weights(ks, a, tl, t, n);
            stage_rows<false>(gs, DT, a.dout, a.sg, 1, 1, a, tl, t, n);
            const int n1 = min(n, R - s_new);
            stage_rows<false>(xr + s_new * DT, DT, a.x, a.sx, 1, 1, a, tl, t, n1);
            if (n1 < n) stage_rows<false>(xr, DT, a.x, a.sx, 1, 1, a, tl, t + n1, n - n1);
        }
        for (int i = threadIdx.x; i < n * DT; i += THREADS) {
            const int sl = s_new + i / DT;
            dr[(sl < R ? sl : sl - R) * DT + i % DT] = 0.0f;
        }
        __syncthreads(); /* each diagonal reads rows, dout and x that other threads staged */

        /* warp i takes a run of x tokens T0+s, s = tt-W+1+p for p in [p, p_end). The diagonal of s meets the step's
         * rows j in [lo, hi), lo = max(0, p-W+1), hi = min(n, p+1), from kp = &kernels[b, t+lo, d, p-lo] on; from one
         * token to the next, kp moves a tap on (and a row down once lo moves), and the ring slot by one */
        const int np = W - 1 + n, per = (np + WARPS - 1) / WARPS;
        int p = warp * per, slot = q + p, lo = max(0, p - (W - 1)), hi = min(n, p + 1);
        const int p_end = min(min(np, p + per), n_tok - tt + W - 1); /* from s = n_tok on: the next block's tokens */
        if (slot >= R) slot -= R;
        float *kp0 = ks_c + p + lo * k_step;
        const float *gp0 = gs_c + lo * DT;
        for (; p < p_end; p++) {
            int e = hi; /* rows from e on lie past the end of s's sequence: no term, dkernels 0 */
            if constexpr (VARLEN) {
                const int64_t s = t - (W - 1) + p;
                if (s >= 0) e = (int)max((int64_t)lo, min((int64_t)hi, ladder_seq_end(a.cu_seqlens, a.n_seqs, s) - t));
            }
            float acc = dr_c[slot * DT];
            const float xv = xr_c[slot * DT]; /* x[s]; 0 before the row's start, so dkernels 0 there */
            float *kp = kp0;
            const float *gp = gp0;
            for (int j = lo; j < e; j++, kp += k_step, gp += DT) {
                const float g = *gp;
                acc += *kp * g; /* the forward's out[r] += kernels[r,w] * x[s], differentiated in x[s] */
                *kp = g * xv;   /* ... and in kernels[r,w]; this thread alone reads this slot */
            }
            if constexpr (VARLEN)
                for (int j = e; j < hi; j++, kp += k_step) *kp = 0.0f;
            dr_c[slot * DT] = acc;
            kp0++;
            if (p >= W - 1) kp0 += k_step, gp0 += DT, lo++; /* the next diagonal starts a row down */
            if (hi < n) hi++;
            if (++slot == R) slot = 0;
        }
        __syncthreads(); /* the write-outs read dx and dkernels that other threads computed */
        /* dx of the tokens whose last row was in this step (every token left, at the last step): rows of the ring */
        for (int p = warp, n_done = last ? np : n; p < n_done; p += WARPS) {
            const int s = tt - (W - 1) + p, sl = q + p;
            if (s >= 0 && s < n_tok && c_in) dx[(int64_t)s * a.D] = dr_c[(sl < R ? sl : sl - R) * DT];
        }
        const int n_dk = max(0, min(n, n_tok - tt)); /* rows of the block's own tokens */
        if (a.vdk) write_dkernels<true>(ks, a, tl, t, n_dk);
        else write_dkernels<false>(ks, a, tl, t, n_dk);
        if (last) break;
        __syncthreads(); /* the next step's staging overwrites ks, gs, and the ring slots of the tokens done */
        q += KC;
        if (q >= R) q -= R;
    }
}

/* Taps per shared-memory load of the forward's weights, V: 4 when W is 4 times an odd number, 2 when it is 2
 * times one, else 1. Then the pitch W is an odd number of V-wide units, and the V-wide loads of a warp's 32 lanes
 * (each its own channel) hit different banks in every phase of the access. */
int tap_unit(int n) { return n % 8 == 4 ? 4 : n % 4 == 2 ? 2 : 1; }

/* Weight pitch for n taps read V at a time: an odd number of V-wide units (n itself where tap_unit(n) == V > 1),
 * or odd (n or n+1) for V = 1. */
int weight_pitch(int n, int V) { return V > 1 ? V * ((n / V) | 1) : n | 1; }

/* Dynamic shared memory of a forward tile: bounds, kernels, and the [TT+W-1][DT] x rows. */
size_t smem_bytes(int TT, int W, int Ws) {
    const size_t floats = (size_t)TT * DT * Ws + (size_t)(TT + W - 1) * DT;
    return sizeof(float) * (bounds_words(TT) + floats);
}

/* The forward's largest TT (from 64 at W <= 3, else from 32, then 16, 8) whose tile fits the default 48 KB; W = 64
 * needs TT = 8 and an opt-in above it. At W = 1 to 3 (24.6 KiB at W = 2) the forward is bound by instruction issue,
 * and a larger tile pays less often for what every tile does once (bounds, offsets, barriers, the halo row, the
 * staging loops' setup). The forward keeps 32 tokens at W = 4, where 64 fits too but was slower (the measurements
 * are in docs/results/h100-2026-11-24-notes-dynconv-tiled.md, session 15). */
int pick_tokens_per_tile(int W, int Ws) {
    int TT = W <= 3 ? TT_MAX : TT_MAX / 2;
    while (TT > WARPS && smem_bytes(TT, W, Ws) > LADDER_DEFAULT_SMEM) TT /= 2;
    return TT;
}

/* Dynamic shared memory of the backward: a step's kernels and dout rows, and the two rings of R = W-1+KC slots. */
size_t bwd_smem_bytes(int KC, int W, int Ws) {
    const size_t floats = (size_t)KC * DT * (Ws + 1) + 2 * (size_t)(W - 1 + KC) * DT;
    return sizeof(float) * floats;
}

/* The backward's kernels rows per step, KC: the most of 64, 32, .. whose shared memory fits BWD_SMEM (four blocks
 * per SM on sm_90). Every token's diagonal is then up to min(W, KC) long in a step. */
int pick_step_rows(int W, int Ws) {
    const int units = DT * W / 4, per_row = min(units, THREADS), row_step = THREADS / per_row; /* as stage_step */
    const int cols = (units + per_row - 1) / per_row;
    int KC = TT_MAX;
    while (KC > 1 && (bwd_smem_bytes(KC, W, Ws) > BWD_SMEM || cols * ((KC + row_step - 1) / row_step) > PF)) KC /= 2;
    return KC;
}

/* Pointers, strides and sizes: what both passes take from the arguments. */
tiled_args pack(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n{};
    n.x = (const float *)a->x.data;
    n.k = (const float *)a->kernels.data;
    n.dout = (const float *)a->dout.data;
    for (int i = 0; i < 3; i++) n.sx[i] = a->x.strides[i], n.sg[i] = a->dout.strides[i];
    for (int i = 0; i < 4; i++) n.sk[i] = a->kernels.strides[i];
    n.out = (float *)a->out.data;
    n.dx = (float *)a->dx.data;
    n.dk = (float *)a->dkernels.data;
    n.B = p->B, n.T = p->T, n.D = p->D, n.W = p->W;
    n.n_dtiles = (p->D + DT - 1) / DT;
    n.cu_seqlens = (const int32_t *)a->cu_seqlens.data;
    n.n_seqs = a->cu_seqlens.data ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    return n;
}

/* The grid: one block per tile of n->TT tokens x DT channels. */
ladder_status tile_grid(tiled_args *n, unsigned *blocks) {
    n->n_ttiles = (n->T + n->TT - 1) / n->TT;
    const int64_t tiles = n->B * n->n_ttiles * n->n_dtiles;
    if (tiles > INT_MAX)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "rung gpu_tiled takes at most %d tiles of %d tokens x %d channels, "
                           "not %lld", INT_MAX, n->TT, DT, (long long)tiles);
    *blocks = (unsigned)tiles;
    return LADDER_OK;
}

/* Opt in to more than 48 KB of dynamic shared memory when the tile needs it, then launch. */
ladder_status launch(void (*kernel)(tiled_args), const char *name, const tiled_args &n, unsigned blocks,
                     size_t bytes) {
    LADDER_TRY(ladder_allow_smem(kernel, bytes));
    kernel<<<blocks, THREADS, bytes>>>(n);
    LADDER_LAUNCH_CHECK(name);
    return LADDER_OK;
}

/*
 * The backward's tokens per block, n->TT: a block walks TT+W-1 kernels rows for TT tokens' dx, so a long walk
 * wastes less on the W-1 rows past its tokens (the next block reads them too), but the grid must still fill the
 * GPU evenly. Of the ways to cut a batch row into n_t blocks, take the one with the fewest waves x rows walked,
 * a wave being as many blocks as the SMs hold at once; a walk is a whole number of KC-row steps. But where a short
 * walk (SHORT_WALK rows) loses at most 1/64 of its rows to the halo (W <= 4) and still gives a grid of at least
 * eight waves, take that: blocks that start at different times overlap one another's copies and sums, where one
 * wave of long walks keeps them in step (at B = 8, T = 4096, D = 2048, W = 4 walks of 256 rows were faster than one
 * wave of whole batch rows: docs/results/h100-2026-11-24-notes-dynconv-tiled.md, session 16).
 */
ladder_status pick_walk(tiled_args *n, void (*kernel)(tiled_args), size_t bytes) {
    int dev = 0, sms = 0, per_sm = 0;
    LADDER_CUDA_TRY(cudaGetDevice(&dev));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    LADDER_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, bytes));
    const int64_t columns = n->B * n->n_dtiles, slots = (int64_t)sms * max(per_sm, 1), halo = n->W - 1;
    const int64_t short_L = SHORT_WALK - halo;
    if (64 * halo <= SHORT_WALK && SHORT_WALK % n->KC == 0 && short_L < n->T &&
        columns * ((n->T + short_L - 1) / short_L) >= 8 * slots) {
        n->TT = (int)short_L;
        return LADDER_OK;
    }
    const int64_t most = min(n->T, 8 * slots / columns + 1); /* beyond eight waves the halo only grows */
    int64_t best = -1;
    for (int64_t n_t = 1; n_t <= most; n_t++) {
        const int64_t walk = ((n->T + n_t - 1) / n_t + halo + n->KC - 1) / n->KC * n->KC; /* rows, whole steps */
        const int64_t L = min(walk - halo, n->T), waves = (columns * ((n->T + L - 1) / L) + slots - 1) / slots;
        const int64_t cost = waves * walk;
        if (best < 0 || cost < best) best = cost, n->TT = (int)L;
    }
    return LADDER_OK;
}

} // namespace

extern "C" ladder_status dynconv_fwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n = pack(p, a);
    n.V = tap_unit(p->W);
    n.Ws = weight_pitch(p->W, n.V);
    n.TT = pick_tokens_per_tile(p->W, n.Ws);
    unsigned blocks = 0;
    LADDER_TRY(tile_grid(&n, &blocks));
    n.vr = ladder_rows16(&a->x, 1);
    n.vk = ladder_rows16(&a->kernels, 2); /* a row: a token's channels, W taps each */
    void (*const kernels[3])(tiled_args) = {dynconv_fwd_tiled_kernel<1>, dynconv_fwd_tiled_kernel<2>,
                                            dynconv_fwd_tiled_kernel<4>}; /* V = 1, 2, 4 */
    return launch(kernels[n.V / 2], "dynconv_fwd_tiled_kernel", n, blocks, smem_bytes(n.TT, p->W, n.Ws));
}

extern "C" ladder_status dynconv_bwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n = pack(p, a);
    n.Ws = p->W | 1; /* odd: the 32 channels of a diagonal's tap sit in 32 banks */
    n.KC = pick_step_rows(p->W, n.Ws);
    const size_t bytes = bwd_smem_bytes(n.KC, p->W, n.Ws);
    /* VARLEN: the sums stop at sequence ends; without cu_seqlens that code is compiled out */
    void (*const kernels[2][2])(tiled_args) = {{dynconv_bwd_tiled_kernel<false, PF / 2>, dynconv_bwd_tiled_kernel<false, PF>},
                                              {dynconv_bwd_tiled_kernel<true, PF / 2>, dynconv_bwd_tiled_kernel<true, PF>}};
    void (*const kernel)(tiled_args) = kernels[n.cu_seqlens != nullptr][p->W >= ONE_TRIP_W];
    LADDER_TRY(ladder_allow_smem(kernel, bytes));
    LADDER_TRY(pick_walk(&n, kernel, bytes));
    unsigned blocks = 0;
    LADDER_TRY(tile_grid(&n, &blocks));
    n.vr = ladder_rows16(&a->x, 1) && ladder_rows16(&a->dout, 1);
    n.vk = ladder_rows16(&a->kernels, 2);
    n.vdk = ladder_rows16(&a->dkernels, 2);
    return launch(kernel, "dynconv_bwd_tiled_kernel", n, blocks, bytes);
}
