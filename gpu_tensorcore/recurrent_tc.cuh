/*
 * gpu_tensorcore/recurrent_tc.cuh: what the tensor-core rung's files share (recurrent.cu: the sweeps and the
 * backward; recurrent_split.cu, recurrent_split_bwd.cu: the split passes; recurrent_gates.cu: the outputs and gate
 * gradients from the backward's parts): the call as every kernel takes it, the staging of a chunk's rows into
 * shared memory, the cumulative sums of its log gates, and the entry points of the files. recurrent.cu's opening
 * comment tells the rung's ideas.
 */
#ifndef LADDER_GPU_TENSORCORE_RECURRENT_TC_CUH
#define LADDER_GPU_TENSORCORE_RECURRENT_TC_CUH

#include <stdint.h>

#include "cuda_util.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"

namespace rec_tc {

constexpr int CH = 16; /* steps per chunk of the sweeps: one k step of the mma */

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


/* B*T*H, the flat tokens of the [B,T,H,..] tensors. */
__host__ __device__ __forceinline__ int64_t token_count(const tc_call &a) { return a.c.B * a.c.T * a.c.H; }

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

/* Steps per chunk of the split passes (recurrent_split.cu, recurrent_split_bwd.cu). */
constexpr int SC = 64;

/*
 * The entries below the diagonal of the four 16 x 16 diagonal sub-blocks of a chunk's pair matrix,
 * P_ts = sum_i q_t[i] k_s[i] exp(A_t[i] - A_s[i]), over the W channels of a tile (q, k [step][channel], pitch
 * @p p16; A the cumulative row gates, pitch @p p32), summed in fp32 with the decay per pair and channel, as
 * diag_kernel does, each factor at most 1 for gates <= 0. 4 x 120 entries, two for each of 256 threads: thread
 * (tl, ul) takes (tl, ul) in sub-blocks 0 and 2 when ul < tl, (ul, tl) in 1 and 3 when ul > tl (one in four
 * entries a thread, half the threads idle, was the first plan); the 16 threads tl == ul take none. Adds to pd.
 */
template <class T, int W>
__device__ __forceinline__ void diag_pairs(float (&pd)[2], const uint16_t *q, const uint16_t *k, int p16,
                                           const float *A, int p32, bool gk, int tl, int ul) {
    for (int m = 0; tl != ul && m < 2; m++) {
        const int d = 2 * m + (ul > tl), t = 16 * d + max(tl, ul), u = 16 * d + min(tl, ul);
        float p = 0.0f; /* without gk the decay is the same in every channel: one exponential a pair */
        for (int i0c = 0; i0c < W; i0c += 8) {
#pragma unroll
            for (int i = i0c; i < i0c + 8; i += 2) {
                const uint32_t q2 = ladder_lds32(q + t * p16 + i), k2 = ladder_lds32(k + u * p16 + i);
                float x0 = ladder_to_float<T>(q2 & 0xffff) * ladder_to_float<T>(k2 & 0xffff);
                float x1 = ladder_to_float<T>(q2 >> 16) * ladder_to_float<T>(k2 >> 16);
                if (gk) {
                    const float2 At = *(const float2 *)(A + t * p32 + i), Au = *(const float2 *)(A + u * p32 + i);
                    x0 *= __expf(At.x - Au.x), x1 *= __expf(At.y - Au.y);
                }
                p += x0 + x1;
            }
        }
        pd[m] += gk ? p : p * __expf(A[t * p32] - A[u * p32]);
    }
}

/* Where chunk @p chunk (of SC steps) of sequence @p n keeps its starting state: as chunk_slot(), per SC steps. */
__device__ __forceinline__ int64_t split_slot(const tc_call &a, const rec_seq &s, int64_t n, int64_t chunk) {
    return (s.b * a.c.T + s.start) / SC + n + chunk;
}

/* What states_kernel carries (recurrent_split.cu): the forward's S, the backward's S, or the backward's dH. */
enum states_mode { ST_FWD, ST_S, ST_DH };

/*
 * The backward's states (ST_S or ST_DH) of every chunk of SC steps, bf16 inputs: fp32 at @p store
 * ([slot][H][K][vpitch], split_slot()), by states_kernel (recurrent_split.cu).
 */
ladder_status split_bwd_states(const tc_call &a, states_mode mode, float *store, int64_t vpitch);

/*
 * The backward's dq, dk, dv without gv, bf16 inputs (recurrent_split_bwd.cu), each step's own diagonal term apart:
 * partial 0 of dq_part, dk_part, vdo_part and dv32, ptt, whole (no diag_kernel on this path); dh0. With @p dq,
 * @p dk, @p dv (one column block, no dht: nothing else to add) it also writes those outputs.
 */
ladder_status split_bwd(const tc_call &a, uint16_t *dq, uint16_t *dk, uint16_t *dv);

/* The forward without gv, split in two (recurrent_split.cu): o and ht of the call @p a. */
template <class T> ladder_status split_fwd(const tc_call &a);

/*
 * dq, dk and dv rounded from the backward's fp32 parts (recurrent_gates.cu): @p parts column blocks' partials of
 * dq_part, dk_part and vdo_part summed in block order, @p zparts of dkz_part, each step's diagonal term put back.
 */
template <class T>
ladder_status finish_outputs(const tc_call &a, int parts, int zparts, uint16_t *dq, uint16_t *dk, uint16_t *dv);

/* dgk, dgv, dg and dg_gamma of the call @p a from the backward's fp32 parts (recurrent_gates.cu). */
template <class T> ladder_status gate_grads(const tc_call &a);

} // namespace rec_tc

#endif
