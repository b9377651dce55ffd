/*
 * gpu_tensorcore/recurrent_split.cu: the tensor-core rung's forward without gv, split in two (idea 7 of
 * recurrent.cu's opening comment; chapter 2), and the chain of the backward's split (idea 9: states_kernel in its
 * ST_S and ST_DH modes, whose stores recurrent_split_bwd.cu reads).
 *
 * The chain carries the state alone, 64 steps at a time, and every chunk's outputs are computed in parallel from
 * the states it wrote. recurrent.cu's sweep walks 16 steps per link, one block
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
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"
#include "recurrent_tc.cuh"

namespace {

using namespace rec_tc;

constexpr int ST_THREADS = 256; /* states_kernel's block: 8 warps */
constexpr int SKB = 64;  /* state rows (K channels) per tile, both kernels */
constexpr int SVB = 128; /* state columns per states_kernel block (8 warps of 16 rows x 64 columns) */
constexpr int OVB = 128; /* output columns per out_kernel block (8 warps of 16 steps x 64 columns) */
constexpr int SK16 = SKB + 8, SK32 = SKB + 4, SV16 = SVB + 8, OV16 = OVB + 8; /* padded row pitches */

/* states_kernel's shared memory (bytes): two buffers of k, v, gk (then A), g; then Kt, EA and (backward) Ktl. */
constexpr int ST_K = 0, ST_V = ST_K + SC * SK16 * 2, ST_G = ST_V + SC * SV16 * 2, ST_GS = ST_G + SC * SK32 * 4;
constexpr int ST_BUF = ST_GS + SC * 4, ST_KT = 2 * ST_BUF, ST_EA = ST_KT + SC * SK16 * 2, ST_KTL = ST_EA + SKB * 4;
constexpr int ST_TOTAL = ST_KTL, ST_TOTAL_BWD = ST_KTL + SC * SK16 * 2;
/* out_kernel's: q, k, gk (then A), g, the state tile, v, the operands Qe, Qi, Kr, the rows, P_tt; P16 over q. */
constexpr int OT_Q = 0, OT_K = OT_Q + SC * SK16 * 2, OT_G = OT_K + SC * SK16 * 2, OT_GS = OT_G + SC * SK32 * 4;
constexpr int OT_S = OT_GS + SC * 4, OT_V = OT_S + SKB * OV16 * 2, OT_QE = OT_V + SC * OV16 * 2;
constexpr int OT_QI = OT_QE + SC * SK16 * 2, OT_KR = OT_QI + SC * SK16 * 2, OT_R = OT_KR + 96 * SK16 * 2;
constexpr int OT_PT = OT_R + SC * 8, OT_TOTAL = OT_PT + SC * 4; /* OT_PT: P's diagonal, P_tt = q_t . k_t */

/*
 * stage_tile() for a chunk of SC steps that lies whole in the sequence, from an input whose rows go 16 bytes at a
 * time, WIDTH columns all real: its rows are consecutive tokens, so a thread copies the same column of every
 * ROWS-th row, one pointer moving by a fixed stride. stage_tile() computes each copy's token and 64-bit address
 * beside the test of its element fallback, which left states_kernel's links bound by instruction issue (the
 * profile and the times of this change are in docs/results/h100-2026-11-24-notes-recurrent.md).
 */
template <class U, int WIDTH>
__device__ __forceinline__ void stage_whole(U *dst, int pitch, const view<U> &x, const tc_call &a, const rec_seq &s,
                                            int64_t h, int64_t step0, int64_t c0) {
    constexpr int E = 16 / sizeof(U), PER_ROW = WIDTH / E, ROWS = ST_THREADS / PER_ROW; /* rows a pass copies */
    static_assert(ST_THREADS % PER_ROW == 0 && SC % ROWS == 0, "every thread takes the same column each pass");
    const int64_t dt = a.c.reverse ? -x.s[1] : x.s[1]; /* the next step's row */
    const int r = threadIdx.x / PER_ROW, col = threadIdx.x % PER_ROW * E;
    const U *from = x.p + s.b * x.s[0] + rec_token(a.c, s, step0) * x.s[1] + h * x.s[2] + c0 + col + r * dt;
    U *to = dst + r * pitch + col;
#pragma unroll 1 /* unrolled, the copies' addresses stayed live across the chain's link: spills */
    for (int k = 0; k < SC / ROWS; k++, from += ROWS * dt, to += ROWS * pitch) ladder_cp_async16(to, from, true);
}

/*
 * One block per (sequence x head, SVB state columns, SKB state rows), 8 warps: warp w holds rows 16 (w & 3).. and
 * columns 64 (w >> 2).. of the tile as the fp32 C fragments of S (not S^T: the update S += Kt^T v is
 * ladder_mma_warp_tile's A = X^T form). At the benchmark's shape that is 256 blocks, one wave of two per SM.
 * MODE says which state it carries (states_mode):
 *   ST_FWD: S, for the forward; S_c for every chunk c into @p store ([slot][H][K][vpitch], 16-bit), the final
 *           state into ht.
 *   ST_S:   S again, for the backward's dq: stored in fp32, and Kt as hi + lo (split2 of recurrent.cu; the gate
 *           sums need about 16 bits of dq), two products a chunk.
 *   ST_DH:  dH = dL/dS, chunks in reverse: dH_start = exp(A_63) ⊙ dH_end + (scale q ⊙ exp(A))^T do, the same
 *           separable update with q for k, do for v. Stores dH_end of every chunk in fp32 (for dk and dv), and
 *           dH at the sequence's start into dh0. It starts at 0: dht's part is carried apart (bwd()).
 */
template <class T, int MODE>
__global__ void __launch_bounds__(ST_THREADS, 2) states_kernel(tc_call a, void *store, int64_t vpitch) {
    extern __shared__ __align__(16) unsigned char sm[];
    constexpr bool BWD = MODE != ST_FWD, REV = MODE == ST_DH;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * SVB, i0 = blockIdx.z * SKB;
    const int64_t K = a.c.K, V = a.c.V, nk = min((int64_t)SKB, K - i0), nv = min((int64_t)SVB, V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    const view<uint16_t> &kx = REV ? a.q : a.k, &vx = REV ? a.dO : a.v;
    const auto stage = [&](int buf, int64_t ch) {
        unsigned char *b = sm + buf * ST_BUF;
        const bool whole = (ch + 1) * SC <= s.len; /* every step of the chunk in the sequence */
        if (whole && kx.vec && nk == SKB)
            stage_whole<uint16_t, SKB>((uint16_t *)(b + ST_K), SK16, kx, a, s, h, ch * SC, i0);
        else
            stage_tile<uint16_t, SC>((uint16_t *)(b + ST_K), SK16, SKB, kx, a, s, h, ch * SC, i0, nk);
        if (whole && vx.vec && nv == SVB)
            stage_whole<uint16_t, SVB>((uint16_t *)(b + ST_V), SV16, vx, a, s, h, ch * SC, c0);
        else
            stage_tile<uint16_t, SC>((uint16_t *)(b + ST_V), SV16, SVB, vx, a, s, h, ch * SC, c0, nv);
        if (a.gk.p && whole && a.gk.vec && nk == SKB)
            stage_whole<float, SKB>((float *)(b + ST_G), SK32, a.gk, a, s, h, ch * SC, i0);
        else if (a.gk.p)
            stage_tile<float, SC>((float *)(b + ST_G), SK32, SKB, a.gk, a, s, h, ch * SC, i0, nk);
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
            S[0][nt][e] = !REV && i < nk && j < nv ? rec_ld(a.c.h0, n, h, i0 + i, c0 + j) : 0.0f;
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
    uint16_t *Kt = (uint16_t *)(sm + ST_KT), *Ktl = (uint16_t *)(sm + ST_KTL);
    float *EA = (float *)(sm + ST_EA);
    const float qs = REV ? a.c.scale : 1.0f;
    if (nch > 0) stage(0, REV ? nch - 1 : 0);
    for (int64_t it = 0; it < nch; it++) {
        const int64_t ch = REV ? nch - 1 - it : it;
        const int64_t slot = (split_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        if (nk == SKB && nv == SVB) { /* a whole tile: two row pointers, the fragments at fixed offsets from them */
            const int64_t at = slot + (i0 + r0 + g) * vpitch + c0 + j0 + 2 * tq; /* even, as vpitch is */
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e += 2) {
                    const int64_t x = at + 8 * (e >> 1) * vpitch + 8 * nt;
                    if (BWD)
                        *(float2 *)((float *)store + x) = make_float2(S[0][nt][e], S[0][nt][e + 1]);
                    else
                        *(uint32_t *)((uint16_t *)store + x) = ladder_pack2_float<T>(S[0][nt][e], S[0][nt][e + 1]);
                }
        } else put([&](int64_t i, int64_t j, float x0, float x1, bool pair) { /* vpitch is even: 4- or 8-byte pairs */
            if (BWD) {
                float *out = (float *)store + slot + i * vpitch + j;
                if (pair)
                    *(float2 *)out = make_float2(x0, x1);
                else
                    out[0] = x0;
            } else {
                uint16_t *out = (uint16_t *)store + slot + i * vpitch + j;
                if (pair)
                    *(uint32_t *)out = ladder_pack2_float<T>(x0, x1);
                else
                    out[0] = ladder_from_float<T>(x0);
            }
        });
        const unsigned char *b = sm + (it & 1) * ST_BUF;
        if (it + 1 < nch) {
            stage((it + 1) & 1, REV ? ch - 1 : ch + 1);
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
        /* Kt = k ⊙ exp(A_63 - A_s), or (ST_DH) scale q ⊙ exp(A_s); hi + lo in the backward */
        for (int id = threadIdx.x; id < SC * SKB / 2; id += blockDim.x) {
            const int r = id / (SKB / 2), i = id % (SKB / 2) * 2;
            const uint32_t k2 = ladder_lds32(k + r * SK16 + i);
            const float2 Ar = *(const float2 *)(A + r * SK32 + i);
            const float x0 = qs * ladder_to_float<T>(k2 & 0xffff) * __expf(REV ? Ar.x : Ac[i] - Ar.x);
            const float x1 = qs * ladder_to_float<T>(k2 >> 16) * __expf(REV ? Ar.y : Ac[i + 1] - Ar.y);
            if (BWD) {
                const uint2 x = split2<T>(x0, x1);
                *(uint32_t *)(Kt + r * SK16 + i) = x.x, *(uint32_t *)(Ktl + r * SK16 + i) = x.y;
            } else {
                *(uint32_t *)(Kt + r * SK16 + i) = ladder_pack2_float<T>(x0, x1);
            }
        }
        for (int i = threadIdx.x; i < SKB; i += blockDim.x) EA[i] = expf(Ac[i]);
        __syncthreads();
#pragma unroll
        for (int nt = 0; nt < SVB / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) S[0][nt][e] *= EA[r0 + g + 8 * (e >> 1)];
        const uint16_t *v = (const uint16_t *)(b + ST_V) + j0;
        if (BWD) /* hi and lo 16 steps at a time: two whole products in a row spilled */
#pragma unroll 1
            for (int kk = 0; kk < SC; kk += 16) {
                ladder_mma_warp_tile<T, 1, 8, 1, true, true>(S, Kt + kk * SK16 + r0, SK16, v + kk * SV16, SV16, lane);
                ladder_mma_warp_tile<T, 1, 8, 1, true, true>(S, Ktl + kk * SK16 + r0, SK16, v + kk * SV16, SV16, lane);
            }
        else
            ladder_mma_warp_tile<T, 1, 8, SC / 16, true, true>(S, Kt + r0, SK16, v, SV16, lane);
        __syncthreads(); /* every warp is done with this buffer, Kt and EA before they are refilled */
    }
    float *last = REV ? a.c.dh0 : a.ht;
    if (last)
        put([&](int64_t i, int64_t j, float x0, float x1, bool pair) {
            float *out = last + ((n * a.c.H + h) * K + i) * V + j;
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
template <class T>
__global__ void __launch_bounds__(256, 2) out_kernel(tc_call a, const uint16_t *store, int64_t vpitch) {
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
            diag_pairs<T, SKB>(pd, q, k, SK16, A, SK32, a.gk.p != nullptr, tl, ul); /* P's diagonal sub-blocks */
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
        for (int d = 0; d < 4; d++) { /* diagonal sub-blocks: P_tt, zeros above, the entries below by their holder */
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


} // namespace

namespace rec_tc {

/* states_kernel's grid: (sequence x head, SVB columns, SKB rows). */
static dim3 states_grid(const rec_call &c) {
    return dim3((unsigned)(c.N * c.H), (unsigned)((c.V + SVB - 1) / SVB), (unsigned)((c.K + SKB - 1) / SKB));
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
    LADDER_TRY(ladder_allow_smem(states_kernel<T, ST_FWD>, ST_TOTAL));
    LADDER_TRY(ladder_allow_smem(out_kernel<T>, OT_TOTAL));
    states_kernel<T, ST_FWD><<<states_grid(c), ST_THREADS, ST_TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("states_kernel");
    const int64_t chunks = min(max((c.T + SC - 1) / SC, (int64_t)1), (int64_t)65535);
    const dim3 og((unsigned)(c.N * c.H), (unsigned)((c.V + OVB - 1) / OVB), (unsigned)chunks);
    out_kernel<T><<<og, 256, OT_TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("out_kernel");
    return LADDER_OK;
}

template ladder_status split_fwd<__nv_bfloat16>(const tc_call &a);
template ladder_status split_fwd<__half>(const tc_call &a);

ladder_status split_bwd_states(const tc_call &a, states_mode mode, float *store, int64_t vpitch) {
    const auto kernel = mode == ST_DH ? states_kernel<__nv_bfloat16, ST_DH> : states_kernel<__nv_bfloat16, ST_S>;
    LADDER_TRY(ladder_allow_smem(kernel, ST_TOTAL_BWD));
    kernel<<<states_grid(a.c), ST_THREADS, ST_TOTAL_BWD>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK(mode == ST_DH ? "states_kernel (dH)" : "states_kernel (S)");
    return LADDER_OK;
}

} // namespace rec_tc
