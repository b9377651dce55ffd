/*
 * gpu_tensorcore/recurrent_out.cu: the forward's outputs (step 2 of recurrent.cu's opening comment): every chunk's o
 * in parallel from the state stored at its start,
 *
 *     o_t = scale ( exp(B_t) ⊙ ((q_t ⊙ exp(A_t)) S_c)  +  sum_{s<=t} P_ts exp(B_t - B_s) ⊙ v_s )
 *     P_ts = sum_i q_t[i] k_s[i] exp(A_t[i] - A_s[i])
 *
 * with A, B the cumulative row and column log gates from the chunk's start. The state part is one product. P is
 * the chunk's 64 x 64 pair matrix, built from sub-chunks of 16 steps so that no factor exceeds 1: the entries
 * between sub-chunks are a product of bounded operands (chunk_operands(): Qi, Kr), those inside a sub-chunk are
 * summed in fp32 (diag_pair()). Without gv, P V is one more product, P rounded once; with gv the pair weight
 * depends on the column, and column_pairs() sums it in fp32.
 *
 * The backward runs the same kernel for o°, o without each step's own term (o = o° + scale P_tt v_t), which the gate
 * sums of dgv need (gv only): from the fp32 states of its ST_S pass, every operand a bf16 hi + lo pair.
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

constexpr int THREADS = 256; /* 8 warps: warp w holds steps 16 (w & 3).. and columns 64 (w >> 2).. of o */
constexpr int OVB = 128;     /* output columns per block */
constexpr int V16 = OVB + 8, V32 = OVB + 4, PP = SC + 1, TK = SC * P16 * 2; /* pitches; bytes of a q tile */

/*
 * Shared memory (bytes): per row tile q, k, gk then A, g, each step's row R, P_tt; the state tile (BWD: hi, lo);
 * the chunk's v; the operands Qe, Qi, Kr (BWD: with their lo tiles); with gv B and P in fp32. The rounded P16
 * goes over q once the last row tile is done.
 */
template <bool GV, bool BWD> struct plan {
    static constexpr int Q = 0, K = Q + TK, A = K + TK, G = A + SC * P32 * 4, R = G + SC * 4, PT = R + SC * 8;
    static constexpr int S = PT + SC * 4, SL = S + BC * V16 * 2, V = SL + (BWD ? BC * V16 * 2 : 0);
    static constexpr int QE = V + SC * V16 * 2, QEL = QE + TK, QI = QEL + (BWD ? TK : 0), QIL = QI + TK;
    static constexpr int KRT = QIL + (BWD ? TK : 0), KRL = KRT + KR * P16 * 2, B = KRL + (BWD ? KR * P16 * 2 : 0);
    static constexpr int P = B + (GV ? SC * V32 * 4 : 0), TOTAL = P + (GV ? SC * PP * 4 : 0);
};

/*
 * Row tile i0.. (nk real rows) of the chunk: q, k, gk, and the state's rows i0.. (columns c0.., nv real): 16-bit
 * from the forward's store by cp.async, or (BWD) fp32 split into hi + lo, 32 rows at a time.
 */
template <bool GV, bool BWD>
__device__ void stage_rows(unsigned char *sm, const tc_call &a, const rec_seq &s, int64_t h, int64_t step0,
                           int64_t i0, int64_t nk, const void *S0, int64_t vpitch, int64_t c0, int64_t nv) {
    using L = plan<GV, BWD>;
    stage_tile<uint16_t>((uint16_t *)(sm + L::Q), P16, BC, a.q, a, s, h, step0, i0, nk);
    stage_tile<uint16_t>((uint16_t *)(sm + L::K), P16, BC, a.k, a, s, h, step0, i0, nk);
    if (a.gk.p) stage_tile<float>((float *)(sm + L::A), P32, BC, a.gk, a, s, h, step0, i0, nk);
    uint16_t *St = (uint16_t *)(sm + L::S), *Sl = (uint16_t *)(sm + L::SL);
    if (BWD) {
#pragma unroll 1
        for (int r0 = 0; r0 < BC; r0 += 32) {
            float2 x[8];
            state_load<OVB, THREADS, 8>(x, (const float *)S0 + r0 * vpitch, vpitch, i0, nk - r0, c0, nv);
            state_split<OVB, THREADS, 8>(St, Sl, r0, x);
        }
    } else {
        for (int id = threadIdx.x; id < BC * OVB / 8; id += blockDim.x) { /* 8 columns a copy */
            const int r = id / (OVB / 8), col = id % (OVB / 8) * 8;
            uint16_t *d = St + r * V16 + col;
            const uint16_t *src = (const uint16_t *)S0 + (i0 + r) * vpitch + c0 + col;
            if (r < nk && col + 8 <= nv) {
                ladder_cp_async16(d, src, true);
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++) d[e] = r < nk && col + e < nv ? src[e] : uint16_t(0);
            }
        }
    }
    ladder_cp_async_commit();
}

/*
 * One row tile's products: the state part acc += Qe S (the warp's 16 steps, 64 columns) and, warps 0..5, P's
 * off-diagonal sub-block (si, sj) += Qi Kr^T; one rounding of each operand, or (BWD) hi + lo pairs.
 */
template <class T, bool GV, bool BWD>
__device__ __forceinline__ void row_products(const unsigned char *sm, float (&acc)[1][OVB / 16][4],
                                             float (&pacc)[1][2][4], int warp, int si, int sj, int lane) {
    using L = plan<GV, BWD>;
    const uint16_t *Qe = (const uint16_t *)(sm + L::QE) + 16 * (warp & 3) * P16;
    const uint16_t *St = (const uint16_t *)(sm + L::S) + 64 * (warp >> 2);
    const uint16_t *Qi = (const uint16_t *)(sm + L::QI) + SUB * si * P16;
    const uint16_t *Kr = (const uint16_t *)(sm + L::KRT) + (8 * si * (si - 1) + SUB * sj) * P16;
    if (!BWD) {
        ladder_mma_warp_tile<T, 1, OVB / 16, BC / 16, false, true>(acc, Qe, P16, St, V16, lane);
        if (warp < 6) ladder_mma_warp_tile<T, 1, 2, BC / 16, false, false>(pacc, Qi, P16, Kr, P16, lane);
        return;
    }
    constexpr int PK = OP_PAIR; /* each lo tile lies at the same offsets in its own region */
    mma_split<PK, PK, 1, OVB / 16, BC / 16, false, true>(acc, Qe, Qe + (L::QEL - L::QE) / 2, P16, St,
                                                       St + (L::SL - L::S) / 2, V16, lane);
    if (warp < 6)
        mma_split<PK, PK, 1, 2, BC / 16, false, false>(pacc, Qi, Qi + (L::QIL - L::QI) / 2, P16, Kr,
                                                      Kr + (L::KRL - L::KRT) / 2, P16, lane);
}

/*
 * P from the warps' fragments: the off-diagonal sub-block (si, sj) of warps 0..5 (@p pacc), the diagonal
 * sub-blocks' entries below their diagonals (@p pd, two a thread, diag_pair()), and P_tt on the diagonal. Without
 * gv rounded to T into P16 [t][s] with zeros above the diagonal (P V on the mma); with gv fp32 into P32, whose
 * entries above the diagonal are never read.
 */
template <class T, bool GV>
__device__ void assemble_p(uint16_t *Pr, float *Pf, const float (&pacc)[1][2][4], const float (&pd)[2],
                           const float *Ptt, int warp, int si, int sj, int lane) {
    const int g = lane >> 2, tq = lane & 3, tl = threadIdx.x / SUB, ul = threadIdx.x % SUB;
    if (warp < 6)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int t = g + 8 * (e >> 1), u = 8 * nt + 2 * tq + (e & 1);
                if (GV) {
                    Pf[(SUB * si + t) * PP + SUB * sj + u] = pacc[0][nt][e];
                } else {
                    Pr[(SUB * si + t) * P16 + SUB * sj + u] = ladder_from_float<T>(pacc[0][nt][e]);
                    Pr[(SUB * sj + t) * P16 + SUB * si + u] = 0;
                }
            }
#pragma unroll
    for (int d = 0; d < 4; d++) { /* the diagonal sub-blocks: P_tt, zeros above, the entries below by their holder */
        const int t = SUB * d + max(tl, ul), u = SUB * d + min(tl, ul), mine = tl != ul && (d & 1) == (ul > tl);
        if (GV) {
            if (tl == ul) Pf[t * PP + t] = Ptt[t];
            if (mine) Pf[t * PP + u] = pd[d / 2];
        } else {
            if (tl == ul) Pr[t * P16 + t] = ladder_from_float<T>(Ptt[t]);
            if (ul > tl) Pr[(SUB * d + tl) * P16 + SUB * d + ul] = 0;
            if (mine) Pr[t * P16 + u] = ladder_from_float<T>(pd[d / 2]);
        }
    }
}

/*
 * The pairs into the state part, and the outputs: without gv acc += P16 V on the mma; with gv, each element
 * (t, j) of the warp's fragments takes exp(B_t[j]) times its state part plus column_pairs() over s <= t (s < t for
 * o°, BWD). o = scale acc, rounded to T (stored in 4-byte pairs where both columns exist and it aligns), or o° in
 * fp32 into o32.
 */
template <class T, bool GV, bool BWD>
__device__ void finish_out(const tc_call &a, unsigned char *sm, float (&acc)[1][OVB / 16][4], int64_t c0, int rows,
                           int warp, int lane) {
    using L = plan<GV, BWD>;
    const int g = lane >> 2, tq = lane & 3;
    const uint16_t *v = (const uint16_t *)(sm + L::V);
    if (!GV)
        ladder_mma_warp_tile<T, 1, OVB / 16, SC / 16, false, true>(acc, (const uint16_t *)(sm + L::Q) + 16 * (warp & 3) * P16,
                                                                   P16, v + 64 * (warp >> 2), V16, lane);
    const float *P = (const float *)(sm + L::P), *B = (const float *)(sm + L::B);
    const int64_t *R = (const int64_t *)(sm + L::R), V = a.c.V;
#pragma unroll
    for (int nt = 0; nt < OVB / 16; nt++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const int t = 16 * (warp & 3) + g + 8 * (e >> 1), jl = 64 * (warp >> 2) + 8 * nt + 2 * tq;
            const int64_t j = c0 + jl;
            float x[2] = {acc[0][nt][e], acc[0][nt][e + 1]};
#pragma unroll
            for (int o = 0; GV && o < 2; o++)
                x[o] = ladder_exp_ftz(B[t * V32 + jl + o]) * x[o] +
                       column_pairs<T>([&](int u) { return P[t * PP + u]; }, v, V16, B, V32, t, jl + o, 0,
                                       BWD ? t : t + 1, 1.0f);
            if (t >= rows || j >= V) continue;
            if (BWD) {
                a.o32[R[t] * V + j] = a.c.scale * x[0];
                if (j + 1 < V) a.o32[R[t] * V + j + 1] = a.c.scale * x[1];
                continue;
            }
            uint16_t *out = a.o + R[t] * V + j;
            const uint16_t x0 = ladder_from_float<T>(a.c.scale * x[0]), x1 = ladder_from_float<T>(a.c.scale * x[1]);
            if (j + 1 < V && (uintptr_t)out % 4 == 0) {
                *(uint32_t *)out = ladder_pack2(x0, x1);
            } else {
                out[0] = x0;
                if (j + 1 < V) out[1] = x1;
            }
        }
}

/*
 * One block per (sequence x head, OVB output columns, chunk of SC steps), chunks striding by gridDim.z; 8 warps. The
 * state rows come BC at a time: each row tile adds to the state part (acc) and to P, whose off-diagonal sub-blocks
 * (warps 0..5, one each: Qi of sub-chunk si times Kr of sub-chunk sj < si) stay in fragments, the diagonal
 * sub-blocks' entries in registers (pd), P_tt in shared memory, until the last tile.
 */
template <class T, bool GV, bool BWD>
__global__ void __launch_bounds__(THREADS, GV ? 1 : 2) out_kernel(tc_call a, const void *store, int64_t vpitch) {
    using L = plan<GV, BWD>;
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * OVB;
    const int64_t K = a.c.K, nv = min((int64_t)OVB, a.c.V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    uint16_t *Qe = (uint16_t *)(sm + L::QE), *Qi = (uint16_t *)(sm + L::QI), *Kr = (uint16_t *)(sm + L::KRT);
    float *A = (float *)(sm + L::A), *Ptt = (float *)(sm + L::PT);
    /* warp w < 6 owns P's sub-block (si, sj), si > sj; Kr holds sub-chunk si's keys at row 8 si (si - 1) */
    const int si = warp < 1 ? 1 : warp < 3 ? 2 : 3, sj = warp < 1 ? 0 : warp < 3 ? warp - 1 : warp - 3;
    const int tl = threadIdx.x / SUB, ul = threadIdx.x % SUB; /* the thread's entries of diag_pair() */
    for (int64_t ch = blockIdx.z; ch < nch; ch += gridDim.z) {
        const int64_t step0 = ch * SC, slot = (chunk_slot(a, s, n, ch) * a.c.H + h) * K * vpitch;
        const int rows = (int)min((int64_t)SC, s.len - step0);
        const void *S0 = BWD ? (const void *)((const float *)store + slot) : (const void *)((const uint16_t *)store + slot);
        stage_tile<uint16_t>((uint16_t *)(sm + L::V), V16, OVB, a.v, a, s, h, step0, c0, nv);
        if (GV) stage_tile<float>((float *)(sm + L::B), V32, OVB, a.gv, a, s, h, step0, c0, nv);
        stage_steps((float *)(sm + L::G), (int64_t *)(sm + L::R), a, s, h, step0);
        if (threadIdx.x < SC) Ptt[threadIdx.x] = 0.0f;
        float acc[1][OVB / 16][4] = {}, pacc[1][2][4] = {}, pd[2] = {};
        for (int64_t i0 = 0; i0 < K; i0 += BC) {
            stage_rows<GV, BWD>(sm, a, s, h, step0, i0, min((int64_t)BC, K - i0), S0, vpitch, c0, nv);
            ladder_cp_async_wait_group<0>();
            __syncthreads();
            cumsum(A, P32, BC, a.gk.p, (const float *)(sm + L::G), gamma, rows);
            if (GV && i0 == 0) cumsum((float *)(sm + L::B), V32, OVB, true, nullptr, 0.0f, rows);
            __syncthreads();
            chunk_operands<T, BWD, false>((const uint16_t *)(sm + L::Q), (const uint16_t *)(sm + L::K), A, Qe,
                                          (uint16_t *)(sm + L::QEL), Qi, (uint16_t *)(sm + L::QIL), Kr,
                                          (uint16_t *)(sm + L::KRL), Ptt);
            for (int m = 0; m < 2; m++)
                diag_pair<T>(pd[m], (const uint16_t *)(sm + L::Q), (const uint16_t *)(sm + L::K), P16, A, P32,
                             a.gk.p != nullptr, m, tl, ul);
            __syncthreads();
            row_products<T, GV, BWD>(sm, acc, pacc, warp, si, sj, lane);
            __syncthreads(); /* the tiles are done with before the next rows (or P16) are written over them */
        }
        assemble_p<T, GV>((uint16_t *)(sm + L::Q), (float *)(sm + L::P), pacc, pd, Ptt, warp, si, sj, lane);
        __syncthreads();
        finish_out<T, GV, BWD>(a, sm, acc, c0, rows, warp, lane);
        __syncthreads(); /* v, R, B and P are done with before the next chunk is staged */
    }
}

template <class T, bool GV, bool BWD> ladder_status launch(const tc_call &a, const void *store, int64_t vpitch) {
    const auto kernel = out_kernel<T, GV, BWD>;
    LADDER_TRY(ladder_allow_smem(kernel, plan<GV, BWD>::TOTAL));
    const rec_call &c = a.c;
    const int64_t chunks = min(max((c.T + SC - 1) / SC, (int64_t)1), (int64_t)65535);
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)((c.V + OVB - 1) / OVB), (unsigned)chunks);
    kernel<<<grid, THREADS, plan<GV, BWD>::TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("out_kernel");
    return LADDER_OK;
}

} // namespace

namespace rec_tc {

template <class T> ladder_status out_pass(const tc_call &a, const void *store, int64_t vpitch, bool bwd) {
    if (bwd) return launch<T, true, true>(a, store, vpitch); /* o° is needed with gv only */
    return a.gv.p ? launch<T, true, false>(a, store, vpitch) : launch<T, false, false>(a, store, vpitch);
}

template ladder_status out_pass<__nv_bfloat16>(const tc_call &, const void *, int64_t, bool);
template ladder_status out_pass<__half>(const tc_call &, const void *, int64_t, bool);

} // namespace rec_tc
