/*
 * gpu_tensorcore/recurrent.cu: gated linear attention in the chunked form, on the tensor cores.
 *
 * What changed since gpu_tiled/: the recurrence no longer runs one step at a time. The steps are cut into chunks
 * of CH = 16 (one k step of mma.sync m16n8k16), and with S0 the state at a chunk's start, A and B the cumulative
 * sums of the row and column log gates inside the chunk (fp32, from 0 at the chunk's start):
 *
 *     o_t[j] = scale * ( exp(B_t[j]) sum_i q_t[i] exp(A_t[i]) S0[i,j]                        the state part
 *                      + sum_{s<=t} P_ts exp(B_t[j]-B_s[j]) v_s[j] ),                         the diagonal part
 *     P_ts   = sum_i q_t[i] k_s[i] exp(A_t[i]-A_s[i])   (s <= t)
 *     S_end  = exp(A_C + B_C) ⊙ S0 + (k ⊙ exp(A_C - A))^T (v ⊙ exp(B_C - B))
 *
 * 1. The state products on the matrix units (state_times, state_update, rows_times_state). A block owns the
 *    state's columns c0 .. c0+VB-1 (VB = 16 per warp) and every row; warp w holds S^T rows j0 = 16w .. j0+15 in
 *    registers as the fp32 accumulators of m16n8k16 (fragment nt: state rows 8nt .. 8nt+7; with K > 128 a pair of
 *    warps splits the rows, join_halves). Two accumulator tiles side by side, rounded to 16 bits, are an A
 *    fragment (common/mma.cuh), so o^T = S^T (q ⊙ exp(A))^T reads the state straight from the registers, and the
 *    update S^T = decay ⊙ S^T + (v ⊙ ..)^T (k ⊙ ..) accumulates into them. The state stays fp32 between chunks;
 *    in the forward its operands are rounded once to the input dtype (as fla does), in the backward split in two
 *    (split2()), since the gate sums need more than 8 bits of dq and dk.
 * 2. Every factor at most 1 (for gates <= 0): exp(A_t), exp(A_C - A_s), and exp(A_t - A_s) for s <= t are formed
 *    as they are, never exp(-A_s) alone (a per-step gate of -30 overflows it within 3 steps). The chunk is the GLA
 *    paper's sub-chunk: its diagonal part, which needs exp(A_t[i] - A_s[i]) per pair and channel, is summed in
 *    fp32; what fla's off-diagonal sub-blocks compute, q of one sub-chunk against k v of an earlier one, is here
 *    the state part of the next chunk: the same products, associated through the state, with fewer multiply-adds
 *    (2KV + 8(K+V) per step instead of 2KV + 32(K+V)). Without gk a pair of P costs one exponential, not K.
 * 3. The diagonal blocks off the chain (diag_kernel). They do not depend on the state, so one kernel computes
 *    them for every chunk at once: P for the forward (1 KB per chunk, staged back by the sweep, which without gv
 *    multiplies it into V on the mma, P rounded once), and in the
 *    backward the whole diagonal parts of dq, dk, dv (and o), which the sweeps then complete. What stays in the
 *    sweeps' sequential loop is the state's work: the decays, the operands, the products and their epilogues.
 *    Being parallel, it is shaped for throughput: its own small shared-memory plan (several blocks per SM), each
 *    pair's product formed once, its exponentials by __expf.
 * 4. Staging by cp.async, double-buffered (stage_chunk): the next chunk's q, k, v (do), gates (and P) are in
 *    flight while this chunk computes. A tile keeps the input's own [step][channel] layout, rows padded by 16
 *    bytes so that ldmatrix hits distinct banks; strided or misaligned inputs take element loads into the same
 *    tiles. In the backward the diagonal parts the sweeps complete are staged the same way (tc_call::xk, xv), so
 *    that no global load sits in the chain.
 * 5. Backward without stored states: a forward sweep (sweep_kernel in its backward mode) recomputes the state
 *    and adds the state part of dq = scale * S_t do_t (and of o in fp32, with gv); a reverse sweep
 *    (reverse_kernel) carries dH = dL/dS backwards and adds those of dk and dv, and writes dh0. dq and dk
 *    contract over the state's columns, which the warps split: they read a 16-bit copy of the state in shared
 *    memory (Sx), and every block writes its partial, summed afterwards in block order: no atomics.
 * 6. The gate gradients in chapter 2's form (bwd(), gate_rows_kernel, gate_cols_kernel): the identity of
 *    recurrent.h with what cancels kept apart (each step's own diagonal term; dht's part, from a second reverse
 *    sweep), summed in double, then rec_finish_gates(). A reverse cumulative sum splits into segments (a warp
 *    each) that start from the totals of the segments after them (gate_sums).
 * 7. The forward split in two (split_fwd: states_kernel, out_kernel), without gv: the sweep of 1. is a chain of
 *    T/16 links whose block fills an SM's registers, so nothing hides its latency. Instead a kernel carries the
 *    state alone, 64 steps a link, writing the state at every chunk's start (16-bit), and a second computes every
 *    chunk's o in parallel from it: the state part as one product, the pairs inside the chunk as a 64 x 64
 *    matrix P from 16-step sub-chunks (the off-diagonal ones on the mma, factored around the step before the
 *    query's sub-chunk; the diagonal ones in fp32 as in 2.), then P V. The price is the states' bytes.
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all f16; gates,
 * states and their gradients f32; device pointers; any input strides; contiguous outputs; K, V <= 256).
 * Run it:  build/bin/ladder run recurrent --rung gpu_tensorcore --dtype bf16
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"

namespace {

constexpr int CH = 16;       /* steps per chunk: one k step of the mma */
constexpr int MAX_WARPS = 8; /* a block holds at most 16 * 8 = 128 state columns */
constexpr int NTM = 16;      /* fragments of 8 state rows a warp holds: 128 rows (a pair of warps for K > 128) */
constexpr int DIAG_BLOCKS = 3; /* diag_kernel blocks per SM (its own plan allows it; the sweeps' allowed one) */

/*
 * A strided input as the kernels read it, with whether its rows may go 16 bytes at a time (cp.async), and whether
 * it is contiguous (element [b,t,h,c] at token * C + c, for the flat token (b*T + t)*H + h: ld16()).
 */
template <class U> struct view {
    const U *p;
    int64_t s[4];
    bool vec, dense;
};

/* One call, as every kernel takes it. */
struct tc_call {
    rec_call c;                   /* sizes, scale, reverse; the f32 gates, h0, dht; the f32 outputs */
    view<uint16_t> q, k, v, dO;   /* 16-bit inputs, raw patterns */
    view<float> gk, gv;           /* the same tensors as c.gk, c.gv, with their vec flags */
    uint16_t *o;                  /* forward output (nullptr in the backward's sweep) */
    float *ht;                    /* forward: the final state (c.ht) */
    /* The backward's fp32 scratch, split for the gate sums (see bwd()): each gradient without its own step's
     * diagonal term, that term apart, and the part that comes from dht apart. [NVB]: one per column block. */
    float *dq_part, *dk_part;     /* [NVB][tokens][K]: dq and dk (do part) without the diagonal term */
    float *dkz_part;              /* [NVB][tokens][K]: dk's dht part (the reverse sweep's zrun) */
    float *vdo_part, *ptt;        /* [NVB][tokens]: v_t . do_t over the block's columns; [tokens]: q_t . k_t */
    float *o32, *dv32, *dvz32;    /* [tokens][V]: o (gv) and dv (do part) without the diagonal term; dv's dht part */
    float *dh0z;                  /* [N,H,K,V]: dh0's dht part */
    bool zrun;                    /* the reverse sweep of dht alone (scale 0), into dkz_part, dvz32, dh0z */
    float *P_store;               /* forward: every chunk's P, [slot][H][CH][CH+1] (chunk_slot), from diag_kernel */
    const float *xk, *xv;         /* backward: what the sweep adds its state part to, staged with the chunk: */
                                  /* [NVB][tokens][K] (dq_part, dk_part) and [tokens][V] (o32, dv32); or nullptr */
    int Kp, VB, nw, kh;           /* K rounded to 16; columns per block (16 nw / kh); warps; warps per 16 columns */
    bool bwd;                     /* the sweep as the backward's first pass */
    bool cvt;                     /* backward on f16 inputs: v and do converted to bf16 operand tiles (bwd()) */
};

/* Where each tile lies in dynamic shared memory (bytes), from Kp and VB; the same on host and device. */
struct smem_plan {
    int kp16, vp16, kp32, vp32;         /* row pitches in elements: 16 bytes of padding per row */
    int q, k, v, dO, gk, gv, g, Ps, Xk, Xv, buf; /* staged inputs, buffer 0; buffer 1 lies buf bytes further */
    int Qt, Kt, Vt, dOt, P, D, EA, Sx, P16, R, Red; /* R: each step's row of [B*T*H]; Red: join_halves */
    int Qtl, Ktl, Vtl, dOtl, Sxl, total;           /* the backward's remainder tiles (split2) */
    __host__ __device__ smem_plan(int Kp, int VB, bool bwd, bool gv_on, bool cvt, bool diag = false) {
        kp16 = Kp + 8, vp16 = VB + 8, kp32 = Kp + 4, vp32 = VB + 4;
        const int t16k = CH * kp16 * 2, t16v = CH * vp16 * 2, t32k = CH * kp32 * 4, t32v = CH * vp32 * 4;
        int at = 0;
        q = at, at += t16k;
        k = at, at += t16k;
        v = at, at += t16v;
        dO = at, at += bwd ? t16v : 0;
        gk = at, at += t32k; /* gk staged, then the row gates' cumulative sums A in place */
        gv = at, at += gv_on ? t32v : 0;
        g = at, at += CH * 4;
        Ps = at, at += bwd ? 0 : CH * (CH + 1) * 4; /* the forward's P, staged from P_store */
        Xk = at, at += bwd && !diag ? t32k : 0;      /* the backward's diagonal parts, staged (tc_call::xk, xv) */
        Xv = at, at += bwd && !diag ? t32v : 0;
        buf = at;
        if (diag) { /* diag_kernel stages one chunk and needs only P and D beside it: a small plan, many blocks */
            P = at, at += CH * (CH + 1) * 4;
            D = at, at += CH * (CH + 1) * 4;
            total = at;
            return;
        }
        at *= 2;
        Qt = at, at += t16k;
        Kt = at, at += t16k;
        Vt = at, at += gv_on || cvt ? t16v : 0;
        dOt = at, at += bwd && (gv_on || cvt) ? t16v : 0;
        P = at, at += CH * (CH + 1) * 4;
        D = at, at += CH * (CH + 1) * 4;
        EA = at, at += Kp * 4;
        Sx = at, at += bwd ? VB * kp16 * 2 : 0;
        P16 = at, at += bwd ? 0 : CH * (CH + 8) * 2; /* the forward's P rounded, [t][s], for P V on the mma */
        R = at, at += CH * 8;
        Red = at, at += MAX_WARPS / 2 * 8 * 32 * 4;
        Qtl = at, at += bwd ? t16k : 0;
        Ktl = at, at += bwd ? t16k : 0;
        Vtl = at, at += bwd && (gv_on || cvt) ? t16v : 0;
        dOtl = at, at += bwd && (gv_on || cvt) ? t16v : 0;
        Sxl = at, at += bwd ? VB * kp16 * 2 : 0;
        total = at;
    }
};

/* The token of step @p step of sequence @p s, or -1 past its end. */
__device__ __forceinline__ int64_t token_of(const tc_call &a, const rec_seq &s, int64_t step) {
    return step < s.len ? rec_token(a.c, s, step) : -1;
}

/*
 * Stage rows step0 .. step0+ROWS-1 (columns c0 .. c0+width-1, ncols of them real) of a [B,T,H,C] input into dst,
 * row pitch @p pitch: 16 bytes per cp.async where the input allows it, element loads otherwise; zeros past the
 * sequence's end and past the last column, so that padding adds nothing to any product.
 */
template <class U, int ROWS = CH>
__device__ void stage_tile(U *dst, int pitch, int width, const view<U> &x, const tc_call &a, const rec_seq &s,
                           int64_t h, int64_t step0, int64_t c0, int64_t ncols) {
    constexpr int E = 16 / sizeof(U);
    const int per_row = width / E;
    for (int id = threadIdx.x; id < ROWS * per_row; id += blockDim.x) {
        const int r = id / per_row, col = id % per_row * E;
        const int64_t t = token_of(a, s, step0 + r);
        U *d = dst + r * pitch + col;
        const U *src = x.p + s.b * x.s[0] + t * x.s[1] + h * x.s[2];
        if (x.vec && col + E <= ncols) {
            ladder_cp_async16(d, t >= 0 ? src + c0 + col : x.p, t >= 0);
        } else {
#pragma unroll
            for (int e = 0; e < E; e++) d[e] = t >= 0 && col + e < ncols ? src[(c0 + col + e) * x.s[3]] : U(0);
        }
    }
}

/*
 * Where chunk @p chunk of sequence @p n keeps its P in P_store: floor(first token / CH) + n + chunk, over the
 * flat [B*T] tokens. A sequence's chunks take consecutive slots, and the next sequence starts past them, so no
 * two chunks share one; there are at most B*T/CH + N + 1 slots.
 */
__device__ __forceinline__ int64_t chunk_slot(const tc_call &a, const rec_seq &s, int64_t n, int64_t chunk) {
    return (s.b * a.c.T + s.start) / CH + n + chunk;
}

/* B*T*H, the flat tokens of the [B,T,H,..] tensors. */
__device__ __forceinline__ int64_t token_count(const tc_call &a) { return a.c.B * a.c.T * a.c.H; }

/* A contiguous f32 [B,T,H,C] scratch tensor as a view (the diagonal parts the backward's sweeps stage). */
__device__ __forceinline__ view<float> part_view(const tc_call &a, const float *p, int64_t C) {
    return {p, {a.c.T * a.c.H * C, a.c.H * C, C, 1}, C % 4 == 0, true};
}

/*
 * Stage chunk @p chunk into buffer @p buf: q, k, v, (do), gk, gv, g; in the forward P, in the backward's sweeps
 * the diagonal parts their state parts join (xk, xv). One cp.async group.
 */
__device__ void stage_chunk(unsigned char *sm, const smem_plan &L, int buf, const tc_call &a, const rec_seq &s,
                            int64_t h, int64_t c0, int64_t chunk) {
    unsigned char *b = sm + buf * L.buf;
    const int64_t step0 = chunk * CH, K = a.c.K, nv = min((int64_t)a.VB, a.c.V - c0);
    stage_tile<uint16_t>((uint16_t *)(b + L.q), L.kp16, a.Kp, a.q, a, s, h, step0, 0, K);
    stage_tile<uint16_t>((uint16_t *)(b + L.k), L.kp16, a.Kp, a.k, a, s, h, step0, 0, K);
    stage_tile<uint16_t>((uint16_t *)(b + L.v), L.vp16, a.VB, a.v, a, s, h, step0, c0, nv);
    if (a.bwd) stage_tile<uint16_t>((uint16_t *)(b + L.dO), L.vp16, a.VB, a.dO, a, s, h, step0, c0, nv);
    if (a.gk.p) stage_tile<float>((float *)(b + L.gk), L.kp32, a.Kp, a.gk, a, s, h, step0, 0, K);
    if (a.gv.p) stage_tile<float>((float *)(b + L.gv), L.vp32, a.VB, a.gv, a, s, h, step0, c0, nv);
    if (threadIdx.x < CH) {
        const int64_t t = token_of(a, s, step0 + threadIdx.x);
        ((float *)(b + L.g))[threadIdx.x] = t >= 0 ? rec_ld(a.c.g, s.b, t, h, 0) : 0.0f;
    }
    if (a.xk) {
        const float *xk = a.xk + c0 / a.VB * token_count(a) * K; /* this column block's partial */
        stage_tile<float>((float *)(b + L.Xk), L.kp32, a.Kp, part_view(a, xk, K), a, s, h, step0, 0, K);
    }
    if (a.xv) stage_tile<float>((float *)(b + L.Xv), L.vp32, a.VB, part_view(a, a.xv, a.c.V), a, s, h, step0, c0, nv);
    if (a.P_store) { /* 1088 contiguous bytes: 68 copies of 16 */
        const float *P = a.P_store + (chunk_slot(a, s, blockIdx.x / a.c.H, chunk) * a.c.H + h) * CH * (CH + 1);
        for (int x = threadIdx.x; x < CH * (CH + 1) / 4; x += blockDim.x)
            ladder_cp_async16(b + L.Ps + 16 * x, P + 4 * x, true);
    }
    ladder_cp_async_commit();
}

/*
 * The cumulative sums of a chunk's log gates, in place over the staged tile: x[r][i] becomes the sum over steps
 * 0..r of (gk + g) + g_gamma (rec_row_gate's order; without gk, g + g_gamma in every column), 0 past the
 * sequence's end (ROWS of them: a chunk, or the split forward's 64 steps). One thread per column; the loads of
 * 16 rows go out before their chain of adds.
 */
template <int ROWS = CH>
__device__ void cumsum(float *x, int pitch, int width, bool staged, const float *g, float gamma, int rows) {
    for (int i = threadIdx.x; i < width; i += blockDim.x) {
        float acc = 0.0f;
        for (int r0 = 0; r0 < ROWS; r0 += CH) { /* CH rows' loads at a time: 64 would take 64 registers */
            float y[CH];
#pragma unroll
            for (int r = 0; r < CH; r++) y[r] = (staged ? x[(r0 + r) * pitch + i] : 0.0f) + (g ? g[r0 + r] : 0.0f);
#pragma unroll
            for (int r = 0; r < CH; r++) {
                acc += r0 + r < rows ? y[r] + gamma : 0.0f;
                x[(r0 + r) * pitch + i] = acc;
            }
        }
    }
}

/*
 * x rounded to 16 bits (.x) and what that leaves, rounded again (.y), two elements to a register each: hi + lo
 * carries x to about 2^-16 of itself where one rounding keeps 2^-8 (bf16). The backward multiplies with both
 * (see operands()).
 */
template <class T> __device__ __forceinline__ uint2 split2(float x0, float x1) {
    const uint16_t h0 = ladder_from_float<T>(x0), h1 = ladder_from_float<T>(x1);
    return make_uint2(ladder_pack2(h0, h1), ladder_pack2(ladder_from_float<T>(x0 - ladder_to_float<T>(h0)),
                                                         ladder_from_float<T>(x1 - ladder_to_float<T>(h1))));
}

/*
 * The chunk's 16-bit operands, every factor at most 1 for gates <= 0:
 *   Qt = qs * q ⊙ exp(A),  Kt = k ⊙ exp(A_C - A),  EA = exp(A_C)               (rows: K channels)
 *   with gv: Vt = v ⊙ exp(B_C - B),  dOt = do ⊙ exp(B)                          (columns: the block's V channels)
 * and R, each step's row in the [B,T,H] tensors (-1 past the sequence's end). In the backward each operand also
 * gets its remainder tile (Qtl, ...): the gate gradients are long sums of q dq - k dk that cancel, and one
 * rounding of the operands of dq and dk (2^-9 in bf16) missed the cpu rung by 2.2e-2 on dgk where the tolerance
 * is 1e-2 (B=2 T=256 H=4 K=V=64, gk; chapter 2). Products there take hi*hi + hi*lo + lo*hi.
 */
template <class T, class M>
__device__ void operands(unsigned char *sm, const smem_plan &L, const unsigned char *b, const tc_call &a, float qs,
                         const rec_seq &s, int64_t h, int64_t step0) {
    const float *A = (const float *)(b + L.gk), *Ac = A + (CH - 1) * L.kp32;
    const uint16_t *q = (const uint16_t *)(b + L.q), *k = (const uint16_t *)(b + L.k);
    uint16_t *Qt = (uint16_t *)(sm + L.Qt), *Kt = (uint16_t *)(sm + L.Kt);
    uint16_t *Qtl = (uint16_t *)(sm + L.Qtl), *Ktl = (uint16_t *)(sm + L.Ktl);
    const int half = a.Kp / 2;
    for (int id = threadIdx.x; id < CH * half; id += blockDim.x) {
        const int r = id / half, i = id % half * 2, at = r * L.kp16 + i;
        const float2 Ar = *(const float2 *)(A + r * L.kp32 + i), AC = *(const float2 *)(Ac + i);
        const uint32_t q2 = ladder_lds32(q + at), k2 = ladder_lds32(k + at);
        const uint2 qt = split2<M>(qs * ladder_to_float<T>(q2 & 0xffff) * expf(Ar.x),
                                   qs * ladder_to_float<T>(q2 >> 16) * expf(Ar.y));
        const uint2 kt = split2<M>(ladder_to_float<T>(k2 & 0xffff) * expf(AC.x - Ar.x),
                                   ladder_to_float<T>(k2 >> 16) * expf(AC.y - Ar.y));
        *(uint32_t *)(Qt + at) = qt.x, *(uint32_t *)(Kt + at) = kt.x;
        if (a.bwd) *(uint32_t *)(Qtl + at) = qt.y, *(uint32_t *)(Ktl + at) = kt.y;
    }
    float *EA = (float *)(sm + L.EA);
    for (int i = threadIdx.x; i < a.Kp; i += blockDim.x) EA[i] = expf(Ac[i]);
    if (threadIdx.x < CH) {
        const int64_t t = token_of(a, s, step0 + threadIdx.x);
        ((int64_t *)(sm + L.R))[threadIdx.x] = t >= 0 ? rec_row(a.c, s.b, t, h) : -1;
    }
    if (!a.gv.p && !a.cvt) return;
    const bool gv = a.gv.p != nullptr;
    const float *B = (const float *)(b + L.gv), *Bc = B + (CH - 1) * L.vp32;
    const uint16_t *v = (const uint16_t *)(b + L.v), *dO = (const uint16_t *)(b + L.dO);
    uint16_t *Vt = (uint16_t *)(sm + L.Vt), *dOt = (uint16_t *)(sm + L.dOt);
    uint16_t *Vtl = (uint16_t *)(sm + L.Vtl), *dOtl = (uint16_t *)(sm + L.dOtl);
    const int vhalf = a.VB / 2;
    for (int id = threadIdx.x; id < CH * vhalf; id += blockDim.x) {
        const int r = id / vhalf, j = id % vhalf * 2, at = r * L.vp16 + j;
        const float2 Br = gv ? *(const float2 *)(B + r * L.vp32 + j) : float2{0.0f, 0.0f};
        const float2 BC = gv ? *(const float2 *)(Bc + j) : float2{0.0f, 0.0f};
        const uint32_t v2 = ladder_lds32(v + at);
        const uint2 vt = split2<M>(ladder_to_float<T>(v2 & 0xffff) * expf(BC.x - Br.x),
                                   ladder_to_float<T>(v2 >> 16) * expf(BC.y - Br.y));
        *(uint32_t *)(Vt + at) = vt.x;
        if (!a.bwd) continue;
        const uint32_t d2 = ladder_lds32(dO + at);
        const uint2 dt = split2<M>(ladder_to_float<T>(d2 & 0xffff) * expf(Br.x),
                                   ladder_to_float<T>(d2 >> 16) * expf(Br.y));
        *(uint32_t *)(Vtl + at) = vt.y, *(uint32_t *)(dOt + at) = dt.x, *(uint32_t *)(dOtl + at) = dt.y;
    }
}

/*
 * The chunk's two 16 x 16 fp32 matrices of the diagonal part, zero above the diagonal (s > t):
 *   P[t][s] = sum_i q_t[i] k_s[i] exp(A_t[i] - A_s[i])       (without gk: exp(A_t - A_s) (q_t . k_s))
 *   D[t][s] = sum_j do_t[j] v_s[j] exp(B_t[j] - B_s[j])      (the block's columns; the backward's)
 * One entry per thread, 8 channels per round so that their loads go out together (diag_kernel).
 */
template <class T>
__device__ void small_matrices(unsigned char *sm, const smem_plan &L, const unsigned char *b, const tc_call &a,
                               bool want_P, bool want_D) {
    const float *A = (const float *)(b + L.gk), *B = (const float *)(b + L.gv);
    const uint16_t *q = (const uint16_t *)(b + L.q), *k = (const uint16_t *)(b + L.k);
    const uint16_t *v = (const uint16_t *)(b + L.v), *dO = (const uint16_t *)(b + L.dO);
    float *P = (float *)(sm + L.P), *D = (float *)(sm + L.D);
    for (int id = threadIdx.x; id < CH * CH; id += blockDim.x) {
        const int t = id / CH, s = id % CH;
        float p = 0.0f, d = 0.0f;
        if (want_P && s <= t) {
            for (int i0 = 0; i0 < a.Kp; i0 += 8) {
#pragma unroll
                for (int i = i0; i < i0 + 8; i += 2) {
                    const uint32_t q2 = ladder_lds32(q + t * L.kp16 + i), k2 = ladder_lds32(k + s * L.kp16 + i);
                    float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
                    float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
                    if (a.gk.p) {
                        const float2 At = *(const float2 *)(A + t * L.kp32 + i);
                        const float2 As = *(const float2 *)(A + s * L.kp32 + i);
                        x0 *= __expf(At.x - As.x), x1 *= __expf(At.y - As.y);
                    }
                    p += x0 + x1;
                }
            }
            if (!a.gk.p) p *= __expf(A[t * L.kp32] - A[s * L.kp32]);
        }
        if (want_D && s <= t) {
            for (int j0 = 0; j0 < a.VB; j0 += 8) {
#pragma unroll
                for (int j = j0; j < j0 + 8; j++) {
                    float x = ladder_to_float<T>(dO[t * L.vp16 + j]) * ladder_to_float<T>(v[s * L.vp16 + j]);
                    if (a.gv.p) x *= __expf(B[t * L.vp32 + j] - B[s * L.vp32 + j]);
                    d += x;
                }
            }
        }
        P[t * (CH + 1) + s] = p;
        D[t * (CH + 1) + s] = d;
    }
}

/*
 * acc (16 state columns x 16 steps, the warp's S^T rows) += S^T X^T, X a [step][row] tile: the state part of o.
 * With @p Xl (X's remainder tile) and @p split (S as hi + lo), the three products of split2().
 */
template <class T>
__device__ __forceinline__ void state_times(float (&acc)[2][4], const float (&S)[NTM][4], const uint16_t *X,
                                            const uint16_t *Xl, int xp, int nkk, bool split, int lane) {
    const int off = ((lane & 7) + ((lane >> 4) << 3)) * xp + (((lane >> 3) & 1) << 3);
#pragma unroll
    for (int kk = 0; kk < NTM / 2; kk++) {
        if (kk >= nkk) break;
        const uint2 s0 = split2<T>(S[2 * kk][0], S[2 * kk][1]), s1 = split2<T>(S[2 * kk][2], S[2 * kk][3]);
        const uint2 s2 = split2<T>(S[2 * kk + 1][0], S[2 * kk + 1][1]);
        const uint2 s3 = split2<T>(S[2 * kk + 1][2], S[2 * kk + 1][3]);
        const uint32_t a[4] = {s0.x, s1.x, s2.x, s3.x}, al[4] = {s0.y, s1.y, s2.y, s3.y};
        uint32_t b[4]; /* X rows = n (steps), columns = k (state rows): B without .trans */
        ladder_ldsm_x4(b, X + off + kk * 16);
        ladder_mma_m16n16k16<T>(acc[0], acc[1], a, b);
        if (split) ladder_mma_m16n16k16<T>(acc[0], acc[1], al, b);
        if (Xl) {
            ladder_ldsm_x4(b, Xl + off + kk * 16);
            ladder_mma_m16n16k16<T>(acc[0], acc[1], a, b);
        }
    }
}

/*
 * S^T += X^T Y over the chunk's 16 steps: X a [step][column] tile (the warp's columns j0..), Y [step][row];
 * Xl and Yl, where given, their remainder tiles.
 */
template <class T>
__device__ __forceinline__ void state_update(float (&S)[NTM][4], const uint16_t *X, const uint16_t *Xl, int xp,
                                             int j0, const uint16_t *Y, const uint16_t *Yl, int yp, int npair,
                                             int lane) {
    const int xoff = (((lane >> 4) << 3) + (lane & 7)) * xp + j0 + (((lane >> 3) & 1) << 3);
    const int yoff = ((((lane >> 3) & 1) << 3) + (lane & 7)) * yp + ((lane >> 4) << 3);
    uint32_t a[4], al[4]; /* X^T as A: X stored [k][m], so .trans */
    ladder_ldsm_x4_trans(a, X + xoff);
    if (Xl) ladder_ldsm_x4_trans(al, Xl + xoff);
#pragma unroll
    for (int p = 0; p < NTM / 2; p++) {
        if (p >= npair) break;
        uint32_t b[4]; /* Y stored [k][n]: .trans */
        ladder_ldsm_x4_trans(b, Y + yoff + p * 16);
        ladder_mma_m16n16k16<T>(S[2 * p], S[2 * p + 1], a, b);
        if (Xl) ladder_mma_m16n16k16<T>(S[2 * p], S[2 * p + 1], al, b);
        if (Yl) {
            ladder_ldsm_x4_trans(b, Yl + yoff + p * 16);
            ladder_mma_m16n16k16<T>(S[2 * p], S[2 * p + 1], a, b);
        }
    }
}

/*
 * acc (16 steps x state rows 16p .. 16p+15) = X Sx: X a [step][column] tile, Sx the state's [column][row] copy;
 * Xl and Sxl, where given, their remainder tiles.
 */
template <class T>
__device__ __forceinline__ void rows_times_state(float (&acc)[2][4], const uint16_t *X, const uint16_t *Xl, int xp,
                                                 const uint16_t *Sx, const uint16_t *Sxl, int sp, int nk, int p,
                                                 int lane) {
    const int xoff = (lane & 15) * xp + ((lane >> 4) << 3);
    const int soff = ((((lane >> 3) & 1) << 3) + (lane & 7)) * sp + p * 16 + ((lane >> 4) << 3);
    for (int kk = 0; kk < nk; kk++) {
        uint32_t a[4], b[4], c[4];
        ladder_ldsm_x4(a, X + xoff + kk * 16);
        ladder_ldsm_x4_trans(b, Sx + soff + kk * 16 * sp);
        ladder_mma_m16n16k16<T>(acc[0], acc[1], a, b);
        if (Sxl) {
            ladder_ldsm_x4_trans(c, Sxl + soff + kk * 16 * sp);
            ladder_mma_m16n16k16<T>(acc[0], acc[1], a, c);
        }
        if (Xl) {
            ladder_ldsm_x4(c, Xl + xoff + kk * 16);
            ladder_mma_m16n16k16<T>(acc[0], acc[1], c, b);
        }
    }
}

/* The warp's state rows, rounded to 16 bits, into the [column][row] tile Sx (its remainder into Sxl). */
template <class T>
__device__ __forceinline__ void state_to_smem(uint16_t *Sx, uint16_t *Sxl, int sp, const float (&S)[NTM][4], int j0,
                                              int nt_used, int lane) {
    const int g = lane >> 2, i0 = 2 * (lane & 3);
#pragma unroll
    for (int nt = 0; nt < NTM; nt++) {
        if (nt >= nt_used) break;
        const uint2 top = split2<T>(S[nt][0], S[nt][1]), bottom = split2<T>(S[nt][2], S[nt][3]);
        *(uint32_t *)(Sx + (j0 + g) * sp + nt * 8 + i0) = top.x;
        *(uint32_t *)(Sx + (j0 + g + 8) * sp + nt * 8 + i0) = bottom.x;
        *(uint32_t *)(Sxl + (j0 + g) * sp + nt * 8 + i0) = top.y;
        *(uint32_t *)(Sxl + (j0 + g + 8) * sp + nt * 8 + i0) = bottom.y;
    }
}

/* S^T ⊙= exp(A_C[i] + B_C[j]): the chunk's decay of the state (row factor alone without gv). */
__device__ __forceinline__ void decay_state(float (&S)[NTM][4], const unsigned char *sm, const smem_plan &L,
                                            const unsigned char *b, const tc_call &a, int j0, int r0, int nt_used,
                                            int lane) {
    const float *EA = (const float *)(sm + L.EA);
    const float *Ac = (const float *)(b + L.gk) + (CH - 1) * L.kp32;
    const float *Bc = (const float *)(b + L.gv) + (CH - 1) * L.vp32;
    const int g = lane >> 2, i0 = 2 * (lane & 3);
    if (!a.gv.p) { /* a factor per row: one 8-byte load serves the fragment's two rows (and both its columns) */
#pragma unroll
        for (int nt = 0; nt < NTM; nt++) {
            if (nt >= nt_used) break;
            const float2 ea = *(const float2 *)(EA + r0 + nt * 8 + i0);
            S[nt][0] *= ea.x, S[nt][1] *= ea.y, S[nt][2] *= ea.x, S[nt][3] *= ea.y;
        }
        return;
    }
#pragma unroll
    for (int nt = 0; nt < NTM; nt++) {
        if (nt >= nt_used) break;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = r0 + nt * 8 + i0 + (e & 1), j = j0 + g + 8 * (e >> 1);
            S[nt][e] *= expf(Ac[i] + Bc[j]);
        }
    }
}

/* The fp32 state of the block's columns from h0 (0 without it), or from dht in the reverse sweep. */
__device__ __forceinline__ void load_state(float (&S)[NTM][4], const rec_view &x, const tc_call &a, int64_t n,
                                           int64_t h, int64_t c0, int j0, int r0, int lane) {
    const int g = lane >> 2, i0 = 2 * (lane & 3);
#pragma unroll
    for (int nt = 0; nt < NTM; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t i = r0 + nt * 8 + i0 + (e & 1), j = c0 + j0 + g + 8 * (e >> 1);
            S[nt][e] = i < a.c.K && j < a.c.V ? rec_ld(x, n, h, i, j) : 0.0f;
        }
}

__device__ __forceinline__ void store_state(float *out, const float (&S)[NTM][4], const tc_call &a, int64_t n,
                                            int64_t h, int64_t c0, int j0, int r0, int lane) {
    const int g = lane >> 2, i0 = 2 * (lane & 3);
#pragma unroll
    for (int nt = 0; nt < NTM; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t i = r0 + nt * 8 + i0 + (e & 1), j = c0 + j0 + g + 8 * (e >> 1);
            if (i < a.c.K && j < a.c.V) out[((n * a.c.H + h) * a.c.K + i) * a.c.V + j] = S[nt][e];
        }
}

/*
 * With K > 128 the state's rows are split over a pair of warps (rows 0..127 and 128..), so a product over the
 * rows (o, dv) leaves half of it in each: the odd warp hands its half to the even one through shared memory,
 * which then finishes the tile alone. Called by every warp of the block (it synchronizes); returns whether this
 * warp holds the whole sum. (The next use of @p red is a chunk later, past the chunk's closing __syncthreads.)
 */
__device__ __forceinline__ bool join_halves(float (&acc)[2][4], float *red, int kh, int warp, int lane) {
    if (kh == 1) return true;
    float *mine = red + (warp >> 1) * 8 * 32 + lane;
    if (warp & 1)
#pragma unroll
        for (int e = 0; e < 8; e++) mine[e * 32] = acc[e >> 2][e & 3];
    __syncthreads();
    if (warp & 1) return false;
#pragma unroll
    for (int e = 0; e < 8; e++) acc[e >> 2][e & 3] += mine[e * 32];
    return true;
}

/*
 * The diagonal blocks of every chunk at once: they do not depend on the state, so they need not wait in the
 * sweeps' chain. One block per (sequence x head, column block, chunk), chunks striding by gridDim.z. The forward
 * writes each chunk's P to P_store; the backward writes the diagonal parts of the gradients, each without its
 * own step's term (bwd()), which the sweeps then complete with the state parts:
 *   dq_part = scale sum_{u<t} D[t][u] k_u exp(A_t-A_u),   dk_part = scale sum_{u>t} D[u][t] q_u exp(A_u-A_t),
 *   dv32    = scale sum_{u>t} P[u][t] do_u exp(B_u-B_t),  o32 (gv) = scale sum_{u<t} P[t][u] v_u exp(B_t-B_u),
 * and those terms apart: vdo_part = D[t][t], ptt = P[t][t]. A masked step gets exponent -inf, so that the sums
 * run over all 16 steps with their loads together; a pair (t, u) feeds dq and o when u < t, dk and dv when u > t,
 * so each thread forms its product once. The exponentials are __expf (ex2.approx after one multiply, a few
 * instructions where expf takes about ten): its relative error, about 2 + 1.2 |x| units in the last place, stays
 * near 1e-6 for the factors that are not negligible, far under the 2^-16 the split operands carry.
 */
template <class T> __global__ void __launch_bounds__(32 * MAX_WARPS, DIAG_BLOCKS) diag_kernel(tc_call a) {
    extern __shared__ __align__(16) unsigned char sm[];
    const smem_plan L(a.Kp, a.VB, a.bwd, a.gv.p != nullptr, a.cvt, true);
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, vb = blockIdx.y, c0 = vb * a.VB;
    const int64_t tokens = a.c.B * a.c.T * a.c.H;
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + CH - 1) / CH;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0), scale = a.c.scale;
    const bool gv = a.gv.p != nullptr;
    tc_call in = a; /* what stage_chunk reads: the inputs, not the P_store this kernel fills */
    in.P_store = nullptr;
    const float *A = (const float *)(sm + L.gk), *B = (const float *)(sm + L.gv);
    const float *P = (const float *)(sm + L.P), *D = (const float *)(sm + L.D);
    const uint16_t *q = (const uint16_t *)(sm + L.q), *k = (const uint16_t *)(sm + L.k);
    const uint16_t *v = (const uint16_t *)(sm + L.v), *dO = (const uint16_t *)(sm + L.dO);
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        stage_chunk(sm, L, 0, in, s, h, c0, ch);
        ladder_cp_async_wait_group<0>();
        __syncthreads();
        const int rows = (int)min((int64_t)CH, s.len - ch * CH);
        cumsum((float *)(sm + L.gk), L.kp32, a.Kp, a.gk.p, (const float *)(sm + L.g), gamma, rows);
        if (gv) cumsum((float *)(sm + L.gv), L.vp32, a.VB, true, nullptr, 0.0f, rows);
        __syncthreads();
        small_matrices<T>(sm, L, sm, a, true, a.bwd);
        __syncthreads();
        if (!a.bwd) {
            float *out = a.P_store + (chunk_slot(a, s, n, ch) * a.c.H + h) * CH * (CH + 1);
            for (int e = threadIdx.x; vb == 0 && e < CH * (CH + 1); e += blockDim.x) out[e] = P[e];
        }
        for (int e = threadIdx.x; a.bwd && e < CH * a.Kp; e += blockDim.x) {
            const int t = e / a.Kp, i = e % a.Kp;
            if (t >= rows || i >= a.c.K) continue;
            const int64_t row = rec_row(a.c, s.b, rec_token(a.c, s, ch * CH + t), h);
            const int64_t at = (vb * tokens + row) * a.c.K + i;
            const float At = A[t * L.kp32 + i];
            float xq = 0.0f, xk = 0.0f;
#pragma unroll
            for (int u = 0; u < CH; u++) { /* u < t feeds dq, u > t dk: one product each, exp(A_later - A_earlier) */
                const bool before = u < t;
                const float Au = A[u * L.kp32 + i], w = __expf(before ? At - Au : u > t ? Au - At : -INFINITY);
                const float y = (before ? D[t * (CH + 1) + u] : D[u * (CH + 1) + t]) *
                                ladder_to_float<T>((before ? k : q)[u * L.kp16 + i]) * w;
                xq += before ? y : 0.0f, xk += before ? 0.0f : y;
            }
            a.dq_part[at] = scale * xq, a.dk_part[at] = scale * xk;
            if (i == 0) a.vdo_part[vb * tokens + row] = D[t * (CH + 1) + t];
        }
        for (int e = threadIdx.x; a.bwd && e < CH * a.VB; e += blockDim.x) {
            const int t = e / a.VB, jl = e % a.VB;
            const int64_t j = c0 + jl;
            if (t >= rows || j >= a.c.V) continue;
            const int64_t row = rec_row(a.c, s.b, rec_token(a.c, s, ch * CH + t), h);
            const float Bt = gv ? B[t * L.vp32 + jl] : 0.0f;
            float xv = 0.0f, xo = 0.0f;
#pragma unroll
            for (int u = 0; u < CH; u++) { /* u > t feeds dv, u < t o: one product each */
                const bool before = u < t;
                float y = u == t ? 0.0f : (before ? P[t * (CH + 1) + u] : P[u * (CH + 1) + t]) *
                                              ladder_to_float<T>((before ? v : dO)[u * L.vp16 + jl]);
                if (gv) {
                    const float Bu = B[u * L.vp32 + jl];
                    y *= __expf(before ? Bt - Bu : u > t ? Bu - Bt : -INFINITY);
                }
                xv += before ? 0.0f : y, xo += before ? y : 0.0f;
            }
            a.dv32[row * a.c.V + j] = scale * xv;
            if (gv) a.o32[row * a.c.V + j] = scale * xo;
            if (j == 0) a.ptt[row] = P[t * (CH + 1) + t];
        }
        __syncthreads(); /* the tiles are done with before the next chunk is staged over them */
    }
}

/*
 * The forward sweep, one block per (sequence x head, column block): o (the state part from the registers, the
 * diagonal part from the staged P) and ht; the forward takes it with gv only (else split_fwd()). In the backward (a.bwd) the same sweep adds the state parts of dq (this
 * block's columns) and, with gv, of o in fp32 to diag_kernel's diagonal parts.
 */
template <class T, class M> __global__ void __launch_bounds__(32 * MAX_WARPS) sweep_kernel(tc_call a) {
    extern __shared__ __align__(16) unsigned char sm[];
    const smem_plan L(a.Kp, a.VB, a.bwd, a.gv.p != nullptr, a.cvt);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int j0 = 16 * (warp / a.kh), r0 = 8 * NTM * (warp % a.kh), nt_used = min(NTM, (a.Kp - r0) / 8);
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, vb = blockIdx.y, c0 = vb * a.VB;
    const int64_t tokens = a.c.B * a.c.T * a.c.H;
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + CH - 1) / CH;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    const bool gv = a.gv.p != nullptr, bwd = a.bwd, conv = gv || a.cvt; /* operand tiles Vt, dOt */
    float S[NTM][4];
    load_state(S, a.c.h0, a, n, h, c0, j0, r0, lane);
    if (nch > 0) stage_chunk(sm, L, 0, a, s, h, c0, 0);
    for (int64_t ch = 0; ch < nch; ch++) {
        const unsigned char *b = sm + (ch & 1) * L.buf;
        if (ch + 1 < nch) {
            stage_chunk(sm, L, (ch + 1) & 1, a, s, h, c0, ch + 1);
            ladder_cp_async_wait_group<1>();
        } else {
            ladder_cp_async_wait_group<0>();
        }
        __syncthreads(); /* this chunk's tiles have landed, for every thread */
        const int rows = (int)min((int64_t)CH, s.len - ch * CH);
        cumsum((float *)(b + L.gk), L.kp32, a.Kp, a.gk.p, (const float *)(b + L.g), gamma, rows);
        if (gv) cumsum((float *)(b + L.gv), L.vp32, a.VB, true, nullptr, 0.0f, rows);
        __syncthreads();
        operands<T, M>(sm, L, b, a, 1.0f, s, h, ch * CH);
        for (int e = threadIdx.x; !bwd && !gv && e < CH * CH; e += blockDim.x) /* P V runs on the mma */
            ((uint16_t *)(sm + L.P16))[e / CH * (CH + 8) + e % CH] =
                ladder_from_float<T>(((const float *)(b + L.Ps))[e / CH * (CH + 1) + e % CH]);
        if (bwd)
            state_to_smem<M>((uint16_t *)(sm + L.Sx) + r0, (uint16_t *)(sm + L.Sxl) + r0, L.kp16, S, j0, nt_used, lane);
        __syncthreads();
        const int64_t *Rw = (const int64_t *)(sm + L.R);
        if (!bwd || gv) { /* o^T for the warp's 16 columns: the state part, then (forward) the diagonal part */
            const float *B = (const float *)(b + L.gv), *P = (const float *)(b + L.Ps);
            const uint16_t *v = (const uint16_t *)(b + L.v);
            float acc[2][4] = {};
            state_times<M>(acc, S, (const uint16_t *)(sm + L.Qt) + r0,
                           bwd ? (const uint16_t *)(sm + L.Qtl) + r0 : nullptr, L.kp16, nt_used / 2, bwd, lane);
            const bool whole = join_halves(acc, (float *)(sm + L.Red), a.kh, warp, lane);
            if (whole && !bwd && !gv) { /* the diagonal part, o^T += V^T P^T, with P rounded once (as fla does) */
                uint32_t x[4], y[4];
                ladder_ldsm_x4_trans(x, v + (((lane >> 4) << 3) + (lane & 7)) * L.vp16 + j0 + (((lane >> 3) & 1) << 3));
                ladder_ldsm_x4(y, (const uint16_t *)(sm + L.P16) + ((lane & 7) + ((lane >> 4) << 3)) * (CH + 8) +
                                      (((lane >> 3) & 1) << 3));
                ladder_mma_m16n16k16<M>(acc[0], acc[1], x, y);
            }
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int jl = j0 + g + 8 * (e >> 1), t = nt * 8 + 2 * tq + (e & 1);
                    const int64_t j = c0 + jl;
                    if (!whole || t >= rows || j >= a.c.V) continue;
                    const float Bt = gv ? B[t * L.vp32 + jl] : 0.0f, x = gv ? acc[nt][e] * expf(Bt) : acc[nt][e];
                    const int64_t at = Rw[t] * a.c.V + j;
                    if (bwd) { /* the diagonal part of o32, staged (xv), joins the state part */
                        a.o32[at] = ((const float *)(b + L.Xv))[t * L.vp32 + jl] + a.c.scale * x;
                        continue;
                    }
                    float y = 0.0f; /* with gv the diagonal part is no matrix product: fp32, per element */
#pragma unroll
                    for (int u = 0; gv && u < CH; u++)
                        y += u <= t ? P[t * (CH + 1) + u] * ladder_to_float<T>(v[u * L.vp16 + jl]) *
                                          expf(Bt - B[u * L.vp32 + jl])
                                    : 0.0f;
                    a.o[at] = ladder_from_float<T>(a.c.scale * (y + x));
                }
        }
        if (bwd) { /* dq += scale exp(A_t) ⊙ (do ⊙ exp(B)) S0^T, this block's columns (the diagonal part is in) */
            const uint16_t *X = conv ? (const uint16_t *)(sm + L.dOt) : (const uint16_t *)(b + L.dO);
            const uint16_t *Xl = conv ? (const uint16_t *)(sm + L.dOtl) : nullptr;
            const float *A = (const float *)(b + L.gk), *Xq = (const float *)(b + L.Xk);
            for (int p = warp; p < a.Kp / 16; p += a.nw) {
                float acc[2][4] = {};
                rows_times_state<M>(acc, X, Xl, L.vp16, (const uint16_t *)(sm + L.Sx), (const uint16_t *)(sm + L.Sxl),
                                    L.kp16, a.VB / 16, p, lane);
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int t = g + 8 * (e >> 1), i = p * 16 + nt * 8 + 2 * tq + (e & 1);
                        if (t >= rows || i >= a.c.K) continue;
                        a.dq_part[(vb * tokens + Rw[t]) * a.c.K + i] = /* the diagonal part, staged (xk), joins */
                            Xq[t * L.kp32 + i] + a.c.scale * expf(A[t * L.kp32 + i]) * acc[nt][e];
                    }
            }
        }
        decay_state(S, sm, L, b, a, j0, r0, nt_used, lane);
        state_update<M>(S, conv ? (const uint16_t *)(sm + L.Vt) : (const uint16_t *)(b + L.v),
                        bwd && conv ? (const uint16_t *)(sm + L.Vtl) : nullptr, L.vp16, j0,
                        (const uint16_t *)(sm + L.Kt) + r0, bwd ? (const uint16_t *)(sm + L.Ktl) + r0 : nullptr,
                        L.kp16, nt_used / 2, lane);
        __syncthreads(); /* every warp is done with this chunk's tiles before they are refilled */
    }
    if (a.ht) store_state(a.ht, S, a, n, h, c0, j0, r0, lane);
}

/*
 * The backward's reverse sweep, one block per (sequence x head, column block): dH = dL/dS backwards, chunk by
 * chunk (dH is the gradient of the state at the chunk's end). It adds the state parts
 *   dk_t[i] += exp(A_C-A_t)[i] sum_j (v_t ⊙ exp(B_C-B_t))[j] dH[i,j]      (this block's columns: a partial)
 *   dv_t[j] += exp(B_C-B_t)[j] sum_i dH[i,j] (k_t ⊙ exp(A_C-A_t))[i]      (every row: whole)
 * to diag_kernel's diagonal parts, and runs dH_start = exp(A_C + B_C) ⊙ dH + scale (q ⊙ exp(A))^T (do ⊙ exp(B)).
 * dH starts at 0 (the do part); the zrun carries dht alone (scale 0) and writes dkz_part, dvz32 and dh0z.
 */
template <class T, class M> __global__ void __launch_bounds__(32 * MAX_WARPS) reverse_kernel(tc_call a) {
    extern __shared__ __align__(16) unsigned char sm[];
    const smem_plan L(a.Kp, a.VB, true, a.gv.p != nullptr, a.cvt);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int j0 = 16 * (warp / a.kh), r0 = 8 * NTM * (warp % a.kh), nt_used = min(NTM, (a.Kp - r0) / 8);
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, vb = blockIdx.y, c0 = vb * a.VB;
    const int64_t tokens = a.c.B * a.c.T * a.c.H;
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + CH - 1) / CH;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0), scale = a.c.scale;
    const bool gv = a.gv.p != nullptr, conv = gv || a.cvt; /* operand tiles Vt, dOt */
    float dH[NTM][4];
    load_state(dH, a.zrun ? a.c.dht : rec_view{}, a, n, h, c0, j0, r0, lane);
    float *dk_out = a.zrun ? a.dkz_part : a.dk_part, *dv_out = a.zrun ? a.dvz32 : a.dv32;
    if (nch > 0) stage_chunk(sm, L, 0, a, s, h, c0, nch - 1);
    for (int64_t it = 0; it < nch; it++) {
        const int64_t ch = nch - 1 - it;
        const unsigned char *b = sm + (it & 1) * L.buf;
        if (ch > 0) {
            stage_chunk(sm, L, (it + 1) & 1, a, s, h, c0, ch - 1);
            ladder_cp_async_wait_group<1>();
        } else {
            ladder_cp_async_wait_group<0>();
        }
        __syncthreads();
        const int rows = (int)min((int64_t)CH, s.len - ch * CH);
        cumsum((float *)(b + L.gk), L.kp32, a.Kp, a.gk.p, (const float *)(b + L.g), gamma, rows);
        if (gv) cumsum((float *)(b + L.gv), L.vp32, a.VB, true, nullptr, 0.0f, rows);
        __syncthreads();
        operands<T, M>(sm, L, b, a, scale, s, h, ch * CH); /* Qt carries the scale: it only feeds dH's update here */
        state_to_smem<M>((uint16_t *)(sm + L.Sx) + r0, (uint16_t *)(sm + L.Sxl) + r0, L.kp16, dH, j0, nt_used, lane);
        __syncthreads();
        const int64_t *Rw = (const int64_t *)(sm + L.R);
        for (int p = warp; p < a.Kp / 16; p += a.nw) { /* dk, rows 16p .. 16p+15: the state part */
            const float *A = (const float *)(b + L.gk);
            const uint16_t *Vt = conv ? (const uint16_t *)(sm + L.Vt) : (const uint16_t *)(b + L.v);
            float acc[2][4] = {};
            rows_times_state<M>(acc, Vt, conv ? (const uint16_t *)(sm + L.Vtl) : nullptr, L.vp16,
                                (const uint16_t *)(sm + L.Sx), (const uint16_t *)(sm + L.Sxl), L.kp16, a.VB / 16, p,
                                lane);
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int t = g + 8 * (e >> 1), i = p * 16 + nt * 8 + 2 * tq + (e & 1);
                    if (t >= rows || i >= a.c.K) continue;
                    const float x = expf(A[(CH - 1) * L.kp32 + i] - A[t * L.kp32 + i]) * acc[nt][e];
                    dk_out[(vb * tokens + Rw[t]) * a.c.K + i] = /* + the staged diagonal part (xk), but in the zrun */
                        a.zrun ? x : ((const float *)(b + L.Xk))[t * L.kp32 + i] + x;
                }
        }
        { /* dv^T for the warp's 16 columns: the state part */
            const float *B = (const float *)(b + L.gv);
            float acc[2][4] = {};
            state_times<M>(acc, dH, (const uint16_t *)(sm + L.Kt) + r0, (const uint16_t *)(sm + L.Ktl) + r0, L.kp16,
                           nt_used / 2, true, lane);
            const bool whole = join_halves(acc, (float *)(sm + L.Red), a.kh, warp, lane);
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int jl = j0 + g + 8 * (e >> 1), t = nt * 8 + 2 * tq + (e & 1);
                    const int64_t j = c0 + jl;
                    if (!whole || t >= rows || j >= a.c.V) continue;
                    const float x = (gv ? expf(B[(CH - 1) * L.vp32 + jl] - B[t * L.vp32 + jl]) : 1.0f) * acc[nt][e];
                    dv_out[Rw[t] * a.c.V + j] = a.zrun ? x : ((const float *)(b + L.Xv))[t * L.vp32 + jl] + x;
                }
        }
        decay_state(dH, sm, L, b, a, j0, r0, nt_used, lane);
        state_update<M>(dH, conv ? (const uint16_t *)(sm + L.dOt) : (const uint16_t *)(b + L.dO),
                        conv ? (const uint16_t *)(sm + L.dOtl) : nullptr, L.vp16, j0,
                        (const uint16_t *)(sm + L.Qt) + r0, (const uint16_t *)(sm + L.Qtl) + r0, L.kp16, nt_used / 2,
                        lane);
        __syncthreads();
    }
    float *dh0 = a.zrun ? a.dh0z : a.c.dh0;
    if (dh0) store_state(dh0, dH, a, n, h, c0, j0, r0, lane);
}

/*
 * The split forward (without gv): the chain carries the state alone, 64 steps at a time, and every chunk's
 * outputs are computed in parallel from the states it wrote. The sweep above walks 16 steps per link, one block
 * of 8 warps per SM holding every state row of its columns (244 registers a thread), so nothing else on the SM
 * hides its latency; here the chain's links are 4 times fewer, and the work that needs no chain (o and the
 * diagonal blocks) runs as independent blocks, two per SM.
 *
 *   states_kernel: S_{c+1} = exp(A_63) ⊙ S_c + (k ⊙ exp(A_63 - A))^T v over chunk c of SC = 64 steps, the state's
 *                  rows and columns tiled (SKB x SVB: the update is separable, so a tile recomputes nothing of
 *                  another's); S_c, the state at chunk c's start, is written rounded to the input dtype (the
 *                  rounding the sweep gives it before its product with q).
 *   out_kernel:    o_t = scale (S_c^T (q_t ⊙ exp(A_t)) + sum_{s<=t} P_ts v_s), P the chunk's 64 x 64 pair matrix,
 *                  built from 16-step sub-chunks so that no factor exceeds 1: sub-chunk i's queries against an
 *                  earlier sub-chunk's keys factor around the step before sub-chunk i,
 *                      P_ts = sum_k (q_t exp(A_t - A_b))[k] (k_s exp(A_b - A_s))[k],   b = 16i - 1 >= s,
 *                  a matrix product on the mma; the four 16 x 16 diagonal sub-blocks are summed in fp32 with
 *                  exp(A_t - A_s) per pair and channel, as diag_kernel does. P is rounded once, as in the sweep.
 * With gv the pair weight depends on the column, and fwd() keeps the sweep.
 */
constexpr int SC = 64;   /* steps per chunk of the split forward */
constexpr int SKB = 64;  /* state rows (K channels) per tile, both kernels */
constexpr int SVB = 128; /* state columns per states_kernel block (8 warps of 16 rows x 64 columns) */
constexpr int OVB = 128; /* output columns per out_kernel block (8 warps of 16 steps x 64 columns) */
constexpr int SK16 = SKB + 8, SK32 = SKB + 4, SV16 = SVB + 8, OV16 = OVB + 8; /* padded row pitches */

/* states_kernel's shared memory (bytes): two buffers of k, v, gk (then A), g; then Kt and EA. */
constexpr int ST_K = 0, ST_V = ST_K + SC * SK16 * 2, ST_G = ST_V + SC * SV16 * 2, ST_GS = ST_G + SC * SK32 * 4;
constexpr int ST_BUF = ST_GS + SC * 4, ST_KT = 2 * ST_BUF, ST_EA = ST_KT + SC * SK16 * 2, ST_TOTAL = ST_EA + SKB * 4;
/* out_kernel's: q, k, gk (then A), g, the state tile, v, the operands Qe, Qi, Kr, the rows, P_tt; P16 over q. */
constexpr int OT_Q = 0, OT_K = OT_Q + SC * SK16 * 2, OT_G = OT_K + SC * SK16 * 2, OT_GS = OT_G + SC * SK32 * 4;
constexpr int OT_S = OT_GS + SC * 4, OT_V = OT_S + SKB * OV16 * 2, OT_QE = OT_V + SC * OV16 * 2;
constexpr int OT_QI = OT_QE + SC * SK16 * 2, OT_KR = OT_QI + SC * SK16 * 2, OT_R = OT_KR + 96 * SK16 * 2;
constexpr int OT_PT = OT_R + SC * 8, OT_TOTAL = OT_PT + SC * 4; /* OT_PT: P's diagonal, P_tt = q_t . k_t */

/* Where chunk @p chunk (of SC steps) of sequence @p n keeps its starting state: as chunk_slot(), per SC steps. */
__device__ __forceinline__ int64_t split_slot(const tc_call &a, const rec_seq &s, int64_t n, int64_t chunk) {
    return (s.b * a.c.T + s.start) / SC + n + chunk;
}

/*
 * One block per (sequence x head, SVB state columns, SKB state rows), 8 warps: warp w holds rows 16 (w & 3).. and
 * columns 64 (w >> 2).. of the tile as the fp32 C fragments of S (not S^T: the update S += Kt^T v is
 * ladder_mma_warp_tile's A = X^T form). At the benchmark's shape that is 256 blocks, one wave of two per SM.
 * Writes S_c for every chunk c into @p store ([slot][H][K][vpitch], 16-bit) and the final state into ht.
 */
template <class T> __global__ void __launch_bounds__(256, 2) states_kernel(tc_call a, uint16_t *store, int64_t vpitch) {
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * SVB, i0 = blockIdx.z * SKB;
    const int64_t K = a.c.K, V = a.c.V, nk = min((int64_t)SKB, K - i0), nv = min((int64_t)SVB, V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    const auto stage = [&](int buf, int64_t ch) {
        unsigned char *b = sm + buf * ST_BUF;
        stage_tile<uint16_t, SC>((uint16_t *)(b + ST_K), SK16, SKB, a.k, a, s, h, ch * SC, i0, nk);
        stage_tile<uint16_t, SC>((uint16_t *)(b + ST_V), SV16, SVB, a.v, a, s, h, ch * SC, c0, nv);
        if (a.gk.p) stage_tile<float, SC>((float *)(b + ST_G), SK32, SKB, a.gk, a, s, h, ch * SC, i0, nk);
        if (threadIdx.x < SC) {
            const int64_t t = token_of(a, s, ch * SC + threadIdx.x);
            ((float *)(b + ST_GS))[threadIdx.x] = t >= 0 ? rec_ld(a.c.g, s.b, t, h, 0) : 0.0f;
        }
        ladder_cp_async_commit();
    };
    const int r0 = 16 * (warp & 3), j0 = 64 * (warp >> 2); /* the warp's first row and column in the tile */
    float S[1][8][4]; /* fragment nt, element e: row r0 + g + 8 (e >> 1), column j0 + 8 nt + 2 tq + (e & 1) */
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t i = r0 + g + 8 * (e >> 1), j = j0 + 8 * nt + 2 * tq + (e & 1);
            S[0][nt][e] = i < nk && j < nv ? rec_ld(a.c.h0, n, h, i0 + i, c0 + j) : 0.0f;
        }
    /* write(i, j, x0, x1, pair): state rows and columns (i, j) and (i, j + 1), the second one only where pair */
    const auto put = [&](auto &&write) {
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int64_t i = r0 + g + 8 * (e >> 1), j = j0 + 8 * nt + 2 * tq;
                if (i < nk && j < nv) write(i0 + i, c0 + j, S[0][nt][e], S[0][nt][e + 1], j + 1 < nv);
            }
    };
    uint16_t *Kt = (uint16_t *)(sm + ST_KT);
    float *EA = (float *)(sm + ST_EA);
    if (nch > 0) stage(0, 0);
    for (int64_t ch = 0; ch < nch; ch++) {
        uint16_t *out = store + (split_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        put([&](int64_t i, int64_t j, float x0, float x1, bool pair) { /* vpitch is even: 4-byte pairs */
            if (pair)
                *(uint32_t *)(out + i * vpitch + j) = ladder_pack2_float<T>(x0, x1);
            else
                out[i * vpitch + j] = ladder_from_float<T>(x0);
        });
        const unsigned char *b = sm + (ch & 1) * ST_BUF;
        if (ch + 1 < nch) {
            stage((ch + 1) & 1, ch + 1);
            ladder_cp_async_wait_group<1>();
        } else {
            ladder_cp_async_wait_group<0>();
        }
        __syncthreads();
        float *A = (float *)(b + ST_G);
        cumsum<SC>(A, SK32, SKB, a.gk.p, (const float *)(b + ST_GS), gamma, (int)min((int64_t)SC, s.len - ch * SC));
        __syncthreads();
        const float *Ac = A + (SC - 1) * SK32;
        const uint16_t *k = (const uint16_t *)(b + ST_K);
        for (int id = threadIdx.x; id < SC * SKB / 2; id += blockDim.x) { /* Kt = k ⊙ exp(A_63 - A_s) */
            const int r = id / (SKB / 2), i = id % (SKB / 2) * 2;
            const uint32_t k2 = ladder_lds32(k + r * SK16 + i);
            *(uint32_t *)(Kt + r * SK16 + i) =
                ladder_pack2_float<T>(ladder_to_float<T>(k2 & 0xffff) * __expf(Ac[i] - A[r * SK32 + i]),
                                      ladder_to_float<T>(k2 >> 16) * __expf(Ac[i + 1] - A[r * SK32 + i + 1]));
        }
        for (int i = threadIdx.x; i < SKB; i += blockDim.x) EA[i] = expf(Ac[i]);
        __syncthreads();
#pragma unroll
        for (int nt = 0; nt < SVB / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) S[0][nt][e] *= EA[r0 + g + 8 * (e >> 1)];
        ladder_mma_warp_tile<T, 1, 8, SC / 16, true, true>(S, Kt + r0, SK16, (const uint16_t *)(b + ST_V) + j0, SV16,
                                                           lane);
        __syncthreads(); /* every warp is done with this buffer, Kt and EA before they are refilled */
    }
    if (a.ht)
        put([&](int64_t i, int64_t j, float x0, float x1, bool pair) {
            float *out = a.ht + ((n * a.c.H + h) * K + i) * V + j;
            out[0] = x0;
            if (pair) out[1] = x1;
        });
}

/*
 * One block per (sequence x head, OVB output columns, chunk of SC steps), chunks striding by gridDim.z; 8 warps,
 * warp w holding steps 16 (w & 3).. and columns 64 (w >> 2).. of o. The state rows come SKB at a time: each
 * tile adds to the state part and to P, whose off-diagonal sub-blocks (warps 0..5, one each) stay in fragments,
 * the diagonal sub-blocks' entries in registers (P_tt in shared memory), until the last tile.
 */
template <class T> __global__ void __launch_bounds__(256, 2) out_kernel(tc_call a, const uint16_t *store, int64_t vpitch) {
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * OVB;
    const int64_t K = a.c.K, V = a.c.V, nv = min((int64_t)OVB, V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    uint16_t *q = (uint16_t *)(sm + OT_Q), *k = (uint16_t *)(sm + OT_K), *St = (uint16_t *)(sm + OT_S);
    uint16_t *v = (uint16_t *)(sm + OT_V), *Qe = (uint16_t *)(sm + OT_QE), *Qi = (uint16_t *)(sm + OT_QI);
    uint16_t *Kr = (uint16_t *)(sm + OT_KR), *P16 = q; /* P16 [t][s], over q once the last tile is done */
    float *A = (float *)(sm + OT_G);
    int64_t *R = (int64_t *)(sm + OT_R);
    float *Ptt = (float *)(sm + OT_PT);
    /* warp w < 6 owns P's sub-block (si, sj), si > sj; Kr holds sub-chunk si's keys at row 8 si (si - 1) */
    const int si = warp < 1 ? 1 : warp < 3 ? 2 : 3, sj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp - 3;
    const int tl = threadIdx.x / 16, ul = threadIdx.x % 16; /* the thread's entry in the diagonal sub-blocks */
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        const uint16_t *S0 = store + (split_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        stage_tile<uint16_t, SC>(v, OV16, OVB, a.v, a, s, h, step0, c0, nv);
        if (threadIdx.x < SC) {
            const int64_t t = token_of(a, s, step0 + threadIdx.x);
            R[threadIdx.x] = t >= 0 ? rec_row(a.c, s.b, t, h) : -1;
            Ptt[threadIdx.x] = 0.0f;
        }
        float acc[1][OVB / 16][4] = {}, pacc[1][2][4] = {}, pd[2] = {};
        for (int64_t i0 = 0; i0 < K; i0 += SKB) {
            const int64_t nk = min((int64_t)SKB, K - i0);
            stage_tile<uint16_t, SC>(q, SK16, SKB, a.q, a, s, h, step0, i0, nk);
            stage_tile<uint16_t, SC>(k, SK16, SKB, a.k, a, s, h, step0, i0, nk);
            if (a.gk.p) stage_tile<float, SC>(A, SK32, SKB, a.gk, a, s, h, step0, i0, nk);
            if (threadIdx.x < SC) {
                const int64_t t = token_of(a, s, step0 + threadIdx.x);
                ((float *)(sm + OT_GS))[threadIdx.x] = t >= 0 ? rec_ld(a.c.g, s.b, t, h, 0) : 0.0f;
            }
            for (int id = threadIdx.x; id < SKB * OVB / 8; id += blockDim.x) { /* S_c's rows i0.., 8 columns each */
                const int r = id / (OVB / 8), col = id % (OVB / 8) * 8;
                uint16_t *d = St + r * OV16 + col;
                const uint16_t *src = S0 + (i0 + r) * vpitch + c0 + col;
                if (r < nk && col + 8 <= nv) {
                    ladder_cp_async16(d, src, true);
                } else {
#pragma unroll
                    for (int e = 0; e < 8; e++) d[e] = r < nk && col + e < nv ? src[e] : uint16_t(0);
                }
            }
            ladder_cp_async_commit();
            ladder_cp_async_wait_group<0>();
            __syncthreads();
            cumsum<SC>(A, SK32, SKB, a.gk.p, (const float *)(sm + OT_GS), gamma, rows);
            __syncthreads();
            /* Qe = q ⊙ exp(A_t); Qi for t >= 16; and P_tt (no decay: exp(A_t - A_t) = 1), a warp per row */
            for (int id = threadIdx.x; id < SC * SKB / 2; id += blockDim.x) {
                const int t = id / (SKB / 2), i = id % (SKB / 2) * 2;
                const float2 At = *(const float2 *)(A + t * SK32 + i);
                const uint32_t q2 = ladder_lds32(q + t * SK16 + i), k2 = ladder_lds32(k + t * SK16 + i);
                const float x0 = ladder_to_float<T>(q2 & 0xffff), x1 = ladder_to_float<T>(q2 >> 16);
                *(uint32_t *)(Qe + t * SK16 + i) = ladder_pack2_float<T>(x0 * __expf(At.x), x1 * __expf(At.y));
                if (t >= 16) {
                    const float2 Ab = *(const float2 *)(A + (t / 16 * 16 - 1) * SK32 + i);
                    *(uint32_t *)(Qi + t * SK16 + i) =
                        ladder_pack2_float<T>(x0 * __expf(At.x - Ab.x), x1 * __expf(At.y - Ab.y));
                }
                float dot = x0 * ladder_to_float<T>(k2 & 0xffff) + x1 * ladder_to_float<T>(k2 >> 16);
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                if (lane == 0) Ptt[t] += dot;
            }
            for (int id = threadIdx.x; id < 96 * SKB / 2; id += blockDim.x) { /* Kr: k_s ⊙ exp(A_b - A_s), s <= b */
                const int r = id / (SKB / 2), i = id % (SKB / 2) * 2;
                const int ki = r < 16 ? 1 : r < 48 ? 2 : 3, sr = r - 8 * ki * (ki - 1), b = 16 * ki - 1;
                const float2 As = *(const float2 *)(A + sr * SK32 + i), Ab = *(const float2 *)(A + b * SK32 + i);
                const uint32_t k2 = ladder_lds32(k + sr * SK16 + i);
                *(uint32_t *)(Kr + r * SK16 + i) =
                    ladder_pack2_float<T>(ladder_to_float<T>(k2 & 0xffff) * __expf(Ab.x - As.x),
                                          ladder_to_float<T>(k2 >> 16) * __expf(Ab.y - As.y));
            }
            /* The diagonal sub-blocks' entries below their diagonal, 4 x 120, two per thread: thread (tl, ul) takes
             * (tl, ul) in sub-blocks 0 and 2 when ul < tl, (ul, tl) in 1 and 3 when ul > tl (one in four entries
             * a thread, half the threads idle, was the first plan); the 16 threads tl == ul have P_tt above. */
            for (int m = 0; tl != ul && m < 2; m++) {
                const int d = 2 * m + (ul > tl), t = 16 * d + max(tl, ul), u = 16 * d + min(tl, ul);
                float p = 0.0f; /* without gk the decay is the same in every channel: one exponential a pair */
                for (int i0c = 0; i0c < SKB; i0c += 8) {
#pragma unroll
                    for (int i = i0c; i < i0c + 8; i += 2) {
                        const uint32_t q2 = ladder_lds32(q + t * SK16 + i), k2 = ladder_lds32(k + u * SK16 + i);
                        float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
                        float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
                        if (a.gk.p) {
                            const float2 At = *(const float2 *)(A + t * SK32 + i);
                            const float2 Au = *(const float2 *)(A + u * SK32 + i);
                            x0 *= __expf(At.x - Au.x), x1 *= __expf(At.y - Au.y);
                        }
                        p += x0 + x1;
                    }
                }
                pd[m] += a.gk.p ? p : p * __expf(A[t * SK32] - A[u * SK32]);
            }
            __syncthreads();
            ladder_mma_warp_tile<T, 1, OVB / 16, SKB / 16, false, true>(acc, Qe + 16 * (warp & 3) * SK16, SK16,
                                                                        St + 64 * (warp >> 2), OV16, lane);
            if (warp < 6)
                ladder_mma_warp_tile<T, 1, 2, SKB / 16, false, false>(pacc, Qi + 16 * si * SK16, SK16,
                                                                      Kr + (8 * si * (si - 1) + 16 * sj) * SK16, SK16,
                                                                      lane);
            __syncthreads(); /* the tiles are done with before the next rows (or P16) are written over them */
        }
        if (warp < 6) /* sub-block (si, sj) from the fragments, and the zeros of (sj, si) above the diagonal */
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int t = g + 8 * (e >> 1), u = 8 * nt + 2 * tq + (e & 1);
                    P16[(16 * si + t) * SK16 + 16 * sj + u] = ladder_from_float<T>(pacc[0][nt][e]);
                    P16[(16 * sj + t) * SK16 + 16 * si + u] = 0;
                }
#pragma unroll
        for (int d = 0; d < 4; d++) { /* the diagonal sub-blocks: P_tt, zeros above, the entries below by their holder */
            const int at = (16 * d + tl) * SK16 + 16 * d + ul;
            if (tl == ul) P16[at] = ladder_from_float<T>(Ptt[16 * d + tl]);
            if (ul > tl) P16[at] = 0;
            if (tl != ul && (d & 1) == (ul > tl))
                P16[(16 * d + max(tl, ul)) * SK16 + 16 * d + min(tl, ul)] = ladder_from_float<T>(pd[d / 2]);
        }
        __syncthreads();
        ladder_mma_warp_tile<T, 1, OVB / 16, SC / 16, false, true>(acc, P16 + 16 * (warp & 3) * SK16, SK16,
                                                                   v + 64 * (warp >> 2), OV16, lane);
#pragma unroll
        for (int nt = 0; nt < OVB / 16; nt++)
#pragma unroll
            for (int e = 0; e < 4; e += 2) { /* columns j, j + 1: one 4-byte store where both exist and it aligns */
                const int t = 16 * (warp & 3) + g + 8 * (e >> 1);
                const int64_t j = c0 + 64 * (warp >> 2) + 8 * nt + 2 * tq;
                if (t >= rows || j >= V) continue;
                uint16_t *out = a.o + R[t] * V + j;
                const uint16_t x0 = ladder_from_float<T>(a.c.scale * acc[0][nt][e]);
                const uint16_t x1 = ladder_from_float<T>(a.c.scale * acc[0][nt][e + 1]);
                if (j + 1 < V && (uintptr_t)out % 4 == 0) {
                    *(uint32_t *)out = ladder_pack2(x0, x1);
                } else {
                    out[0] = x0;
                    if (j + 1 < V) out[1] = x1;
                }
            }
        __syncthreads(); /* v, R and P16 are done with before the next chunk is staged */
    }
}

/*
 * Element [b,t,h,c] of a 16-bit input, from its flat token index (b*T + t)*H + h: one multiply-add when the input
 * is contiguous, three 64-bit divisions otherwise (they were a third of the gate sums' instructions).
 */
template <class T>
__device__ __forceinline__ float ld16(const view<uint16_t> &x, const rec_call &c, int64_t token, int64_t col) {
    if (x.dense) return ladder_to_float<T>(x.p[token * x.s[2] + col]);
    const int64_t h = token % c.H, t = token / c.H % c.T, b = token / c.H / c.T;
    return ladder_to_float<T>(x.p[b * x.s[0] + t * x.s[1] + h * x.s[2] + col * x.s[3]]);
}

/*
 * One thread per (token, row i): the column blocks' partials summed in block order, the diagonal terms put back,
 *   dq = dq_part + scale k (v . do),   dk = dk_part + scale q (v . do) + dkz_part,
 * rounded into the outputs; dq_part, dk_part and dkz_part keep their fp32 sums, for the gate sums.
 */
template <class T> __global__ void finish_rows_kernel(tc_call a, int parts, uint16_t *dq, uint16_t *dk) {
    const int64_t tokens = a.c.B * a.c.T * a.c.H, n = tokens * a.c.K;
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    const int64_t token = e / a.c.K, i = e % a.c.K;
    float sq = 0.0f, sk = 0.0f, sz = 0.0f, vdo = 0.0f;
    for (int p = 0; p < parts; p++) {
        sq += a.dq_part[p * n + e], sk += a.dk_part[p * n + e], vdo += a.vdo_part[p * tokens + token];
        if (a.dkz_part) sz += a.dkz_part[p * n + e];
    }
    a.dq_part[e] = sq, a.dk_part[e] = sk;
    if (a.dkz_part) a.dkz_part[e] = sz;
    dq[e] = ladder_from_float<T>(sq + a.c.scale * ld16<T>(a.k, a.c, token, i) * vdo);
    dk[e] = ladder_from_float<T>(sk + a.c.scale * ld16<T>(a.q, a.c, token, i) * vdo + sz);
}

/* One thread per (token, column j): dv = dv32 + scale (q . k) do + dvz32, rounded. */
template <class T> __global__ void finish_cols_kernel(tc_call a, uint16_t *dv) {
    const int64_t n = a.c.B * a.c.T * a.c.H * a.c.V, e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n) return;
    const int64_t token = e / a.c.V, j = e % a.c.V;
    const float x = a.dv32[e] + a.c.scale * a.ptt[token] * ld16<T>(a.dO, a.c, token, j);
    dv[e] = ladder_from_float<T>(a.dvz32 ? x + a.dvz32[e] : x);
}

/* out[e] += in[e]: dh0's dht part joins its do part. */
__global__ void add_kernel(float *out, const float *in, int64_t n) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < n) out[e] += in[e];
}

constexpr int GATE_BATCH = 8; /* steps whose loads a gate-sum thread issues together, before adding them */
constexpr int GATE_SEGS = 8;  /* warps of a gate-sum block: each takes one segment of the sequence */

/*
 * The gate sums of one row (or column) x of a sequence, in double, in chapter 2's form ("What the identity costs
 * numerically"): backwards, G_t = sum_{s>=t} term_s, each term the difference of two small numbers when the
 * decay is strong (the diagonal terms that cancel are left out of both); then forwards, with dht, G_t gains its
 * dht part z0 + sum_{u<t} zterm_u. @p term(row) and @p zterm(row) read the step at flat token row.
 *
 * A reverse cumulative sum is a chain, but it splits: warp w of the block takes steps w*per .. (w+1)*per - 1, sums
 * them (and their zterms) once, and after a barrier starts its chain from the totals of the segments after it
 * (before it, for the dht part). One thread per (sequence, head, x) walking all T steps left 4 warps per SM
 * waiting on loads: 3.4 ms at B=8 T=4096 H=16 K=128 (H100, commit c8a6796); 8 segments take 2.6 (commit
 * 7275af4). Lanes take 32 consecutive x, so that each load of a warp is one contiguous run; the loads of
 * GATE_BATCH steps go out together. Every thread of the block calls it (it synchronizes); @p active: whether x is
 * a real channel.
 */
template <class Term, class ZTerm>
__device__ __forceinline__ void gate_sums(const tc_call &a, const rec_seq &s, int64_t h, int64_t width, int64_t x,
                                          bool active, double *G, Term term, double z0, ZTerm zterm) {
    __shared__ double tot[GATE_SEGS][32], ztot[GATE_SEGS][32];
    const int seg = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool dht = a.c.dht.p != nullptr;
    const int64_t per = (s.len + GATE_SEGS - 1) / GATE_SEGS, first = min(s.len, seg * per);
    const int64_t end = active ? min(s.len, first + per) : first;
    const auto row_of = [&](int64_t step) { return rec_row(a.c, s.b, rec_token(a.c, s, step), h); };
    double y = 0.0, z = 0.0;
#pragma unroll GATE_BATCH
    for (int64_t step = first; step < end; step++) {
        y += term(row_of(step));
        if (dht) z += zterm(row_of(step));
    }
    tot[seg][lane] = y, ztot[seg][lane] = z;
    __syncthreads();
    z = 0.0;
    for (int g = seg + 1; g < GATE_SEGS; g++) z += tot[g][lane];
    for (int g = 0; g < seg; g++) z0 += ztot[g][lane];
    for (int64_t last = end - 1; last >= first; last -= GATE_BATCH) {
        double y8[GATE_BATCH];
        int64_t at[GATE_BATCH];
#pragma unroll
        for (int u = 0; u < GATE_BATCH; u++) {
            const int64_t row = row_of(max(last - u, first));
            at[u] = row * width + x;
            y8[u] = term(row);
        }
#pragma unroll
        for (int u = 0; u < GATE_BATCH; u++)
            if (last - u >= first) z += y8[u], G[at[u]] = z;
    }
    for (int64_t step = first; dht && step < end; step++) {
        const int64_t row = row_of(step);
        G[row * width + x] += z0;
        z0 += zterm(row);
    }
}

/*
 * One block per (sequence, head, 32 rows i), a warp per segment of the steps:
 *   G_t[i] = sum_{s>=t} (q_s[i] dq_s[i] - k_s[i] dk_s[i]) + sum_j dh0z[i,j] h0[i,j] + sum_{u<t} k_u[i] dkz_u[i]
 * with dq, dk the do parts without their diagonal terms (the identity of recurrent.h, rearranged).
 */
template <class T> __global__ void gate_rows_kernel(tc_call a, double *G) {
    const int64_t K = a.c.K, V = a.c.V, groups = (K + 31) / 32, nh = blockIdx.x / groups;
    const int64_t i = blockIdx.x % groups * 32 + threadIdx.x % 32, n = nh / a.c.H, h = nh % a.c.H;
    const bool active = i < K;
    double z0 = 0.0;
    for (int64_t j = 0; active && a.dh0z && a.c.h0.p && j < V; j++)
        z0 += (double)a.dh0z[(nh * K + i) * V + j] * rec_ld(a.c.h0, n, h, i, j);
    const auto term = [&](int64_t row) {
        return (double)ld16<T>(a.q, a.c, row, i) * a.dq_part[row * K + i] -
               (double)ld16<T>(a.k, a.c, row, i) * a.dk_part[row * K + i];
    };
    const auto zterm = [&](int64_t row) { return (double)ld16<T>(a.k, a.c, row, i) * a.dkz_part[row * K + i]; };
    gate_sums(a, rec_seq_of(a.c, n), h, K, i, active, G, term, z0, zterm);
}

/* The same per column j: G_t[j] = sum_{s>=t} (o_s do_s - v_s dv_s)[j] + sum_i dh0z h0 + sum_{u<t} v_u dvz_u. */
template <class T> __global__ void gate_cols_kernel(tc_call a, double *G) {
    const int64_t K = a.c.K, V = a.c.V, groups = (V + 31) / 32, nh = blockIdx.x / groups;
    const int64_t j = blockIdx.x % groups * 32 + threadIdx.x % 32, n = nh / a.c.H, h = nh % a.c.H;
    const bool active = j < V;
    double z0 = 0.0;
    for (int64_t i = 0; active && a.dh0z && a.c.h0.p && i < K; i++)
        z0 += (double)a.dh0z[(nh * K + i) * V + j] * rec_ld(a.c.h0, n, h, i, j);
    const auto term = [&](int64_t row) {
        return (double)a.o32[row * V + j] * ld16<T>(a.dO, a.c, row, j) -
               (double)ld16<T>(a.v, a.c, row, j) * a.dv32[row * V + j];
    };
    const auto zterm = [&](int64_t row) { return (double)ld16<T>(a.v, a.c, row, j) * a.dvz32[row * V + j]; };
    gate_sums(a, rec_seq_of(a.c, n), h, V, j, active, G, term, z0, zterm);
}

constexpr int THREADS = 256;

template <class U> view<U> view_of(const ladder_tensor &t) {
    view<U> x = {(const U *)t.data, {0, 0, 0, 0}, false, false};
    for (int d = 0; t.data && d < t.rank; d++) x.s[d] = t.strides[d];
    x.vec = t.data && t.rank == 4 && ladder_rows16(&t, 1);
    x.dense = t.data && t.rank == 4 && x.s[3] == 1 && x.s[2] == t.shape[3] && x.s[1] == t.shape[2] * x.s[2] &&
              x.s[0] == t.shape[1] * x.s[1];
    return x;
}

/* The call, and the block shape: as many warps (16 columns each, up to 8) as V needs and shared memory allows. */
ladder_status plan(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar, bool bwd, tc_call *a) {
    *a = tc_call{};
    a->c = rec_call_of(p, ar);
    a->q = view_of<uint16_t>(ar->q), a->k = view_of<uint16_t>(ar->k), a->v = view_of<uint16_t>(ar->v);
    a->dO = view_of<uint16_t>(ar->do_);
    a->gk = view_of<float>(ar->gk), a->gv = view_of<float>(ar->gv);
    a->o = (uint16_t *)ar->o.data;
    a->ht = (float *)ar->ht.data;
    a->bwd = bwd;
    a->cvt = bwd && ar->q.dtype != LADDER_BF16;
    a->Kp = (int)(p->K + 15) / 16 * 16;
    int device, max_smem;
    LADDER_CUDA_TRY(cudaGetDevice(&device));
    LADDER_CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    a->kh = a->Kp > 8 * NTM ? 2 : 1;
    int groups = (int)min((int64_t)MAX_WARPS / a->kh, (p->V + 15) / 16); /* of 16 columns */
    while (groups > 1 && smem_plan(a->Kp, 16 * groups, bwd, ar->gv.data, a->cvt).total > max_smem) groups--;
    a->nw = groups * a->kh, a->VB = 16 * groups;
    if (smem_plan(a->Kp, a->VB, bwd, ar->gv.data, a->cvt).total > max_smem)
        return ladder_fail(LADDER_ERR_UNSUPPORTED, "K = %lld needs more shared memory than this GPU has",
                           (long long)p->K);
    return LADDER_OK;
}

/*
 * One block per (sequence x head, column block); with @p chunks (diag_kernel), per chunk too (up to 65535), and
 * the diag_kernel's small shared-memory plan.
 */
template <class Kernel>
ladder_status launch(Kernel *kernel, const tc_call &a, const char *name, int64_t vblocks, int64_t chunks = 0) {
    const size_t bytes = (size_t)smem_plan(a.Kp, a.VB, a.bwd, a.gv.p, a.cvt, chunks > 0).total;
    LADDER_TRY(ladder_allow_smem(kernel, bytes));
    const int64_t z = min(max(chunks, (int64_t)1), (int64_t)65535);
    const dim3 grid((unsigned)(a.c.N * a.c.H), (unsigned)vblocks, (unsigned)z);
    kernel<<<grid, 32 * a.nw, bytes>>>(a);
    LADDER_LAUNCH_CHECK(name);
    return LADDER_OK;
}

/*
 * The split forward (states_kernel, then out_kernel): the states of every chunk start, N H (T/SC + 1) K V
 * 16-bit numbers, are the price of the parallel outputs.
 */
template <class T> ladder_status split_fwd(const tc_call &a) {
    const rec_call &c = a.c;
    const int64_t vpitch = (c.V + 7) / 8 * 8, slots = c.B * c.T / SC + c.N + 1; /* split_slot() */
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)(slots * c.H * c.K * vpitch) * sizeof(uint16_t)));
    uint16_t *store = (uint16_t *)mem.ptr;
    LADDER_TRY(ladder_allow_smem(states_kernel<T>, ST_TOTAL));
    LADDER_TRY(ladder_allow_smem(out_kernel<T>, OT_TOTAL));
    const dim3 sg((unsigned)(c.N * c.H), (unsigned)((c.V + SVB - 1) / SVB), (unsigned)((c.K + SKB - 1) / SKB));
    states_kernel<T><<<sg, 256, ST_TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("states_kernel");
    const int64_t chunks = min(max((c.T + SC - 1) / SC, (int64_t)1), (int64_t)65535);
    const dim3 og((unsigned)(c.N * c.H), (unsigned)((c.V + OVB - 1) / OVB), (unsigned)chunks);
    out_kernel<T><<<og, 256, OT_TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("out_kernel");
    return LADDER_OK;
}

template <class T> ladder_status fwd(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    tc_call a;
    LADDER_TRY(plan(p, ar, false, &a));
    if (!a.gv.p) return split_fwd<T>(a);
    const int64_t chunks = (p->T + CH - 1) / CH, slots = p->B * p->T / CH + a.c.N + 1; /* chunk_slot() */
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)(slots * p->H * CH * (CH + 1)) * sizeof(float)));
    a.P_store = (float *)mem.ptr;
    LADDER_TRY(launch(diag_kernel<T>, a, "diag_kernel", 1, chunks));
    return launch(sweep_kernel<T, T>, a, "sweep_kernel", (p->V + a.VB - 1) / a.VB);
}

/*
 * The backward. The gate sums of recurrent.h, taken as they stand, subtract numbers of order one whose difference
 * is tiny under strong decay: q_t dq_t and k_t dk_t both hold the step's own term scale (q_t . k_t)(v_t . do_t),
 * and the dht part of the k dk sums cancels ht * dht. Written that way the rung missed the float64 reference by
 * up to 0.2 on dgk (K = V = 256, T = 15, gk and gv, normalizer 0.1; chapter 2). So, as cpu/recurrent.c does,
 * the kernels keep apart what cancels: dq, dk, dv and o without their own step's diagonal term, and dk, dv from
 * dht in a second reverse sweep (zrun); the finish kernels put the outputs together, the gate kernels sum the
 * small differences.
 */
template <class T> ladder_status bwd(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    tc_call a;
    LADDER_TRY(plan(p, ar, true, &a));
    const rec_call &c = a.c;
    const int64_t tokens = c.B * c.T * c.H, nvb = (c.V + a.VB - 1) / a.VB;
    const bool gates = rec_has_gates(c), gv = c.gv.p != nullptr, dht = c.dht.p != nullptr;
    const int64_t n_part = nvb * tokens * c.K, n_v = tokens * c.V, n_state = c.N * c.H * c.K * c.V;
    const int64_t sizes[] = {n_part, n_part, dht ? n_part : 0, nvb * tokens, tokens, gv ? n_v : 0, n_v,
                             dht ? n_v : 0, dht ? n_state : 0};
    float **slots[] = {&a.dq_part, &a.dk_part, &a.dkz_part, &a.vdo_part, &a.ptt, &a.o32, &a.dv32, &a.dvz32, &a.dh0z};
    int64_t floats = 0;
    for (int64_t n : sizes) floats += (n + 3) / 4 * 4; /* every slot 16-byte aligned, for cp.async (stage_chunk) */
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)floats * sizeof(float)));
    float *at = (float *)mem.ptr;
    for (int i = 0; i < 9; i++) *slots[i] = sizes[i] ? at : nullptr, at += (sizes[i] + 3) / 4 * 4;
    a.o = nullptr, a.ht = nullptr;
    LADDER_TRY(launch(diag_kernel<T>, a, "diag_kernel", nvb, (c.T + CH - 1) / CH));
    tc_call fw = a, rv = a; /* the sweeps stage the diagonal parts they complete */
    fw.xk = a.dq_part, fw.xv = a.o32, rv.xk = a.dk_part, rv.xv = a.dv32;
    LADDER_TRY(launch(sweep_kernel<T, __nv_bfloat16>, fw, "sweep_kernel", nvb));
    LADDER_TRY(launch(reverse_kernel<T, __nv_bfloat16>, rv, "reverse_kernel", nvb));
    if (dht) {
        tc_call z = a;
        z.zrun = true, z.c.scale = 0.0f;
        LADDER_TRY(launch(reverse_kernel<T, __nv_bfloat16>, z, "reverse_kernel", nvb));
        if (c.dh0) {
            add_kernel<<<ladder_blocks(n_state, THREADS), THREADS>>>(c.dh0, a.dh0z, n_state);
            LADDER_LAUNCH_CHECK("add_kernel");
        }
    }
    const int64_t n_k = tokens * c.K;
    finish_rows_kernel<T><<<ladder_blocks(n_k, THREADS), THREADS>>>(a, (int)nvb, (uint16_t *)ar->dq.data,
                                                                     (uint16_t *)ar->dk.data);
    LADDER_LAUNCH_CHECK("finish_rows_kernel");
    finish_cols_kernel<T><<<ladder_blocks(n_v, THREADS), THREADS>>>(a, (uint16_t *)ar->dv.data);
    LADDER_LAUNCH_CHECK("finish_cols_kernel");
    if (!gates) return LADDER_OK;
    rec_gate_scratch G;
    LADDER_TRY(G.alloc(c));
    const unsigned rows = (unsigned)(c.N * c.H * ((c.K + 31) / 32)), cols = (unsigned)(c.N * c.H * ((c.V + 31) / 32));
    gate_rows_kernel<T><<<rows, 32 * GATE_SEGS>>>(a, G.G_row);
    LADDER_LAUNCH_CHECK("gate_rows_kernel");
    if (gv) {
        gate_cols_kernel<T><<<cols, 32 * GATE_SEGS>>>(a, G.G_col);
        LADDER_LAUNCH_CHECK("gate_cols_kernel");
    }
    return rec_finish_gates(c, G);
}

} // namespace

extern "C" ladder_status recurrent_fwd_gpu_tensorcore(const ladder_recurrent_problem *p,
                                                      const ladder_recurrent_args *a) {
    return a->q.dtype == LADDER_BF16 ? fwd<__nv_bfloat16>(p, a) : fwd<__half>(p, a);
}

extern "C" ladder_status recurrent_bwd_gpu_tensorcore(const ladder_recurrent_problem *p,
                                                      const ladder_recurrent_args *a) {
    return a->q.dtype == LADDER_BF16 ? bwd<__nv_bfloat16>(p, a) : bwd<__half>(p, a);
}
