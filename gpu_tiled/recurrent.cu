/*
 * gpu_tiled/recurrent.cu: gated linear attention as a recurrence, the tiled GPU rung (the structure of the
 * fused recurrent kernel).
 *
 * What changed since gpu_naive/: the state lives on chip. The grid is (sequence x head, V blocks of 128, K
 * blocks); each block is four warps side by side, each holding a tile of the state in registers for the whole
 * sequence, lane j owning column j of its tile (one float per row of it). The block stages what the steps read
 * in shared memory, STEPS steps at a time: the rows' q_t, k_t and folded gates (shared by the four warps, read
 * by every lane as broadcasts) and the columns' v_t, do_t, gv_t. The copies go by cp.async, double-buffered, so
 * the next group of steps is in flight while this one computes: a step never waits on memory.
 *
 * - forward (tile BK_FWD x 32): o_t[j] sums the tile's column in the lane's registers; with K > BK_FWD the
 *   K blocks each write a partial o, summed afterwards in block order.
 * - backward (tile 32 x 32), the passes of cpu/recurrent.c as kernels that each hold one tile, so that each fits
 *   in 128 registers and four blocks share an SM: pass 1 runs the state forwards (dq); pass 2 runs backwards
 *   carrying dSP, the gradient from the outputs (dk, dv, dh0, the reverse cumulative gate sums); with dht, a
 *   third kernel runs backwards carrying dSZ, dht decayed back, adds its share, and runs pass 3 forwards (the
 *   dht-parts of the gate sums). Sums along a row (over the lanes) use warp_rows_sum(): 31 shuffles leave row
 *   r's sum in lane r, where q_t[r] and k_t[r] already are.
 *   Every sum that feeds a gate gradient (row sums, the lanes' column sums, the cumulative sums) is in double, as
 *   in cpu/recurrent.c: fp32 there missed the cpu rung by 1.1e-5 on dgv (chapter 2, "Which sums must be double").
 *   Every quantity is linear in the tile's columns (or rows), so each block writes its partial dq, dk, dv and
 *   gate sums, and small kernels add the partials in block order: no atomics, bitwise-repeatable.
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (f32, device pointers, any input strides, contiguous
 * outputs, K and V at most LADDER_RECURRENT_MAX_KV).
 * Run it:  build/bin/ladder run recurrent --rung gpu_tiled
 */
#include "cuda_check.cuh"
#include "cp_async.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"

namespace {

constexpr int LANES = 32;              /* columns of a warp's tile: one per lane */
constexpr int WARPS = 4;               /* a block: four warps side by side, sharing the rows they stage */
constexpr int THREADS = WARPS * LANES;
constexpr int COLS = WARPS * LANES;    /* columns of a block */
constexpr int STEPS = 8;               /* steps staged at once */
constexpr int BK_FWD = 64;             /* rows of a forward tile, BK_FWD floats of state per lane */
constexpr int BK_BWD = 32;             /* rows of a backward tile: dSP and dSZ double the state per lane */
constexpr unsigned ALL = 0xffffffffu;

/* Sum over the warp of one value per lane. */
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int round = 4; round >= 0; round--) x += __shfl_xor_sync(ALL, x, 1 << round);
    return x;
}

/* One round of warp_rows_sum(): lanes C apart swap halves of their C*2 rows, each keeping C of them summed. */
template <int C, class Acc, int N> __device__ __forceinline__ void rows_sum_round(Acc (&x)[N]) {
    const bool hi = threadIdx.x & C; /* the upper lane of each pair keeps the upper half of the rows */
#pragma unroll
    for (int r = 0; r < C; r++) { /* the half kept to x[r], the half sent to x[r + C] */
        const Acc a = x[r], b = x[r + C];
        x[r] = hi ? b : a;
        x[r + C] = hi ? a : b;
    }
#pragma unroll
    for (int r = 0; r < C; r++) x[r] += __shfl_xor_sync(ALL, x[r + C], C);
    if constexpr (C > 1) rows_sum_round<C / 2, Acc>(x);
}

/*
 * x(r) in lane j is the (r, j) entry of a 32 x 32 tile; returns in lane r the sum of row r over the lanes, in
 * Acc. Each round halves the rows a lane keeps and swaps the other half with the lane C away, 16+8+4+2+1 = 31
 * shuffles instead of 32 separate reductions of 5. The rounds are templates, so every index is a constant and
 * the values stay in registers. The entries come from a function of r, not an array, so that no 32 products sit
 * in registers beside the state. A sum that feeds a gate gradient runs in double (Acc = double; see the file's
 * head) from the second round on: the first adds pairs of products in float, one rounding the size of the
 * products' own (they are float products), and keeps 8 doubles per lane live instead of 16.
 */
template <class Acc, class Entry> __device__ __forceinline__ Acc warp_rows_sum(Entry x) {
    constexpr int C = LANES / 2, C2 = C / 2;
    const bool hi = threadIdx.x & C, hi2 = threadIdx.x & C2;
    float y[C];
#pragma unroll
    for (int r = 0; r < C; r++) {
        const float keep = hi ? x(r + C) : x(r), send = hi ? x(r) : x(r + C);
        y[r] = keep + __shfl_xor_sync(ALL, send, C);
    }
    Acc z[C2];
#pragma unroll
    for (int r = 0; r < C2; r++) {
        const float keep = hi2 ? y[r + C2] : y[r], send = hi2 ? y[r] : y[r + C2];
        z[r] = (Acc)keep + (Acc)__shfl_xor_sync(ALL, send, C2);
    }
    rows_sum_round<C2 / 2, Acc>(z);
    return z[0];
}

/* Sum over the tile's rows of a(r) * b(r) in Acc: in double, every product exact and every sum rounded once. */
template <class Acc, class A, class B> __device__ __forceinline__ Acc rows_dot(A a, B b) {
    Acc sum = 0;
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) sum += (Acc)a(r) * (Acc)b(r);
    return sum;
}

/*
 * What a block stages for STEPS consecutive steps (slot 0 first, in the order the pass walks them): its rows'
 * q, k, folded gate and decay exp(gate), the steps' g, and its columns' v, gv and (backward) do. The copies go
 * by cp.async, so the next group of steps lands while this one computes, and no register holds it on the way;
 * the four warps of a block share the rows, so each row element is loaded once per block, not once per warp.
 * Slots past the sequence, rows past K and columns past V hold 0.
 */
template <int BK> struct __align__(16) staged {
    float q[STEPS][BK], k[STEPS][BK], gate[STEPS][BK], decay[STEPS][BK];
    float v[STEPS][COLS], gv[STEPS][COLS], dO[STEPS][COLS];
    float g[STEPS];
};

/* Copy element [a,b,c,d] of @p x to @p dst by cp.async (zero when !ok); an absent tensor stores 0 directly. */
__device__ __forceinline__ void copy4(float *dst, const rec_view &x, int64_t a, int64_t b, int64_t c, int64_t d,
                                      bool ok) {
    if (!x.p) *dst = 0.0f;
    else ladder_cp_async4(dst, ok ? x.p + a * x.s[0] + b * x.s[1] + c * x.s[2] + d * x.s[3] : x.p, ok);
}

/*
 * Start the copies of steps first, first + dir, ... (STEPS of them) of sequence @p s into @p x: rows
 * kb*BK .. kb*BK+BK-1, columns col0 .. col0+COLS-1. The gate slots receive gk as it is; stage_finish() folds
 * them once the copies have landed.
 */
template <int BK>
__device__ void stage_copy(const rec_call &c, staged<BK> &x, const rec_seq &s, int64_t h, int64_t kb, int64_t col0,
                           int64_t first, int dir, bool with_do) {
    for (int e = threadIdx.x; e < STEPS * BK; e += THREADS) {
        const int slot = e / BK, r = e % BK;
        const int64_t step = first + dir * slot, i = kb * BK + r;
        const bool ok = step >= 0 && step < s.len && i < c.K;
        const int64_t t = ok ? rec_token(c, s, step) : 0;
        copy4(&x.q[slot][r], c.q, s.b, t, h, i, ok);
        copy4(&x.k[slot][r], c.k, s.b, t, h, i, ok);
        copy4(&x.gate[slot][r], c.gk, s.b, t, h, i, ok);
    }
    for (int e = threadIdx.x; e < STEPS * COLS; e += THREADS) {
        const int slot = e / COLS, col = e % COLS;
        const int64_t step = first + dir * slot, j = col0 + col;
        const bool ok = step >= 0 && step < s.len && j < c.V;
        const int64_t t = ok ? rec_token(c, s, step) : 0;
        copy4(&x.v[slot][col], c.v, s.b, t, h, j, ok);
        copy4(&x.gv[slot][col], c.gv, s.b, t, h, j, ok);
        if (with_do) copy4(&x.dO[slot][col], c.dO, s.b, t, h, j, ok);
    }
    if (threadIdx.x < STEPS) {
        const int64_t step = first + dir * (int)threadIdx.x;
        const bool ok = step >= 0 && step < s.len;
        copy4(&x.g[threadIdx.x], c.g, s.b, ok ? rec_token(c, s, step) : 0, h, 0, ok);
    }
}

/*
 * Once the copies have landed (and a __syncthreads() made them visible): fold each row's gate, gk + g + g_gamma
 * in the order rec_row_gate() adds them, and take its decay. Without gv every lane's row r decays by the same
 * exp(gate[r]): one exponential per row and step for the whole block instead of one per lane.
 */
template <int BK> __device__ __forceinline__ void stage_finish(staged<BK> &x, float g_gamma) {
    for (int e = threadIdx.x; e < STEPS * BK; e += THREADS) {
        const int slot = e / BK, r = e % BK;
        const float gate = x.gate[slot][r] + x.g[slot] + g_gamma;
        x.gate[slot][r] = gate;
        x.decay[slot][r] = expf(gate);
    }
}

/*
 * The staging pipeline of a pass over one sequence, STEPS steps at a time: the copies of group n + 1 are in
 * flight while group n computes. Returns the group to compute now, its gates folded, visible to the block.
 */
template <int BK>
__device__ __forceinline__ staged<BK> &stage_next(const rec_call &c, staged<BK> (&sm)[2], const rec_seq &s,
                                                  int64_t h, int64_t kb, int64_t col0, int64_t group, int64_t groups,
                                                  int64_t first, int dir, bool with_do, float g_gamma) {
    staged<BK> &x = sm[group & 1];
    ladder_cp_async_wait_all();
    __syncthreads(); /* group's copies visible to all; every warp is done with the other buffer */
    stage_finish(x, g_gamma);
    if (group + 1 < groups) stage_copy(c, sm[(group + 1) & 1], s, h, kb, col0, first + dir * STEPS, dir, with_do);
    __syncthreads(); /* the folded gates visible to all */
    return x;
}

/*
 * The decay of tile entry (r, j) of slot @p slot: exp(gate_r + gv_j), formed per entry with gv so that neither
 * factor can overflow alone; without gv, the row's staged decay.
 */
template <int BK>
__device__ __forceinline__ float decay(const rec_call &c, const staged<BK> &x, int slot, int r, float gvj) {
    return c.gv.p ? expf(x.gate[slot][r] + gvj) : x.decay[slot][r];
}

/*
 * Forward, one block of four warps per (sequence x head, column block, row block kb): warp w's lane holds
 * column j = col0 + 32w + lane of rows kb*BK_FWD .. + BK_FWD - 1 of the state, S[r] its entry in row r.
 * Writes o (or, with several row blocks, its partial o_part[kb]) and ht.
 */
__global__ void __launch_bounds__(THREADS, 1) recurrent_fwd_tiled_kernel(rec_call c, float *o_part) {
    __shared__ staged<BK_FWD> sm[2];
    const int warp = threadIdx.x / LANES, col = warp * LANES + threadIdx.x % LANES; /* the lane's staged column */
    const int64_t n = blockIdx.x / c.H, h = blockIdx.x % c.H, kb = blockIdx.z, col0 = blockIdx.y * (int64_t)COLS;
    const int64_t j = col0 + col;
    const bool has_col = j < c.V, warp_busy = col0 + warp * LANES < c.V; /* a warp wholly past V only stages */
    const rec_seq s = rec_seq_of(c, n);
    const float g_gamma = rec_ld(c.g_gamma, h, 0, 0, 0);
    float S[BK_FWD];
#pragma unroll
    for (int r = 0; r < BK_FWD; r++) {
        const int64_t i = kb * BK_FWD + r;
        S[r] = has_col && i < c.K ? rec_ld(c.h0, n, h, i, j) : 0.0f;
    }
    const int64_t groups = (s.len + STEPS - 1) / STEPS;
    if (groups > 0) stage_copy(c, sm[0], s, h, kb, col0, 0, 1, false);
    for (int64_t group = 0; group < groups; group++) {
        const int64_t first = group * STEPS;
        const staged<BK_FWD> &x = stage_next(c, sm, s, h, kb, col0, group, groups, first, 1, false, g_gamma);
        const int steps = (int)(s.len - first < STEPS ? s.len - first : STEPS);
        for (int slot = 0; warp_busy && slot < steps; slot++) {
            const float vj = x.v[slot][col], gvj = x.gv[slot][col];
            float o = 0.0f;
#pragma unroll
            for (int r = 0; r < BK_FWD; r++) {
                S[r] = decay(c, x, slot, r, gvj) * S[r] + x.k[slot][r] * vj;
                o += x.q[slot][r] * S[r];
            }
            if (has_col) {
                const int64_t at = rec_row(c, s.b, rec_token(c, s, first + slot), h) * c.V + j;
                if (o_part) o_part[kb * c.B * c.T * c.H * c.V + at] = c.scale * o;
                else c.o[at] = c.scale * o;
            }
        }
    }
#pragma unroll
    for (int r = 0; r < BK_FWD; r++) {
        const int64_t i = kb * BK_FWD + r;
        if (c.ht && has_col && i < c.K) c.ht[((n * c.H + h) * c.K + i) * c.V + j] = S[r];
    }
}

/* out[e] = sum over p < parts of part[p * n + e], in p order. */
__global__ void sum_parts_kernel(float *out, const float *part, int parts, int64_t n) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    float sum = 0.0f;
    for (int p = 0; p < parts; p++) sum += part[p * n + e];
    out[e] = sum;
}

/* The same in double, for the gate sums. */
__global__ void sum_parts_f64_kernel(double *out, const double *part, int parts, int64_t n) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    double sum = 0.0;
    for (int p = 0; p < parts; p++) sum += part[p * n + e];
    out[e] = sum;
}

/* The backward's partial outputs, one slab per column block (rows) or row block (columns). */
struct bwd_parts {
    float *dq, *dk;        /* [NV][B,T,H,K] */
    float *dv;             /* [NK][B,T,H,V] */
    double *G_row, *Z_row; /* [NV][B,T,H,K], nullptr without gates (Z_row also without dht) */
    double *G_col, *Z_col; /* [NK][B,T,H,V], nullptr without gv (Z_col also without dht) */
};

/*
 * Where a backward block works: one block of four warps per (sequence x head, column block, row block kb),
 * tiles 32 x 32. Warp w's lane holds column j = col0 + 32w + lane of rows kb*32 .. kb*32+31; a row sum over the
 * warp lands in the lane of its row, so the lane also owns row i = kb*32 + lane. The warp writes the partials
 * of its column block vb (dq, dk, the row sums) and of row block kb (dv, the column sums): the pointers below
 * start at rows and cols, so that no two warps of the grid write one element. All three backward kernels take their
 * place from here.
 */
struct bwd_tile {
    int lane, col;               /* the lane, and its column in the staged tiles */
    int n, h, kb, col0, j, i;    /* sequence, head, row block, first column; the lane's column and row */
    bool has_col, has_row, busy; /* busy: the warp has columns (a warp wholly past V only stages) */
    int64_t rows, cols;          /* where the warp's slabs start in bwd_parts' row and column partials */
    rec_seq s;
    int64_t groups; /* groups of STEPS steps */
};

__device__ __forceinline__ bwd_tile bwd_tile_of(const rec_call &c) {
    static_assert(BK_BWD == LANES, "a row sum over the warp lands in the lane of its row");
    bwd_tile t;
    const int warp = threadIdx.x / LANES;
    t.lane = threadIdx.x % LANES, t.col = warp * LANES + t.lane;
    /* every index here is below 2^31: grid dimensions, or K and V (at most LADDER_RECURRENT_MAX_KV) */
    t.n = (int)(blockIdx.x / c.H), t.h = (int)(blockIdx.x % c.H), t.kb = (int)blockIdx.z;
    t.col0 = (int)blockIdx.y * COLS, t.j = t.col0 + t.col, t.i = t.kb * BK_BWD + t.lane;
    const int64_t vb = blockIdx.y * (int64_t)WARPS + warp, tokens = c.B * c.T * c.H;
    t.has_col = t.j < c.V, t.has_row = t.i < c.K, t.busy = vb < (c.V + LANES - 1) / LANES;
    t.rows = (t.busy ? vb : 0) * tokens * c.K, t.cols = t.kb * tokens * c.V;
    t.s = rec_seq_of(c, t.n);
    t.groups = (t.s.len + STEPS - 1) / STEPS;
    return t;
}

/*
 * Each backward kernel holds one tile of 32 floats per lane, and fits in 128 registers: four blocks of 128
 * threads fill the SM's 64K registers, 528 blocks at once on an H100, so the benchmark's grid of 512 runs in
 * one wave. (Passes 2 and 3 as one kernel took 255 registers with dht, two tiles, and 168 without: three blocks
 * per SM, the grid in two waves.)
 */
constexpr int BWD_BLOCKS_PER_SM = 4;

/* Load tile row r of column j from a [N,H,K,V] state (0 past K or V, or when the tensor is absent). */
__device__ __forceinline__ float state_entry(const rec_call &c, const rec_view &x, const bwd_tile &t, int r) {
    const int64_t i = t.kb * BK_BWD + r;
    return t.has_col && i < c.K ? rec_ld(x, t.n, t.h, i, t.j) : 0.0f;
}

/* Element (r, j) of the tile in a contiguous [N,H,K,V] output, or nullptr past K or V. */
__device__ __forceinline__ float *state_out(const rec_call &c, float *x, const bwd_tile &t, int r) {
    const int64_t i = t.kb * BK_BWD + r;
    return t.has_col && i < c.K ? x + ((t.n * c.H + t.h) * c.K + i) * c.V + t.j : nullptr;
}

/*
 * Backward pass 1, forwards (cpu/recurrent.c): S_t, dq_t = scale * S_t do_t, and the do-parts of the gate sums,
 * by rows (P_t do_t) and by columns (P_t^T q_t, for gv).
 */
__global__ void __launch_bounds__(THREADS, BWD_BLOCKS_PER_SM) recurrent_bwd_pass1_kernel(rec_call c, bwd_parts part) {
    __shared__ staged<BK_BWD> sm[2];
    const bwd_tile t = bwd_tile_of(c);
    const float g_gamma = rec_ld(c.g_gamma, t.h, 0, 0, 0);
    float S[BK_BWD];
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) S[r] = state_entry(c, c.h0, t, r);
    if (t.groups > 0) stage_copy(c, sm[0], t.s, t.h, t.kb, t.col0, 0, 1, true);
    for (int64_t group = 0; group < t.groups; group++) {
        const int64_t first = group * STEPS;
        const staged<BK_BWD> &y = stage_next(c, sm, t.s, t.h, t.kb, t.col0, group, t.groups, first, 1, true, g_gamma);
        const int steps = (int)(t.s.len - first < STEPS ? t.s.len - first : STEPS);
        for (int slot = 0; t.busy && slot < steps; slot++) {
            const int64_t row = rec_row(c, t.s.b, rec_token(c, t.s, first + slot), t.h);
            const int64_t at_i = t.rows + row * c.K + t.i, at_j = t.cols + row * c.V + t.j; /* in the partials */
            const float vj = y.v[slot][t.col], doj = y.dO[slot][t.col], gvj = y.gv[slot][t.col];
#pragma unroll
            for (int r = 0; r < BK_BWD; r++) S[r] *= decay(c, y, slot, r, gvj); /* P: decayed, before k v^T */
            /*
             * lane r: (P do_t)[r], the row part of the gate sums (in double with gates). It also gives dq: S_t do_t
             * = P do_t + k_t (v_t . do_t), so one row sum per step serves both, and v . do is a warp sum.
             */
            const auto Pdo_r = [&](int r) { return S[r] * doj; };
            const double Pdo = part.G_row ? warp_rows_sum<double>(Pdo_r) : warp_rows_sum<float>(Pdo_r);
            const float v_do = warp_sum(vj * doj); /* over the tile's columns */
            if (t.has_row) {
                part.dq[at_i] = c.scale * ((float)Pdo + y.k[slot][t.lane] * v_do);
                if (part.G_row) part.G_row[at_i] = (double)y.q[slot][t.lane] * c.scale * Pdo;
            }
            if (part.G_col && t.has_col) { /* (P^T q_t)[j], the column part (gv) */
                const double Pq = rows_dot<double>([&](int r) { return S[r]; }, [&](int r) { return y.q[slot][r]; });
                part.G_col[at_j] = (double)doj * c.scale * Pq;
            }
#pragma unroll
            for (int r = 0; r < BK_BWD; r++) S[r] += y.k[slot][r] * vj;
        }
    }
}

/*
 * Backward pass 2 of dSP, backwards: E_t = D_{t+1} * dSP_{t+1} carried in registers (dSP_t = E_t + scale q_t
 * do_t^T, the gradient that reaches S_t through the outputs) for dk, dv, dSP's part of dh0, and the reverse
 * cumulative gate sums, which start from pass 1's do-parts. The dht-part is the next kernel's.
 */
__global__ void __launch_bounds__(THREADS, BWD_BLOCKS_PER_SM) recurrent_bwd_dsp_kernel(rec_call c, bwd_parts part) {
    __shared__ staged<BK_BWD> sm[2];
    const bwd_tile t = bwd_tile_of(c);
    const float g_gamma = rec_ld(c.g_gamma, t.h, 0, 0, 0);
    float E[BK_BWD];
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) E[r] = 0.0f;
    if (t.groups > 0) stage_copy(c, sm[0], t.s, t.h, t.kb, t.col0, t.s.len - 1, -1, true);
    double acc_row = 0.0, acc_col = 0.0;
    for (int64_t group = 0; group < t.groups; group++) {
        const int64_t first = t.s.len - 1 - group * STEPS; /* slot 0 is the latest step of the group */
        const staged<BK_BWD> &y = stage_next(c, sm, t.s, t.h, t.kb, t.col0, group, t.groups, first, -1, true, g_gamma);
        const int steps = (int)(first + 1 < STEPS ? first + 1 : STEPS);
        for (int slot = 0; t.busy && slot < steps; slot++) {
            const int64_t row = rec_row(c, t.s.b, rec_token(c, t.s, first - slot), t.h);
            const int64_t at_i = t.rows + row * c.K + t.i, at_j = t.cols + row * c.V + t.j; /* in the partials */
            const float vj = y.v[slot][t.col], doj = y.dO[slot][t.col], gvj = y.gv[slot][t.col];
            const float v_do = warp_sum(vj * doj);                            /* over the tile's columns */
            const float q_k = warp_sum(y.q[slot][t.lane] * y.k[slot][t.lane]); /* over its rows, lane r row r */
            /*
             * E_t against k_t (column sums, for dv) and v_t (row sums, for dk): in double where they feed the gate
             * sums (E v with gates, E^T k with gv), else in float: a double sum of floats converts every term, and
             * an H100 converts to double at a quarter of its double add rate (16 against 64 per clock and SM).
             */
            const auto E_r = [&](int r) { return E[r]; };
            const auto k_r = [&](int r) { return y.k[slot][r]; };
            const auto Ev_r = [&](int r) { return E[r] * vj; };
            const double Ek = part.G_col ? rows_dot<double>(E_r, k_r) : rows_dot<float>(E_r, k_r);
            const double Ev = part.G_row ? warp_rows_sum<double>(Ev_r) : warp_rows_sum<float>(Ev_r);
            if (t.has_row) {
                part.dk[at_i] = (float)Ev + c.scale * y.q[slot][t.lane] * v_do;
                if (part.G_row) part.G_row[at_i] = acc_row += part.G_row[at_i] - (double)y.k[slot][t.lane] * Ev;
            }
            if (t.has_col) {
                part.dv[at_j] = (float)Ek + c.scale * doj * q_k;
                if (part.G_col) part.G_col[at_j] = acc_col += part.G_col[at_j] - (double)vj * Ek;
            }
#pragma unroll
            for (int r = 0; r < BK_BWD; r++) E[r] = (E[r] + c.scale * y.q[slot][r] * doj) * decay(c, y, slot, r, gvj);
        }
    }
    /* dh0 = D_1 * dSP_1 + dSZ_0: E now holds the first term; the dSZ kernel adds the second */
#pragma unroll
    for (int r = 0; t.busy && c.dh0 && r < BK_BWD; r++)
        if (float *dh0 = state_out(c, c.dh0, t, r)) *dh0 = E[r];
}

/*
 * With dht only, after the dSP kernel. Pass 2 of dSZ, backwards: dSZ_t (dht decayed back) adds dSZ_t v_t to dk,
 * dSZ_t^T k_t to dv and dSZ_0 to dh0, on top of what the dSP kernel wrote there (the same lane of the same block
 * wrote each element, so no other thread touches it), and leaves each step's dht-part of the gate sums in Z_row
 * and Z_col. Then pass 3, forwards: each step's gate sum gains the dht-parts of h0 and of the steps before it.
 * The sums run in Acc: double when gates are given (for Z k too, which only gv needs), else float. Picked at run
 * time, as the dSP kernel does, the two kinds of sums would not fit in 128 registers with pass 3 beside them.
 */
template <class Acc>
__global__ void __launch_bounds__(THREADS, BWD_BLOCKS_PER_SM) recurrent_bwd_dsz_kernel(rec_call c, bwd_parts part) {
    __shared__ staged<BK_BWD> sm[2];
    const bwd_tile t = bwd_tile_of(c);
    const float g_gamma = rec_ld(c.g_gamma, t.h, 0, 0, 0);
    float Z[BK_BWD];
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) Z[r] = state_entry(c, c.dht, t, r);
    if (t.groups > 0) stage_copy(c, sm[0], t.s, t.h, t.kb, t.col0, t.s.len - 1, -1, false);
    for (int64_t group = 0; group < t.groups; group++) {
        const int64_t first = t.s.len - 1 - group * STEPS; /* slot 0 is the latest step of the group */
        const staged<BK_BWD> &y = stage_next(c, sm, t.s, t.h, t.kb, t.col0, group, t.groups, first, -1, false, g_gamma);
        const int steps = (int)(first + 1 < STEPS ? first + 1 : STEPS);
        for (int slot = 0; t.busy && slot < steps; slot++) {
            const int64_t row = rec_row(c, t.s.b, rec_token(c, t.s, first - slot), t.h);
            const int64_t at_i = t.rows + row * c.K + t.i, at_j = t.cols + row * c.V + t.j; /* in the partials */
            const float vj = y.v[slot][t.col], gvj = y.gv[slot][t.col];
            const auto Z_r = [&](int r) { return Z[r]; };
            const auto k_r = [&](int r) { return y.k[slot][r]; };
            const auto Zv_r = [&](int r) { return Z[r] * vj; };
            const double Zk = rows_dot<Acc>(Z_r, k_r);
            const double Zv = warp_rows_sum<Acc>(Zv_r);
            if (t.has_row) {
                part.dk[at_i] += (float)Zv;
                if (part.Z_row) part.Z_row[at_i] = (double)y.k[slot][t.lane] * Zv;
            }
            if (t.has_col) {
                part.dv[at_j] += (float)Zk;
                if (part.Z_col) part.Z_col[at_j] = (double)vj * Zk;
            }
#pragma unroll
            for (int r = 0; r < BK_BWD; r++) Z[r] *= decay(c, y, slot, r, gvj);
        }
    }
    if (!t.busy) return; /* no barrier follows */

    /* dh0 gains dSZ_0; h0's share of the dht-part, dSZ_0 * h0 (in Z's registers), starts pass 3's sums */
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) {
        if (float *dh0 = c.dh0 ? state_out(c, c.dh0, t, r) : nullptr) *dh0 += Z[r];
        Z[r] *= state_entry(c, c.h0, t, r);
    }
    double z_col = rows_dot<double>([&](int r) { return Z[r]; }, [](int) { return 1.0f; });
    double z_row = warp_rows_sum<double>([&](int r) { return Z[r]; });

    /*
     * pass 3, forwards: each step's gate sum gains the dht-parts of the steps before it. STEPS steps at a time,
     * every load of a group issued before its first store, so that the group waits on memory once, not per step.
     */
    for (int64_t first = 0; part.Z_row && first < t.s.len; first += STEPS) {
        double g_row[STEPS], z_rows[STEPS], g_col[STEPS], z_cols[STEPS];
        int64_t row[STEPS];
        const auto at_i = [&](int64_t row) { return t.rows + row * c.K + t.i; }; /* in the partials */
        const auto at_j = [&](int64_t row) { return t.cols + row * c.V + t.j; };
#pragma unroll
        for (int slot = 0; slot < STEPS; slot++) {
            const bool ok = first + slot < t.s.len;
            row[slot] = ok ? rec_row(c, t.s.b, rec_token(c, t.s, first + slot), t.h) : 0;
            const bool r_ok = ok && t.has_row, c_ok = ok && part.Z_col && t.has_col;
            g_row[slot] = r_ok ? part.G_row[at_i(row[slot])] : 0.0;
            z_rows[slot] = r_ok ? part.Z_row[at_i(row[slot])] : 0.0;
            g_col[slot] = c_ok ? part.G_col[at_j(row[slot])] : 0.0;
            z_cols[slot] = c_ok ? part.Z_col[at_j(row[slot])] : 0.0;
        }
#pragma unroll
        for (int slot = 0; slot < STEPS; slot++) {
            if (first + slot >= t.s.len) break;
            if (t.has_row) part.G_row[at_i(row[slot])] = g_row[slot] + z_row;
            if (part.Z_col && t.has_col) part.G_col[at_j(row[slot])] = g_col[slot] + z_col;
            z_row += z_rows[slot];
            z_col += z_cols[slot];
        }
    }
}

constexpr int SUM_THREADS = 256;

ladder_status sum_parts(float *out, const float *part, int parts, int64_t n) {
    sum_parts_kernel<<<ladder_blocks(n, SUM_THREADS), SUM_THREADS>>>(out, part, parts, n);
    LADDER_LAUNCH_CHECK("sum_parts_kernel");
    return LADDER_OK;
}

ladder_status sum_parts_f64(double *out, const double *part, int parts, int64_t n) {
    sum_parts_f64_kernel<<<ladder_blocks(n, SUM_THREADS), SUM_THREADS>>>(out, part, parts, n);
    LADDER_LAUNCH_CHECK("sum_parts_f64_kernel");
    return LADDER_OK;
}

} // namespace

extern "C" ladder_status recurrent_fwd_gpu_tiled(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const rec_call c = rec_call_of(p, a);
    const int64_t nk = (c.K + BK_FWD - 1) / BK_FWD, n_o = c.B * c.T * c.H * c.V;
    ladder_scratch o_part; /* the K blocks' partial o, when there are several */
    if (nk > 1) LADDER_TRY(o_part.alloc((size_t)(nk * n_o) * sizeof(float)));
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)((c.V + COLS - 1) / COLS), (unsigned)nk); /* x: < 2^31 */
    recurrent_fwd_tiled_kernel<<<grid, THREADS>>>(c, (float *)o_part.ptr);
    LADDER_LAUNCH_CHECK("recurrent_fwd_tiled_kernel");
    return nk > 1 ? sum_parts(c.o, (const float *)o_part.ptr, (int)nk, n_o) : LADDER_OK;
}

extern "C" ladder_status recurrent_bwd_gpu_tiled(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const rec_call c = rec_call_of(p, a);
    const int64_t nv = (c.V + LANES - 1) / LANES, nk = (c.K + BK_BWD - 1) / BK_BWD, tokens = c.B * c.T * c.H;
    const bool gates = rec_has_gates(c), dht = c.dht.p != nullptr, gv = c.gv.p != nullptr;
    rec_gate_scratch g; /* the gate sums, all blocks added: what rec_finish_gates() reads */
    LADDER_TRY(g.alloc(c));
    /* the partials: dq, dk, dv (floats), then the gate sums of every block (doubles) */
    const int64_t n_rows = nv * tokens * c.K, n_cols = nk * tokens * c.V;
    const int64_t n_f64 = (gates ? n_rows * (dht ? 2 : 1) : 0) + (gv ? n_cols * (dht ? 2 : 1) : 0);
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)(n_f64 * 8 + (2 * n_rows + n_cols) * 4)));
    bwd_parts part = {};
    double *f64 = (double *)mem.ptr;
    part.G_row = gates ? f64 : nullptr, f64 += gates ? n_rows : 0;
    part.Z_row = gates && dht ? f64 : nullptr, f64 += gates && dht ? n_rows : 0;
    part.G_col = gv ? f64 : nullptr, f64 += gv ? n_cols : 0;
    part.Z_col = gv && dht ? f64 : nullptr, f64 += gv && dht ? n_cols : 0;
    part.dq = (float *)f64, part.dk = part.dq + n_rows, part.dv = part.dk + n_rows;
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)((c.V + COLS - 1) / COLS), (unsigned)nk); /* x: < 2^31 */
    recurrent_bwd_pass1_kernel<<<grid, THREADS>>>(c, part);
    LADDER_LAUNCH_CHECK("recurrent_bwd_pass1_kernel");
    recurrent_bwd_dsp_kernel<<<grid, THREADS>>>(c, part);
    LADDER_LAUNCH_CHECK("recurrent_bwd_dsp_kernel");
    if (dht) {
        if (gates) recurrent_bwd_dsz_kernel<double><<<grid, THREADS>>>(c, part);
        else recurrent_bwd_dsz_kernel<float><<<grid, THREADS>>>(c, part);
        LADDER_LAUNCH_CHECK("recurrent_bwd_dsz_kernel");
    }
    LADDER_TRY(sum_parts(c.dq, part.dq, (int)nv, tokens * c.K));
    LADDER_TRY(sum_parts(c.dk, part.dk, (int)nv, tokens * c.K));
    LADDER_TRY(sum_parts(c.dv, part.dv, (int)nk, tokens * c.V));
    if (gates) LADDER_TRY(sum_parts_f64(g.G_row, part.G_row, (int)nv, tokens * c.K));
    if (gv) LADDER_TRY(sum_parts_f64(g.G_col, part.G_col, (int)nk, tokens * c.V));
    return rec_finish_gates(c, g);
}
