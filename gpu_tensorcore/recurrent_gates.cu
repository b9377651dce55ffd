/*
 * gpu_tensorcore/recurrent_gates.cu: the gate gradients dgk, dgv, dg and dg_gamma (step 5 of recurrent.cu's opening
 * comment; chapter 2, "The gate gradients" and "What the identity costs numerically"), from what the gradient
 * passes left in tc_call's scratch: dq_part, dk_part (dq°, dk°) and dkz per row channel, o32, dv32 (o°, dv°) and dvz
 * per column, dh0z (recurrent.cu's bwd() says why each comes without its own step's term, and dht's part apart).
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "mma.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_tc.cuh"

namespace {

using namespace rec_tc;

constexpr int GATE_WARPS = 8; /* warps of a gate-sum block */

/*
 * One input or output of the gate sums along one channel of one sequence: the element of token t is p[t * st]
 * (every [B,T,H,C] tensor is, with b, h and the channel fixed). A step's address is then one multiply-add:
 * computed from (b*T + t)*H + h as a flat row, the addresses of a tile's steps took more instructions than
 * their loads, and the registers of the loads in flight.
 */
template <class U> struct gate_in {
    U *p;
    int64_t st;
    __device__ __forceinline__ U &at(int64_t t) const { return p[t * st]; }
};

/* A 16-bit input [B,T,H,C] at batch row b, head h, channel x. */
__device__ __forceinline__ gate_in<const uint16_t> gate_in16(const view<uint16_t> &v, int64_t b, int64_t h,
                                                              int64_t x) {
    return {v.p + b * v.s[0] + h * v.s[2] + x * v.s[3], v.s[1]};
}

/* A contiguous f32 [B,T,H,C] tensor (an fp32 part, dgk, dgv) at batch row b, head h, channel x. */
template <class U>
__device__ __forceinline__ gate_in<U> gate_in32(const tc_call &a, U *p, int64_t C, int64_t b, int64_t h, int64_t x) {
    return {p + (b * a.c.T * a.c.H + h) * C + x, a.c.H * C};
}

/*
 * The gate sums of one channel x (a row, or a column) of a sequence, in double, in chapter 2's form ("What the
 * identity costs numerically"): G_t = sum_{s>=t} term_s, each term the difference of two small numbers when the
 * decay is strong (the diagonal terms that cancel are left out of both), and with dht (DHT) G_t gains its dht
 * part z0 + sum_{u<t} zterm_u. @p term(t) and @p zterm(t) read the step at token t; @p out(t, G) takes its G_t;
 * with @p dg ([B,T,H] at the sequence's batch row and head: dg.at(t)), lane 0 also writes the sum of G_t over the
 * warp's 32 channels (xor tree: a fixed order). Every thread of the block calls it (it synchronizes);
 * @p active: whether x is a real channel (an idle lane reads the last one and keeps zeros).
 *
 * One pass over the inputs, tile by tile from the sequence's end: warp w holds steps base + STEPS w .. of the
 * tile in registers (the loads of all STEPS go out together), sums them backwards, and starts from the carry of
 * the later tiles plus the totals of the later warps of this one, which every warp adds in the same order. A
 * segmented form (a pass for segment totals, then the chain) reads each term twice and keeps G in double for
 * rec_finish_gates; this reads the four inputs once and writes dgk in fp32, about a third of the bytes (the run
 * records have the measurement). The dht part is a forward sum: a first pass totals its terms (z0 + all of them),
 * and each tile takes its own total off that before it adds its steps forwards. A warp holds 8 steps, 4 with DHT
 * (whose zterms load beside the terms): 16 spilled at the 128 registers of two blocks per SM.
 */
template <bool DHT, class Term, class ZTerm, class Out>
__device__ __forceinline__ void gate_scan(const tc_call &a, const rec_seq &s, bool active, Term term, double z0,
                                          ZTerm zterm, Out out, gate_in<double> dg) {
    constexpr int STEPS = DHT ? 4 : 8, TILE = GATE_WARPS * STEPS;
    __shared__ double tot[2][GATE_WARPS][32], ztot[2][GATE_WARPS][32]; /* two buffers: one barrier a tile */
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (s.len == 0) return; /* the whole block's sequence: no thread waits at a barrier */
    /* Step base + STEPS w + u of the warp is token t0 + dt u. Steps past the end read the last one, and the sums
     * drop them: loads under a condition went into branches, one step's load and its use at a time. */
    const int64_t dt = a.c.reverse ? -1 : 1;
    int64_t t0;
    int last;
    const auto warp_steps = [&](int64_t base) {
        const int64_t s0 = min(base + w * STEPS, s.len - 1);
        t0 = rec_token(a.c, s, s0), last = (int)min((int64_t)STEPS - 1, s.len - 1 - s0);
    };
    if (DHT) {
        double z = 0.0;
        for (int64_t base = 0; base < s.len; base += TILE) {
            warp_steps(base);
#pragma unroll
            for (int u = 0; u < STEPS; u++) {
                const double x = zterm(t0 + dt * min(u, last));
                z += base + w * STEPS + u < s.len && active ? x : 0.0;
            }
        }
        ztot[0][w][lane] = z;
        __syncthreads();
        for (int v = 0; v < GATE_WARPS; v++) z0 += ztot[0][v][lane];
        __syncthreads(); /* before the first tile overwrites ztot[0] */
    }
    double carry = 0.0, zc = z0; /* the terms of the steps after the tile; z0 and the zterms before it */
    int buf = 0;
    for (int64_t base = (s.len - 1) / TILE * TILE; base >= 0; base -= TILE, buf ^= 1) {
        double y[STEPS], z[STEPS];
        warp_steps(base);
#pragma unroll
        for (int u = 0; u < STEPS; u++) {
            const int64_t t = t0 + dt * min(u, last);
            const bool ok = base + w * STEPS + u < s.len && active;
            const double x = term(t);
            y[u] = ok ? x : 0.0;
            if (DHT) {
                const double zx = zterm(t);
                z[u] = ok ? zx : 0.0;
            }
        }
        double acc = 0.0, zacc = 0.0;
#pragma unroll
        for (int u = STEPS - 1; u >= 0; u--) acc += y[u], y[u] = acc, zacc += DHT ? z[u] : 0.0;
        tot[buf][w][lane] = acc, ztot[buf][w][lane] = zacc;
        __syncthreads();
        double c = carry;
        for (int v = GATE_WARPS - 1; v > w; v--) c += tot[buf][v][lane];
        const double cw = c; /* what the warp's steps start from */
        for (int v = w; v >= 0; v--) c += tot[buf][v][lane];
        carry = c; /* the same additions in the same order in every warp */
        if (DHT) {
            double zt = 0.0;
            for (int v = 0; v < GATE_WARPS; v++) zt += ztot[buf][v][lane];
            zc -= zt; /* z0 and the zterms before the tile */
            double zw = zc;
            for (int v = 0; v < w; v++) zw += ztot[buf][v][lane];
#pragma unroll
            for (int u = 0; u < STEPS; u++) {
                const double before = zw;
                zw += z[u], z[u] = before;
            }
        }
#pragma unroll
        for (int u = 0; u < STEPS; u++) {
            const bool real = base + w * STEPS + u < s.len;
            const int64_t t = t0 + dt * u;
            double G = cw + y[u] + (DHT ? z[u] : 0.0);
            if (real && active) out(t, G);
            if (!dg.p) continue;
            G = active ? G : 0.0;
#pragma unroll
            for (int d = 16; d > 0; d >>= 1) G += __shfl_xor_sync(0xffffffffu, G, d);
            if (lane == 0 && real) dg.at(t) = G;
        }
    }
}

/*
 * One block per (sequence, head, 32 rows i), a warp per STEPS steps of each tile:
 *   G_t[i] = sum_{s>=t} (q_s[i] dq_s[i] - k_s[i] dk_s[i]) + sum_j dh0z[i,j] h0[i,j] + sum_{u<t} k_u[i] dkz_u[i]
 * with dq, dk the do parts without their diagonal terms (the identity of recurrent.h, rearranged), written as
 * dgk, and with @p dg_part ([groups][B,T,H]) each step's sum over the block's rows, for rec_finish_dg().
 */
template <class T, bool DHT>
__global__ void __launch_bounds__(32 * GATE_WARPS, 2) gate_rows_kernel(tc_call a, double *dg_part) {
    const int64_t K = a.c.K, V = a.c.V, groups = (K + 31) / 32, nh = blockIdx.x / groups, grp = blockIdx.x % groups;
    const int64_t i = grp * 32 + threadIdx.x % 32, n = nh / a.c.H, h = nh % a.c.H, ic = min(i, K - 1);
    const bool active = i < K;
    const rec_seq s = rec_seq_of(a.c, n);
    double z0 = 0.0;
    for (int64_t j = 0; active && a.dh0z && a.c.h0.p && j < V; j++)
        z0 += (double)a.dh0z[(nh * K + i) * V + j] * rec_ld(a.c.h0, n, h, i, j);
    const auto q = gate_in16(a.q, s.b, h, ic), k = gate_in16(a.k, s.b, h, ic);
    const auto dq = gate_in32(a, (const float *)a.dq_part, K, s.b, h, ic);
    const auto dk = gate_in32(a, (const float *)a.dk_part, K, s.b, h, ic);
    const auto dkz = gate_in32(a, (const float *)a.dkz, K, s.b, h, ic);
    const auto dgk = gate_in32(a, a.c.dgk, K, s.b, h, i);
    const bool gk = a.c.dgk != nullptr; /* without gk only dg's sums are written */
    const auto term = [&](int64_t t) {
        return (double)ladder_to_float<T>(q.at(t)) * dq.at(t) - (double)ladder_to_float<T>(k.at(t)) * dk.at(t);
    };
    const auto zterm = [&](int64_t t) { return (double)ladder_to_float<T>(k.at(t)) * dkz.at(t); };
    const auto out = [&](int64_t t, double G) {
        if (gk) dgk.at(t) = (float)G;
    };
    gate_in<double> dg = {nullptr, 0};
    if (dg_part) dg = gate_in32(a, dg_part + grp * token_count(a), 1, s.b, h, 0);
    gate_scan<DHT>(a, s, active, term, z0, zterm, out, dg);
}

/*
 * The same per column j, written as dgv:
 *   G_t[j] = sum_{s>=t} (o_s do_s - v_s dv_s)[j] + sum_i dh0z[i,j] h0[i,j] + sum_{u<t} v_u[j] dvz_u[j]
 */
template <class T, bool DHT> __global__ void __launch_bounds__(32 * GATE_WARPS, 2) gate_cols_kernel(tc_call a) {
    const int64_t K = a.c.K, V = a.c.V, groups = (V + 31) / 32, nh = blockIdx.x / groups;
    const int64_t j = blockIdx.x % groups * 32 + threadIdx.x % 32, n = nh / a.c.H, h = nh % a.c.H, jc = min(j, V - 1);
    const bool active = j < V;
    const rec_seq s = rec_seq_of(a.c, n);
    double z0 = 0.0;
    for (int64_t i = 0; active && a.dh0z && a.c.h0.p && i < K; i++)
        z0 += (double)a.dh0z[(nh * K + i) * V + j] * rec_ld(a.c.h0, n, h, i, j);
    const auto dO = gate_in16(a.dO, s.b, h, jc), v = gate_in16(a.v, s.b, h, jc);
    const auto o = gate_in32(a, (const float *)a.o32, V, s.b, h, jc);
    const auto dv = gate_in32(a, (const float *)a.dv32, V, s.b, h, jc);
    const auto dvz = gate_in32(a, (const float *)a.dvz, V, s.b, h, jc);
    const auto dgv = gate_in32(a, a.c.dgv, V, s.b, h, j);
    const auto term = [&](int64_t t) {
        return (double)o.at(t) * ladder_to_float<T>(dO.at(t)) - (double)ladder_to_float<T>(v.at(t)) * dv.at(t);
    };
    const auto zterm = [&](int64_t t) { return (double)ladder_to_float<T>(v.at(t)) * dvz.at(t); };
    const auto out = [&](int64_t t, double G) { dgv.at(t) = (float)G; };
    gate_scan<DHT>(a, s, active, term, z0, zterm, out, gate_in<double>{nullptr, 0});
}

} // namespace

namespace rec_tc {

template <class T> ladder_status gate_grads(const tc_call &a) {
    const rec_call &c = a.c;
    const bool dht = c.dht.p != nullptr;
    /* dg and dg_gamma sum G_t over the rows: each block of 32 rows leaves its per-step sum, rec_finish_dg() adds
     * them in block order */
    const int64_t tokens = token_count(a), groups = (c.K + 31) / 32;
    const bool sums = c.dg || c.dg_gamma;
    ladder_scratch D;
    if (sums) LADDER_TRY(D.alloc((size_t)((groups + 1) * tokens) * sizeof(double)));
    double *dg_part = sums ? (double *)D.ptr : nullptr;
    if (c.dgk || sums) {
        (dht ? gate_rows_kernel<T, true> : gate_rows_kernel<T, false>)<<<(unsigned)(c.N * c.H * groups),
                                                                         32 * GATE_WARPS>>>(a, dg_part);
        LADDER_LAUNCH_CHECK("gate_rows_kernel");
    }
    if (c.gv.p) {
        (dht ? gate_cols_kernel<T, true> : gate_cols_kernel<T, false>)<<<(unsigned)(c.N * c.H * ((c.V + 31) / 32)),
                                                                         32 * GATE_WARPS>>>(a);
        LADDER_LAUNCH_CHECK("gate_cols_kernel");
    }
    return sums ? rec_finish_dg(c, dg_part, (int)groups, dg_part + groups * tokens) : LADDER_OK;
}

template ladder_status gate_grads<__nv_bfloat16>(const tc_call &);
template ladder_status gate_grads<__half>(const tc_call &);

} // namespace rec_tc
