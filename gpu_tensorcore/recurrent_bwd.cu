/*
 * gpu_tensorcore/recurrent_bwd.cu: the backward's gradients (step 4 of recurrent.cu's opening comment): every chunk's
 * dq, dk and dv in parallel from the states S (at each chunk's start) and dH (the gradient at its end) that two
 * states passes stored in fp32,
 *
 *     dq_t = scale exp(A_t) ⊙ (S_c (do_t ⊙ exp(B_t)))            + scale sum_{s<=t} D_ts k_s ⊙ exp(A_t - A_s)
 *     dk_s = exp(A_63 - A_s) ⊙ (dH_c (v_s ⊙ exp(B_63 - B_s)))    + scale sum_{t>=s} D_ts q_t ⊙ exp(A_t - A_s)
 *     dv_s = exp(B_63 - B_s) ⊙ ((k_s ⊙ exp(A_63 - A_s)) dH_c)    + scale sum_{t>=s} P_ts do_t ⊙ exp(B_t - B_s)
 *     D_ts = sum_j do_t[j] v_s[j] exp(B_t[j] - B_s[j])           (without gv a plain do_t . v_s)
 *
 * rows_kernel takes dq and dk, cols_kernel dv. The state parts are products with the stored states, split in hi + lo
 * (the gate sums need about 16 bits of dq and dk). The pairs inside the chunk factor around sub-chunk edges as the
 * forward's do, and rows_kernel takes them in three kinds: between sub-chunks, a product of bounded operands (D
 * times Kr or Qd); across the two 8-step halves of a sub-chunk, the same around the first half's last step (D's
 * quarter times KQ); inside a half, summed in fp32 with exp(A_t - A_s) per pair and channel. Each step's own term
 * (the pair s = t) stays apart, for the gate sums, and joins only the outputs. With gv, D's column weight makes it
 * no product of the inputs: it is summed in fp32 per pair and column (d_columns()), and so are the pairs of dv
 * (column_pairs()). With dht the same kernels run first in their Z mode: the state parts alone, from the states of
 * dht's pass (ST_Z), into dkz and dvz, which the outputs then add.
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "fast_exp.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_tc.cuh"

namespace {

using namespace rec_tc;

constexpr int THREADS = 256, CTHREADS = 512; /* rows_kernel's 8 warps, cols_kernel's 16 */
constexpr int DP = SUB + 1;                  /* row pitch of D's diagonal sub-blocks [t][s - 16 (t / 16)] (floats) */
constexpr int PP = SC + 1;                   /* row pitch of an fp32 pair matrix (D or P) */
constexpr int TK = SC * P16 * 2;             /* bytes of a 64 x 64 16-bit tile */
constexpr int CV = 2 * BC, V16 = CV + 8, V32 = CV + 4, TV = SC * V16 * 2; /* cols_kernel's 128 columns of dv */

/*
 * rows_kernel's shared memory (bytes): A, g, R, v . do, D's diagonal sub-blocks (fp32), q, k, D (hi, lo); then the
 * region X: during the V loop do, v, S (hi, lo), dH (hi, lo), and with gv B and the operands do ⊙ exp(B),
 * v ⊙ exp(B_63 - B) (hi, lo); afterwards the pair operands Kr and Qd (hi, lo), then KQ (hi, lo). With gv, D in fp32.
 * Without gv two blocks share an SM.
 */
template <bool GV> struct rows_plan {
    static constexpr int A = 0, G = A + SC * P32 * 4, R = G + SC * 4, PT = R + SC * 8, DD = PT + SC * 4;
    static constexpr int Q = DD + SC * DP * 4, K = Q + TK, D = K + TK, X = D + 2 * TK;
    static constexpr int XB = X + 6 * TK, XO = XB + SC * P32 * 4, XEND = GV ? XO + 4 * TK : X + 6 * TK;
    static constexpr int XPAIRS = X + 4 * KR * P16 * 2;
    static constexpr int DACC = XEND > XPAIRS ? XEND : XPAIRS, TOTAL = DACC + (GV ? SC * PP * 4 : 0);
};

/* cols_kernel's: A, g, R, q . k, q, k, do, dH (hi, lo), Kt (hi, lo), Qi, Kr (with gv their lo), P; with gv B. */
template <bool GV> struct cols_plan {
    static constexpr int A = 0, G = A + SC * P32 * 4, R = G + SC * 4, PT = R + SC * 8, Q = PT + SC * 4;
    static constexpr int K = Q + TK, DO = K + TK, H = DO + TV, KT = H + 2 * TV, KTL = KT + TK, QI = KTL + TK;
    static constexpr int QIL = QI + TK, KRT = QIL + (GV ? TK : 0), KRL = KRT + KR * P16 * 2;
    static constexpr int P = KRL + (GV ? KR * P16 * 2 : 0), B = P + (GV ? SC * PP * 4 : TK);
    static constexpr int TOTAL = B + (GV ? SC * V32 * 4 : 0);
};

/*
 * Sub-chunks 0, 1, 2 in reverse: section sub (48, 32, 16 rows) of Qd holds the steps after sub-chunk sub, from
 * 16 (sub + 1); row off(sub) + x is step 16 (sub + 1) + x. Qd_t = q_t exp(A_t - A_b), b = 16 sub + 15.
 */
__host__ __device__ constexpr int later_off(int sub) { return 48 * sub - 8 * sub * (sub - 1); }

/* The chunk's q, k (channels i0.., nk of them), gk, g and each step's row R; one cp.async group. */
__device__ __forceinline__ void stage_chunk_rows(unsigned char *sm, int a_off, int g_off, int r_off, int q_off,
                                                 int k_off, const tc_call &a, const rec_seq &s, int64_t h,
                                                 int64_t step0, int64_t i0, int64_t nk) {
    stage_tile<uint16_t>((uint16_t *)(sm + q_off), P16, BC, a.q, a, s, h, step0, i0, nk);
    stage_tile<uint16_t>((uint16_t *)(sm + k_off), P16, BC, a.k, a, s, h, step0, i0, nk);
    if (a.gk.p) stage_tile<float>((float *)(sm + a_off), P32, BC, a.gk, a, s, h, step0, i0, nk);
    stage_steps((float *)(sm + g_off), (int64_t *)(sm + r_off), a, s, h, step0);
    ladder_cp_async_commit();
}

/*
 * With gv, the operands of the state parts for one column tile, each a bf16 hi + lo: Ot = do ⊙ exp(B) (of dq) and
 * Vt = v ⊙ exp(B_63 - B) (of dk; with Z that one alone).
 */
template <class T, bool Z>
__device__ void column_operands(const uint16_t *dO, const uint16_t *v, const float *B, uint16_t *Ot, uint16_t *Otl,
                                uint16_t *Vt, uint16_t *Vtl) {
    const float *Bc = B + (SC - 1) * P32;
    for (int id = threadIdx.x; id < SC * BC / 2; id += blockDim.x) {
        const int r = id / (BC / 2), j = id % (BC / 2) * 2, at = r * P16 + j;
        const float2 Br = *(const float2 *)(B + r * P32 + j);
        const uint32_t v2 = ladder_lds32(v + at);
        put2<BF, true>(Vt, Vtl, at, ladder_to_float<T>(v2 & 0xffff) * ladder_exp_ftz(Bc[j] - Br.x),
                       ladder_to_float<T>(v2 >> 16) * ladder_exp_ftz(Bc[j + 1] - Br.y));
        if (Z) continue;
        const uint32_t d2 = ladder_lds32(dO + at);
        put2<BF, true>(Ot, Otl, at, ladder_to_float<T>(d2 & 0xffff) * ladder_exp_ftz(Br.x),
                       ladder_to_float<T>(d2 >> 16) * ladder_exp_ftz(Br.y));
    }
}

/*
 * With gv, D_ts over one column tile for every pair s <= t of the chunk, in fp32 with its column weight
 * exp(B_t[j] - B_s[j]) (1 at s = t), into Dacc [t][s] (@p first: the chunk's first tile, which starts the sums). A
 * thread takes entries t (t + 1) / 2 + s, 2080 of them over the block.
 */
template <class T>
__device__ void d_columns(const uint16_t *dO, const uint16_t *v, const float *B, float *Dacc, bool first) {
    for (int e = threadIdx.x; e < SC * (SC + 1) / 2; e += blockDim.x) {
        int t = (int)((sqrtf(8.0f * e + 1.0f) - 1.0f) * 0.5f);
        t += (t + 1) * (t + 2) / 2 <= e, t -= t * (t + 1) / 2 > e; /* a square root a hair off either way */
        const int u = e - t * (t + 1) / 2;
        float d = 0.0f;
        for (int j = 0; j < BC; j += 2) {
            const uint32_t o2 = ladder_lds32(dO + t * P16 + j), v2 = ladder_lds32(v + u * P16 + j);
            const float2 Bt = *(const float2 *)(B + t * P32 + j), Bu = *(const float2 *)(B + u * P32 + j);
            d = fmaf(ladder_to_float<T>(o2 & 0xffff) * ladder_to_float<T>(v2 & 0xffff), ladder_exp_ftz(Bt.x - Bu.x), d);
            d = fmaf(ladder_to_float<T>(o2 >> 16) * ladder_to_float<T>(v2 >> 16), ladder_exp_ftz(Bt.y - Bu.y), d);
        }
        Dacc[t * PP + u] = (first ? 0.0f : Dacc[t * PP + u]) + d;
    }
}

/*
 * acc += X Y^T over a column tile, Y the state (S or dH, hi + lo, its lo LO elements on), X do or v: a bf16 input as
 * it is (XLO = 0), or a hi tile with its lo XLO elements on (an fp16 input split, or gv's operands), then a k step at
 * a time (all four at once spilled at two blocks per SM).
 */
template <int XLO>
__device__ __forceinline__ void state_product(float (&acc)[1][4][4], const uint16_t *X, const uint16_t *Y, int lane) {
    constexpr int LO = SC * P16;
    if (!XLO) mma_split<OP_BF16, OP_PAIR, 1, 4, BC / 16, false, false>(acc, X, nullptr, P16, Y, Y + LO, P16, lane);
#pragma unroll 1
    for (int kk = 0; XLO && kk < BC; kk += 16)
        mma_split<OP_PAIR, OP_PAIR, 1, 4, 1, false, false>(acc, X + kk, X + XLO + kk, P16, Y + kk, Y + LO + kk, P16,
                                                           lane);
}

/*
 * One column tile j0.. of rows_kernel's V loop: stage do, v (gv), load S and dH (fp32, split in hi + lo); the state
 * parts accSq += do S^T and accSk += v dH^T, do and v as rows_kernel's inputs hold them (a bf16 input exact, an fp16
 * one split in registers, with gv the operands of column_operands()); and D: without gv its sub-blocks on the mma
 * from the inputs (exact products), warp w < 6 the off-diagonal (di, dj), warps 6 and 7 two diagonal ones each
 * (accD: di = dj, accE: di + 1); with gv d_columns(). Z: dk's state part alone, from dht's states.
 */
template <class T, bool GV, bool Z>
__device__ __forceinline__ void rows_tile(unsigned char *sm, const tc_call &a, const rec_seq &s, int64_t h,
                                          int64_t step0, int rows, int64_t i0, int64_t nk, int64_t j0,
                                          const float *Sst, const float *Hst, int64_t vpitch,
                                          float (&accSq)[1][4][4], float (&accSk)[1][4][4], float (&accD)[1][2][4],
                                          float (&accE)[1][2][4], int di, int dj, int warp, int lane) {
    using L = rows_plan<GV>;
    const int64_t nv = min((int64_t)BC, a.c.V - j0);
    uint16_t *dO = (uint16_t *)(sm + L::X), *v = dO + SC * P16, *Sh = v + SC * P16, *Sl = Sh + SC * P16;
    uint16_t *Hh = Sl + SC * P16, *Hl = Hh + SC * P16;
    uint16_t *Ot = (uint16_t *)(sm + L::XO), *Otl = Ot + SC * P16, *Vt = Otl + SC * P16, *Vtl = Vt + SC * P16;
    float *B = (float *)(sm + L::XB);
    if (!Z) stage_tile<uint16_t>(dO, P16, BC, a.dO, a, s, h, step0, j0, nv);
    stage_tile<uint16_t>(v, P16, BC, a.v, a, s, h, step0, j0, nv);
    if (GV) stage_tile<float>(B, P32, BC, a.gv, a, s, h, step0, j0, nv);
    ladder_cp_async_commit();
    float2 xs[8], xh[8];
    if (!Z) state_load<BC, THREADS, 8>(xs, Sst, vpitch, i0, nk, j0, nv);
    state_load<BC, THREADS, 8>(xh, Hst, vpitch, i0, nk, j0, nv);
    if (!Z) state_split<BC, THREADS, 8>(Sh, Sl, 0, xs);
    state_split<BC, THREADS, 8>(Hh, Hl, 0, xh);
    ladder_cp_async_wait_group<0>();
    __syncthreads();
    if (GV) {
        cumsum(B, P32, BC, true, nullptr, 0.0f, rows);
        __syncthreads();
        column_operands<T, Z>(dO, v, B, Ot, Otl, Vt, Vtl);
        if (!Z) d_columns<T>(dO, v, B, (float *)(sm + L::DACC), j0 == 0);
        __syncthreads();
    }
    const int sub = warp & 3, cw = 32 * (warp >> 2); /* the warp's sub-chunk and first row of the tile */
    if (!GV && !Z) { /* D_ts = do_t . v_s: products of the 16-bit inputs, exact in the fp32 accumulator */
        ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(accD, dO + 16 * di * P16, P16, v + 16 * dj * P16, P16,
                                                             lane);
        if (warp >= 6)
            ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(accE, dO + 16 * (di + 1) * P16, P16,
                                                                 v + 16 * (di + 1) * P16, P16, lane);
    }
    constexpr bool F16 = !GV && is_f16<T>::value; /* split do and v where D's tiles will go */
    if (F16) {
        __syncthreads(); /* D's products are done with the fp16 tiles */
        if (!Z) split_f16_tile<BC>(dO, (uint16_t *)(sm + L::D));
        split_f16_tile<BC>(v, (uint16_t *)(sm + L::D) + SC * P16);
        __syncthreads();
    }
    /* the lo tiles: gv's operands lie one tile after their hi, the split fp16 inputs in D's tiles */
    constexpr int XLO = GV ? SC * P16 : F16 ? (L::D - L::X) / 2 : 0;
    if (!Z) state_product<XLO>(accSq, (GV ? Ot : dO) + 16 * sub * P16, Sh + cw * P16, lane);
    state_product<XLO>(accSk, (GV ? Vt : v) + 16 * sub * P16, Hh + cw * P16, lane);
    __syncthreads(); /* the tiles are done with before the next columns (or Kr, Qd) are written over them */
}

/*
 * D for the pairs: its off-diagonal sub-blocks times the scale every pair carries, as bf16 hi + lo [t][s] (Dh, Dl);
 * its diagonal sub-blocks scaled in fp32 (DD [t][s - 16 (t / 16)], the entries s < t read), without each step's own
 * term, which goes to PT unscaled (D_tt = v_t . do_t with or without gv: its weight is 1). From the fragments, or
 * with gv from Dacc.
 */
template <bool GV>
__device__ void rows_d(unsigned char *sm, float scale, const float (&accD)[1][2][4], const float (&accE)[1][2][4],
                       int di, int dj, int warp, int lane) {
    using L = rows_plan<GV>;
    uint16_t *Dh = (uint16_t *)(sm + L::D), *Dl = Dh + SC * P16;
    float *DD = (float *)(sm + L::DD), *PT = (float *)(sm + L::PT);
    const float *Dacc = (const float *)(sm + L::DACC);
    for (int id = threadIdx.x; id < 4 * SUB * SUB; id += blockDim.x) { /* D's diagonal sub-blocks are zero but for */
        const int r = SUB * (id / 256) + id / SUB % SUB, c = SUB * (id / 256) + id % SUB; /* the quarters (rows_cross) */
        Dh[r * P16 + c] = 0, Dl[r * P16 + c] = 0;
    }
    if (GV) {
        for (int id = threadIdx.x; id < 6 * SUB * SUB / 2; id += blockDim.x) { /* sub-block b as warp b owns it */
            const int b = id / (SUB * SUB / 2), t = SUB * (b < 1 ? 1 : b < 3 ? 2 : 3) + id / 8 % SUB;
            const int u = SUB * (b < 1 ? 0 : b < 3 ? b - 1 : b - 3) + id % 8 * 2;
            put2<BF, true>(Dh, Dl, t * P16 + u, scale * Dacc[t * PP + u], scale * Dacc[t * PP + u + 1]);
        }
        for (int id = threadIdx.x; id < SC * SUB; id += blockDim.x) {
            const int t = id / SUB, ul = id % SUB, tl = t % SUB;
            DD[t * DP + ul] = ul < tl ? scale * Dacc[t * PP + t - tl + ul] : 0.0f;
            if (ul == tl) PT[t] = Dacc[t * PP + t];
        }
        return;
    }
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const int tl = g + 8 * (e >> 1), ul = 8 * nt + 2 * tq;
            if (warp < 6) {
                const int t = SUB * di + tl, u = SUB * dj + ul;
                put2<BF, true>(Dh, Dl, t * P16 + u, scale * accD[0][nt][e], scale * accD[0][nt][e + 1]);
                continue;
            }
#pragma unroll
            for (int m = 0; m < 2; m++) {
                const float *x = m ? accE[0][nt] : accD[0][nt];
                const int t = SUB * (di + m) + tl;
#pragma unroll
                for (int o = 0; o < 2; o++) {
                    DD[t * DP + ul + o] = ul + o == tl ? 0.0f : scale * x[e + o];
                    if (ul + o == tl) PT[t] = x[e + o];
                }
            }
        }
}

/*
 * The pairs between sub-chunks. D's quarters first (the lower left 8 x 8 of each diagonal sub-block, t in the
 * second half, s in the first), hi + lo into D's tiles for rows_halves(); then the operands Kr_s = k_s exp(A_b - A_s)
 * (b = 16 sub - 1, the step before the queries' sub-chunk) and Qd_t = q_t exp(A_t - A_b) (b = 16 sub + 15, the
 * keys' sub-chunk's last step), hi + lo. The state parts are brought to the edges b that the pairs factor around,
 * so that the pairs add into the same registers: dq_t = exp(A_t - A_b) (scale exp(A_b) (S do)_t + pairs),
 * dk_s = exp(A_b - A_s) (exp(A_63 - A_b) (dH v)_s + pairs); then D's row blocks of the warp's sub-chunk times Kr
 * (dq) and its column blocks, D^T, times Qd (dk).
 */
template <class T, bool GV>
__device__ __forceinline__ void rows_cross(unsigned char *sm, float scale, float (&accSq)[1][4][4],
                                           float (&accSk)[1][4][4], int warp, int lane) {
    using L = rows_plan<GV>;
    const int tq = lane & 3, sub = warp & 3, cw = 32 * (warp >> 2);
    const float *A = (const float *)(sm + L::A), *DD = (const float *)(sm + L::DD);
    const uint16_t *q = (const uint16_t *)(sm + L::Q), *k = (const uint16_t *)(sm + L::K);
    uint16_t *Dh = (uint16_t *)(sm + L::D), *Dl = Dh + SC * P16;
    uint16_t *Krh = (uint16_t *)(sm + L::X), *Krl = Krh + KR * P16, *Qdh = Krl + KR * P16, *Qdl = Qdh + KR * P16;
    { /* the quarters, one entry a thread */
        const int qs = threadIdx.x / 64, t = 16 * qs + 8 + threadIdx.x / 8 % 8, u = 16 * qs + threadIdx.x % 8;
        const float x = DD[t * DP + u - 16 * qs];
        const uint16_t hi = ladder_from_float<BF>(x);
        Dh[t * P16 + u] = hi, Dl[t * P16 + u] = ladder_from_float<BF>(x - ladder_to_float<BF>(hi));
    }
    for (int id = threadIdx.x; id < KR * BC / 2; id += blockDim.x) {
        const int r = id / (BC / 2), i = id % (BC / 2) * 2;
        const int2 kr = pair_rows(r);
        const int ks = kr.y, kb = 16 * kr.x - 1;
        const int qsub = r < later_off(1) ? 0 : r < later_off(2) ? 1 : 2;
        const int qt = r - later_off(qsub) + 16 * (qsub + 1), qb = 16 * qsub + 15;
        const uint32_t k2 = ladder_lds32(k + ks * P16 + i), q2 = ladder_lds32(q + qt * P16 + i);
        const float2 As = *(const float2 *)(A + ks * P32 + i), Akb = *(const float2 *)(A + kb * P32 + i);
        const float2 At = *(const float2 *)(A + qt * P32 + i), Aqb = *(const float2 *)(A + qb * P32 + i);
        put2<BF, true>(Krh, Krl, r * P16 + i, ladder_to_float<T>(k2 & 0xffff) * ladder_exp_ftz(Akb.x - As.x),
                       ladder_to_float<T>(k2 >> 16) * ladder_exp_ftz(Akb.y - As.y));
        put2<BF, true>(Qdh, Qdl, r * P16 + i, ladder_to_float<T>(q2 & 0xffff) * ladder_exp_ftz(At.x - Aqb.x),
                       ladder_to_float<T>(q2 >> 16) * ladder_exp_ftz(At.y - Aqb.y));
    }
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
    /* the three products of the pairs as three calls: in one mma_split, both pairs' fragments at once spilled */
    for (int kk = 0; kk < sub; kk++) {
        const int at = 16 * sub * P16 + 16 * kk, kr = (8 * sub * (sub - 1) + 16 * kk) * P16 + cw;
        ladder_mma_warp_tile<BF, 1, 4, 1, false, true>(accSq, Dh + at, P16, Krh + kr, P16, lane);
        ladder_mma_warp_tile<BF, 1, 4, 1, false, true>(accSq, Dh + at, P16, Krl + kr, P16, lane);
        ladder_mma_warp_tile<BF, 1, 4, 1, false, true>(accSq, Dl + at, P16, Krh + kr, P16, lane);
    }
    for (int kk = sub + 1; kk < 4; kk++) {
        const int at = 16 * kk * P16 + 16 * sub, qd = (later_off(sub) + 16 * (kk - sub - 1)) * P16 + cw;
        ladder_mma_warp_tile<BF, 1, 4, 1, true, true>(accSk, Dh + at, P16, Qdh + qd, P16, lane);
        ladder_mma_warp_tile<BF, 1, 4, 1, true, true>(accSk, Dh + at, P16, Qdl + qd, P16, lane);
        ladder_mma_warp_tile<BF, 1, 4, 1, true, true>(accSk, Dl + at, P16, Qdh + qd, P16, lane);
    }
    __syncthreads(); /* Kr and Qd are done with before KQ is written over them */
}

/*
 * The pairs inside a sub-chunk. Across its halves (s in steps 0..7, t in 8..15) they factor around the first half's
 * last step m = 16 sub + 7 as the pairs across sub-chunks do, with one operand KQ (hi + lo): KQ_s = k_s exp(A_m - A_s)
 * in a first half, KQ_t = q_t exp(A_t - A_m) in a second; D's quarter is zero where a product would take the other
 * half's rows. Inside each half they are summed in fp32 with exp(A_t - A_s) per pair and channel: each entry (t, i)
 * of the fragments walks the half's other steps u, a term of dq_t when u < t (D_tu k_u), of dk_t when u > t
 * (D_ut q_u); without gk one exponential a pair serves every channel. The term goes to dq or dk by its weight (wq or
 * wk zero), two fused multiply-adds rather than selects and adds. The state parts and the pairs between sub-chunks
 * leave their edges b for each step first.
 */
template <class T, bool GV>
__device__ __forceinline__ void rows_halves(unsigned char *sm, bool gk, float (&accSq)[1][4][4],
                                            float (&accSk)[1][4][4], int warp, int lane) {
    using L = rows_plan<GV>;
    const int g = lane >> 2, tq = lane & 3, sub = warp & 3, cw = 32 * (warp >> 2);
    const float *A = (const float *)(sm + L::A), *DD = (const float *)(sm + L::DD);
    const uint16_t *q = (const uint16_t *)(sm + L::Q), *k = (const uint16_t *)(sm + L::K);
    const uint16_t *Dh = (const uint16_t *)(sm + L::D), *Dl = Dh + SC * P16;
    uint16_t *KQh = (uint16_t *)(sm + L::X), *KQl = KQh + SC * P16;
#pragma unroll 2 /* further unrolled, or not at all, the kernel spilled (sm_90) */
    for (int id = threadIdx.x; id < SC * BC / 2; id += blockDim.x) {
        const int r = id / (BC / 2), i = id % (BC / 2) * 2, m = (r | 15) - 8;
        const bool first = (r & 15) < 8;
        const uint32_t x2 = ladder_lds32((first ? k : q) + r * P16 + i);
        const float2 Ar = *(const float2 *)(A + r * P32 + i), Am = *(const float2 *)(A + m * P32 + i);
        const float sl = first ? LADDER_LOG2E : -LADDER_LOG2E; /* the exponent A_m - A_s, or A_t - A_m */
        put2<BF, true>(KQh, KQl, r * P16 + i, ladder_to_float<T>(x2 & 0xffff) * ladder_ex2_ftz(sl * (Am.x - Ar.x)),
                       ladder_to_float<T>(x2 >> 16) * ladder_ex2_ftz(sl * (Am.y - Ar.y)));
    }
    const int bq = 16 * sub - 1, bk = 16 * sub + 15;
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
            if (!gk) {
                const float e = ladder_ex2_ftz(sl * (A[t * P32] - A[u * P32]));
                wq *= e, wk *= e;
            }
            const uint16_t *x = (before ? k : q) + u * P16 + cw + 2 * tq;
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const uint32_t x2 = ladder_lds32(x + 8 * nt);
                float y0 = ladder_to_float<T>(x2 & 0xffff), y1 = ladder_to_float<T>(x2 >> 16);
                if (gk) {
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
    /* across the halves: D's quarter times KQ (dq, second-half rows), its transpose times KQ (dk, first-half rows),
     * then brought from m to each step by exp(A_t - A_m), exp(A_m - A_s); 16 channels at a time (the registers of
     * the 32 would spill) */
    const uint16_t *Dqh = Dh + 16 * sub * P16 + 16 * sub, *Dql = Dl + 16 * sub * P16 + 16 * sub;
    const int hm = 16 * sub + 7; /* m */
#pragma unroll
    for (int np = 0; np < 4; np += 2) {
        const int at = 16 * sub * P16 + cw + 8 * np;
        float x[1][2][4] = {}, y[1][2][4] = {};
        mma_split<OP_PAIR, OP_PAIR, 1, 2, 1, false, true>(x, Dqh, Dql, P16, KQh + at, KQl + at, P16, lane);
#pragma unroll
        for (int o = 0; o < 2; o++) {
            const int i = cw + 8 * (np + o) + 2 * tq;
            const float2 Am = *(const float2 *)(A + hm * P32 + i), At = *(const float2 *)(A + (hm + 1 + g) * P32 + i);
            accSq[0][np + o][2] += x[0][o][2] * ladder_exp_ftz(At.x - Am.x);
            accSq[0][np + o][3] += x[0][o][3] * ladder_exp_ftz(At.y - Am.y);
        }
        mma_split<OP_PAIR, OP_PAIR, 1, 2, 1, true, true>(y, Dqh, Dql, P16, KQh + at, KQl + at, P16, lane);
#pragma unroll
        for (int o = 0; o < 2; o++) {
            const int i = cw + 8 * (np + o) + 2 * tq;
            const float2 Am = *(const float2 *)(A + hm * P32 + i), As = *(const float2 *)(A + (hm - 7 + g) * P32 + i);
            accSk[0][np + o][0] += y[0][o][0] * ladder_exp_ftz(Am.x - As.x);
            accSk[0][np + o][1] += y[0][o][1] * ladder_exp_ftz(Am.y - As.y);
        }
    }
}

/*
 * rows_kernel's outputs: dq° and dk° in fp32 where the gate sums take them; dq and dk with each step's own term put
 * back, scale k_t (v_t . do_t) and scale q_t (v_t . do_t), and dk with dht's part (dkz). Z: dkz itself, the state
 * part times exp(A_63 - A_s). One row address a step.
 */
template <class T, bool GV, bool Z>
__device__ __forceinline__ void rows_store(const tc_call &a, const unsigned char *sm, const float (&accSq)[1][4][4],
                                           const float (&accSk)[1][4][4], int64_t i0, int64_t nk, int rows,
                                           uint16_t *dq, uint16_t *dk, int warp, int lane) {
    using L = rows_plan<GV>;
    const int g = lane >> 2, tq = lane & 3, sub = warp & 3, cw = 32 * (warp >> 2);
    const float *A = (const float *)(sm + L::A), *PT = (const float *)(sm + L::PT);
    const uint16_t *q = (const uint16_t *)(sm + L::Q), *k = (const uint16_t *)(sm + L::K);
    const int64_t *R = (const int64_t *)(sm + L::R);
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int t = 16 * sub + g + 8 * hf;
        if (t >= rows) continue;
        const int64_t row = R[t] * a.c.K + i0;
        const float vd = a.c.scale * PT[t];
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int o = 0; o < 2; o++) {
                const int i = cw + 8 * nt + 2 * tq + o;
                if (i >= (int)nk) continue;
                const float xq = accSq[0][nt][2 * hf + o], xk = accSk[0][nt][2 * hf + o];
                if (Z) {
                    a.dkz[row + i] = xk * ladder_exp_ftz(A[(SC - 1) * P32 + i] - A[t * P32 + i]);
                    continue;
                }
                if (a.dq_part) a.dq_part[row + i] = xq, a.dk_part[row + i] = xk;
                dq[row + i] = ladder_from_float<T>(xq + ladder_to_float<T>(k[t * P16 + i]) * vd);
                dk[row + i] = ladder_from_float<T>(xk + ladder_to_float<T>(q[t * P16 + i]) * vd +
                                                   (a.dkz ? a.dkz[row + i] : 0.0f));
            }
    }
}

/*
 * One block per (sequence x head, BC rows i of dq and dk, chunk of SC steps), chunks striding by gridDim.z; 8 warps,
 * warp w holding steps 16 (w & 3).. (its sub-chunk) and rows 32 (w >> 2).. of dq and dk. The V columns come BC at a
 * time (rows_tile()), then the pairs, kind by kind (rows_d(), rows_cross(), rows_halves()), then the outputs.
 */
template <class T, bool GV, bool Z>
__global__ void __launch_bounds__(THREADS, GV || Z ? 1 : 2)
    rows_kernel(tc_call a, const float *Sst, const float *Hst, int64_t vpitch, uint16_t *dq, uint16_t *dk) {
    using L = rows_plan<GV>;
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, i0 = blockIdx.y * BC;
    const int64_t K = a.c.K, nk = min((int64_t)BC, K - i0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    /* warp w < 6 owns D's sub-block (di, dj), di > dj; warps 6 and 7 the diagonal ones di = dj and di + 1 */
    const int di = warp < 1 ? 1 : warp < 3 ? 2 : warp < 6 ? 3 : 2 * (warp - 6);
    const int dj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp < 6 ? warp - 3 : di;
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC, slot = (chunk_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        stage_chunk_rows(sm, L::A, L::G, L::R, L::Q, L::K, a, s, h, step0, i0, nk);
        float accSq[1][4][4] = {}, accSk[1][4][4] = {}, accD[1][2][4] = {}, accE[1][2][4] = {};
        for (int64_t j0 = 0; j0 < a.c.V; j0 += BC)
            rows_tile<T, GV, Z>(sm, a, s, h, step0, rows, i0, nk, j0, Sst + slot, Hst + slot, vpitch, accSq, accSk,
                                accD, accE, di, dj, warp, lane);
        cumsum((float *)(sm + L::A), P32, BC, a.gk.p, (const float *)(sm + L::G), gamma, rows);
        if (!Z) rows_d<GV>(sm, a.c.scale, accD, accE, di, dj, warp, lane);
        __syncthreads(); /* A, D and PT are in place before the operands and the pairs read them */
        if (!Z) {
            rows_cross<T, GV>(sm, a.c.scale, accSq, accSk, warp, lane);
            rows_halves<T, GV>(sm, a.gk.p != nullptr, accSq, accSk, warp, lane);
        }
        rows_store<T, GV, Z>(a, sm, accSq, accSk, i0, nk, rows, dq, dk, warp, lane);
        __syncthreads(); /* A, R, PT, q, k and D are done with before the next chunk is staged */
    }
}

/*
 * One K tile of cols_kernel: q, k, gk, g, R and the tile of dH (rows i0.., the block's CV columns, split in hi + lo);
 * the operands (chunk_operands(): Kt, Qi, Kr and P_tt, Qi and Kr rounded to T, or with gv split, since dv then
 * feeds dgv's sums); P's diagonal sub-blocks' entries (diag_pair(), one a thread); then dv's state part
 * accS += Kt dH and, warps 0..5, P's off-diagonal sub-block (di, dj) += Qi Kr^T. Z: the state part alone.
 */
template <class T, bool GV, bool Z>
__device__ __forceinline__ void cols_tile(unsigned char *sm, const tc_call &a, const rec_seq &s, int64_t h,
                                          int64_t step0, int rows, int64_t i0, const float *Hst, int64_t vpitch,
                                          int64_t c0, int64_t nv, float (&accS)[1][4][4], float (&pacc)[1][2][4],
                                          float &pd, int di, int dj, int warp, int lane) {
    using L = cols_plan<GV>;
    const int64_t nk = min((int64_t)BC, a.c.K - i0);
    float *A = (float *)(sm + L::A);
    uint16_t *q = (uint16_t *)(sm + L::Q), *k = (uint16_t *)(sm + L::K), *Hh = (uint16_t *)(sm + L::H);
    uint16_t *Kt = (uint16_t *)(sm + L::KT), *Qi = (uint16_t *)(sm + L::QI), *Kr = (uint16_t *)(sm + L::KRT);
    stage_chunk_rows(sm, L::A, L::G, L::R, L::Q, L::K, a, s, h, step0, i0, nk);
    float2 xh[8];
    state_load<CV, CTHREADS, 8>(xh, Hst, vpitch, i0, nk, c0, nv);
    state_split<CV, CTHREADS, 8>(Hh, Hh + SC * V16, 0, xh);
    ladder_cp_async_wait_group<0>();
    __syncthreads();
    cumsum(A, P32, BC, a.gk.p, (const float *)(sm + L::G), a.c.g_gamma.p ? rec_ld(a.c.g_gamma, h, 0, 0, 0) : 0.0f,
           rows);
    if (GV && i0 == 0) cumsum((float *)(sm + L::B), V32, CV, true, nullptr, 0.0f, rows);
    __syncthreads();
    chunk_operands<T, GV, true>(q, k, A, Kt, (uint16_t *)(sm + L::KTL), Qi, (uint16_t *)(sm + L::QIL), Kr,
                                (uint16_t *)(sm + L::KRL), (float *)(sm + L::PT));
    if (!Z)
        diag_pair<T>(pd, q, k, P16, A, P32, a.gk.p != nullptr, threadIdx.x / 256, threadIdx.x / SUB % SUB,
                     threadIdx.x % SUB);
    __syncthreads();
    const int sub = warp & 3, cw = 32 * (warp >> 2);
    mma_split<OP_PAIR, OP_PAIR, 1, 4, BC / 16, false, true>(accS, Kt + 16 * sub * P16,
                                                          (uint16_t *)(sm + L::KTL) + 16 * sub * P16, P16, Hh + cw,
                                                          Hh + SC * V16 + cw, V16, lane);
    const uint16_t *Qs = Qi + 16 * di * P16, *Ks = Kr + (8 * di * (di - 1) + 16 * dj) * P16;
    if (!Z && warp < 6) {
        if (GV)
            mma_split<OP_PAIR, OP_PAIR, 1, 2, BC / 16, false, false>(pacc, Qs, Qs + (L::QIL - L::QI) / 2, P16, Ks,
                                                                    Ks + (L::KRL - L::KRT) / 2, P16, lane);
        else
            ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(pacc, Qs, P16, Ks, P16, lane);
    }
    __syncthreads(); /* the tiles are done with before the next rows are staged over them */
}

/*
 * P for dv's pairs: the off-diagonal sub-block (di, dj) of warps 0..5 and the diagonal sub-blocks' entries below
 * their diagonals by their holder (pd), rounded to T with zeros on and above the diagonal (P_tt stays apart, in PT),
 * [t][s]; or with gv in fp32, whose entries on and above the diagonal are never read.
 */
template <class T, bool GV>
__device__ void cols_p(unsigned char *sm, const float (&pacc)[1][2][4], float pd, int di, int dj, int warp,
                       int lane) {
    using L = cols_plan<GV>;
    const int g = lane >> 2, tq = lane & 3, dm = threadIdx.x / 256, tl = threadIdx.x / SUB % SUB;
    const int ul = threadIdx.x % SUB;
    uint16_t *P = (uint16_t *)(sm + L::P);
    float *P32f = (float *)(sm + L::P);
    if (warp < 6)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e += 2) {
                const int t = 16 * di + g + 8 * (e >> 1), u = 16 * dj + 8 * nt + 2 * tq;
                if (GV)
                    P32f[t * PP + u] = pacc[0][nt][e], P32f[t * PP + u + 1] = pacc[0][nt][e + 1];
                else
                    *(uint32_t *)(P + t * P16 + u) = ladder_pack2_float<T>(pacc[0][nt][e], pacc[0][nt][e + 1]);
            }
#pragma unroll
    for (int d = 2 * dm; d < 2 * dm + 2; d++) {
        const int t = 16 * d + max(tl, ul), u = 16 * d + min(tl, ul);
        const bool mine = tl != ul && (d & 1) == (ul > tl);
        if (GV) {
            if (mine) P32f[t * PP + u] = pd;
            continue;
        }
        if (ul >= tl) P[(16 * d + tl) * P16 + 16 * d + ul] = 0;
        if (mine) P[t * P16 + u] = ladder_from_float<T>(pd);
    }
}

/*
 * cols_kernel's outputs: dv_s = its state part (times exp(B_63 - B_s) with gv) + scale times its pairs over t > s
 * (P^T do on the mma, or with gv column_pairs()); dv° in fp32 where dgv's sums take it (gv), and dv with each step's
 * own term, scale (q_s . k_s) do_s, and dht's part (dvz). Z: dvz itself.
 */
template <class T, bool GV, bool Z>
__device__ __forceinline__ void cols_store(const tc_call &a, const unsigned char *sm, const float (&accS)[1][4][4],
                                           int64_t c0, int64_t nv, int rows, uint16_t *dv, int warp, int lane) {
    using L = cols_plan<GV>;
    const int g = lane >> 2, tq = lane & 3, sub = warp & 3, cw = 32 * (warp >> 2);
    const uint16_t *dO = (const uint16_t *)(sm + L::DO), *P = (const uint16_t *)(sm + L::P);
    const float *PT = (const float *)(sm + L::PT), *B = (const float *)(sm + L::B), *P32f = (const float *)(sm + L::P);
    const int64_t *R = (const int64_t *)(sm + L::R), V = a.c.V;
    float accP[1][4][4] = {};
    for (int kk = sub; !GV && !Z && kk < 4; kk++) /* dv_s += sum_t P_ts do_t over the later steps: P^T do */
        ladder_mma_warp_tile<T, 1, 4, 1, true, true>(accP, P + 16 * kk * P16 + 16 * sub, P16,
                                                     dO + 16 * kk * V16 + cw, V16, lane);
#pragma unroll
    for (int nt = 0; nt < 4; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = 16 * sub + g + 8 * (e >> 1), j = cw + 8 * nt + 2 * tq + (e & 1);
            float x = accS[0][nt][e] * (GV ? ladder_exp_ftz(B[(SC - 1) * V32 + j] - B[t * V32 + j]) : 1.0f);
            if (GV && !Z)
                accP[0][nt][e] = column_pairs<T>([&](int u) { return P32f[u * PP + t]; }, dO, V16, B, V32, t, j, t + 1,
                                                 SC, -1.0f);
            if (t >= rows || j >= (int)nv) continue;
            const int64_t at = R[t] * V + c0 + j;
            if (Z) {
                a.dvz[at] = x;
                continue;
            }
            x += a.c.scale * accP[0][nt][e]; /* dH carries the scale */
            if (GV) a.dv32[at] = x;
            dv[at] = ladder_from_float<T>(x + a.c.scale * PT[t] * ladder_to_float<T>(dO[t * V16 + j]) +
                                          (a.dvz ? a.dvz[at] : 0.0f));
        }
}

/*
 * One block per (sequence x head, CV = 128 columns j of dv, chunk of SC steps), chunks striding by gridDim.z; 16
 * warps, warp w holding steps 16 (w & 3).. and columns 32 (w >> 2).. of dv. The state rows come BC at a time
 * (cols_tile()); P and the operands it takes serve every column of the block (with 64 columns a block each of
 * V / 64 blocks formed them all again).
 */
template <class T, bool GV, bool Z>
__global__ void __launch_bounds__(CTHREADS, 1) cols_kernel(tc_call a, const float *Hst, int64_t vpitch, uint16_t *dv) {
    using L = cols_plan<GV>;
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * CV;
    const int64_t nv = min((int64_t)CV, a.c.V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const int di = warp < 1 ? 1 : warp < 3 ? 2 : 3, dj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp - 3;
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC, slot = (chunk_slot(a, s, n, ch) * a.c.H + h) * a.c.K * vpitch;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        if (!Z) stage_tile<uint16_t>((uint16_t *)(sm + L::DO), V16, CV, a.dO, a, s, h, step0, c0, nv);
        if (GV) stage_tile<float>((float *)(sm + L::B), V32, CV, a.gv, a, s, h, step0, c0, nv);
        if (threadIdx.x < SC) ((float *)(sm + L::PT))[threadIdx.x] = 0.0f;
        float accS[1][4][4] = {}, pacc[1][2][4] = {}, pd = 0.0f;
        for (int64_t i0 = 0; i0 < a.c.K; i0 += BC)
            cols_tile<T, GV, Z>(sm, a, s, h, step0, rows, i0, Hst + slot, vpitch, c0, nv, accS, pacc, pd, di, dj,
                                warp, lane);
        if (!Z) cols_p<T, GV>(sm, pacc, pd, di, dj, warp, lane);
        __syncthreads();
        cols_store<T, GV, Z>(a, sm, accS, c0, nv, rows, dv, warp, lane);
        __syncthreads(); /* do, R, PT, B and P are done with before the next chunk is staged */
    }
}

template <class T, bool GV, bool Z>
ladder_status launch(const tc_call &a, const float *S, const float *dH, int64_t vpitch, uint16_t *dq, uint16_t *dk,
                     uint16_t *dv) {
    const rec_call &c = a.c;
    const unsigned chunks = (unsigned)min(max((c.T + SC - 1) / SC, (int64_t)1), (int64_t)65535);
    const auto rk = rows_kernel<T, GV, Z>;
    const auto ck = cols_kernel<T, GV, Z>;
    LADDER_TRY(ladder_allow_smem(rk, rows_plan<GV>::TOTAL));
    LADDER_TRY(ladder_allow_smem(ck, cols_plan<GV>::TOTAL));
    const dim3 rg((unsigned)(c.N * c.H), (unsigned)((c.K + BC - 1) / BC), chunks);
    rk<<<rg, THREADS, rows_plan<GV>::TOTAL>>>(a, S, dH, vpitch, dq, dk);
    LADDER_LAUNCH_CHECK("rows_kernel");
    const dim3 cg((unsigned)(c.N * c.H), (unsigned)((c.V + CV - 1) / CV), chunks);
    ck<<<cg, CTHREADS, cols_plan<GV>::TOTAL>>>(a, dH, vpitch, dv);
    LADDER_LAUNCH_CHECK("cols_kernel");
    return LADDER_OK;
}

template <class T, bool GV>
ladder_status grads(const tc_call &a, const float *S, const float *dH, const float *Z, int64_t vpitch, uint16_t *dq,
                    uint16_t *dk, uint16_t *dv) {
    if (Z) LADDER_TRY((launch<T, GV, true>(a, S, Z, vpitch, nullptr, nullptr, nullptr))); /* dkz, dvz first */
    return launch<T, GV, false>(a, S, dH, vpitch, dq, dk, dv);
}

} // namespace

namespace rec_tc {

template <class T>
ladder_status grads_pass(const tc_call &a, const float *S, const float *dH, const float *Z, int64_t vpitch,
                         uint16_t *dq, uint16_t *dk, uint16_t *dv) {
    return a.gv.p ? grads<T, true>(a, S, dH, Z, vpitch, dq, dk, dv) : grads<T, false>(a, S, dH, Z, vpitch, dq, dk, dv);
}

template ladder_status grads_pass<__nv_bfloat16>(const tc_call &, const float *, const float *, const float *,
                                                 int64_t, uint16_t *, uint16_t *, uint16_t *);
template ladder_status grads_pass<__half>(const tc_call &, const float *, const float *, const float *, int64_t,
                                          uint16_t *, uint16_t *, uint16_t *);

} // namespace rec_tc
