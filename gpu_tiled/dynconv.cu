/*
 * gpu_tiled/dynconv.cu: dynamic causal convolution, the shared-memory tiled GPU rung.
 *
 * What changed since gpu_naive/: a block owns a tile of TT tokens x DT = 32
 * channels. It first copies everything the tile needs from global memory into
 * shared memory, once, with coalesced (and where possible 16-byte) loads, and
 * then computes every output of the tile from shared memory:
 *
 *   forward   x rows [t0-W+1, t0+TT)  (the tile plus a halo of W-1 rows)
 *             kernels rows [t0, t0+TT), every channel's W weights
 *   backward  x rows [t0-W+1, t0+TT) and dout rows [t0, t0+TT+W-1) (halos on both sides),
 *             and the kernels weights through which x[t0..t0+TT) reaches the outputs: for dx[s] that is
 *             kernels[s+W-1-w, w], a sheared window of rows [t0, t0+TT+W-1) with exactly TT*W weights
 *             per channel, stored per dx token; dx and dkernels then come from one pass over the tile.
 *             Only the window of each row that the tile uses (at most TT of its W weights) gets threads.
 *
 * Why it is faster: in gpu_naive each x value is fetched by up to W threads,
 * and neighbouring threads read kernels W floats apart, so each warp load of
 * kernels spans W times the bytes it uses. Here each x, dout and kernels value
 * is read from DRAM about once (halo rows come back from L2), each warp reads
 * whole 128-byte lines, each thread keeps UNROLL independent loads in flight
 * before it stores any, and the W-fold reuse happens in shared memory.
 *
 * Few instructions per byte: at W = 2 an output is 16 bytes, and the issue slots, not DRAM, set the pace unless
 * every copy loop is cheap. So each staging thread keeps one column of the tile and walks down its rows (its
 * offsets computed once, its addresses stepped a row at a time), a token's weights move as 16-byte units from
 * global to shared memory and back (stage_rows, write_dkernels), and the compute loops read V = 4, 2 or 1 weights
 * per shared-memory load (taps_per_load), one instantiation per V.
 *
 * Tile sizes: DT = 32 channels, one per lane, so x and dout rows are single
 * 128-byte lines. 256 threads = 8 warps; warp i computes tile rows i, i+8, ... . TT is picked
 * at run time from W: the largest of 32, 16, 8 whose tile fits in 48 KB, and 8
 * (with the launcher opting in to more shared memory) when none does. Both passes take 64 at W = 1 to 3: at W = 2
 * they are bound by instruction issue, and a larger tile pays less often for what each tile does once
 * (pick_tokens_per_tile).
 * TT = 32 up to W = 9, where the halo adds at most 8/32 to the x and dout
 * reads (W = 4: 20.6 KiB forward, 25.0 KiB backward, so several blocks share an
 * SM); W = 64 needs TT = 8 and 73.9 KiB forward, 82.8 KiB backward. Each
 * channel's weights sit Ws floats apart (weight_pitch: an odd number of V-wide units), so the V-wide loads of
 * a warp, lane c on channel c, hit different banks: no bank conflicts for any W. The registers are held to
 * 40 a thread forward and 48 backward (FWD_BLOCKS, BWD_BLOCKS), so that small tiles keep six and five blocks per SM.
 * From W = 32 on the backward, bound by instruction issue there, reads its weights 4 at a time where W % 4 == 0
 * (a pitch of 36: taps_per_load), and past W = 32 it stages them in chunks of WC = 32 taps (chunk_taps), summing
 * dx over the chunks: at W = 64 that takes its tile from 83 KB to 54 KB, and from two blocks per SM to four.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, device pointers,
 * any input strides, contiguous outputs). Three 16-byte paths, each taken when
 * its tensor's rows are 16-byte aligned and contiguous (ladder_rows16): x and dout rows (vr), a token's
 * kernels, its DT channels x W taps (vk), and the same rows of dkernels (vdk), whatever W is.
 * Otherwise the same kernel moves one float at a time. Deterministic: no atomics, each
 * output is written by one thread, sums run over w in ascending order.
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
constexpr int WC_MAX = 32;         /* taps of each weight the backward stages at a time (chunk_taps) */
constexpr int FWD_BLOCKS = 6;      /* blocks per SM the registers must allow: forward 40 registers a thread, */
constexpr int BWD_BLOCKS = 5;      /* backward 48 (as many as small tiles need, without spills) */

/* 4-byte words before the float tiles: w_lo_x and w_lo_g, TT each (8*TT bytes keep the tiles 16-byte aligned). */
__host__ __device__ constexpr int bounds_words(int TT) { return 2 * TT; }

/* What each kernel needs: base pointers, strides, sizes, sequence offsets, tile shape. */
struct tiled_args {
    const float *x, *k, *dout;
    int64_t sx[4], sk[4], sg[4];   /* x and dout as [B,T,D,1] */
    float *out, *dx, *dk;
    int64_t B, T, D;
    int W, WC, V, Ws, TT; /* kernel width; taps staged at a time, read V at a time, their pitch; tokens per tile */
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
 * are skipped, as in the CPU rung: x[t+w-W+1] needs w >= start-t+W-1 (w_lo_x), dout[t+W-1-w] needs
 * t+W-1-w < end, i.e. w >= t+W-end (w_lo_g). Both are prefixes of 0..W-1, so the sums start there. */
__device__ void stage_bounds(const tiled_args &a, const tile &tl, int *w_lo_x, int *w_lo_g) {
    const int tt = threadIdx.x;
    const int64_t t = tl.t0 + tt;
    if (tt >= a.TT || t >= a.T) return;
    int64_t start, end;
    ladder_sequence_bounds(a.cu_seqlens, a.n_seqs, a.T, t, &start, &end);
    const int64_t lo_x = start - t + a.W - 1, lo_g = t + a.W - end; /* both <= W-1: start <= t < end */
    w_lo_x[tt] = lo_x > 0 ? (int)lo_x : 0;
    w_lo_g[tt] = lo_g > 0 ? (int)lo_g : 0;
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

/* Slots per (row, channel) for a window of `units` units: the next power of two, so that splitting a slot index
 * into (channel, unit) is a shift and a mask. */
__device__ int log2_slots(int units) { return 32 - __clz(units - 1); }

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

template <int V>
__device__ void store_taps(float *p, const float (&k)[V]) {
    if constexpr (V == 4) *(float4 *)p = make_float4(k[0], k[1], k[2], k[3]);
    else if constexpr (V == 2) *(float2 *)p = make_float2(k[0], k[1]);
    else p[0] = k[0];
}

/*
 * Backward, taps w0 .. w0+n-1 of every weight (a chunk of WC taps, chunk_taps): weight w of kernels row t0+r
 * multiplies dx of tile token j = r-(W-1)+w. It is kept, at ks[(j*DT + c)*Ws + w-w0], when 0 <= j < TT: of each
 * row a window of at most TT of the chunk's taps, from w = W-1-r on. The rows that hold any are r0 .. r0+TT+n-2
 * with r0 = W-w0-n; only their windows are read, so the staging costs instructions in proportion to the weights
 * kept, not to the rows touched. The taps of one source row go to different tokens (DT*Ws+1 apart in ks): this
 * copy is a transpose, one 4-byte store per weight.
 * VS > 1 (kernels rows contiguous and aligned, W % VS == 0): slot q of a (row, channel) loads the q-th VS-tap
 * unit of its window with one VS-wide load; neighbouring threads take neighbouring slots and channels. VS = 1:
 * one thread takes one channel of a row and loops over its window tap by tap. Either way a thread keeps its
 * column and walks down the rows.
 */
template <int VS>
__device__ void stage_kernels_sheared(float *ks, const tiled_args &a, const tile &tl, int w0, int n) {
    const int W = a.W, n_rows = a.TT + n - 1, r_base = W - w0 - n, n_c = channels_in(a, tl);
    const int r_hi = (int)min((int64_t)n_rows, a.T - tl.t0 - r_base), step = DT * a.Ws + 1; /* rows inside T */
    const float *k_tile = a.k + tl.b * a.sk[0] + (tl.t0 + r_base) * a.sk[1] + tl.d0 * a.sk[2];
    if constexpr (VS == 1) {
        const int c = threadIdx.x % DT;
        const bool c_in = c < n_c;
        for (int r = threadIdx.x / DT; r < n_rows; r += WARPS) {
            const int j0 = r_base + r - (W - 1); /* weight w lands on token j0 + w */
            const int w_lo = max(w0, -j0), w_hi = min(w0 + n, a.TT - j0), base = (j0 * DT + c) * a.Ws - w0;
            const bool present = r < r_hi && c_in; /* zeros past the tensor's end */
            const float *src = k_tile + r * a.sk[1] + c * a.sk[2];
#pragma unroll 4
            for (int w = w_lo; w < w_hi; w++) ks[base + w * step] = present ? src[w * a.sk[3]] : 0.0f;
        }
        return;
    }
    /* a window of TT weights straddles at most TT/VS + 1 units */
    const int lg = log2_slots(min(n / VS, a.TT / VS + 1)), slots = DT << lg;
    const int per_row = min(slots, THREADS), row_step = THREADS / per_row, r0 = threadIdx.x / per_row;
    for (int i = threadIdx.x % per_row; i < slots; i += per_row) {
        const int c = i >> lg, q0 = i & ((1 << lg) - 1);
        const float *src = k_tile + c * W; /* VS > 1: sk[2] == W, sk[3] == 1 */
        for (int r = r0; r < n_rows; r += UNROLL * row_step) {
            float v[UNROLL][VS];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) { /* all loads first */
                const int ru = r + u * row_step, j_w = r_base + ru - (W - 1); /* tap w lands on token j_w + w */
                const int w = (q0 + max(w0, -j_w) / VS) * VS, j = j_w + w;
#pragma unroll
                for (int e = 0; e < VS; e++) v[u][e] = 0.0f;
                if (w < w0 + n && j + VS - 1 >= 0 && j < a.TT && ru < r_hi && c < n_c)
                    load_taps<VS>(src + ru * a.sk[1] + w, v[u]);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++) { /* unit w.. of row ru holds weights of tokens j.. */
                const int ru = r + u * row_step, j_w = r_base + ru - (W - 1);
                const int w = (q0 + max(w0, -j_w) / VS) * VS, j = j_w + w;
                if (w >= w0 + n || ru >= n_rows) continue;
                const int dst = (j * DT + c) * a.Ws + w - w0;
#pragma unroll
                for (int e = 0; e < VS; e++)
                    if (j + e >= 0 && j + e < a.TT) ks[dst + e * step] = v[u][e];
            }
        }
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
 * V: taps per shared-memory load of the weights (taps_per_load). */
template <int V>
__global__ void __launch_bounds__(THREADS, FWD_BLOCKS) dynconv_fwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    int *w_lo_x = (int *)smem, *w_lo_g = w_lo_x + a.TT; /* [TT] each; w_lo_g unused forward */
    float *ks = (float *)smem + bounds_words(a.TT);     /* [TT][DT][Ws]: kernels[b, t0+j, d0+c, w] */
    float *xs = ks + a.TT * DT * a.Ws;                  /* [TT+W-1][DT]: x[b, t0-W+1+r, d0+c] */
    const tile tl = tile_of(a);

    stage_bounds(a, tl, w_lo_x, w_lo_g);
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

/* Write taps w0 .. w0+n-1 of the tile's dkernels, held in ks as [TT][DT][Ws], to the contiguous [B,T,D,W]
 * output: element f of a tile row is channel f/n, tap w0 + f%n. VEC: 16 bytes a unit, one column per thread,
 * where a unit stays inside one channel (n % 4 == 0) or the chunk is every tap (n == W, rows contiguous). */
template <bool VEC>
__device__ void write_dkernels(const float *ks, const tiled_args &a, const tile &tl, int w0, int n) {
    constexpr int V = VEC ? 4 : 1;
    const int W = a.W, len = DT * n, n_valid = channels_in(a, tl) * n;
    const int per_row = min(len / V, THREADS), row_step = THREADS / per_row, r0 = threadIdx.x / per_row;
    if (r0 >= row_step) return;
    const int rows_in = (int)min((int64_t)a.TT, a.T - tl.t0);
    const int64_t pitch = a.D * W; /* elements from one token's dkernels row to the next */
    const bool packed = a.Ws == n || a.Ws % 4 == 0 && n % 4 == 0; /* a unit is 16-byte aligned in ks too */
    float *dk_tile = a.dk + ((tl.b * a.T + tl.t0) * a.D + tl.d0) * W + w0;
    for (int f = V * (threadIdx.x % per_row); f < n_valid; f += V * per_row) {
        const float *src = ks + f / n * a.Ws + f % n;
        float *dst = dk_tile + f / n * W + f % n;
        for (int r = r0; r < rows_in; r += row_step) {
            if (VEC && f + V <= n_valid) {
                const float *q = src + r * DT * a.Ws;
                *(float4 *)(dst + r * pitch) = packed ? *(const float4 *)q : make_float4(q[0], q[1], q[2], q[3]);
                continue;
            }
            for (int e = f; e < f + V && e < n_valid; e++)
                dk_tile[r * pitch + e / n * W + e % n] = ks[r * DT * a.Ws + e / n * a.Ws + e % n];
        }
    }
}

/* dx[b,s,d] = sum_w dout[b,s+W-1-w,d] * kernels[b,s+W-1-w,d,w] and dkernels[b,s,d,w] = dout[b,s,d] * x[b,s+w-W+1,d]
 * for the tile's tokens s, from one staging of x and dout and, chunk by chunk of taps, of the sheared kernels.
 * V as in the forward. */
template <int V>
__global__ void __launch_bounds__(THREADS, BWD_BLOCKS) dynconv_bwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    int *w_lo_x = (int *)smem, *w_lo_g = w_lo_x + a.TT; /* [TT] each */
    float *ks = (float *)smem + bounds_words(a.TT); /* [TT][DT][Ws]: kernels[b, t0+j+W-1-w, d0+c, w] of a chunk, later dkernels */
    float *xs = ks + a.TT * DT * a.Ws;      /* [TT+W-1][DT]: x[b, t0-W+1+r, d0+c] */
    float *gs = xs + (a.TT + a.W - 1) * DT; /* [TT+W-1][DT]: dout[b, t0+r, d0+c] */
    const tile tl = tile_of(a);

    stage_bounds(a, tl, w_lo_x, w_lo_g);
    stage(a.vr, xs, DT, a.x, a.sx, 1, 1, a, tl, tl.t0 - (a.W - 1), a.TT + a.W - 1);
    stage(a.vr, gs, DT, a.dout, a.sg, 1, 1, a, tl, tl.t0, a.TT + a.W - 1);

    const int c = threadIdx.x % 32, tt0 = threadIdx.x / 32;
    const int64_t d = tl.d0 + c;
    for (int w0 = 0; w0 < a.W; w0 += a.WC) {
        const int n = min(a.WC, a.W - w0); /* this chunk's taps: w0 .. w0+n-1 */
        if (a.vk && a.W % 4 == 0) stage_kernels_sheared<4>(ks, a, tl, w0, n); /* the window's 16-byte units */
        else if (a.vk && a.W % 2 == 0) stage_kernels_sheared<2>(ks, a, tl, w0, n);
        else stage_kernels_sheared<1>(ks, a, tl, w0, n);
        __syncthreads(); /* each output reads rows and bounds that other threads staged */
        if (d < a.D) {   /* no early return: every thread must reach the barriers below */
            float *dx = a.dx + (tl.b * a.T + tl.t0 + tt0) * a.D + d;
            for (int tt = tt0; tt < a.TT && tl.t0 + tt < a.T; tt += WARPS, dx += WARPS * a.D) {
                float *k_sd = ks + (tt * DT + c) * a.Ws; /* k_sd[w-w0] = kernels[b, s+W-1-w, d, w], s = t0+tt */
                const float *g_d = gs + tt * DT + c;     /* g_d[j*DT] = dout[b, s+j, d] */
                const float *x_d = xs + tt * DT + c;     /* x_d[w*DT] = x[b, s+w-W+1, d] */
                /* forward: x[s] feeds out[s+W-1-w] through kernels[s+W-1-w, w], so dx[s] sums dout * kernels
                 * there; over the chunks in turn (in dx itself, which only this thread writes) */
                const float before = w0 == 0 ? 0.0f : *dx;
                *dx = tap_sum<V>(k_sd, g_d + (a.W - 1 - w0) * DT, -DT, max(w_lo_g[tt] - w0, 0), n, before);
                /* forward: out[s] += kernels[s,w] * x[s+w-W+1], so dkernels[s,w] = dout[s] * x[s+w-W+1]. This
                 * thread alone read k_sd, so it may overwrite those slots with dkernels for the write below. */
                const float g = g_d[0];
#pragma unroll 2
                for (int w = 0; w < n; w += V) {
                    float v[V];
#pragma unroll
                    for (int e = 0; e < V; e++) v[e] = g * x_d[(w0 + w + e) * DT];
                    store_taps<V>(k_sd + w, v);
                }
                for (int w = 0; w < w_lo_x[tt] - w0 && w < n; w++) k_sd[w] = 0.0f; /* met the zero padding */
            }
        }
        __syncthreads(); /* the write-out reads dkernels that other threads computed */
        if (a.vdk && (a.WC == a.W || a.WC % 4 == 0 && a.W % 4 == 0)) write_dkernels<true>(ks, a, tl, w0, n);
        else write_dkernels<false>(ks, a, tl, w0, n);
        if (w0 + a.WC < a.W) __syncthreads(); /* the next chunk's staging overwrites ks */
    }
}

/* Taps of each weight a tile stages at a time, WC: the forward all W; the backward all up to W = 32 and chunks of
 * 32 past it, so that at W = 64 its tile takes 54 KB (four blocks per SM) instead of 83 KB (two). */
int chunk_taps(int W, int n_row_tiles) { return n_row_tiles == 2 ? min(W, WC_MAX) : W; }

/* Taps per shared-memory load of the weights, V, for a tile of n taps per weight: 4 when n is 4 times an odd
 * number, 2 when it is 2 times one, else 1. Then the pitch n is an odd number of V-wide units, and the V-wide
 * loads of a warp's 32 lanes (each its own channel) hit different banks in every phase of the access. */
int tap_unit(int n) { return n % 8 == 4 ? 4 : n % 4 == 2 ? 2 : 1; }

/* V of a pass: tap_unit of its WC taps, except the backward's chunks of 32 taps where W % 4 == 0: those are read
 * 4 at a time, with a pad (weight_pitch 36), since past W = 32 the backward is bound by instruction issue and its
 * 8-token tile has room for the pad. */
int taps_per_load(int W, int n_row_tiles) {
    const int WC = chunk_taps(W, n_row_tiles);
    return n_row_tiles == 2 && WC == WC_MAX && W % 4 == 0 ? 4 : tap_unit(WC);
}

/* Weight pitch for n taps read V at a time: an odd number of V-wide units (n itself where tap_unit(n) == V > 1),
 * or odd (n or n+1) for V = 1. */
int weight_pitch(int n, int V) { return V > 1 ? V * ((n / V) | 1) : n | 1; }

/* Dynamic shared memory of a tile: bounds, kernels, and n_row_tiles [TT+W-1][DT] row tiles (x; x and dout). */
size_t smem_bytes(int TT, int W, int Ws, int n_row_tiles) {
    const size_t floats = (size_t)TT * DT * Ws + (size_t)n_row_tiles * (TT + W - 1) * DT;
    return sizeof(float) * (bounds_words(TT) + floats);
}

/* The largest TT (from 64 for the backward and for the forward at W <= 3, else from 32, then 16, 8) whose tile fits
 * the default 48 KB; W = 64 needs TT = 8 and an opt-in above it. Both passes take 64 tokens at W = 1 to 3 (the
 * forward 24.6 KiB at W = 2, the backward 32.8 KiB): there they are bound by instruction issue (at W = 2, 89% and
 * 87% of issue slots busy at 32 tokens), and a larger tile pays less often for what every tile does once (bounds,
 * offsets, barriers, the halo row, the staging loops' setup). On the H100 at B = 2, T = 4096, D = 2048, W = 2 it
 * took the backward from 0.209 to 0.179 ms, and the forward from 0.109 to 0.096 ms (0.114 ms before this and the
 * lean staging path; with both, 55 million warp instructions instead of 96 million). The forward keeps 32 tokens at
 * W = 4, where 64 fits too but measured slower (0.148 against 0.140 ms; at B = 8, 0.547 against 0.526). */
int pick_tokens_per_tile(int W, int Ws, int n_row_tiles) {
    int TT = n_row_tiles == 2 || W <= 3 ? TT_MAX : TT_MAX / 2;
    while (TT > WARPS && smem_bytes(TT, W, Ws, n_row_tiles) > LADDER_DEFAULT_SMEM) TT /= 2;
    return TT;
}

ladder_status pack(const ladder_dynconv_problem *p, const ladder_dynconv_args *a, int n_row_tiles, tiled_args *n,
                   unsigned *blocks) {
    *n = tiled_args{};
    n->x = (const float *)a->x.data;
    n->k = (const float *)a->kernels.data;
    n->dout = (const float *)a->dout.data;
    for (int i = 0; i < 3; i++) n->sx[i] = a->x.strides[i], n->sg[i] = a->dout.strides[i];
    for (int i = 0; i < 4; i++) n->sk[i] = a->kernels.strides[i];
    n->out = (float *)a->out.data;
    n->dx = (float *)a->dx.data;
    n->dk = (float *)a->dkernels.data;
    n->B = p->B, n->T = p->T, n->D = p->D, n->W = p->W;
    n->WC = chunk_taps(p->W, n_row_tiles);
    n->V = taps_per_load(p->W, n_row_tiles);
    n->Ws = weight_pitch(n->WC, n->V);
    n->TT = pick_tokens_per_tile(p->W, n->Ws, n_row_tiles);
    n->n_dtiles = (p->D + DT - 1) / DT;
    n->n_ttiles = (p->T + n->TT - 1) / n->TT;
    n->cu_seqlens = (const int32_t *)a->cu_seqlens.data;
    n->n_seqs = a->cu_seqlens.data ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    const int64_t tiles = p->B * n->n_ttiles * n->n_dtiles;
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

/* The instantiation for V = 1, 2, 4 (taps_per_load), at index 0, 1, 2. */
using kernel_fn = void (*)(tiled_args);
kernel_fn pick(const kernel_fn (&by_unit)[3], int V) { return by_unit[V / 2]; }

} // namespace

extern "C" ladder_status dynconv_fwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n;
    unsigned blocks = 0;
    LADDER_TRY(pack(p, a, 1, &n, &blocks));
    n.vr = ladder_rows16(&a->x, 1);
    n.vk = ladder_rows16(&a->kernels, 2); /* a row: a token's channels, W taps each */
    const kernel_fn kernels[3] = {dynconv_fwd_tiled_kernel<1>, dynconv_fwd_tiled_kernel<2>,
                                  dynconv_fwd_tiled_kernel<4>};
    return launch(pick(kernels, n.V), "dynconv_fwd_tiled_kernel", n, blocks, smem_bytes(n.TT, p->W, n.Ws, 1));
}

extern "C" ladder_status dynconv_bwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n;
    unsigned blocks = 0;
    LADDER_TRY(pack(p, a, 2, &n, &blocks));
    n.vr = ladder_rows16(&a->x, 1) && ladder_rows16(&a->dout, 1);
    n.vk = ladder_rows16(&a->kernels, 2);
    n.vdk = ladder_rows16(&a->dkernels, 2);
    const kernel_fn kernels[3] = {dynconv_bwd_tiled_kernel<1>, dynconv_bwd_tiled_kernel<2>,
                                  dynconv_bwd_tiled_kernel<4>};
    return launch(pick(kernels, n.V), "dynconv_bwd_tiled_kernel", n, blocks, smem_bytes(n.TT, p->W, n.Ws, 2));
}
