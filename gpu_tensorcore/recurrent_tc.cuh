/*
 * gpu_tensorcore/recurrent_tc.cuh: what the tensor-core rung's kernels share: the call as every kernel takes it, the
 * staging of a chunk's rows into shared memory, the cumulative sums of its log gates, the two-part operands of the
 * backward and the products that take them, the pairs inside a sub-chunk, and the entry points of the rung's files.
 * recurrent.cu's opening comment tells the pipeline they make.
 */
#ifndef LADDER_GPU_TENSORCORE_RECURRENT_TC_CUH
#define LADDER_GPU_TENSORCORE_RECURRENT_TC_CUH

#include <stdint.h>

#include "cuda_util.cuh"
#include "fast_exp.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"

namespace rec_tc {

constexpr int SC = 64;  /* steps per chunk: a link of the states pass, a block of the output passes */
constexpr int SUB = 16; /* steps per sub-chunk: one k step of mma.sync m16n8k16 */
constexpr int BC = 64;  /* state rows (or columns) per tile of the output passes */
constexpr int P16 = BC + 8, P32 = BC + 4; /* row pitches of their 16-bit and fp32 tiles: 16 bytes of padding a row */

/* The backward's operand format: bf16 whatever the inputs are (recurrent.cu's opening comment says why). */
using BF = __nv_bfloat16;

/* A strided input as the kernels read it, with whether its rows may go 16 bytes at a time (cp.async). */
template <class U> struct view {
    const U *p;
    int64_t s[4];
    bool vec;
};

/*
 * One call, as every kernel takes it. The backward's fp32 scratch is contiguous ([B,T,H,K] or [B,T,H,V], and
 * [N,H,K,V] for dh0z), nullptr where nothing reads it. The gate sums need dq, dk, dv and o without each step's own
 * diagonal term (dq°, dk°, dv°, o°: chapter 2, "The chunked backward"), and dht's part of dk, dv and dh0 apart.
 */
struct tc_call {
    rec_call c;                 /* sizes, scale, reverse; the f32 gates, h0, dht; the f32 outputs */
    view<uint16_t> q, k, v, dO; /* 16-bit inputs, raw patterns */
    view<float> gk, gv;         /* the same tensors as c.gk, c.gv, with their vec flags */
    uint16_t *o;                /* forward output */
    float *dq_part, *dk_part;   /* dq°, dk°: for gate_rows_kernel */
    float *o32, *dv32;          /* with gv, o° and dv°: for gate_cols_kernel */
    float *dkz, *dvz, *dh0z;    /* dht's part of dk, dv, dh0 (the states pass ST_Z, the gradients' Z mode) */
};

/* B*T*H, the flat tokens of the [B,T,H,..] tensors. */
__host__ __device__ __forceinline__ int64_t token_count(const tc_call &a) { return a.c.B * a.c.T * a.c.H; }

/* The token of step @p step of sequence @p s, or -1 past its end. */
__device__ __forceinline__ int64_t token_of(const tc_call &a, const rec_seq &s, int64_t step) {
    return step < s.len ? rec_token(a.c, s, step) : -1;
}

/*
 * Where chunk @p chunk of sequence @p n keeps its state in a states pass's store: floor(first token / SC) + n + chunk,
 * over the flat [B*T] tokens. A sequence's chunks take consecutive slots and the next sequence starts past them, so
 * no two chunks share one; there are at most B*T/SC + N + 1 slots (state_slots()).
 */
__device__ __forceinline__ int64_t chunk_slot(const tc_call &a, const rec_seq &s, int64_t n, int64_t chunk) {
    return (s.b * a.c.T + s.start) / SC + n + chunk;
}
__host__ __device__ __forceinline__ int64_t state_slots(const rec_call &c) { return c.B * c.T / SC + c.N + 1; }

/*
 * Stage rows step0 .. step0+ROWS-1 (columns c0 .. c0+width-1, ncols of them real) of a [B,T,H,C] input into dst,
 * row pitch @p pitch: 16 bytes per cp.async where the input allows it, element loads otherwise; zeros past the
 * sequence's end and past the last column, so that padding adds nothing to any product.
 */
template <class U, int ROWS = SC>
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

/* The chunk's scalar gates g (0 past the sequence's end) and each step's row R in the [B,T,H] tensors (-1 there). */
__device__ __forceinline__ void stage_steps(float *g, int64_t *R, const tc_call &a, const rec_seq &s, int64_t h,
                                            int64_t step0) {
    if (threadIdx.x < SC) {
        const int64_t t = token_of(a, s, step0 + threadIdx.x);
        g[threadIdx.x] = t >= 0 ? rec_ld(a.c.g, s.b, t, h, 0) : 0.0f;
        if (R) R[threadIdx.x] = t >= 0 ? rec_row(a.c, s.b, t, h) : -1;
    }
}

/*
 * The cumulative sums of a chunk's log gates, in place over the staged tile: x[r][i] becomes the sum over steps
 * 0..r of (gk + g) + g_gamma (rec_row_gate's order; without gk, g + g_gamma in every column), 0 past the
 * sequence's end (rows >= @p rows). For the column gates gv, @p g is nullptr and @p gamma 0. One thread per column;
 * the loads of 16 rows go out before their chain of adds.
 */
__device__ __forceinline__ void cumsum(float *x, int pitch, int width, bool staged, const float *g, float gamma,
                                       int rows) {
    for (int i = threadIdx.x; i < width; i += blockDim.x) {
        float acc = 0.0f;
        for (int r0 = 0; r0 < SC; r0 += SUB) { /* SUB rows' loads at a time: 64 would take 64 registers */
            float y[SUB];
#pragma unroll
            for (int r = 0; r < SUB; r++) y[r] = (staged ? x[(r0 + r) * pitch + i] : 0.0f) + (g ? g[r0 + r] : 0.0f);
#pragma unroll
            for (int r = 0; r < SUB; r++) {
                acc += r0 + r < rows ? y[r] + gamma : 0.0f;
                x[(r0 + r) * pitch + i] = acc;
            }
        }
    }
}

/*
 * x rounded to 16 bits (.x) and what that leaves, rounded again (.y), two elements to a register each: hi + lo
 * carries x to about 2^-16 of itself where one rounding keeps 2^-8 (bf16). The backward multiplies with both.
 */
template <class T> __device__ __forceinline__ uint2 split2(float x0, float x1) {
    const uint16_t h0 = ladder_from_float<T>(x0), h1 = ladder_from_float<T>(x1);
    return make_uint2(ladder_pack2(h0, h1), ladder_pack2(ladder_from_float<T>(x0 - ladder_to_float<T>(h0)),
                                                         ladder_from_float<T>(x1 - ladder_to_float<T>(h1))));
}

/*
 * How a tile holds an operand of the backward's products (mma_split): OP_BF16, one bf16 tile taken as exact (a bf16
 * input as it is); OP_PAIR, two bf16 tiles, hi and lo (split2), at the same offsets. An fp16 input becomes a pair
 * exactly (split_f16_tile(): 11 significant bits in two of 8).
 */
enum op_kind { OP_BF16, OP_PAIR };

/* Whether T is fp16, whose inputs the backward splits into bf16 pairs. */
template <class T> struct is_f16 {
    static constexpr bool value = false;
};
template <> struct is_f16<__half> {
    static constexpr bool value = true;
};

/*
 * An fp16 tile of SC rows and W columns (pitch W + 8) split in place: its bf16 hi over it, its lo into @p lo at the
 * same offsets. Every thread of the block takes a share (no barrier inside).
 */
template <int W> __device__ __forceinline__ void split_f16_tile(uint16_t *x, uint16_t *lo) {
    for (int id = threadIdx.x; id < SC * W / 2; id += blockDim.x) {
        const int at = id / (W / 2) * (W + 8) + id % (W / 2) * 2;
        const uint32_t x2 = ladder_lds32(x + at);
        const uint2 y = split2<BF>(ladder_to_float<__half>(x2 & 0xffff), ladder_to_float<__half>(x2 >> 16));
        *(uint32_t *)(x + at) = y.x, *(uint32_t *)(lo + at) = y.y;
    }
}

/*
 * acc += A B on the matrix units in bf16, as ladder_mma_warp_tile (the same tiles, pointers and warp tile of MT*16
 * rows, NT*8 columns, K16*16 k's), with A and B held as op_kind AK and BK (@p Al, @p Bl: the lo tiles of OP_PAIR):
 * hi*hi, and hi*lo, lo*hi where a side is a pair. The lo*lo term, 2^-16 of the product, is left out.
 */
template <int AK, int BK, int MT, int NT, int K16, bool A_KM, bool B_KN>
__device__ __forceinline__ void mma_split(float (&acc)[MT][NT][4], const uint16_t *A, const uint16_t *Al, int lda,
                                          const uint16_t *B, const uint16_t *Bl, int ldb, int lane) {
    static_assert(NT % 2 == 0, "B fragments come in pairs of 8-column tiles");
#pragma unroll
    for (int kk = 0; kk < K16; kk++) {
        uint32_t a[MT][4], al[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            const int at = A_KM ? (kk * 16 + lane % 8 + (lane / 16) * 8) * lda + mt * 16 + (lane / 8 % 2) * 8
                                : (mt * 16 + lane % 16) * lda + kk * 16 + (lane / 16) * 8;
            if (A_KM)
                ladder_ldsm_x4_trans(a[mt], A + at);
            else
                ladder_ldsm_x4(a[mt], A + at);
            if (AK == OP_PAIR && A_KM) ladder_ldsm_x4_trans(al[mt], Al + at);
            if (AK == OP_PAIR && !A_KM) ladder_ldsm_x4(al[mt], Al + at);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            const int at = B_KN ? (kk * 16 + lane % 8 + (lane / 8 % 2) * 8) * ldb + nt * 8 + (lane / 16) * 8
                                : (nt * 8 + lane % 8 + (lane / 16) * 8) * ldb + kk * 16 + (lane / 8 % 2) * 8;
            uint32_t b[4], bl[4];
            if (B_KN)
                ladder_ldsm_x4_trans(b, B + at);
            else
                ladder_ldsm_x4(b, B + at);
            if (BK == OP_PAIR && B_KN) ladder_ldsm_x4_trans(bl, Bl + at);
            if (BK == OP_PAIR && !B_KN) ladder_ldsm_x4(bl, Bl + at);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                ladder_mma_m16n16k16<BF>(acc[mt][nt], acc[mt][nt + 1], a[mt], b);
                if (BK == OP_PAIR) ladder_mma_m16n16k16<BF>(acc[mt][nt], acc[mt][nt + 1], a[mt], bl);
                if (AK == OP_PAIR) ladder_mma_m16n16k16<BF>(acc[mt][nt], acc[mt][nt + 1], al[mt], b);
            }
        }
    }
}

/* Two floats into a 16-bit tile at @p at: rounded to T, or (SPLIT) as a bf16 hi + lo into @p hi and @p lo. */
template <class T, bool SPLIT>
__device__ __forceinline__ void put2(uint16_t *hi, uint16_t *lo, int at, float x0, float x1) {
    if (SPLIT) {
        const uint2 y = split2<BF>(x0, x1);
        *(uint32_t *)(hi + at) = y.x, *(uint32_t *)(lo + at) = y.y;
    } else {
        *(uint32_t *)(hi + at) = ladder_pack2_float<T>(x0, x1);
    }
}

/*
 * fp32 state rows r0.. (nr of them) and columns c0.. (nc; W of them in the tile, NT threads, NP pairs a thread) of a
 * store, into registers, zeros past the ends (the store holds nothing there). Every load goes out before the first
 * is used (state_split): one load at a time, each split and stored before the next, left the blocks waiting on
 * memory (long-scoreboard stalls, in Nsight Compute).
 */
template <int W, int NT, int NP>
__device__ __forceinline__ void state_load(float2 (&x)[NP], const float *st, int64_t vpitch, int64_t r0, int64_t nr,
                                           int64_t c0, int64_t nc) {
    constexpr int RS = NT / (W / 2); /* rows between a thread's pairs; its column stays */
    static_assert(NT % (W / 2) == 0, "a thread keeps one column");
    const int rt = threadIdx.x / (W / 2), c = threadIdx.x % (W / 2) * 2;
    const float *p = st + (r0 + rt) * vpitch + c0 + c; /* one address, then a row step a pair */
#pragma unroll
    for (int u = 0; u < NP; u++) {
        x[u] = rt + u * RS < nr && c < nc ? __ldg((const float2 *)(p + u * RS * vpitch)) /* vpitch even: aligned */
                                          : make_float2(0.0f, 0.0f);
        if (c + 1 >= nc) x[u].y = 0.0f;
    }
}

/* The loaded pairs as bf16 hi + lo tiles [row][column], pitch W + 8, from row @p r0 of the tile on. */
template <int W, int NT, int NP>
__device__ __forceinline__ void state_split(uint16_t *hi, uint16_t *lo, int r0, const float2 (&x)[NP]) {
#pragma unroll
    for (int u = 0; u < NP; u++) {
        const int id = threadIdx.x + u * NT, r = r0 + id / (W / 2), c = id % (W / 2) * 2;
        put2<BF, true>(hi, lo, r * (W + 8) + c, x[u].x, x[u].y);
    }
}

/* Rows of the operands that factor the pairs across sub-chunks: 16 + 32 + 48, the earlier steps of sub-chunks 1..3. */
constexpr int KR = 96;

/*
 * Row r of such an operand: its section (the sub-chunk 1, 2 or 3 it serves) and the step it holds, one of the steps
 * before that sub-chunk (section sub starts at row 8 sub (sub - 1)).
 */
__host__ __device__ __forceinline__ int2 pair_rows(int r) {
    const int sub = r < 16 ? 1 : r < 48 ? 2 : 3;
    return make_int2(sub, r - 8 * sub * (sub - 1));
}

/*
 * The entries below the diagonal of the four 16 x 16 diagonal sub-blocks of a chunk's pair matrix,
 * P_ts = sum_i q_t[i] k_s[i] exp(A_t[i] - A_s[i]), over the BC channels of a tile (q, k [step][channel], pitch
 * @p p16; A the cumulative row gates, pitch @p p32), summed in fp32 with the decay per pair and channel, each factor
 * at most 1 for gates <= 0; without gk the decay is the same in every channel, one exponential a pair. Thread
 * (@p m, @p tl, @p ul) takes (tl, ul) of sub-block 2m when ul < tl, (ul, tl) of 2m + 1 when ul > tl (none when
 * tl == ul), and adds it to @p pd: so 240 threads take the 480 entries of two sub-blocks each, or 480 threads one.
 */
template <class T>
__device__ __forceinline__ void diag_pair(float &pd, const uint16_t *q, const uint16_t *k, int p16, const float *A,
                                          int p32, bool gk, int m, int tl, int ul) {
    if (tl == ul) return;
    const int d = 2 * m + (ul > tl), t = SUB * d + max(tl, ul), u = SUB * d + min(tl, ul);
    float p = 0.0f;
    for (int i0 = 0; i0 < BC; i0 += 8) {
#pragma unroll
        for (int i = i0; i < i0 + 8; i += 2) {
            const uint32_t q2 = ladder_lds32(q + t * p16 + i), k2 = ladder_lds32(k + u * p16 + i);
            const float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
            const float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
            if (gk) {
                const float2 At = *(const float2 *)(A + t * p32 + i), Au = *(const float2 *)(A + u * p32 + i);
                p = fmaf(x0, ladder_exp_ftz(At.x - Au.x), p), p = fmaf(x1, ladder_exp_ftz(At.y - Au.y), p);
            } else {
                p += x0 + x1;
            }
        }
    }
    pd += gk ? p : p * ladder_exp_ftz(A[t * p32] - A[u * p32]);
}

/*
 * A chunk's operands over one tile of BC row channels (q, k [step][channel], pitch P16; A the cumulative row gates,
 * pitch P32), every factor at most 1 for gates <= 0: X_t = q_t ⊙ exp(A_t) (the state part of o), or with KT
 * X_t = k_t ⊙ exp(A_63 - A_t) (of dv), always split; Qi_t = q_t ⊙ exp(A_t - A_b) for t >= 16, b = 16 (t / 16) - 1
 * the step before t's sub-chunk; Kr (pair_rows()) = k_s ⊙ exp(A_b - A_s) for the steps s <= b of the sub-chunks
 * before; and Ptt[t] += q_t . k_t, a warp per row (no decay: exp(A_t - A_t) = 1). Qi and Kr are the two sides of P's
 * entries between sub-chunks, q_t k_s exp(A_t - A_s) = (q_t exp(A_t - A_b)) (k_s exp(A_b - A_s)). Rounded to T, or
 * with SPLIT as hi + lo pairs (the lo tiles: Xl, Qil, Krl).
 */
template <class T, bool SPLIT, bool KT>
__device__ void chunk_operands(const uint16_t *q, const uint16_t *k, const float *A, uint16_t *X, uint16_t *Xl,
                               uint16_t *Qi, uint16_t *Qil, uint16_t *Kr, uint16_t *Krl, float *Ptt) {
    const float *Ac = A + (SC - 1) * P32;
    for (int id = threadIdx.x; id < SC * BC / 2; id += blockDim.x) {
        const int t = id / (BC / 2), i = id % (BC / 2) * 2, at = t * P16 + i;
        const float2 At = *(const float2 *)(A + t * P32 + i);
        const uint32_t q2 = ladder_lds32(q + at), k2 = ladder_lds32(k + at);
        const float q0 = ladder_to_float<T>(q2 & 0xffff), q1 = ladder_to_float<T>(q2 >> 16);
        const float k0 = ladder_to_float<T>(k2 & 0xffff), k1 = ladder_to_float<T>(k2 >> 16);
        if (KT)
            put2<BF, true>(X, Xl, at, k0 * ladder_exp_ftz(Ac[i] - At.x), k1 * ladder_exp_ftz(Ac[i + 1] - At.y));
        else
            put2<T, SPLIT>(X, Xl, at, q0 * ladder_exp_ftz(At.x), q1 * ladder_exp_ftz(At.y));
        if (t >= SUB) {
            const float2 Ab = *(const float2 *)(A + (t / SUB * SUB - 1) * P32 + i);
            put2<T, SPLIT>(Qi, Qil, at, q0 * ladder_exp_ftz(At.x - Ab.x), q1 * ladder_exp_ftz(At.y - Ab.y));
        }
        float dot = q0 * k0 + q1 * k1;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        if ((threadIdx.x & 31) == 0) Ptt[t] += dot;
    }
    for (int id = threadIdx.x; id < KR * BC / 2; id += blockDim.x) {
        const int r = id / (BC / 2), i = id % (BC / 2) * 2;
        const int2 kr = pair_rows(r);
        const float2 As = *(const float2 *)(A + kr.y * P32 + i), Ab = *(const float2 *)(A + (SUB * kr.x - 1) * P32 + i);
        const uint32_t k2 = ladder_lds32(k + kr.y * P16 + i);
        put2<T, SPLIT>(Kr, Krl, r * P16 + i, ladder_to_float<T>(k2 & 0xffff) * ladder_exp_ftz(Ab.x - As.x),
                       ladder_to_float<T>(k2 >> 16) * ladder_exp_ftz(Ab.y - As.y));
    }
}

/*
 * With gv, the pairs' column weights: acc += sum over steps u of @p W(u) x_u[j] exp(sign (B_t[j] - B_u[j])) for one
 * output element (step t, column j), u running over [@p u0, @p u1): o and dv take P's row or column as W, x = v or
 * do. Every factor is at most 1 for gates <= 0 (sign is +1 for u <= t, -1 for u >= t), and the sum stays fp32: the
 * weight depends on the column, so it factors into no matrix product of bounded operands inside a sub-chunk, and
 * the chunk's 64 steps are summed this way whole (no sub-chunk edges: the column weights are one exponential per
 * pair and column either way). x is a raw 16-bit tile [step][column] (pitch @p xp), B fp32 (pitch @p bp).
 */
template <class T, class Wf>
__device__ __forceinline__ float column_pairs(Wf W, const uint16_t *x, int xp, const float *B, int bp, int t, int j,
                                              int u0, int u1, float sign) {
    const float Bt = B[t * bp + j];
    float acc = 0.0f;
    for (int u = u0; u < u1; u++)
        acc = fmaf(W(u) * ladder_to_float<T>(x[u * xp + j]), ladder_exp_ftz(sign * (Bt - B[u * bp + j])), acc);
    return acc;
}

/* What states_kernel carries (recurrent_states.cu): the forward's S; the backward's S, dH (the do part), or dH's dht part. */
enum states_mode { ST_FWD, ST_S, ST_DH, ST_Z };

/*
 * The states pass of @p mode (recurrent_states.cu): the state at every chunk's start (ST_FWD, ST_S) or the gradient at
 * every chunk's end (ST_DH, ST_Z) into @p store ([slot][H][K][vpitch], chunk_slot(); 16-bit T for ST_FWD, fp32
 * otherwise), and the last one into ht, dh0, or dh0z (added to dh0).
 */
template <class T> ladder_status states_pass(const tc_call &a, states_mode mode, void *store, int64_t vpitch);

/* The forward's outputs from its stored states (recurrent_out.cu): o; with @p bwd (gv), o° into o32 from fp32 states. */
template <class T> ladder_status out_pass(const tc_call &a, const void *store, int64_t vpitch, bool bwd);

/*
 * The backward's gradients from the stored S and dH (recurrent_bwd.cu): dq, dk (rows_kernel), dv (cols_kernel), and
 * dq°, dk°, dv° where the gate sums take them; dht's part first, from @p Z (the two kernels' Z mode), when given.
 */
template <class T>
ladder_status grads_pass(const tc_call &a, const float *S, const float *dH, const float *Z, int64_t vpitch,
                         uint16_t *dq, uint16_t *dk, uint16_t *dv);

/* dgk, dgv, dg and dg_gamma of the call @p a from the backward's fp32 parts (recurrent_gates.cu). */
template <class T> ladder_status gate_grads(const tc_call &a);

} // namespace rec_tc

#endif
