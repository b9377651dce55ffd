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
 *    pair's product and weight formed once (a thread per channel walks the chunk's pairs), its exponentials by
 *    the ex2 instruction alone (ladder_exp_ftz, common/fast_exp.cuh).
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
 * 6. The gate gradients in chapter 2's form (recurrent_gates.cu: gate_grads()): the identity of
 *    recurrent.h with what cancels kept apart (each step's own diagonal term; dht's part, from a second reverse
 *    sweep), summed in double. One pass over the inputs (gate_scan): tiles of the sequence from its end, each
 *    warp's steps in registers, the carry of the later tiles and warps through shared memory; dgk and dgv are
 *    written in fp32 at once, dg from each block's per-step sums over its 32 rows (rec_finish_dg()).
 * 7. The forward split in two (recurrent_split.cu: states_kernel, out_kernel), without gv: the sweep of 1. is a
 *    chain of T/16 links whose block fills an SM's registers, so nothing hides its latency. Instead a kernel
 *    carries the state alone, 64 steps a link, writing the state at every chunk's start (16-bit), and a second
 *    computes every chunk's o in parallel from it: the state part as one product, the pairs inside the chunk as
 *    a 64 x 64 matrix P from 16-step sub-chunks (the off-diagonal ones on the mma, factored around the step
 *    before the query's sub-chunk; the diagonal ones in fp32 as in 2.), then P V. The price is the states' bytes.
 *    What the files share (the call, the staging, the cumulative sums, split2) is in recurrent_tc.cuh.
 * 9. The backward split the same way (recurrent_split_bwd.cu), without gv and with bf16 inputs: states_kernel
 *    carries S forwards and dH backwards, 64 steps a link, storing both in fp32 at every chunk of 64 (the gate
 *    sums need 16 bits of dq and dk); rows_kernel (dq, dk) and cols_kernel (dv) then compute every chunk's
 *    state parts, its pairs between 16-step sub-chunks (and, in rows_kernel, between the 8-step halves of each)
 *    on the mma and, in fp32, those inside them, in parallel, in place of the two sweeps of 5. and of
 *    diag_kernel. With one column block and no dht they also finish the outputs
 *    (finish_rows_kernel's and finish_cols_kernel's work). With gv, or fp16 inputs (whose operands need the bf16
 *    conversion of 1.), the backward keeps diag_kernel and the sweeps.
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all f16; gates,
 * states and their gradients f32; device pointers; any input strides; contiguous outputs; K, V <= 256).
 * Run it:  build/bin/ladder run recurrent --rung gpu_tensorcore --dtype bf16
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "fast_exp.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"
#include "recurrent_tc.cuh"

namespace {

using namespace rec_tc;

constexpr int MAX_WARPS = 8; /* a block holds at most 16 * 8 = 128 state columns */
constexpr int NTM = 16;      /* fragments of 8 state rows a warp holds: 128 rows (a pair of warps for K > 128) */
constexpr int DIAG_BLOCKS = 2; /* diag_kernel blocks per SM: 80 registers a thread (3 blocks) spilled */

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
            R = at, at += CH * 8;
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

/*
 * Where chunk @p chunk of sequence @p n keeps its P in P_store: floor(first token / CH) + n + chunk, over the
 * flat [B*T] tokens. A sequence's chunks take consecutive slots, and the next sequence starts past them, so no
 * two chunks share one; there are at most B*T/CH + N + 1 slots.
 */
__device__ __forceinline__ int64_t chunk_slot(const tc_call &a, const rec_seq &s, int64_t n, int64_t chunk) {
    return (s.b * a.c.T + s.start) / CH + n + chunk;
}

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
 * Without gk, D leaves here scaled by exp(A_t - A_s) as well, the factor every channel of dq and dk shares
 * (diag_rows()). One entry per thread, 8 channels per round so that their loads go out together (diag_kernel):
 * threads 0..119 take P's 120 entries below the diagonal, 120..239 D's, and 240..255 the diagonals of both, which
 * need no exponential (exp(0) = 1). A thread per entry of the whole 16 x 16 matrices left 120 of 256 threads
 * without work, in warps that still issued every instruction for the others.
 */
template <class T>
__device__ void small_matrices(unsigned char *sm, const smem_plan &L, const unsigned char *b, const tc_call &a,
                               bool want_D) {
    constexpr int LOWER = CH * (CH - 1) / 2; /* entries below the diagonal */
    const float *A = (const float *)(b + L.gk), *B = (const float *)(b + L.gv);
    const uint16_t *q = (const uint16_t *)(b + L.q), *k = (const uint16_t *)(b + L.k);
    const uint16_t *v = (const uint16_t *)(b + L.v), *dO = (const uint16_t *)(b + L.dO);
    float *P = (float *)(sm + L.P), *D = (float *)(sm + L.D);
    const auto p_entry = [&](int t, int s, bool gates) {
        float p = 0.0f;
        for (int i0 = 0; i0 < a.Kp; i0 += 8) {
#pragma unroll
            for (int i = i0; i < i0 + 8; i += 2) {
                const uint32_t q2 = ladder_lds32(q + t * L.kp16 + i), k2 = ladder_lds32(k + s * L.kp16 + i);
                float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
                float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
                if (gates && a.gk.p) {
                    const float2 At = *(const float2 *)(A + t * L.kp32 + i);
                    const float2 As = *(const float2 *)(A + s * L.kp32 + i);
                    x0 *= ladder_exp_ftz(At.x - As.x), x1 *= ladder_exp_ftz(At.y - As.y);
                }
                p += x0 + x1;
            }
        }
        return p;
    };
    const auto d_entry = [&](int t, int s, bool gates) {
        float d = 0.0f;
        for (int j0 = 0; j0 < a.VB; j0 += 8) {
#pragma unroll
            for (int j = j0; j < j0 + 8; j++) {
                float x = ladder_to_float<T>(dO[t * L.vp16 + j]) * ladder_to_float<T>(v[s * L.vp16 + j]);
                if (gates && a.gv.p) x *= ladder_exp_ftz(B[t * L.vp32 + j] - B[s * L.vp32 + j]);
                d += x;
            }
        }
        return d;
    };
    for (int id = threadIdx.x; id < CH * CH; id += blockDim.x) /* above the diagonal */
        if (id % CH > id / CH) P[id / CH * (CH + 1) + id % CH] = 0.0f, D[id / CH * (CH + 1) + id % CH] = 0.0f;
    for (int id = threadIdx.x; id < 2 * LOWER + CH; id += blockDim.x) {
        if (id >= 2 * LOWER) { /* a diagonal: exp(A_t - A_t) = 1 */
            const int t = id - 2 * LOWER;
            P[t * (CH + 1) + t] = p_entry(t, t, false);
            D[t * (CH + 1) + t] = want_D ? d_entry(t, t, false) : 0.0f;
            continue;
        }
        const bool is_D = id >= LOWER;
        if (is_D && !want_D) continue;
        const int e = is_D ? id - LOWER : id; /* entry e = t (t - 1) / 2 + s, s < t */
        const int t = (int)((1.0f + sqrtf(8.0f * e + 1.0f)) * 0.5f), s = e - t * (t - 1) / 2;
        float x = is_D ? d_entry(t, s, true) : p_entry(t, s, true);
        if (!a.gk.p) x *= ladder_exp_ftz(A[t * L.kp32] - A[s * L.kp32]); /* the row gate alone: one factor per pair */
        (is_D ? D : P)[t * (CH + 1) + s] = x;
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

constexpr int HALF = CH / 2; /* diag_rows and diag_cols take the earlier step of a pair 8 steps at a time */

/* The half of earlier steps after which the sums of step t are complete: the one that holds step t - 1. */
__host__ __device__ constexpr int last_half(int t) { return t == 0 ? 0 : (t - 1) / HALF * HALF; }

/*
 * diag_kernel's backward for row channel @p i of the chunk: dq_t[i] and dk_u[i] from every pair u < t, which
 * share the pair's weight w = D[t][u] exp(A_t[i] - A_u[i]) (GK; without gk, D came scaled by the factor). One
 * thread walks the 120 pairs of its channel, so that each exponential is formed once: a thread per (step,
 * channel), over all 16 steps, formed it at both ends of the pair and for the masked steps as well. The earlier
 * steps go 8 at a time (their k and dk sums in registers, with the dq sums still open): all 16 at once spilled at
 * 3 blocks per SM. @p part: the column block's first row in dq_part, dk_part.
 */
template <class T, bool GK>
__device__ __forceinline__ void diag_rows(const tc_call &a, const smem_plan &L, const unsigned char *sm, int i,
                                          int rows, int64_t part) {
    const float *A = (const float *)(sm + L.gk), *D = (const float *)(sm + L.D);
    const uint16_t *q = (const uint16_t *)(sm + L.q), *k = (const uint16_t *)(sm + L.k);
    const int64_t *R = (const int64_t *)(sm + L.R), K = a.c.K;
    float xq[CH];
#pragma unroll
    for (int t = 0; t < CH; t++) xq[t] = 0.0f;
#pragma unroll
    for (int u0 = 0; u0 < CH; u0 += HALF) {
        float ku[HALF], xk[HALF];
#pragma unroll
        for (int u = 0; u < HALF; u++) ku[u] = ladder_to_float<T>(k[(u0 + u) * L.kp16 + i]), xk[u] = 0.0f;
#pragma unroll
        for (int t = 0; t < CH; t++) {
            if (u0 > 0 && t <= u0) continue; /* no pair of this half */
            const float qt = ladder_to_float<T>(q[t * L.kp16 + i]), At = GK ? A[t * L.kp32 + i] : 0.0f;
#pragma unroll
            for (int u = 0; u < HALF; u++) {
                if (u0 + u >= t) break;
                const float d = D[t * (CH + 1) + u0 + u];
                const float w = GK ? d * ladder_exp_ftz(At - A[(u0 + u) * L.kp32 + i]) : d;
                xq[t] += w * ku[u], xk[u] += w * qt;
            }
            if (last_half(t) == u0 && t < rows) a.dq_part[(part + R[t]) * K + i] = a.c.scale * xq[t];
        }
#pragma unroll
        for (int u = 0; u < HALF; u++) {
            if (u0 + u >= rows) break;
            a.dk_part[(part + R[u0 + u]) * K + i] = a.c.scale * xk[u];
            if (i == 0) a.vdo_part[part + R[u0 + u]] = D[(u0 + u) * (CH + 1) + u0 + u];
        }
    }
}

/* The same for column jl of the block (column j of V): dv_u[j] and, with gv, o_t[j] share P[t][u] exp(B_t - B_u). */
template <class T, bool GV>
__device__ __forceinline__ void diag_cols(const tc_call &a, const smem_plan &L, const unsigned char *sm, int jl,
                                          int64_t j, int rows) {
    const float *B = (const float *)(sm + L.gv), *P = (const float *)(sm + L.P);
    const uint16_t *v = (const uint16_t *)(sm + L.v), *dO = (const uint16_t *)(sm + L.dO);
    const int64_t *R = (const int64_t *)(sm + L.R), V = a.c.V;
    float xo[CH];
#pragma unroll
    for (int t = 0; t < CH; t++) xo[t] = 0.0f;
#pragma unroll
    for (int u0 = 0; u0 < CH; u0 += HALF) {
        float vu[HALF], xv[HALF];
#pragma unroll
        for (int u = 0; u < HALF; u++) vu[u] = GV ? ladder_to_float<T>(v[(u0 + u) * L.vp16 + jl]) : 0.0f, xv[u] = 0.0f;
#pragma unroll
        for (int t = 0; t < CH; t++) {
            if (u0 > 0 && t <= u0) continue;
            const float dt = ladder_to_float<T>(dO[t * L.vp16 + jl]), Bt = GV ? B[t * L.vp32 + jl] : 0.0f;
#pragma unroll
            for (int u = 0; u < HALF; u++) {
                if (u0 + u >= t) break;
                const float p = P[t * (CH + 1) + u0 + u];
                const float w = GV ? p * ladder_exp_ftz(Bt - B[(u0 + u) * L.vp32 + jl]) : p;
                xv[u] += w * dt;
                if (GV) xo[t] += w * vu[u];
            }
            if (GV && last_half(t) == u0 && t < rows) a.o32[R[t] * V + j] = a.c.scale * xo[t];
        }
#pragma unroll
        for (int u = 0; u < HALF; u++) {
            if (u0 + u >= rows) break;
            a.dv32[R[u0 + u] * V + j] = a.c.scale * xv[u];
            if (j == 0) a.ptt[R[u0 + u]] = P[(u0 + u) * (CH + 1) + u0 + u];
        }
    }
}

/*
 * The diagonal blocks of every chunk at once: they do not depend on the state, so they need not wait in the
 * sweeps' chain. One block per (sequence x head, column block, chunk), chunks striding by gridDim.z. The forward
 * writes each chunk's P to P_store; the backward writes the diagonal parts of the gradients, each without its
 * own step's term (bwd()), which the sweeps then complete with the state parts:
 *   dq_part = scale sum_{u<t} D[t][u] k_u exp(A_t-A_u),   dk_part = scale sum_{u>t} D[u][t] q_u exp(A_u-A_t),
 *   dv32    = scale sum_{u>t} P[u][t] do_u exp(B_u-B_t),  o32 (gv) = scale sum_{u<t} P[t][u] v_u exp(B_t-B_u),
 * and those terms apart: vdo_part = D[t][t], ptt = P[t][t]. A thread takes a channel, a row one (diag_rows) or a
 * column one (diag_cols), and walks the chunk's pairs. The exponentials are ex2.approx after one multiply
 * (ladder_exp_ftz; expf takes about ten instructions): its relative error, about 2 + 1.2 |x| units in the last place,
 * stays near 1e-6 for the factors that are not negligible, far under the 2^-16 the split operands carry.
 */
template <class T> __global__ void __launch_bounds__(32 * MAX_WARPS, DIAG_BLOCKS) diag_kernel(tc_call a) {
    extern __shared__ __align__(16) unsigned char sm[];
    const smem_plan L(a.Kp, a.VB, a.bwd, a.gv.p != nullptr, a.cvt, true);
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, vb = blockIdx.y, c0 = vb * a.VB;
    const int64_t tokens = a.c.B * a.c.T * a.c.H;
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + CH - 1) / CH;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    const bool gk = a.gk.p != nullptr, gv = a.gv.p != nullptr;
    tc_call in = a; /* what stage_chunk reads: the inputs, not the P_store this kernel fills */
    in.P_store = nullptr;
    const float *P = (const float *)(sm + L.P);
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        stage_chunk(sm, L, 0, in, s, h, c0, ch);
        ladder_cp_async_wait_group<0>();
        __syncthreads();
        const int rows = (int)min((int64_t)CH, s.len - ch * CH);
        cumsum((float *)(sm + L.gk), L.kp32, a.Kp, a.gk.p, (const float *)(sm + L.g), gamma, rows);
        if (gv) cumsum((float *)(sm + L.gv), L.vp32, a.VB, true, nullptr, 0.0f, rows);
        if (threadIdx.x < CH) {
            const int64_t t = token_of(a, s, ch * CH + threadIdx.x);
            ((int64_t *)(sm + L.R))[threadIdx.x] = t >= 0 ? rec_row(a.c, s.b, t, h) : -1;
        }
        __syncthreads();
        small_matrices<T>(sm, L, sm, a, a.bwd);
        __syncthreads();
        if (!a.bwd) {
            float *out = a.P_store + (chunk_slot(a, s, n, ch) * a.c.H + h) * CH * (CH + 1);
            for (int e = threadIdx.x; vb == 0 && e < CH * (CH + 1); e += blockDim.x) out[e] = P[e];
        }
        for (int e = threadIdx.x; a.bwd && e < a.Kp + a.VB; e += blockDim.x) {
            if (e < a.Kp) {
                if (e >= a.c.K) continue;
                if (gk) diag_rows<T, true>(a, L, sm, e, rows, vb * tokens);
                else diag_rows<T, false>(a, L, sm, e, rows, vb * tokens);
            } else {
                const int jl = e - a.Kp;
                if (c0 + jl >= a.c.V) continue;
                if (gv) diag_cols<T, true>(a, L, sm, jl, c0 + jl, rows);
                else diag_cols<T, false>(a, L, sm, jl, c0 + jl, rows);
            }
        }
        __syncthreads(); /* the tiles are done with before the next chunk is staged over them */
    }
}

/*
 * The forward sweep, one block per (sequence x head, column block): o (the state part from the registers, the
 * diagonal part from the staged P) and ht; the forward takes it with gv only (else split_fwd()). In the backward
 * (a.bwd) the same sweep adds the state parts of dq (this block's columns) and, with gv, of o in fp32 to
 * diag_kernel's diagonal parts.
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

/* out[e] += in[e]: dh0's dht part joins its do part. */
__global__ void add_kernel(float *out, const float *in, int64_t n) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < n) out[e] += in[e];
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
 * up to 0.2 on dgk (K = V = 256, T = 15, gk and gv, normalizer 0.1; docs/results/h100-2026-11-24-notes-recurrent.md).
 * So, as cpu/recurrent.c does, the kernels keep apart what cancels: dq, dk, dv and o without their own step's diagonal
 * term, and dk, dv from dht in a second reverse sweep (zrun); the finish kernels put the outputs together, the gate
 * kernels sum the small differences.
 */
template <class T> ladder_status bwd(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    tc_call a;
    LADDER_TRY(plan(p, ar, true, &a));
    const rec_call &c = a.c;
    const int64_t tokens = c.B * c.T * c.H, nvb = (c.V + a.VB - 1) / a.VB;
    const bool gv = c.gv.p != nullptr, dht = c.dht.p != nullptr;
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
    /* bf16 without gv: the state parts from stored states, every chunk at once, with the diagonal sub-blocks
     * (idea 9), which with one column block and no dht also finish dq, dk and dv */
    const bool split = !gv && !a.cvt, fused = split && nvb == 1 && !dht;
    uint16_t *dq = (uint16_t *)ar->dq.data, *dk = (uint16_t *)ar->dk.data, *dv = (uint16_t *)ar->dv.data;
    if (split) {
        LADDER_TRY(split_bwd(a, fused ? dq : nullptr, fused ? dk : nullptr, fused ? dv : nullptr));
    } else {
        LADDER_TRY(launch(diag_kernel<T>, a, "diag_kernel", nvb, (c.T + CH - 1) / CH));
        tc_call fw = a, rv = a; /* the sweeps stage the diagonal parts they complete */
        fw.xk = a.dq_part, fw.xv = a.o32, rv.xk = a.dk_part, rv.xv = a.dv32;
        LADDER_TRY(launch(sweep_kernel<T, __nv_bfloat16>, fw, "sweep_kernel", nvb));
        LADDER_TRY(launch(reverse_kernel<T, __nv_bfloat16>, rv, "reverse_kernel", nvb));
    }
    if (dht) {
        tc_call z = a;
        z.zrun = true, z.c.scale = 0.0f;
        LADDER_TRY(launch(reverse_kernel<T, __nv_bfloat16>, z, "reverse_kernel", nvb));
        if (c.dh0) {
            add_kernel<<<ladder_blocks(n_state, THREADS), THREADS>>>(c.dh0, a.dh0z, n_state);
            LADDER_LAUNCH_CHECK("add_kernel");
        }
    }
    /* the split path writes one whole partial (rows_kernel sums every column of V); dht's sweep nvb */
    if (!fused) LADDER_TRY(finish_outputs<T>(a, split ? 1 : (int)nvb, (int)nvb, dq, dk, dv));
    return rec_has_gates(c) ? gate_grads<T>(a) : LADDER_OK;
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
