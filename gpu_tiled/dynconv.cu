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
 * Tile sizes: DT = 32 channels, one per lane, so x and dout rows are single
 * 128-byte lines and shared-memory reads by a warp hit 32 different banks.
 * 256 threads = 8 warps; warp i computes tile rows i, i+8, ... . TT is picked
 * at run time from W: the largest of 32, 16, 8 whose tile fits in 48 KB, and 8
 * (with the launcher opting in to more shared memory) when none does.
 * TT = 32 up to W = 9, where the halo adds at most 8/32 to the x and dout
 * reads (W = 4: 24.6 KiB forward, 29 KiB backward, so several blocks share an
 * SM); W = 64 needs TT = 8 and 74 KiB forward, 83 KiB backward. Each
 * channel's weights sit Ws = W|1 floats apart (odd), so in the compute loops
 * lane c reads bank c*Ws mod 32: no bank conflicts for any W.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, device pointers,
 * any input strides, contiguous outputs). Two 16-byte paths, each taken when
 * its tensors' rows are 16-byte aligned with unit stride along the last
 * dimension (ladder_rows16): x and dout rows (VR), whatever W is; kernels
 * and dkernels (VK), when also W % 4 == 0 (a unit is 4 weights of one channel).
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
constexpr int TT_MAX = 32;         /* most tokens per tile */
constexpr int UNROLL = 4;          /* loads a thread issues before it stores any */
constexpr int BOUNDS = 2 * TT_MAX; /* 4-byte words before the float tiles: w_lo_x, w_lo_g */

/* What each kernel needs: base pointers, strides, sizes, sequence offsets, tile shape. */
struct tiled_args {
    const float *x, *k, *dout;
    int64_t sx[3], sk[4], sg[3];
    float *out, *dx, *dk;
    int64_t B, T, D;
    int W, Ws, TT;                 /* kernel width, padded weight pitch (odd), tokens per tile */
    int64_t n_dtiles, n_ttiles;    /* tiles along D and along T */
    const int32_t *cu_seqlens;     /* nullptr: every batch row is one sequence */
    int n_seqs;
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

/* V = 4 consecutive channels c.. of one row (16 bytes when all four are among the n_c present), or V = 1. */
template <bool VEC>
__device__ float4 load_channels(const float *row, int64_t sc, int c, int n_c) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if constexpr (VEC) { /* sc == 1 here */
        if (c + 4 <= n_c) return *(const float4 *)(row + c);
        if (c < n_c) v.x = row[c];
        if (c + 1 < n_c) v.y = row[c + 1];
        if (c + 2 < n_c) v.z = row[c + 2];
    } else if (c < n_c) {
        v.x = row[c * sc];
    }
    return v;
}

/* Channels of the tile that exist (the last tile along D may hold fewer than DT). */
__device__ int channels_in(const tiled_args &a, const tile &tl) { return (int)min((int64_t)DT, a.D - tl.d0); }

/* Copy tokens tok0 .. tok0+n_rows-1 of a [B,T,D] input, channels d0 .. d0+DT-1, into s[r*DT + c], zeros
 * outside the tensor. Neighbouring threads take neighbouring channels: a warp reads whole 128-byte rows. */
template <bool VEC>
__device__ void stage_rows(float *s, const float *g, const int64_t *st, const tiled_args &a, const tile &tl,
                           int64_t tok0, int n_rows) {
    constexpr int V = VEC ? 4 : 1, UNITS_PER_ROW = DT / V;
    const int n = n_rows * UNITS_PER_ROW, n_c = channels_in(a, tl);
    const int r_lo = (int)max((int64_t)0, -tok0), r_hi = (int)min((int64_t)n_rows, a.T - tok0); /* rows in [0,T) */
    const float *g_tile = g + tl.b * st[0] + tl.d0 * st[2];
    for (int i0 = threadIdx.x; i0 < n; i0 += UNROLL * THREADS) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) { /* all loads first: UNROLL requests in flight per thread */
            const int i = i0 + u * THREADS, r = i / UNITS_PER_ROW, c = i % UNITS_PER_ROW * V;
            v[u] = i < n && r >= r_lo && r < r_hi ? load_channels<VEC>(g_tile + (tok0 + r) * st[1], st[2], c, n_c)
                                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int i = i0 + u * THREADS; /* unit i is row i/UNITS_PER_ROW, channels (i%UNITS_PER_ROW)*V.. */
            if (i >= n) break;
            if constexpr (VEC) *(float4 *)(s + i * V) = v[u];
            else s[i] = v[u].x;
        }
    }
}

/* A channel's W weights are W/V units of V; flat unit indices give each channel 1 << lg slots (the next power
 * of two), so splitting an index into (row*DT + channel, unit) is a shift and a mask, not a division. */
__device__ int log2_slots(int units) { return 32 - __clz(units - 1); }

/*
 * Copy kernels weights of channels d0.. into ks[(j*DT + c)*Ws + w]. Forward (sheared = false): rows r < TT,
 * j = r, every weight. Backward (sheared = true): rows r < TT+W-1, and weight w of row r goes to
 * j = r-(W-1)+w, the token whose dx it multiplies, kept only when 0 <= j < TT: a window of at most TT of the
 * row's W weights, starting at w = W-1-r. Only the window is read, so the backward's staging costs
 * instructions in proportion to the weights kept, not to the rows touched (at W = 64, 4 times fewer).
 *
 * VEC (W % 4 == 0, rows 16-byte aligned): neighbouring threads take neighbouring 16-byte units of a row, the
 * order they lie in memory, UNROLL loads in flight per thread; slot k of a row is unit q_lo(r) + k. Otherwise
 * one thread takes one (row, channel) and loops over its weights: for the small W that have no 16-byte units
 * (W = 2: two floats a channel), that spends the index arithmetic once per channel instead of once per float.
 */
template <bool VEC>
__device__ void stage_kernels(float *ks, const tiled_args &a, const tile &tl, bool sheared) {
    const int W = a.W, n_rows = sheared ? a.TT + W - 1 : a.TT;
    const int r_hi = (int)min((int64_t)n_rows, a.T - tl.t0), n_c = channels_in(a, tl);
    const int step = sheared ? DT * a.Ws + 1 : 1; /* ks distance between weights w and w+1 of one source row */
    const float *k_tile = a.k + tl.b * a.sk[0] + tl.t0 * a.sk[1] + tl.d0 * a.sk[2];
    if constexpr (!VEC) {
        for (int i = threadIdx.x; i < n_rows * DT; i += THREADS) {
            const int r = i / DT, c = i % DT;
            const int j0 = sheared ? r - (W - 1) : r; /* weight w lands on token j0 + w (sheared), or j0 */
            const int w_lo = sheared ? max(0, -j0) : 0, w_hi = sheared ? min(W, a.TT - j0) : W;
            const int base = (j0 * DT + c) * a.Ws;    /* ks index of weight w: base + w * step */
            const bool present = r < r_hi && c < n_c; /* zeros past the tensor's end */
            const float *src = k_tile + r * a.sk[1] + c * a.sk[2];
#pragma unroll 4
            for (int w = w_lo; w < w_hi; w++) ks[base + w * step] = present ? src[w * a.sk[3]] : 0.0f;
        }
        return;
    }
    constexpr int V = 4;
    const int units = W / V;
    /* units a row needs: all of them forward; backward a window of TT weights, which can straddle one more unit */
    const int row_units = sheared ? min(units, (a.TT + V - 1) / V + 1) : units, lg = log2_slots(row_units);
    const int n = (n_rows * DT) << lg;
    for (int i0 = threadIdx.x; i0 < n; i0 += UNROLL * THREADS) {
        float4 v[UNROLL];
        int j0[UNROLL], dst[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int i = i0 + u * THREADS, rc = i >> lg, r = rc / DT, c = rc % DT;
            const int q = (i & ((1 << lg) - 1)) + (sheared ? max(0, W - 1 - r) / V : 0), w0 = q * V;
            j0[u] = i >= n || q >= units ? a.TT : sheared ? r - (W - 1) + w0 : r; /* a.TT: nothing to store */
            dst[u] = (j0[u] * DT + c) * a.Ws + w0;
            const bool needed = j0[u] + (sheared ? V - 1 : 0) >= 0 && j0[u] < a.TT;
            v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (needed && r < r_hi && c < n_c) v[u] = *(const float4 *)(k_tile + r * a.sk[1] + c * a.sk[2] + w0);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const float e4[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
            for (int e = 0; e < V; e++) {
                const int j = j0[u] + (sheared ? e : 0);
                if (j >= 0 && j < a.TT) ks[dst[u] + e * step] = e4[e];
            }
        }
    }
}

/* out[b,t,d] = sum_w kernels[b,t,d,w] * x[b,t+w-W+1,d]: one block per tile, each thread TT/8 outputs.
 * VR: x is staged 16 bytes at a time; VK: kernels too (see stage_rows and stage_kernels). */
template <bool VR, bool VK>
__global__ void __launch_bounds__(THREADS) dynconv_fwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    int *w_lo_x = (int *)smem, *w_lo_g = w_lo_x + TT_MAX; /* [TT] each; w_lo_g unused forward */
    float *ks = (float *)smem + BOUNDS;                   /* [TT][DT][Ws]: kernels[b, t0+j, d0+c, w] */
    float *xs = ks + a.TT * DT * a.Ws;                    /* [TT+W-1][DT]: x[b, t0-W+1+r, d0+c] */
    const tile tl = tile_of(a);

    stage_bounds(a, tl, w_lo_x, w_lo_g);
    stage_rows<VR>(xs, a.x, a.sx, a, tl, tl.t0 - (a.W - 1), a.TT + a.W - 1);
    stage_kernels<VK>(ks, a, tl, false);
    __syncthreads(); /* each output reads W rows and bounds that other threads staged */

    const int c = threadIdx.x % 32;
    const int64_t d = tl.d0 + c;
    if (d >= a.D) return; /* safe: no barrier follows */
    for (int tt = threadIdx.x / 32; tt < a.TT && tl.t0 + tt < a.T; tt += WARPS) {
        const float *k_td = ks + (tt * DT + c) * a.Ws; /* k_td[w] = kernels[b,t,d,w] */
        const float *x_d = xs + tt * DT + c;           /* x_d[w*DT] = x[b, t+w-W+1, d] */
        float acc = 0.0f;
#pragma unroll 4
        for (int w = w_lo_x[tt]; w < a.W; w++) acc += k_td[w] * x_d[w * DT];
        a.out[(tl.b * a.T + tl.t0 + tt) * a.D + d] = acc; /* lanes write neighbouring channels */
    }
}

/* Write the tile's dkernels, held in ks as [TT][DT][Ws], to the contiguous [B,T,D,W] output:
 * neighbouring threads write neighbouring (channel, w) pairs, 16 bytes each on the VEC path. */
template <bool VEC>
__device__ void write_dkernels(const float *ks, const tiled_args &a, const tile &tl) {
    constexpr int V = VEC ? 4 : 1;
    const int units = a.W / V, lg = log2_slots(units), n = (a.TT * DT) << lg;
    const int rows_in = (int)min((int64_t)a.TT, a.T - tl.t0), n_c = channels_in(a, tl);
    float *dk_tile = a.dk + ((tl.b * a.T + tl.t0) * a.D + tl.d0) * a.W;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        const int rc = i >> lg, tt = rc / DT, c = rc % DT, q = i & ((1 << lg) - 1), w0 = q * V;
        if (q >= units || tt >= rows_in || c >= n_c) continue;
        const float *src = ks + (tt * DT + c) * a.Ws + w0;
        float *dst = dk_tile + (tt * a.D + c) * a.W + w0;
        if constexpr (VEC) *(float4 *)dst = make_float4(src[0], src[1], src[2], src[3]);
        else *dst = src[0];
    }
}

/* dx[b,s,d] = sum_w dout[b,s+W-1-w,d] * kernels[b,s+W-1-w,d,w] and dkernels[b,s,d,w] = dout[b,s,d] * x[b,s+w-W+1,d]
 * for the tile's tokens s, from one staging of x, dout and the sheared kernels. VR: x and dout are staged 16 bytes
 * at a time; VK: kernels too, and dkernels leaves 16 bytes at a time. */
template <bool VR, bool VK>
__global__ void __launch_bounds__(THREADS) dynconv_bwd_tiled_kernel(tiled_args a) {
    extern __shared__ float4 smem[];
    int *w_lo_x = (int *)smem, *w_lo_g = w_lo_x + TT_MAX; /* [TT] each */
    float *ks = (float *)smem + BOUNDS;     /* [TT][DT][Ws]: kernels[b, t0+j+W-1-w, d0+c, w], later dkernels */
    float *xs = ks + a.TT * DT * a.Ws;      /* [TT+W-1][DT]: x[b, t0-W+1+r, d0+c] */
    float *gs = xs + (a.TT + a.W - 1) * DT; /* [TT+W-1][DT]: dout[b, t0+r, d0+c] */
    const tile tl = tile_of(a);

    stage_bounds(a, tl, w_lo_x, w_lo_g);
    stage_rows<VR>(xs, a.x, a.sx, a, tl, tl.t0 - (a.W - 1), a.TT + a.W - 1);
    stage_rows<VR>(gs, a.dout, a.sg, a, tl, tl.t0, a.TT + a.W - 1);
    stage_kernels<VK>(ks, a, tl, true);
    __syncthreads(); /* each output reads rows and bounds that other threads staged */

    const int c = threadIdx.x % 32;
    const int64_t d = tl.d0 + c;
    if (d < a.D) /* no early return: every thread must reach the barrier below */
        for (int tt = threadIdx.x / 32; tt < a.TT && tl.t0 + tt < a.T; tt += WARPS) {
            float *k_sd = ks + (tt * DT + c) * a.Ws; /* k_sd[w] = kernels[b, s+W-1-w, d, w], s = t0+tt */
            const float *g_d = gs + tt * DT + c;     /* g_d[j*DT] = dout[b, s+j, d] */
            const float *x_d = xs + tt * DT + c;     /* x_d[w*DT] = x[b, s+w-W+1, d] */
            /* forward: x[s] feeds out[s+W-1-w] through kernels[s+W-1-w, w], so dx[s] sums dout * kernels there */
            float acc = 0.0f;
#pragma unroll 4
            for (int w = w_lo_g[tt]; w < a.W; w++) acc += g_d[(a.W - 1 - w) * DT] * k_sd[w];
            a.dx[(tl.b * a.T + tl.t0 + tt) * a.D + d] = acc;
            /* forward: out[s] += kernels[s,w] * x[s+w-W+1], so dkernels[s,w] = dout[s] * x[s+w-W+1]. This thread
             * alone read k_sd, so it may overwrite those slots with dkernels for the coalesced write below. */
            const float g = g_d[0];
            const int lo = w_lo_x[tt];
            for (int w = 0; w < lo; w++) k_sd[w] = 0.0f; /* these taps met the zero padding */
#pragma unroll 4
            for (int w = lo; w < a.W; w++) k_sd[w] = g * x_d[w * DT];
        }
    __syncthreads(); /* the write-out reads dkernels that other threads computed */
    write_dkernels<VK>(ks, a, tl);
}

/* Weight pitch: odd, so lane c's weights start at bank (c*Ws) mod 32, a different bank for every lane. */
int weight_pitch(int W) { return W | 1; }

/* Dynamic shared memory of a tile: bounds, kernels, and n_row_tiles [TT+W-1][DT] row tiles (x; x and dout). */
size_t smem_bytes(int TT, int W, int n_row_tiles) {
    const size_t floats = (size_t)TT * DT * weight_pitch(W) + (size_t)n_row_tiles * (TT + W - 1) * DT;
    return sizeof(float) * (BOUNDS + floats);
}

/* The largest TT (32, 16, 8) whose tile fits the default 48 KB; W = 64 needs TT = 8 and an opt-in above it. */
int pick_tokens_per_tile(int W, int n_row_tiles) {
    int TT = TT_MAX;
    while (TT > WARPS && smem_bytes(TT, W, n_row_tiles) > LADDER_DEFAULT_SMEM) TT /= 2;
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
    n->Ws = weight_pitch(p->W);
    n->TT = pick_tokens_per_tile(p->W, n_row_tiles);
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

/* The instantiation for the 16-byte paths the tensors allow. */
using kernel_fn = void (*)(tiled_args);
kernel_fn pick(kernel_fn table[2][2], bool vr, bool vk) { return table[vr][vk]; }

} // namespace

extern "C" ladder_status dynconv_fwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n;
    unsigned blocks = 0;
    LADDER_TRY(pack(p, a, 1, &n, &blocks));
    kernel_fn kernels[2][2] = {{dynconv_fwd_tiled_kernel<false, false>, dynconv_fwd_tiled_kernel<false, true>},
                               {dynconv_fwd_tiled_kernel<true, false>, dynconv_fwd_tiled_kernel<true, true>}};
    const bool vr = ladder_rows16(&a->x, 1), vk = p->W % 4 == 0 && ladder_rows16(&a->kernels, 1);
    return launch(pick(kernels, vr, vk), "dynconv_fwd_tiled_kernel", n, blocks, smem_bytes(n.TT, p->W, 1));
}

extern "C" ladder_status dynconv_bwd_gpu_tiled(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    tiled_args n;
    unsigned blocks = 0;
    LADDER_TRY(pack(p, a, 2, &n, &blocks));
    kernel_fn kernels[2][2] = {{dynconv_bwd_tiled_kernel<false, false>, dynconv_bwd_tiled_kernel<false, true>},
                               {dynconv_bwd_tiled_kernel<true, false>, dynconv_bwd_tiled_kernel<true, true>}};
    const bool vr = ladder_rows16(&a->x, 1) && ladder_rows16(&a->dout, 1);
    const bool vk = p->W % 4 == 0 && ladder_rows16(&a->kernels, 1) && ladder_rows16(&a->dkernels, 1);
    return launch(pick(kernels, vr, vk), "dynconv_bwd_tiled_kernel", n, blocks, smem_bytes(n.TT, p->W, 2));
}
