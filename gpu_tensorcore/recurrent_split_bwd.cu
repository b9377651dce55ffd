/*
 * gpu_tensorcore/recurrent_split_bwd.cu: the tensor-core rung's backward without gv, bf16 inputs, split like the
 * forward (idea 9 of recurrent.cu's opening comment; chapter 2).
 *
 * The backward's two sweeps (sweep_kernel, reverse_kernel) are chains of T/16 links whose blocks fill an SM's
 * registers, so nothing hides their latency. Here
 * states_kernel (recurrent_split.cu) carries the state S forwards and dH = dL/dS backwards, 64 steps a link,
 * and stores both at every chunk of SC = 64 steps, in fp32 (the gate sums need about 16 bits of dq and dk:
 * chapter 2, "What the rounding costs"). Then every chunk's outputs run as independent blocks, its state
 * parts, its pairs between 16-step sub-chunks and those inside them (diag_kernel's work on the sweeps' path):
 *
 *   rows_kernel: dq_t = scale (exp(A_t) ⊙ (S_c do_t) + sum_{s < t} D_ts k_s ⊙ exp(A_t - A_s)),
 *                dk_s = exp(A_63 - A_s) ⊙ (dH_c v_s) + scale sum_{t > s} D_ts q_t ⊙ exp(A_t - A_s),
 *                D_ts = do_t . v_s (without gv no column weight). For s and t in different sub-chunks the weight
 *                factors around a sub-chunk's edge b, exp(A_t - A_b) exp(A_b - A_s), each at most 1, and the
 *                sums over s (over t) are products on the mma, with D and the decayed k (q) as hi + lo pairs;
 *                so do those across the two 8-step halves of a sub-chunk, around the first half's last step;
 *                inside a half they are summed in fp32 with exp(A_t - A_s) per pair and channel.
 *   cols_kernel: dv_s = (k_s ⊙ exp(A_63 - A_s)) dH_c + scale sum_{t > s} P_ts do_t, P as out_kernel forms it
 *                (rounded once: dv feeds no gate sum without gv), 128 columns of dv a block so that P is formed
 *                once for V <= 128.
 * S_c is the state at chunk c's start, dH_c the gradient of the state at its end, A the cumulative row gates
 * from the chunk's start. Each step's own term (D_tt, P_tt) stays apart, for the gate sums (bwd()): the blocks
 * write partial 0 of dq_part, dk_part, vdo_part and dv32, ptt (tc_call), whole, for the finish and gate kernels.
 * Folding diag_kernel in took it and the 1.6 GB of fp32 parts it wrote and these kernels read back (at the
 * benchmark shape) off the backward's path. Both
 * kernels are bound by instruction issue, not memory: their exponentials are ex2 alone (ladder_exp_ftz,
 * common/fast_exp.cuh), and the pairs left to fp32 are those inside 8-step halves.
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

using T = __nv_bfloat16; /* the split backward's inputs and mma operands */

constexpr int BC = 64;                  /* channels per tile: K rows of a rows_kernel block, V columns of cols */
constexpr int P16 = BC + 8, P32 = BC + 4; /* padded row pitches (elements) of 16-bit and fp32 tiles */
constexpr int TILE = SC * P16 * 2;      /* bytes of one 64 x 64 16-bit tile */
constexpr int KR = 96;                  /* rows of the factored operands: 16 + 32 + 48 steps (pair_rows()) */

/* rows_kernel's shared memory (bytes): A, g, R, v . do, D's diagonal sub-blocks (fp32), q, k, D (hi, lo); then the V
 * loop's do, v, S, dH (hi, lo), over which the pair operands Kr and Qd (hi, lo) are built once the loop is done. */
constexpr int DP = 17; /* row pitch of the diagonal sub-blocks [t][s - 16 (t / 16)] (floats) */
constexpr int RW_A = 0, RW_GS = RW_A + SC * P32 * 4, RW_R = RW_GS + SC * 4, RW_PT = RW_R + SC * 8;
constexpr int RW_DD = RW_PT + SC * 4, RW_Q = RW_DD + SC * DP * 4;
constexpr int RW_K = RW_Q + TILE, RW_D = RW_K + TILE, RW_X = RW_D + 2 * TILE;
constexpr int RW_TOTAL = RW_X + (6 * TILE > 4 * KR * P16 * 2 ? 6 * TILE : 4 * KR * P16 * 2);
/* cols_kernel's: A, g, R, q . k, q, k, do, dH (hi, lo), Kt (hi, lo), Qi, Kr, P; do and dH CV columns wide. */
constexpr int CV = 2 * BC;              /* dv columns of a cols_kernel block */
constexpr int P16V = CV + 8, TILEV = SC * P16V * 2;
constexpr int CL_A = 0, CL_GS = CL_A + SC * P32 * 4, CL_R = CL_GS + SC * 4, CL_PT = CL_R + SC * 8;
constexpr int CL_Q = CL_PT + SC * 4;
constexpr int CL_K = CL_Q + TILE, CL_DO = CL_K + TILE, CL_H = CL_DO + TILEV, CL_KT = CL_H + 2 * TILEV;
constexpr int CL_QI = CL_KT + 2 * TILE, CL_KR = CL_QI + TILE, CL_P = CL_KR + KR * P16 * 2, CL_TOTAL = CL_P + TILE;

/*
 * Row r of the 96-row operand whose sections serve sub-chunks 1, 2, 3 (16, 32 and 48 rows: the steps of the
 * sub-chunks before them, as out_kernel's Kr): its sub-chunk and step. Kr_s = k_s exp(A_b - A_s), b = 16 sub - 1.
 */
__device__ __forceinline__ int2 pair_rows(int r) {
    const int sub = r < 16 ? 1 : r < 48 ? 2 : 3;
    return make_int2(sub, r - 8 * sub * (sub - 1));
}

/*
 * Sub-chunks 0, 1, 2 in reverse: section sub (48, 32, 16 rows) holds the steps after sub-chunk sub, from
 * 16 (sub + 1); row off(sub) + x is step 16 (sub + 1) + x. Qd_t = q_t exp(A_t - A_b), b = 16 sub + 15.
 */
__host__ __device__ constexpr int later_off(int sub) { return 48 * sub - 8 * sub * (sub - 1); }

constexpr int THREADS = 256, CTHREADS = 512; /* rows_kernel's 8 warps, cols_kernel's 16 */
constexpr int PAIRS = BC * BC / 2 / THREADS; /* pairs of state elements a thread loads per tile: 64 x 64 of 256 */
static_assert(BC * CV / 2 / CTHREADS == PAIRS, "cols_kernel's 64 x 128 state tiles take as many pairs a thread");

/*
 * fp32 state rows r0.. (nr of them) and columns c0.. (nc; W of them in the tile, NT threads) into registers,
 * zeros past the ends (the store holds nothing there). Every load of the tile goes out before the first is used
 * (state_split): one load at a time, each split and stored before the next, left rows_kernel waiting on memory
 * (long-scoreboard stalls, in Nsight Compute).
 */
template <int W, int NT>
__device__ __forceinline__ void state_load(float2 (&x)[PAIRS], const float *st, int64_t vpitch, int64_t r0,
                                           int64_t nr, int64_t c0, int64_t nc) {
    constexpr int RS = NT / (W / 2); /* rows between a thread's pairs; its column stays */
    const int rt = threadIdx.x / (W / 2), c = threadIdx.x % (W / 2) * 2;
    const float *p = st + (r0 + rt) * vpitch + c0 + c; /* one address, then a row step a pair */
#pragma unroll
    for (int u = 0; u < PAIRS; u++) {
        x[u] = rt + u * RS < nr && c < nc ? __ldg((const float2 *)(p + u * RS * vpitch)) /* even: aligned */
                                          : make_float2(0.0f, 0.0f);
        if (c + 1 >= nc) x[u].y = 0.0f;
    }
}

/* The loaded pairs as hi + lo bf16 tiles [row][col] (pitch W + 8). */
template <int W, int NT>
__device__ __forceinline__ void state_split(uint16_t *hi, uint16_t *lo, const float2 (&x)[PAIRS]) {
#pragma unroll
    for (int u = 0; u < PAIRS; u++) {
        const int id = threadIdx.x + u * NT, r = id / (W / 2), c = id % (W / 2) * 2;
        const uint2 y = split2<T>(x[u].x, x[u].y);
        *(uint32_t *)(hi + r * (W + 8) + c) = y.x, *(uint32_t *)(lo + r * (W + 8) + c) = y.y;
    }
}

/* The chunk's q, k (channels i0.., nk of them), gk, g and each step's row R; one cp.async group. */
__device__ __forceinline__ void stage_rows(unsigned char *sm, int a_off, int gs_off, int r_off, int q_off, int k_off,
                                           const tc_call &a, const rec_seq &s, int64_t h, int64_t step0, int64_t i0,
                                           int64_t nk) {
    stage_tile<uint16_t, SC>((uint16_t *)(sm + q_off), P16, BC, a.q, a, s, h, step0, i0, nk);
    stage_tile<uint16_t, SC>((uint16_t *)(sm + k_off), P16, BC, a.k, a, s, h, step0, i0, nk);
    if (a.gk.p) stage_tile<float, SC>((float *)(sm + a_off), P32, BC, a.gk, a, s, h, step0, i0, nk);
    if (threadIdx.x < SC) {
        const int64_t t = token_of(a, s, step0 + threadIdx.x), row = t >= 0 ? rec_row(a.c, s.b, t, h) : -1;
        ((float *)(sm + gs_off))[threadIdx.x] = t >= 0 ? rec_ld(a.c.g, s.b, t, h, 0) : 0.0f;
        ((int64_t *)(sm + r_off))[threadIdx.x] = row;
    }
    ladder_cp_async_commit();
}

/*
 * One block per (sequence x head, BC rows i of dq and dk, chunk of SC steps), chunks striding by gridDim.z; 8
 * warps, warp w holding steps 16 (w & 3).. (its sub-chunk) and rows 32 (w >> 2).. of dq and dk. The V columns
 * come BC at a time: each tile adds to the state parts and to D, whose 6 off-diagonal 16 x 16 sub-blocks
 * (warps 0..5, one each) and 4 diagonal ones (warps 6 and 7, two each) stay in fragments until the last tile.
 */
__global__ void __launch_bounds__(THREADS, 2)
    rows_kernel(tc_call a, const float *Sst, const float *Hst, int64_t vpitch, uint16_t *dq, uint16_t *dk) {
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, i0 = blockIdx.y * BC;
    const int64_t K = a.c.K, V = a.c.V, nk = min((int64_t)BC, K - i0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0), scale = a.c.scale;
    float *A = (float *)(sm + RW_A), *PT = (float *)(sm + RW_PT), *DD = (float *)(sm + RW_DD);
    const int64_t *R = (const int64_t *)(sm + RW_R);
    uint16_t *q = (uint16_t *)(sm + RW_Q), *k = (uint16_t *)(sm + RW_K);
    uint16_t *Dh = (uint16_t *)(sm + RW_D), *Dl = Dh + SC * P16;
    uint16_t *dO = (uint16_t *)(sm + RW_X), *v = dO + SC * P16, *Sh = v + SC * P16, *Sl = Sh + SC * P16;
    uint16_t *Hh = Sl + SC * P16, *Hl = Hh + SC * P16;
    uint16_t *Krh = (uint16_t *)(sm + RW_X), *Krl = Krh + KR * P16, *Qdh = Krl + KR * P16, *Qdl = Qdh + KR * P16;
    uint16_t *KQh = (uint16_t *)(sm + RW_X), *KQl = KQh + SC * P16;
    const int sub = warp & 3, cw = 32 * (warp >> 2); /* the warp's sub-chunk and first row of the tile */
    /* warp w < 6 owns D's sub-block (di, dj), di > dj; warps 6 and 7 the diagonal ones di = dj and di + 1 */
    const int di = warp < 1 ? 1 : warp < 3 ? 2 : warp < 6 ? 3 : 2 * (warp - 6);
    const int dj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp < 6 ? warp - 3 : di;
    /* zeros in D's diagonal sub-blocks, once: each chunk writes only their lower left quarters there (below) */
    for (int id = threadIdx.x; id < 4 * 16 * 16; id += blockDim.x) {
        const int qs = id / 256, r = 16 * qs + id / 16 % 16, c = 16 * qs + id % 16;
        Dh[r * P16 + c] = 0, Dl[r * P16 + c] = 0;
    }
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC, at = (split_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        stage_rows(sm, RW_A, RW_GS, RW_R, RW_Q, RW_K, a, s, h, step0, i0, nk);
        float accSq[1][4][4] = {}, accSk[1][4][4] = {}, accD[1][2][4] = {}, accE[1][2][4] = {};
        for (int64_t j0 = 0; j0 < V; j0 += BC) {
            const int64_t nv = min((int64_t)BC, V - j0);
            stage_tile<uint16_t, SC>(dO, P16, BC, a.dO, a, s, h, step0, j0, nv);
            stage_tile<uint16_t, SC>(v, P16, BC, a.v, a, s, h, step0, j0, nv);
            ladder_cp_async_commit();
            float2 xs[PAIRS], xh[PAIRS];
            state_load<BC, THREADS>(xs, Sst + at, vpitch, i0, nk, j0, nv);
            state_load<BC, THREADS>(xh, Hst + at, vpitch, i0, nk, j0, nv);
            state_split<BC, THREADS>(Sh, Sl, xs);
            state_split<BC, THREADS>(Hh, Hl, xh);
            ladder_cp_async_wait_group<0>();
            __syncthreads();
            /* dq's state part do S^T, dk's v dH^T: S and dH as hi + lo, do and v exact in bf16 */
            const uint16_t *X = dO + 16 * sub * P16, *Y = v + 16 * sub * P16;
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, false>(accSq, X, P16, Sh + cw * P16, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, false>(accSq, X, P16, Sl + cw * P16, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, false>(accSk, Y, P16, Hh + cw * P16, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, false>(accSk, Y, P16, Hl + cw * P16, P16, lane);
            /* D_ts = do_t . v_s: products of bf16 inputs, exact in the fp32 accumulator */
            ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(accD, dO + 16 * di * P16, P16, v + 16 * dj * P16,
                                                                 P16, lane);
            if (warp >= 6)
                ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(accE, dO + 16 * (di + 1) * P16, P16,
                                                                     v + 16 * (di + 1) * P16, P16, lane);
            __syncthreads(); /* the tiles are done with before the next columns (or Kr, Qd) are written over them */
        }
        cumsum<SC>(A, P32, BC, a.gk.p, (const float *)(sm + RW_GS), gamma, rows);
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int tl = g + 8 * (e >> 1), ul = 8 * nt + 2 * tq;
                if (warp < 6) { /* D's off-diagonal sub-block, times the scale every pair carries, hi + lo, [t][s] */
                    const int t = 16 * di + tl, u = 16 * dj + ul;
                    const uint2 x = split2<T>(scale * accD[0][nt][e], scale * accD[0][nt][e + 1]);
                    *(uint32_t *)(Dh + t * P16 + u) = x.x, *(uint32_t *)(Dl + t * P16 + u) = x.y;
                    continue;
                }
                /* the diagonal ones in fp32, scaled, without each step's own term, which goes to PT (v_t . do_t) */
#pragma unroll
                for (int m = 0; m < 2; m++) {
                    const float *x = m ? accE[0][nt] : accD[0][nt];
                    const int t = 16 * (di + m) + tl;
#pragma unroll
                    for (int o = 0; o < 2; o++) {
                        DD[t * DP + ul + o] = ul + o == tl ? 0.0f : scale * x[e + o];
                        if (ul + o == tl) PT[t] = x[e + o];
                    }
                }
            }
        __syncthreads(); /* A, D and PT are in place before the operands and the pairs read them */
        if (!dq && blockIdx.y == 0 && threadIdx.x < rows) /* for finish_rows_kernel: partial 0 of vdo_part */
            a.vdo_part[R[threadIdx.x]] = PT[threadIdx.x];
        { /* the lower left 8 x 8 quarters of D's diagonal sub-blocks (t in the second half of the sub-chunk, s in
           * the first), hi + lo, into D's tiles, for the pairs across the halves (KQ below); one entry a thread */
            const int qs = threadIdx.x / 64, t = 16 * qs + 8 + threadIdx.x / 8 % 8, u = 16 * qs + threadIdx.x % 8;
            const float x = DD[t * DP + u - 16 * qs];
            const uint16_t hi = ladder_from_float<T>(x);
            Dh[t * P16 + u] = hi, Dl[t * P16 + u] = ladder_from_float<T>(x - ladder_to_float<T>(hi));
        }
        /* Kr_s = k_s exp(A_b - A_s) (b = 16 sub - 1, the step before the queries' sub-chunk) and
         * Qd_t = q_t exp(A_t - A_b) (b = 16 sub + 15, the keys' sub-chunk's last step), hi + lo */
        for (int id = threadIdx.x; id < KR * BC / 2; id += blockDim.x) {
            const int r = id / (BC / 2), i = id % (BC / 2) * 2;
            const int2 kr = pair_rows(r);
            const int ks = kr.y, kb = 16 * kr.x - 1;
            const int qsub = r < later_off(1) ? 0 : r < later_off(2) ? 1 : 2;
            const int qt = r - later_off(qsub) + 16 * (qsub + 1), qb = 16 * qsub + 15;
            const uint32_t k2 = ladder_lds32(k + ks * P16 + i), q2 = ladder_lds32(q + qt * P16 + i);
            const float2 As = *(const float2 *)(A + ks * P32 + i), Akb = *(const float2 *)(A + kb * P32 + i);
            const float2 At = *(const float2 *)(A + qt * P32 + i), Aqb = *(const float2 *)(A + qb * P32 + i);
            const uint2 x = split2<T>(ladder_to_float<T>(k2 & 0xffff) * ladder_exp_ftz(Akb.x - As.x),
                                      ladder_to_float<T>(k2 >> 16) * ladder_exp_ftz(Akb.y - As.y));
            const uint2 y = split2<T>(ladder_to_float<T>(q2 & 0xffff) * ladder_exp_ftz(At.x - Aqb.x),
                                      ladder_to_float<T>(q2 >> 16) * ladder_exp_ftz(At.y - Aqb.y));
            *(uint32_t *)(Krh + r * P16 + i) = x.x, *(uint32_t *)(Krl + r * P16 + i) = x.y;
            *(uint32_t *)(Qdh + r * P16 + i) = y.x, *(uint32_t *)(Qdl + r * P16 + i) = y.y;
        }
        /* The state parts, brought to the edges b that the pairs factor around, so that the pairs add into the
         * same registers: dq_t = exp(A_t - A_b) (scale exp(A_b) (S do)_t + pairs), b = 16 sub - 1 (A_b = 0 for
         * sub-chunk 0); dk_s = exp(A_b - A_s) (exp(A_63 - A_b) (dH v)_s + pairs), b = 16 sub + 15. */
        const int bq = 16 * sub - 1, bk = 16 * sub + 15;
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = cw + 8 * nt + 2 * tq + (e & 1);
                accSq[0][nt][e] *= scale * (sub > 0 ? ladder_exp_ftz(A[bq * P32 + i]) : 1.0f);
                accSk[0][nt][e] *= ladder_exp_ftz(A[(SC - 1) * P32 + i] - A[bk * P32 + i]);
            }
        __syncthreads();
        for (int kk = 0; kk < sub; kk++) { /* dq: D's row blocks of the warp's sub-chunk, times Kr */
            const uint16_t *Ah = Dh + 16 * sub * P16 + 16 * kk, *Al = Dl + 16 * sub * P16 + 16 * kk;
            const int kr = (8 * sub * (sub - 1) + 16 * kk) * P16 + cw;
            ladder_mma_warp_tile<T, 1, 4, 1, false, true>(accSq, Ah, P16, Krh + kr, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, 1, false, true>(accSq, Ah, P16, Krl + kr, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, 1, false, true>(accSq, Al, P16, Krh + kr, P16, lane);
        }
        for (int kk = sub + 1; kk < 4; kk++) { /* dk: D's column blocks of the warp's sub-chunk (D^T), times Qd */
            const uint16_t *Ah = Dh + 16 * kk * P16 + 16 * sub, *Al = Dl + 16 * kk * P16 + 16 * sub;
            const int qd = (later_off(sub) + 16 * (kk - sub - 1)) * P16 + cw;
            ladder_mma_warp_tile<T, 1, 4, 1, true, true>(accSk, Ah, P16, Qdh + qd, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, 1, true, true>(accSk, Ah, P16, Qdl + qd, P16, lane);
            ladder_mma_warp_tile<T, 1, 4, 1, true, true>(accSk, Al, P16, Qdh + qd, P16, lane);
        }
        __syncthreads(); /* Kr and Qd are done with before KQ is written over them */
        /* The pairs across the halves of a sub-chunk (s in steps 0..7 of it, t in 8..15) factor around the first
         * half's last step m = 16 sub + 7 as the pairs across sub-chunks do, with one operand KQ (hi + lo):
         * KQ_s = k_s exp(A_m - A_s) in a first half, KQ_t = q_t exp(A_t - A_m) in a second. D's quarter is zero
         * where a product would take the other half's rows. */
#pragma unroll 2
        for (int id = threadIdx.x; id < SC * BC / 2; id += blockDim.x) {
            const int r = id / (BC / 2), i = id % (BC / 2) * 2, m = (r | 15) - 8;
            const bool first = (r & 15) < 8;
            const uint32_t x2 = ladder_lds32((first ? k : q) + r * P16 + i);
            const float2 Ar = *(const float2 *)(A + r * P32 + i), Am = *(const float2 *)(A + m * P32 + i);
            const float sl = first ? LADDER_LOG2E : -LADDER_LOG2E; /* the exponent A_m - A_s, or A_t - A_m */
            const uint2 z = split2<T>(ladder_to_float<T>(x2 & 0xffff) * ladder_ex2_ftz(sl * (Am.x - Ar.x)),
                                      ladder_to_float<T>(x2 >> 16) * ladder_ex2_ftz(sl * (Am.y - Ar.y)));
            *(uint32_t *)(KQh + r * P16 + i) = z.x, *(uint32_t *)(KQl + r * P16 + i) = z.y;
        }
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int t = 16 * sub + g + 8 * (e >> 1), i = cw + 8 * nt + 2 * tq + (e & 1);
                const float At = A[t * P32 + i];
                accSq[0][nt][e] *= ladder_exp_ftz(At - (sub > 0 ? A[bq * P32 + i] : 0.0f));
                accSk[0][nt][e] *= ladder_exp_ftz(A[bk * P32 + i] - At);
            }
        __syncthreads();
        /* The pairs inside each half of the warp's sub-chunk, in fp32 with exp(A_t - A_s) per pair and channel
         * (diag_kernel's work, as out_kernel does P's diagonal sub-blocks): each entry (t, i) of the fragments walks
         * the half's other steps u, a term of dq_t when u < t (D_tu k_u), of dk_t when u > t (D_ut q_u), each
         * factor at most 1 for gates <= 0. Without gk one exponential a pair serves every channel. The term goes
         * to dq or dk by its weight (wq or wk zero), two fused multiply-adds rather than selects and adds. */
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int tl = g + 8 * hf, t = 16 * sub + tl;
            float2 At[4];
#pragma unroll
            for (int nt = 0; nt < 4; nt++) At[nt] = *(const float2 *)(A + t * P32 + cw + 8 * nt + 2 * tq);
#pragma unroll 4
            for (int ul = 8 * hf; ul < 8 * hf + 8; ul++) {
                const int u = 16 * sub + ul;
                const bool before = ul < tl;
                const float d = DD[(before ? t : u) * DP + (before ? ul : tl)]; /* 0 at u = t */
                /* log2 units, with the sign that makes the exponent A_t - A_u before t and A_u - A_t after it */
                const float sl = before ? LADDER_LOG2E : -LADDER_LOG2E;
                float wq = before ? d : 0.0f, wk = before ? 0.0f : d;
                if (!a.gk.p) {
                    const float e = ladder_ex2_ftz(sl * (A[t * P32] - A[u * P32]));
                    wq *= e, wk *= e;
                }
                const uint16_t *x = (before ? k : q) + u * P16 + cw + 2 * tq;
#pragma unroll
                for (int nt = 0; nt < 4; nt++) {
                    const uint32_t x2 = ladder_lds32(x + 8 * nt);
                    float y0 = ladder_to_float<T>(x2 & 0xffff), y1 = ladder_to_float<T>(x2 >> 16);
                    if (a.gk.p) {
                        const float2 Au = *(const float2 *)(A + u * P32 + cw + 8 * nt + 2 * tq);
                        y0 *= ladder_ex2_ftz(sl * (At[nt].x - Au.x)), y1 *= ladder_ex2_ftz(sl * (At[nt].y - Au.y));
                    }
                    accSq[0][nt][2 * hf] = fmaf(wq, y0, accSq[0][nt][2 * hf]);
                    accSq[0][nt][2 * hf + 1] = fmaf(wq, y1, accSq[0][nt][2 * hf + 1]);
                    accSk[0][nt][2 * hf] = fmaf(wk, y0, accSk[0][nt][2 * hf]);
                    accSk[0][nt][2 * hf + 1] = fmaf(wk, y1, accSk[0][nt][2 * hf + 1]);
                }
            }
        }
        /* the pairs across the halves: D's quarter times KQ (dq, second-half rows), its transpose times KQ (dk,
         * first-half rows), then brought from m to each step by exp(A_t - A_m), exp(A_m - A_s); 16 channels at a
         * time (the registers of the 32 would spill) */
        const uint16_t *Dqh = Dh + 16 * sub * P16 + 16 * sub, *Dql = Dl + 16 * sub * P16 + 16 * sub;
        const int hm = 16 * sub + 7; /* m */
#pragma unroll
        for (int np = 0; np < 4; np += 2) {
            const int at = 16 * sub * P16 + cw + 8 * np;
            float x[1][2][4] = {};
            ladder_mma_warp_tile<T, 1, 2, 1, false, true>(x, Dqh, P16, KQh + at, P16, lane);
            ladder_mma_warp_tile<T, 1, 2, 1, false, true>(x, Dqh, P16, KQl + at, P16, lane);
            ladder_mma_warp_tile<T, 1, 2, 1, false, true>(x, Dql, P16, KQh + at, P16, lane);
#pragma unroll
            for (int o = 0; o < 2; o++) {
                const int i = cw + 8 * (np + o) + 2 * tq;
                const float2 Am = *(const float2 *)(A + hm * P32 + i);
                const float2 At = *(const float2 *)(A + (hm + 1 + g) * P32 + i);
                accSq[0][np + o][2] += x[0][o][2] * ladder_exp_ftz(At.x - Am.x);
                accSq[0][np + o][3] += x[0][o][3] * ladder_exp_ftz(At.y - Am.y);
            }
            float y[1][2][4] = {};
            ladder_mma_warp_tile<T, 1, 2, 1, true, true>(y, Dqh, P16, KQh + at, P16, lane);
            ladder_mma_warp_tile<T, 1, 2, 1, true, true>(y, Dqh, P16, KQl + at, P16, lane);
            ladder_mma_warp_tile<T, 1, 2, 1, true, true>(y, Dql, P16, KQh + at, P16, lane);
#pragma unroll
            for (int o = 0; o < 2; o++) {
                const int i = cw + 8 * (np + o) + 2 * tq;
                const float2 Am = *(const float2 *)(A + hm * P32 + i);
                const float2 As = *(const float2 *)(A + (hm - 7 + g) * P32 + i);
                accSk[0][np + o][0] += y[0][o][0] * ladder_exp_ftz(Am.x - As.x);
                accSk[0][np + o][1] += y[0][o][1] * ladder_exp_ftz(Am.y - As.y);
            }
        }
        /* dq_part, dk_part (partial 0, whole: no diag_kernel on this path) and dq, dk, from one row address each */
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int t = 16 * sub + g + 8 * hf;
            if (t >= rows) continue;
            const int64_t row = R[t] * K + i0;
            float *pq = a.dq_part + row, *pk = a.dk_part + row;
            const float vd = scale * PT[t];
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
#pragma unroll
                for (int o = 0; o < 2; o++) {
                    const int i = cw + 8 * nt + 2 * tq + o;
                    if (i >= (int)nk) continue;
                    const float xq = accSq[0][nt][2 * hf + o], xk = accSk[0][nt][2 * hf + o];
                    pq[i] = xq, pk[i] = xk; /* for the gate sums */
                    if (dq) { /* finish_rows_kernel's work: the diagonal term, scale k (v . do) and scale q (v . do) */
                        dq[row + i] = ladder_from_float<T>(xq + ladder_to_float<T>(k[t * P16 + i]) * vd);
                        dk[row + i] = ladder_from_float<T>(xk + ladder_to_float<T>(q[t * P16 + i]) * vd);
                    }
                }
        }
        __syncthreads(); /* A, R, PT, q, k and D are done with before the next chunk is staged */
    }
}

/*
 * recurrent_tc.cuh's diag_pairs for cols_kernel's 512 threads, one entry a thread: thread (m, tl, ul) takes
 * (tl, ul) in sub-block 2 m when ul < tl, (ul, tl) in 2 m + 1 when ul > tl, over the BC channels of a tile, added
 * to pd; with ladder_exp_ftz and a fused multiply-add per channel (8 instructions a channel where __expf's guards
 * made 12).
 */
__device__ __forceinline__ void pair_diag(float &pd, const uint16_t *q, const uint16_t *k, const float *A, bool gk,
                                          int m, int tl, int ul) {
    if (tl != ul) {
        const int d = 2 * m + (ul > tl), t = 16 * d + max(tl, ul), u = 16 * d + min(tl, ul);
        float p = 0.0f; /* without gk the decay is the same in every channel: one exponential a pair */
        for (int i0c = 0; i0c < BC; i0c += 8) {
#pragma unroll
            for (int i = i0c; i < i0c + 8; i += 2) {
                const uint32_t q2 = ladder_lds32(q + t * P16 + i), k2 = ladder_lds32(k + u * P16 + i);
                const float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
                const float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
                if (gk) {
                    const float2 At = *(const float2 *)(A + t * P32 + i), Au = *(const float2 *)(A + u * P32 + i);
                    p = fmaf(x0, ladder_exp_ftz(At.x - Au.x), p), p = fmaf(x1, ladder_exp_ftz(At.y - Au.y), p);
                } else {
                    p += x0 + x1;
                }
            }
        }
        pd += gk ? p : p * ladder_exp_ftz(A[t * P32] - A[u * P32]);
    }
}

/*
 * One block per (sequence x head, CV = 128 columns j of dv, chunk of SC steps), chunks striding by gridDim.z; 16
 * warps, warp w holding steps 16 (w & 3).. and columns 32 (w >> 2).. of dv. The state rows come BC at a time: each
 * tile adds to the state part and to P, whose off-diagonal sub-blocks (warps 0..5) stay in fragments, the diagonal
 * sub-blocks' entries in registers (pair_diag(), as out_kernel), P_tt = q_t . k_t in shared memory (PT). P, and
 * the operands Kt, Qi, Kr it takes, serve every column of the block: with 64 columns a block (8 warps, two blocks
 * an SM) each of V / 64 blocks formed them all again.
 */
__global__ void __launch_bounds__(CTHREADS, 1) cols_kernel(tc_call a, const float *Hst, int64_t vpitch, uint16_t *dv) {
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * CV;
    const int64_t K = a.c.K, V = a.c.V, nv = min((int64_t)CV, V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    float *A = (float *)(sm + CL_A);
    const int64_t *R = (const int64_t *)(sm + CL_R);
    uint16_t *q = (uint16_t *)(sm + CL_Q), *k = (uint16_t *)(sm + CL_K), *dO = (uint16_t *)(sm + CL_DO);
    uint16_t *Hh = (uint16_t *)(sm + CL_H), *Hl = Hh + SC * P16V;
    uint16_t *Kth = (uint16_t *)(sm + CL_KT), *Ktl = Kth + SC * P16;
    uint16_t *Qi = (uint16_t *)(sm + CL_QI), *Kr = (uint16_t *)(sm + CL_KR), *P = (uint16_t *)(sm + CL_P);
    float *PT = (float *)(sm + CL_PT);
    const int sub = warp & 3, cw = 32 * (warp >> 2);
    const int di = warp < 1 ? 1 : warp < 3 ? 2 : 3, dj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp - 3;
    /* the thread's entry in the diagonal sub-blocks (pair_diag()) */
    const int dm = threadIdx.x / 256, tl = threadIdx.x / 16 % 16, ul = threadIdx.x % 16;
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC, at = (split_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        stage_tile<uint16_t, SC>(dO, P16V, CV, a.dO, a, s, h, step0, c0, nv);
        if (threadIdx.x < SC) PT[threadIdx.x] = 0.0f;
        float accS[1][4][4] = {}, accP[1][4][4] = {}, pacc[1][2][4] = {}, pd = 0.0f;
        for (int64_t i0 = 0; i0 < K; i0 += BC) {
            const int64_t nk = min((int64_t)BC, K - i0);
            stage_rows(sm, CL_A, CL_GS, CL_R, CL_Q, CL_K, a, s, h, step0, i0, nk);
            float2 xh[PAIRS];
            state_load<CV, CTHREADS>(xh, Hst + at, vpitch, i0, nk, c0, nv);
            state_split<CV, CTHREADS>(Hh, Hl, xh);
            ladder_cp_async_wait_group<0>();
            __syncthreads();
            cumsum<SC>(A, P32, BC, a.gk.p, (const float *)(sm + CL_GS), gamma, rows);
            __syncthreads();
            /* Kt = k ⊙ exp(A_63 - A) (hi + lo); Qi_t = q_t exp(A_t - A_b), b = 16 (t / 16) - 1, for t >= 16; and
             * P_tt (no decay: exp(A_t - A_t) = 1), a warp per row */
            for (int id = threadIdx.x; id < SC * BC / 2; id += blockDim.x) {
                const int t = id / (BC / 2), i = id % (BC / 2) * 2;
                const float2 At = *(const float2 *)(A + t * P32 + i), Ac = *(const float2 *)(A + (SC - 1) * P32 + i);
                const uint32_t k2 = ladder_lds32(k + t * P16 + i), q2 = ladder_lds32(q + t * P16 + i);
                const uint2 x = split2<T>(ladder_to_float<T>(k2 & 0xffff) * ladder_exp_ftz(Ac.x - At.x),
                                          ladder_to_float<T>(k2 >> 16) * ladder_exp_ftz(Ac.y - At.y));
                *(uint32_t *)(Kth + t * P16 + i) = x.x, *(uint32_t *)(Ktl + t * P16 + i) = x.y;
                if (t >= 16) {
                    const float2 Ab = *(const float2 *)(A + (t / 16 * 16 - 1) * P32 + i);
                    *(uint32_t *)(Qi + t * P16 + i) =
                        ladder_pack2_float<T>(ladder_to_float<T>(q2 & 0xffff) * ladder_exp_ftz(At.x - Ab.x),
                                              ladder_to_float<T>(q2 >> 16) * ladder_exp_ftz(At.y - Ab.y));
                }
                float dot = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff) +
                            ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
                if (lane == 0) PT[t] += dot;
            }
            for (int id = threadIdx.x; id < KR * BC / 2; id += blockDim.x) { /* Kr, as rows_kernel's, rounded once */
                const int r = id / (BC / 2), i = id % (BC / 2) * 2;
                const int2 kr = pair_rows(r);
                const float2 As = *(const float2 *)(A + kr.y * P32 + i);
                const float2 Ab = *(const float2 *)(A + (16 * kr.x - 1) * P32 + i);
                const uint32_t k2 = ladder_lds32(k + kr.y * P16 + i);
                *(uint32_t *)(Kr + r * P16 + i) =
                    ladder_pack2_float<T>(ladder_to_float<T>(k2 & 0xffff) * ladder_exp_ftz(Ab.x - As.x),
                                          ladder_to_float<T>(k2 >> 16) * ladder_exp_ftz(Ab.y - As.y));
            }
            pair_diag(pd, q, k, A, a.gk.p != nullptr, dm, tl, ul); /* P's diagonal sub-blocks */
            __syncthreads();
            /* dv's state part Kt dH: three products of the split pairs */
            const uint16_t *Xh = Kth + 16 * sub * P16, *Xl = Ktl + 16 * sub * P16;
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, true>(accS, Xh, P16, Hh + cw, P16V, lane);
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, true>(accS, Xh, P16, Hl + cw, P16V, lane);
            ladder_mma_warp_tile<T, 1, 4, BC / 16, false, true>(accS, Xl, P16, Hh + cw, P16V, lane);
            if (warp < 6)
                ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(pacc, Qi + 16 * di * P16, P16,
                                                                     Kr + (8 * di * (di - 1) + 16 * dj) * P16, P16,
                                                                     lane);
            __syncthreads(); /* the tiles are done with before the next rows are staged over them */
        }
        if (warp < 6) /* P's sub-block (di, dj), rounded once, [t][s]; those above the diagonal are never read */
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e += 2) {
                    const int t = 16 * di + g + 8 * (e >> 1), u = 16 * dj + 8 * nt + 2 * tq;
                    *(uint32_t *)(P + t * P16 + u) = ladder_pack2_float<T>(pacc[0][nt][e], pacc[0][nt][e + 1]);
                }
#pragma unroll
        for (int d = 2 * dm; d < 2 * dm + 2; d++) { /* diagonal sub-blocks: the entries below by their holder, zeros
                                                     * on and above (P_tt stays apart, in PT, for the gate sums) */
            if (ul >= tl) P[(16 * d + tl) * P16 + 16 * d + ul] = 0;
            if (tl != ul && (d & 1) == (ul > tl))
                P[(16 * d + max(tl, ul)) * P16 + 16 * d + min(tl, ul)] = ladder_from_float<T>(pd);
        }
        __syncthreads();
        if (!dv && blockIdx.y == 0 && threadIdx.x < rows) a.ptt[R[threadIdx.x]] = PT[threadIdx.x]; /* for finish_cols */
        for (int kk = sub; kk < 4; kk++) /* dv_s += sum_t P_ts do_t over the later steps: P^T do */
            ladder_mma_warp_tile<T, 1, 4, 1, true, true>(accP, P + 16 * kk * P16 + 16 * sub, P16,
                                                         dO + 16 * kk * P16V + cw, P16V, lane);
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int t = 16 * sub + g + 8 * (e >> 1), j = cw + 8 * nt + 2 * tq + (e & 1);
                if (t >= rows || j >= (int)nv) continue;
                const int64_t at = R[t] * V + c0 + j;
                const float x = accS[0][nt][e] + a.c.scale * accP[0][nt][e]; /* dH carries the scale */
                if (dv) /* finish_cols_kernel's work: the diagonal term scale (q . k) do; no gate sum reads dv32 */
                    dv[at] = ladder_from_float<T>(x + a.c.scale * PT[t] * ladder_to_float<T>(dO[t * P16V + j]));
                else
                    a.dv32[at] = x;
            }
        __syncthreads(); /* do, R, PT and P are done with before the next chunk is staged */
    }
}

} // namespace

namespace rec_tc {

/*
 * The backward's state parts and pairs, without gv, bf16 inputs: states_kernel twice (S, dH),
 * then rows_kernel and cols_kernel, which with @p dq, @p dk, @p dv (not nullptr) also finish those outputs, as
 * finish_rows_kernel and finish_cols_kernel would (the caller's to decide: one column block, no dht). The states,
 * 2 N H (T/SC + 1) K V fp32 numbers (1.1 GB at the benchmark shape), are the price of the parallel blocks.
 */
ladder_status split_bwd(const tc_call &a, uint16_t *dq, uint16_t *dk, uint16_t *dv) {
    const rec_call &c = a.c;
    const int64_t vpitch = (c.V + 7) / 8 * 8, slots = c.B * c.T / SC + c.N + 1; /* split_slot() */
    const int64_t per = slots * c.H * c.K * vpitch;
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)(2 * per) * sizeof(float)));
    float *S = (float *)mem.ptr, *dH = S + per;
    LADDER_TRY(split_bwd_states(a, ST_S, S, vpitch));
    LADDER_TRY(split_bwd_states(a, ST_DH, dH, vpitch));
    LADDER_TRY(ladder_allow_smem(rows_kernel, RW_TOTAL));
    LADDER_TRY(ladder_allow_smem(cols_kernel, CL_TOTAL));
    const unsigned chunks = (unsigned)min(max((c.T + SC - 1) / SC, (int64_t)1), (int64_t)65535);
    const dim3 rg((unsigned)(c.N * c.H), (unsigned)((c.K + BC - 1) / BC), chunks);
    rows_kernel<<<rg, THREADS, RW_TOTAL>>>(a, S, dH, vpitch, dq, dk);
    LADDER_LAUNCH_CHECK("rows_kernel");
    const dim3 cg((unsigned)(c.N * c.H), (unsigned)((c.V + CV - 1) / CV), chunks);
    cols_kernel<<<cg, CTHREADS, CL_TOTAL>>>(a, dH, vpitch, dv);
    LADDER_LAUNCH_CHECK("cols_kernel");
    return LADDER_OK;
}

} // namespace rec_tc
