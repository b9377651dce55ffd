/*
 * gpu_tensorcore/recurrent_states.cu: the pipeline's chain (step 1 of recurrent.cu's opening comment): the state
 * carried 64 steps a link and stored at every chunk's start, or, run from the sequence's end, the gradient of the
 * state stored at every chunk's end. Everything else runs in parallel from these stores.
 *
 * One link, chunk c of SC = 64 steps, A and B the cumulative row and column log gates from the chunk's start:
 *
 *     S_{c+1}  = exp(A_63 + B_63) ⊙ S_c + (k ⊙ exp(A_63 - A))^T (v ⊙ exp(B_63 - B))          ST_FWD, ST_S
 *     dH_{c-1} = exp(A_63 + B_63) ⊙ dH_c + (scale q ⊙ exp(A))^T (do ⊙ exp(B))                  ST_DH (from 0)
 *     dH_{c-1} = exp(A_63 + B_63) ⊙ dH_c                                                       ST_Z (from dht)
 *
 * every factor at most 1 for gates <= 0, one product of depth 64 on the matrix units a link. The update is separable
 * by rows and columns, so the state is tiled, 64 rows by 128 columns a block, and no tile recomputes another's
 * operands. The forward stores its states rounded to the input dtype, the precision of the product they feed; the
 * backward stores fp32 and multiplies with two-part operands (recurrent.cu's opening comment says why).
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

constexpr int THREADS = 256; /* 8 warps: warp w holds state rows 16 (w & 3).. and columns 64 (w >> 2).. */
constexpr int SKB = 64;      /* state rows (K channels) per block */
constexpr int SVB = 128;     /* state columns per block */
constexpr int SK16 = SKB + 8, SK32 = SKB + 4, SV16 = SVB + 8, SV32 = SVB + 4; /* padded row pitches */

/*
 * Shared memory (bytes): two buffers of the link's inputs (k or q, v or do, gk then A, g, gv then B), then the
 * operand tiles Kt (and its lo in the backward), the lo of v's operand (the backward with gv), and EA = exp(A_63).
 * At the benchmark's shapes (no gv) two blocks share an SM.
 */
template <int MODE, bool GV> struct plan {
    static constexpr bool Z = MODE == ST_Z, SPLIT = MODE == ST_S || MODE == ST_DH;
    static constexpr int K = 0, V = K + (Z ? 0 : SC * SK16 * 2), A = V + (Z ? 0 : SC * SV16 * 2);
    static constexpr int G = A + SC * SK32 * 4, B = G + SC * 4, BUF = B + (GV ? SC * SV32 * 4 : 0);
    static constexpr int KT = 2 * BUF, KTL = KT + (Z ? 0 : SC * SK16 * 2), VL = KTL + (SPLIT ? SC * SK16 * 2 : 0);
    static constexpr int EA = VL + (SPLIT && GV ? SC * SV16 * 2 : 0), TOTAL = EA + SKB * 4;
    static_assert(SC * SK32 * 4 >= SC * SV16 * 2, "an fp16 v's lo tile fits over A (split_f16_tile)");
};

/*
 * stage_tile() for a chunk that lies whole in the sequence, from an input whose rows go 16 bytes at a time, WIDTH
 * columns all real: its rows are consecutive tokens, so a thread copies the same column of every ROWS-th row, one
 * pointer moving by a fixed stride (stage_tile() computes each copy's token and 64-bit address beside the test of
 * its element fallback, which left the links bound by instruction issue).
 */
template <class U, int WIDTH>
__device__ __forceinline__ void stage_whole(U *dst, int pitch, const view<U> &x, const tc_call &a, const rec_seq &s,
                                            int64_t h, int64_t step0, int64_t c0) {
    constexpr int E = 16 / sizeof(U), PER_ROW = WIDTH / E, ROWS = THREADS / PER_ROW; /* rows a pass copies */
    static_assert(THREADS % PER_ROW == 0 && SC % ROWS == 0, "every thread takes the same column each pass");
    const int64_t dt = a.c.reverse ? -x.s[1] : x.s[1]; /* the next step's row */
    const int r = threadIdx.x / PER_ROW, col = threadIdx.x % PER_ROW * E;
    const U *from = x.p + s.b * x.s[0] + rec_token(a.c, s, step0) * x.s[1] + h * x.s[2] + c0 + col + r * dt;
    U *to = dst + r * pitch + col;
#pragma unroll 1 /* unrolled, the copies' addresses stayed live across the link: spills */
    for (int k = 0; k < SC / ROWS; k++, from += ROWS * dt, to += ROWS * pitch) ladder_cp_async16(to, from, true);
}

/* One input's tile of the link: stage_whole() where it can, stage_tile() otherwise. */
template <class U, int WIDTH>
__device__ __forceinline__ void stage_input(U *dst, int pitch, const view<U> &x, const tc_call &a, const rec_seq &s,
                                            int64_t h, int64_t step0, int64_t c0, int64_t n, bool whole) {
    if (whole && x.vec && n == WIDTH)
        stage_whole<U, WIDTH>(dst, pitch, x, a, s, h, step0, c0);
    else
        stage_tile<U>(dst, pitch, WIDTH, x, a, s, h, step0, c0, n);
}

/* Stage chunk @p ch's inputs into buffer @p b: rows i0.. (nk real) and columns c0.. (nv real) of the state. */
template <int MODE, bool GV>
__device__ void stage_link(unsigned char *b, const tc_call &a, const rec_seq &s, int64_t h, int64_t ch, int64_t i0,
                           int64_t c0, int64_t nk, int64_t nv) {
    using L = plan<MODE, GV>;
    const view<uint16_t> &kx = MODE == ST_DH ? a.q : a.k, &vx = MODE == ST_DH ? a.dO : a.v;
    const int64_t step0 = ch * SC;
    const bool whole = step0 + SC <= s.len; /* every step of the chunk in the sequence */
    if (MODE != ST_Z) {
        stage_input<uint16_t, SKB>((uint16_t *)(b + L::K), SK16, kx, a, s, h, step0, i0, nk, whole);
        stage_input<uint16_t, SVB>((uint16_t *)(b + L::V), SV16, vx, a, s, h, step0, c0, nv, whole);
    }
    if (a.gk.p) stage_input<float, SKB>((float *)(b + L::A), SK32, a.gk, a, s, h, step0, i0, nk, whole);
    if (GV) stage_input<float, SVB>((float *)(b + L::B), SV32, a.gv, a, s, h, step0, c0, nv, whole);
    stage_steps((float *)(b + L::G), nullptr, a, s, h, step0);
    ladder_cp_async_commit();
}

/*
 * The link's operands, from the cumulative gates: Kt = k ⊙ exp(A_63 - A) (ST_DH: scale q ⊙ exp(A)), rounded to T in
 * the forward, a bf16 hi + lo in the backward; with gv, v ⊙ exp(B_63 - B) (ST_DH: do ⊙ exp(B)) over the staged tile,
 * the same way; without gv, EA = exp(A_63), the row decay.
 */
template <class T, int MODE, bool GV>
__device__ void link_operands(unsigned char *sm, unsigned char *b, float scale) {
    using L = plan<MODE, GV>;
    constexpr bool REV = MODE == ST_DH;
    const float *A = (const float *)(b + L::A), *Ac = A + (SC - 1) * SK32;
    if (MODE == ST_Z) {
        for (int i = threadIdx.x; !GV && i < SKB; i += blockDim.x) ((float *)(sm + L::EA))[i] = expf(Ac[i]);
        return;
    }
    const float qs = REV ? scale : 1.0f;
    const uint16_t *k = (const uint16_t *)(b + L::K);
    uint16_t *Kt = (uint16_t *)(sm + L::KT), *Ktl = (uint16_t *)(sm + L::KTL);
    for (int id = threadIdx.x; id < SC * SKB / 2; id += blockDim.x) {
        const int r = id / (SKB / 2), i = id % (SKB / 2) * 2;
        const uint32_t k2 = ladder_lds32(k + r * SK16 + i);
        const float2 Ar = *(const float2 *)(A + r * SK32 + i);
        const float x0 = qs * ladder_to_float<T>(k2 & 0xffff) * __expf(REV ? Ar.x : Ac[i] - Ar.x);
        const float x1 = qs * ladder_to_float<T>(k2 >> 16) * __expf(REV ? Ar.y : Ac[i + 1] - Ar.y);
        if (L::SPLIT) {
            const uint2 x = split2<BF>(x0, x1);
            *(uint32_t *)(Kt + r * SK16 + i) = x.x, *(uint32_t *)(Ktl + r * SK16 + i) = x.y;
        } else {
            *(uint32_t *)(Kt + r * SK16 + i) = ladder_pack2_float<T>(x0, x1);
        }
    }
    for (int i = threadIdx.x; !GV && i < SKB; i += blockDim.x) ((float *)(sm + L::EA))[i] = expf(Ac[i]);
    const float *B = (const float *)(b + L::B), *Bc = B + (SC - 1) * SV32;
    uint16_t *v = (uint16_t *)(b + L::V), *vl = (uint16_t *)(sm + L::VL);
    for (int id = threadIdx.x; GV && id < SC * SVB / 2; id += blockDim.x) {
        const int r = id / (SVB / 2), j = id % (SVB / 2) * 2;
        const uint32_t v2 = ladder_lds32(v + r * SV16 + j);
        const float2 Br = *(const float2 *)(B + r * SV32 + j);
        const float x0 = ladder_to_float<T>(v2 & 0xffff) * __expf(REV ? Br.x : Bc[j] - Br.x);
        const float x1 = ladder_to_float<T>(v2 >> 16) * __expf(REV ? Br.y : Bc[j + 1] - Br.y);
        if (L::SPLIT) {
            const uint2 x = split2<BF>(x0, x1);
            *(uint32_t *)(v + r * SV16 + j) = x.x, *(uint32_t *)(vl + r * SV16 + j) = x.y;
        } else {
            *(uint32_t *)(v + r * SV16 + j) = ladder_pack2_float<T>(x0, x1);
        }
    }
}

/*
 * The link itself on the warp's fragments: the decay exp(A_63 + B_63) (without gv the row factor EA alone, one
 * load for both columns of a pair), then the product. The forward's operands are one rounding each; the backward's
 * Kt is a hi + lo pair, and v (or do) a bf16 input as it is, or a pair: an fp16 input split, or with gv the operand
 * of link_operands() (mma_split). The gate sums need about 16 bits of the states.
 */
template <class T, int MODE, bool GV>
__device__ __forceinline__ void link_update(float (&S)[1][8][4], const unsigned char *sm, const unsigned char *b,
                                            int r0, int j0, int lane) {
    using L = plan<MODE, GV>;
    constexpr bool F16 = L::SPLIT && !GV && is_f16<T>::value; /* v's lo over A (split_link) */
    const int g = lane >> 2, tq = lane & 3;
    const float *Ac = (const float *)(b + L::A) + (SC - 1) * SK32, *Bc = (const float *)(b + L::B) + (SC - 1) * SV32;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = r0 + g + 8 * (e >> 1), j = j0 + 8 * nt + 2 * tq + (e & 1);
            S[0][nt][e] *= GV ? __expf(Ac[i] + Bc[j]) : ((const float *)(sm + L::EA))[i];
        }
    if (MODE == ST_Z) return;
    const uint16_t *Kt = (const uint16_t *)(sm + L::KT) + r0, *Ktl = (const uint16_t *)(sm + L::KTL) + r0;
    const uint16_t *v = (const uint16_t *)(b + L::V) + j0;
    const uint16_t *vl = (const uint16_t *)(F16 ? b + L::A : sm + L::VL) + j0;
    if (!L::SPLIT) {
        ladder_mma_warp_tile<T, 1, 8, SC / 16, true, true>(S, Kt, SK16, v, SV16, lane);
        return;
    }
    constexpr int VK = GV || F16 ? OP_PAIR : OP_BF16;
#pragma unroll 1 /* 16 steps at a time: two whole products in a row spilled */
    for (int kk = 0; kk < SC; kk += 16)
        mma_split<OP_PAIR, VK, 1, 8, 1, true, true>(S, Kt + kk * SK16, Ktl + kk * SK16, SK16, v + kk * SV16,
                                                    vl + kk * SV16, SV16, lane);
}

/*
 * write(i, j, x0, x1, pair) for the warp's fragments: state rows and columns (i, j) and (i, j + 1) of the tile, the
 * second one only where pair.
 */
template <class W>
__device__ __forceinline__ void each_pair(const float (&S)[1][8][4], int r0, int j0, int64_t nk, int64_t nv,
                                          int lane, W &&write) {
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) {
            const int64_t i = r0 + g + 8 * (e >> 1), j = j0 + 8 * nt + 2 * tq;
            if (i < nk && j < nv) write(i, j, S[0][nt][e], S[0][nt][e + 1], j + 1 < nv);
        }
}

/*
 * The tile's state at a chunk's edge into the store (16-bit T in the forward, fp32 otherwise; vpitch is even, so every
 * pair is 4- or 8-byte aligned): a whole tile from two row pointers, its fragments at fixed offsets from them.
 */
template <class T, int MODE>
__device__ __forceinline__ void store_link(void *store, int64_t slot, int64_t vpitch, const float (&S)[1][8][4],
                                           int64_t i0, int64_t c0, int r0, int j0, int64_t nk, int64_t nv, int lane) {
    const int64_t at = slot + (i0 + r0 + (lane >> 2)) * vpitch + c0 + j0 + 2 * (lane & 3);
    if (nk == SKB && nv == SVB && MODE != ST_FWD) {
        float *p0 = (float *)store + at, *p1 = p0 + 8 * vpitch;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
            *(float2 *)(p0 + 8 * nt) = make_float2(S[0][nt][0], S[0][nt][1]),
                          *(float2 *)(p1 + 8 * nt) = make_float2(S[0][nt][2], S[0][nt][3]);
    } else if (nk == SKB && nv == SVB) {
        uint16_t *p0 = (uint16_t *)store + at, *p1 = p0 + 8 * vpitch;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
            *(uint32_t *)(p0 + 8 * nt) = ladder_pack2_float<T>(S[0][nt][0], S[0][nt][1]),
                           *(uint32_t *)(p1 + 8 * nt) = ladder_pack2_float<T>(S[0][nt][2], S[0][nt][3]);
    } else {
        each_pair(S, r0, j0, nk, nv, lane, [&](int64_t i, int64_t j, float x0, float x1, bool pair) {
            const int64_t x = slot + (i0 + i) * vpitch + c0 + j;
            if (MODE != ST_FWD) {
                float *out = (float *)store + x;
                if (pair)
                    *(float2 *)out = make_float2(x0, x1);
                else
                    out[0] = x0;
            } else {
                uint16_t *out = (uint16_t *)store + x;
                if (pair)
                    *(uint32_t *)out = ladder_pack2_float<T>(x0, x1);
                else
                    out[0] = ladder_from_float<T>(x0);
            }
        });
    }
}

/*
 * One block per (sequence x head, SVB state columns, SKB state rows), 8 warps, each holding 16 rows x 64 columns of
 * the tile as the fp32 C fragments of S (S, not S^T: the update S += Kt^T v is ladder_mma_warp_tile's A = X^T form).
 * It starts from h0 (ST_FWD, ST_S), 0 (ST_DH) or dht (ST_Z), stores the state at each chunk's edge in @p store
 * ([slot][H][K][vpitch], chunk_slot()), and the last one in ht (ST_FWD), dh0 (ST_DH) or dh0z (ST_Z, added to dh0).
 */
template <class T, int MODE, bool GV>
__global__ void __launch_bounds__(THREADS, GV ? 1 : 2) states_kernel(tc_call a, void *store, int64_t vpitch) {
    using L = plan<MODE, GV>;
    constexpr bool REV = MODE == ST_DH || MODE == ST_Z;
    extern __shared__ __align__(16) unsigned char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
    const int64_t n = blockIdx.x / a.c.H, h = blockIdx.x % a.c.H, c0 = blockIdx.y * SVB, i0 = blockIdx.z * SKB;
    const int64_t K = a.c.K, V = a.c.V, nk = min((int64_t)SKB, K - i0), nv = min((int64_t)SVB, V - c0);
    const rec_seq s = rec_seq_of(a.c, n);
    const int64_t nch = (s.len + SC - 1) / SC;
    const float gamma = rec_ld(a.c.g_gamma, h, 0, 0, 0);
    const int r0 = 16 * (warp & 3), j0 = 64 * (warp >> 2); /* the warp's first row and column in the tile */
    float S[1][8][4]; /* fragment nt, element e: row r0 + g + 8 (e >> 1), column j0 + 8 nt + 2 tq + (e & 1) */
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t i = r0 + g + 8 * (e >> 1), j = j0 + 8 * nt + 2 * tq + (e & 1);
            S[0][nt][e] = MODE != ST_DH && i < nk && j < nv ? rec_ld(MODE == ST_Z ? a.c.dht : a.c.h0, n, h, i0 + i, c0 + j) : 0.0f;
        }
    if (nch > 0) stage_link<MODE, GV>(sm, a, s, h, REV ? nch - 1 : 0, i0, c0, nk, nv);
    for (int64_t it = 0; it < nch; it++) {
        const int64_t ch = REV ? nch - 1 - it : it;
        store_link<T, MODE>(store, (chunk_slot(a, s, n, ch) * a.c.H + h) * K * vpitch, vpitch, S, i0, c0, r0, j0, nk, nv,
                            lane);
        unsigned char *b = sm + (it & 1) * L::BUF;
        if (it + 1 < nch) {
            stage_link<MODE, GV>(sm + ((it + 1) & 1) * L::BUF, a, s, h, REV ? ch - 1 : ch + 1, i0, c0, nk, nv);
            ladder_cp_async_wait_group<1>();
        } else {
            ladder_cp_async_wait_group<0>();
        }
        __syncthreads();
        const int rows = (int)min((int64_t)SC, s.len - ch * SC);
        cumsum((float *)(b + L::A), SK32, SKB, a.gk.p, (const float *)(b + L::G), gamma, rows);
        if (GV) cumsum((float *)(b + L::B), SV32, SVB, true, nullptr, 0.0f, rows);
        __syncthreads();
        link_operands<T, MODE, GV>(sm, b, a.c.scale);
        __syncthreads();
        if (L::SPLIT && !GV && is_f16<T>::value) { /* fp16 v (do) as bf16 pairs, lo over A, which is done with */
            split_f16_tile<SVB>((uint16_t *)(b + L::V), (uint16_t *)(b + L::A));
            __syncthreads();
        }
        link_update<T, MODE, GV>(S, sm, b, r0, j0, lane);
        __syncthreads(); /* every warp is done with this buffer and the operands before they are refilled */
    }
    float *last = MODE == ST_FWD ? a.c.ht : MODE == ST_DH ? a.c.dh0 : MODE == ST_Z ? a.dh0z : nullptr;
    if (last)
        each_pair(S, r0, j0, nk, nv, lane, [&](int64_t i, int64_t j, float x0, float x1, bool pair) {
            const int64_t at = ((n * a.c.H + h) * K + i0 + i) * V + c0 + j;
            last[at] = x0;
            if (pair) last[at + 1] = x1;
            if (MODE == ST_Z && a.c.dh0) { /* dh0 = its do part (ST_DH, before) + dht's */
                a.c.dh0[at] += x0;
                if (pair) a.c.dh0[at + 1] += x1;
            }
        });
}

template <class T, int MODE, bool GV> ladder_status launch(const tc_call &a, void *store, int64_t vpitch) {
    const auto kernel = states_kernel<T, MODE, GV>;
    LADDER_TRY(ladder_allow_smem(kernel, plan<MODE, GV>::TOTAL));
    const rec_call &c = a.c;
    const dim3 grid((unsigned)(c.N * c.H), (unsigned)((c.V + SVB - 1) / SVB), (unsigned)((c.K + SKB - 1) / SKB));
    kernel<<<grid, THREADS, plan<MODE, GV>::TOTAL>>>(a, store, vpitch);
    LADDER_LAUNCH_CHECK("states_kernel");
    return LADDER_OK;
}

template <class T, int MODE> ladder_status launch_gv(const tc_call &a, void *store, int64_t vpitch) {
    return a.gv.p ? launch<T, MODE, true>(a, store, vpitch) : launch<T, MODE, false>(a, store, vpitch);
}

} // namespace

namespace rec_tc {

template <class T> ladder_status states_pass(const tc_call &a, states_mode mode, void *store, int64_t vpitch) {
    switch (mode) {
    case ST_FWD: return launch_gv<T, ST_FWD>(a, store, vpitch);
    case ST_S: return launch_gv<T, ST_S>(a, store, vpitch);
    case ST_DH: return launch_gv<T, ST_DH>(a, store, vpitch);
    case ST_Z: return launch_gv<BF, ST_Z>(a, store, vpitch); /* reads no 16-bit input */
    }
    return ladder_fail(LADDER_ERR_ARG, "states_pass: unknown mode %d", (int)mode);
}

template ladder_status states_pass<__nv_bfloat16>(const tc_call &, states_mode, void *, int64_t);
template ladder_status states_pass<__half>(const tc_call &, states_mode, void *, int64_t);

} // namespace rec_tc
