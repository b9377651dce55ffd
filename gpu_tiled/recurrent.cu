/*
 * gpu_tiled/recurrent.cu: gated linear attention as a recurrence, the tiled GPU rung (the structure of the
 * fused recurrent kernel).
 *
 * What changed since gpu_naive/: the state lives on chip. The grid is (sequence x head, V blocks, K blocks);
 * each block is one warp holding a tile of the state in registers for the whole sequence, lane j owning column
 * j of the tile (one float per row of it). Per step the warp stages q_t, k_t and the folded row gates of its rows
 * in shared memory once (double-buffered, so one __syncwarp per step), and every lane reads them as broadcasts;
 * v_t[j] and do_t[j] are one coalesced load per warp.
 *
 * - forward (tile BK_FWD x 32): o_t[j] sums the tile's column in the lane's registers; with K > BK_FWD the
 *   K blocks each write a partial o, summed afterwards in block order.
 * - backward (tile 32 x 32): pass 1 runs the state forwards (dq); pass 2 runs backwards carrying dSP and dSZ in
 *   registers (dk, dv, dh0); pass 3 adds the dht-parts forwards, as in cpu/recurrent.c. Sums along a row (over
 *   the lanes) use warp_rows_sum(): 31 shuffles leave row r's sum in lane r, where q_t[r] and k_t[r] already are.
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
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"

namespace {

constexpr int LANES = 32;  /* columns of a tile: one per lane */
constexpr int BK_FWD = 64; /* rows of a forward tile, BK_FWD floats of state per lane */
constexpr int BK_BWD = 32; /* rows of a backward tile: dSP and dSZ double the state per lane */
constexpr unsigned ALL = 0xffffffffu;

/* Sum over the warp of one value per lane. */
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int round = 4; round >= 0; round--) x += __shfl_xor_sync(ALL, x, 1 << round);
    return x;
}

/* One round of warp_rows_sum(): lanes C apart swap halves of their C*2 rows, each keeping C of them summed. */
template <int C, int N> __device__ __forceinline__ void rows_sum_round(double (&x)[N]) {
    const bool hi = threadIdx.x & C; /* the upper lane of each pair keeps the upper half of the rows */
#pragma unroll
    for (int r = 0; r < C; r++) { /* the half kept to x[r], the half sent to x[r + C] */
        const double a = x[r], b = x[r + C];
        x[r] = hi ? b : a;
        x[r + C] = hi ? a : b;
    }
#pragma unroll
    for (int r = 0; r < C; r++) x[r] += __shfl_xor_sync(ALL, x[r + C], C);
    if constexpr (C > 1) rows_sum_round<C / 2>(x);
}

/*
 * x[r] in lane j is the (r, j) entry of a 32 x 32 tile; returns in lane r the sum of row r over the lanes. Each
 * round halves the rows a lane keeps and swaps the other half with the lane C away, 16+8+4+2+1 = 31 shuffles
 * instead of 32 separate reductions of 5. The rounds are templates, so every index is a constant and the values
 * stay in registers. The sums feed the gate gradients, long sums that cancel, so they run in double (as in the
 * cpu rung): the first round widens the floats as it adds them, which keeps only 16 doubles per lane live.
 */
__device__ __forceinline__ double warp_rows_sum(const float (&x)[LANES]) {
    constexpr int C = LANES / 2;
    const bool hi = threadIdx.x & C;
    double y[C];
#pragma unroll
    for (int r = 0; r < C; r++) {
        const float keep = hi ? x[r + C] : x[r], send = hi ? x[r] : x[r + C];
        y[r] = (double)keep + (double)__shfl_xor_sync(ALL, send, C);
    }
    rows_sum_round<C / 2>(y);
    return y[0];
}

/*
 * What one step of a tile reads: its rows' q, k, folded gate and that gate's decay exp(gate), staged in shared
 * memory by the warp. Without gv every lane's row r decays by the same exp(gate[r]): one exponential per row,
 * computed once for the warp instead of once per lane.
 */
template <int BK> struct rows_of_step {
    float q[BK], k[BK], gate[BK], decay[BK];
};

/* Stage step @p t's rows kb*BK .. kb*BK+BK-1 (0 past K, so that padding rows stay 0). */
template <int BK>
__device__ __forceinline__ void stage_rows(const rec_call &c, rows_of_step<BK> &sm, int64_t b, int64_t t, int64_t h,
                                           int64_t kb) {
#pragma unroll
    for (int r = threadIdx.x; r < BK; r += LANES) {
        const int64_t i = kb * BK + r;
        const bool ok = i < c.K;
        sm.q[r] = ok ? rec_ld(c.q, b, t, h, i) : 0.0f;
        sm.k[r] = ok ? rec_ld(c.k, b, t, h, i) : 0.0f;
        sm.gate[r] = ok ? rec_row_gate(c, b, t, h, i) : 0.0f;
        sm.decay[r] = expf(sm.gate[r]);
    }
}

/*
 * The decay of tile entry (r, j) of step @p x: exp(gate_r + gv_j), formed per entry with gv so that neither
 * factor can overflow alone; without gv, the row's staged decay.
 */
template <int BK>
__device__ __forceinline__ float decay(const rec_call &c, const rows_of_step<BK> &x, int r, float gvj) {
    return c.gv.p ? expf(x.gate[r] + gvj) : x.decay[r];
}

/*
 * Forward, one warp per (sequence x head, column block vb, row block kb): S[r] is entry (kb*BK_FWD + r, j) of
 * the state, j = vb*32 + lane. Writes o (or, with several row blocks, its partial o_part[kb]) and ht.
 */
__global__ void __launch_bounds__(LANES) recurrent_fwd_tiled_kernel(rec_call c, float *o_part) {
    __shared__ rows_of_step<BK_FWD> sm[2];
    const int64_t vb = blockIdx.y, kb = blockIdx.z, n = blockIdx.x / c.H, h = blockIdx.x % c.H;
    const int64_t j = vb * LANES + threadIdx.x;
    const bool col = j < c.V;
    const rec_seq s = rec_seq_of(c, n);
    float S[BK_FWD];
#pragma unroll
    for (int r = 0; r < BK_FWD; r++) {
        const int64_t i = kb * BK_FWD + r;
        S[r] = col && i < c.K ? rec_ld(c.h0, n, h, i, j) : 0.0f;
    }
    if (s.len > 0) stage_rows<BK_FWD>(c, sm[0], s.b, rec_token(c, s, 0), h, kb);
    __syncwarp();
    for (int64_t step = 0; step < s.len; step++) {
        const int64_t t = rec_token(c, s, step);
        /* stage the next step into the other buffer: nobody reads it until after the __syncwarp below */
        if (step + 1 < s.len) stage_rows<BK_FWD>(c, sm[(step + 1) & 1], s.b, rec_token(c, s, step + 1), h, kb);
        const rows_of_step<BK_FWD> &x = sm[step & 1];
        const float vj = col ? rec_ld(c.v, s.b, t, h, j) : 0.0f, gvj = col ? rec_ld(c.gv, s.b, t, h, j) : 0.0f;
        float o = 0.0f;
#pragma unroll
        for (int r = 0; r < BK_FWD; r++) {
            S[r] = decay(c, x, r, gvj) * S[r] + x.k[r] * vj;
            o += x.q[r] * S[r];
        }
        if (col) {
            const int64_t at = rec_row(c, s.b, t, h) * c.V + j;
            if (o_part) o_part[kb * c.B * c.T * c.H * c.V + at] = c.scale * o;
            else c.o[at] = c.scale * o;
        }
        __syncwarp(); /* every lane is done with sm[step & 1] before the next step refills it */
    }
#pragma unroll
    for (int r = 0; r < BK_FWD; r++) {
        const int64_t i = kb * BK_FWD + r;
        if (c.ht && col && i < c.K) c.ht[((n * c.H + h) * c.K + i) * c.V + j] = S[r];
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
    float *dq, *dk;       /* [NV][B,T,H,K] */
    float *dv;            /* [NK][B,T,H,V] */
    double *G_row, *Z_row; /* [NV][B,T,H,K], nullptr without gates (Z_row also without dht) */
    double *G_col, *Z_col; /* [NK][B,T,H,V], nullptr without gv (Z_col also without dht) */
};

/*
 * Backward, one warp per (sequence x head, vb, kb), tile 32 x 32: lane j holds column vb*32 + j of rows
 * kb*32 .. kb*32+31. The three passes of cpu/recurrent.c on the tile; every output is this block's partial.
 */
__global__ void __launch_bounds__(LANES) recurrent_bwd_tiled_kernel(rec_call c, bwd_parts part) {
    __shared__ rows_of_step<BK_BWD> sm[2];
    const int lane = threadIdx.x;
    const int64_t vb = blockIdx.y, kb = blockIdx.z, n = blockIdx.x / c.H, h = blockIdx.x % c.H;
    const int64_t j = vb * LANES + lane, i_lane = kb * BK_BWD + lane; /* the lane's column, and its row in sums */
    const bool col = j < c.V, row_ok = i_lane < c.K;
    const int64_t tokens = c.B * c.T * c.H;
    float *dq = part.dq + vb * tokens * c.K, *dk = part.dk + vb * tokens * c.K, *dv = part.dv + kb * tokens * c.V;
    double *G_row = part.G_row ? part.G_row + vb * tokens * c.K : nullptr;
    double *Z_row = part.Z_row ? part.Z_row + vb * tokens * c.K : nullptr;
    double *G_col = part.G_col ? part.G_col + kb * tokens * c.V : nullptr;
    double *Z_col = part.Z_col ? part.Z_col + kb * tokens * c.V : nullptr;
    const rec_seq s = rec_seq_of(c, n);
    float S[BK_BWD], dSZ[BK_BWD], x[LANES]; /* x: one product per row of the tile, for warp_rows_sum() */

    /* pass 1, forwards: S_t, dq_t = scale * S_t do_t, and the do-parts of the gate sums (cpu/recurrent.c) */
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) {
        const int64_t i = kb * BK_BWD + r;
        S[r] = col && i < c.K ? rec_ld(c.h0, n, h, i, j) : 0.0f;
    }
    if (s.len > 0) stage_rows<BK_BWD>(c, sm[0], s.b, rec_token(c, s, 0), h, kb);
    __syncwarp();
    for (int64_t step = 0; step < s.len; step++) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        if (step + 1 < s.len) stage_rows<BK_BWD>(c, sm[(step + 1) & 1], s.b, rec_token(c, s, step + 1), h, kb);
        const rows_of_step<BK_BWD> &y = sm[step & 1];
        const float vj = col ? rec_ld(c.v, s.b, t, h, j) : 0.0f, doj = col ? rec_ld(c.dO, s.b, t, h, j) : 0.0f;
        const float gvj = col ? rec_ld(c.gv, s.b, t, h, j) : 0.0f;
        double Pq = 0.0;
#pragma unroll
        for (int r = 0; r < BK_BWD; r++) {
            const float P = decay(c, y, r, gvj) * S[r];
            Pq += (double)P * y.q[r];
            x[r] = P * doj; /* row r of P do, this lane's column */
            S[r] = P + y.k[r] * vj;
        }
        const double Pdo = warp_rows_sum(x); /* lane r: (P do_t)[r] over the tile's columns */
#pragma unroll
        for (int r = 0; r < BK_BWD; r++) x[r] = S[r] * doj;
        const double Sdo = warp_rows_sum(x);
        if (row_ok) {
            dq[row * c.K + i_lane] = c.scale * (float)Sdo;
            if (G_row) G_row[row * c.K + i_lane] = (double)y.q[lane] * c.scale * Pdo;
        }
        if (G_col && col) G_col[row * c.V + j] = (double)doj * c.scale * Pq;
        __syncwarp();
    }

    /* pass 2, backwards: dSP (from the outputs, in S's registers) and dSZ (dht decayed back) */
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) {
        const int64_t i = kb * BK_BWD + r;
        S[r] = 0.0f;
        dSZ[r] = col && i < c.K ? rec_ld(c.dht, n, h, i, j) : 0.0f;
    }
    if (s.len > 0) stage_rows<BK_BWD>(c, sm[0], s.b, rec_token(c, s, s.len - 1), h, kb);
    __syncwarp();
    double acc_row = 0.0, acc_col = 0.0;
    for (int64_t step = s.len - 1, k = 0; step >= 0; step--, k++) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        if (step > 0) stage_rows<BK_BWD>(c, sm[(k + 1) & 1], s.b, rec_token(c, s, step - 1), h, kb);
        const rows_of_step<BK_BWD> &y = sm[k & 1];
        const float vj = col ? rec_ld(c.v, s.b, t, h, j) : 0.0f, doj = col ? rec_ld(c.dO, s.b, t, h, j) : 0.0f;
        const float gvj = col ? rec_ld(c.gv, s.b, t, h, j) : 0.0f;
        const float v_do = warp_sum(vj * doj); /* over the tile's columns */
        float q_k = 0.0f;
        double Ek = 0.0, Zk = 0.0;
#pragma unroll
        for (int r = 0; r < BK_BWD; r++) {
            q_k += y.q[r] * y.k[r];
            Ek += (double)S[r] * y.k[r];
            Zk += (double)dSZ[r] * y.k[r];
            x[r] = S[r] * vj;
        }
        const double Ev = warp_rows_sum(x);
#pragma unroll
        for (int r = 0; r < BK_BWD; r++) x[r] = dSZ[r] * vj;
        const double Zv = warp_rows_sum(x);
        if (row_ok) {
            dk[row * c.K + i_lane] = (float)(Ev + Zv) + c.scale * y.q[lane] * v_do;
            if (G_row) {
                acc_row += G_row[row * c.K + i_lane] - (double)y.k[lane] * Ev;
                G_row[row * c.K + i_lane] = acc_row;
                if (Z_row) Z_row[row * c.K + i_lane] = (double)y.k[lane] * Zv;
            }
        }
        if (col) {
            dv[row * c.V + j] = (float)(Ek + Zk) + c.scale * doj * q_k;
            if (G_col) {
                acc_col += G_col[row * c.V + j] - (double)vj * Ek;
                G_col[row * c.V + j] = acc_col;
                if (Z_col) Z_col[row * c.V + j] = (double)vj * Zk;
            }
        }
#pragma unroll
        for (int r = 0; r < BK_BWD; r++) {
            const float d = decay(c, y, r, gvj);
            S[r] = (S[r] + c.scale * y.q[r] * doj) * d;
            dSZ[r] *= d;
        }
        __syncwarp();
    }

    /* dh0 = both parts after the first step; h0's share of the dht-part starts pass 3's sums */
    double z_col = 0.0;
#pragma unroll
    for (int r = 0; r < BK_BWD; r++) {
        const int64_t i = kb * BK_BWD + r;
        const float h0 = col && i < c.K ? rec_ld(c.h0, n, h, i, j) : 0.0f;
        if (c.dh0 && col && i < c.K) c.dh0[((n * c.H + h) * c.K + i) * c.V + j] = S[r] + dSZ[r];
        x[r] = dSZ[r] * h0;
        z_col += (double)dSZ[r] * h0;
    }
    double z_row = warp_rows_sum(x);

    /* pass 3, forwards: each step's gate sum gains the dht-parts of the steps before it */
    for (int64_t step = 0; Z_row && step < s.len; step++) {
        const int64_t row = rec_row(c, s.b, rec_token(c, s, step), h);
        if (row_ok) {
            G_row[row * c.K + i_lane] += z_row;
            z_row += Z_row[row * c.K + i_lane];
        }
        if (Z_col && col) {
            G_col[row * c.V + j] += z_col;
            z_col += Z_col[row * c.V + j];
        }
    }
}

constexpr int THREADS = 256;

ladder_status sum_parts(float *out, const float *part, int parts, int64_t n) {
    sum_parts_kernel<<<ladder_blocks(n, THREADS), THREADS>>>(out, part, parts, n);
    LADDER_LAUNCH_CHECK("sum_parts_kernel");
    return LADDER_OK;
}

ladder_status sum_parts_f64(double *out, const double *part, int parts, int64_t n) {
    sum_parts_f64_kernel<<<ladder_blocks(n, THREADS), THREADS>>>(out, part, parts, n);
    LADDER_LAUNCH_CHECK("sum_parts_f64_kernel");
    return LADDER_OK;
}

} // namespace

extern "C" ladder_status recurrent_fwd_gpu_tiled(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const rec_call c = rec_call_of(p, a);
    const int64_t nv = (c.V + LANES - 1) / LANES, nk = (c.K + BK_FWD - 1) / BK_FWD, n_o = c.B * c.T * c.H * c.V;
    ladder_scratch o_part; /* the K blocks' partial o, when there are several */
    if (nk > 1) LADDER_TRY(o_part.alloc((size_t)(nk * n_o) * sizeof(float)));
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)nv, (unsigned)nk); /* x: up to 2^31 - 1 blocks */
    recurrent_fwd_tiled_kernel<<<grid, LANES>>>(c, (float *)o_part.ptr);
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
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)nv, (unsigned)nk); /* x: up to 2^31 - 1 blocks */
    recurrent_bwd_tiled_kernel<<<grid, LANES>>>(c, part);
    LADDER_LAUNCH_CHECK("recurrent_bwd_tiled_kernel");
    LADDER_TRY(sum_parts(c.dq, part.dq, (int)nv, tokens * c.K));
    LADDER_TRY(sum_parts(c.dk, part.dk, (int)nv, tokens * c.K));
    LADDER_TRY(sum_parts(c.dv, part.dv, (int)nk, tokens * c.V));
    if (gates) LADDER_TRY(sum_parts_f64(g.G_row, part.G_row, (int)nv, tokens * c.K));
    if (gv) LADDER_TRY(sum_parts_f64(g.G_col, part.G_col, (int)nk, tokens * c.V));
    return rec_finish_gates(c, g);
}
