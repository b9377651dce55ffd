/*
 * gpu_naive/recurrent.cu: gated linear attention as a recurrence, the naive GPU rung.
 *
 * What changed since cpu/: the loop over (sequence, head) became a grid, and the state is split among threads
 * by what each output sums over. The forward's o_t[j] sums a column of the state, so one thread runs one
 * column S[:, j] through the whole sequence. The backward's dq and dk sum rows and dv sums columns, so it runs
 * a row kernel (one thread per S[i, :]: dq, dk, dh0, the row gate sums) and a column kernel (one thread per
 * S[:, j]: dv, the column gate sums), each doing the cpu rung's passes on its own slice. The slices live in
 * per-thread arrays, which the compiler places in local memory: global memory, with nothing shared or staged
 * between threads. Every thread reads the same q_t and k_t (a broadcast), and the state never reaches the
 * registers: this is the direct port, and the baseline the tiled rung improves on.
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (f32, device pointers, any input strides, contiguous
 * outputs, K and V at most LADDER_RECURRENT_MAX_KV).
 * Run it:  build/bin/ladder run recurrent --rung gpu_naive
 */
#include "cuda_check.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"

namespace {

constexpr int MAXKV = LADDER_RECURRENT_MAX_KV;

/* One thread per column (n, h, j): S[:, j] through the sequence, o_t[j] = scale * sum_i q_t[i] S_t[i, j]. */
__global__ void recurrent_fwd_naive_kernel(rec_call c) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= c.N * c.H * c.V) return;
    const int64_t j = e % c.V, h = (e / c.V) % c.H, n = e / (c.V * c.H);
    const rec_seq s = rec_seq_of(c, n);
    float S[MAXKV];
    for (int64_t i = 0; i < c.K; i++) S[i] = rec_ld(c.h0, n, h, i, j);
    for (int64_t step = 0; step < s.len; step++) {
        const int64_t t = rec_token(c, s, step);
        const float vj = rec_ld(c.v, s.b, t, h, j), gvj = rec_ld(c.gv, s.b, t, h, j);
        float o = 0.0f;
        for (int64_t i = 0; i < c.K; i++) {
            const float gate = rec_row_gate(c, s.b, t, h, i);
            S[i] = (c.gv.p ? expf(gate + gvj) : expf(gate)) * S[i] + rec_ld(c.k, s.b, t, h, i) * vj;
            o += rec_ld(c.q, s.b, t, h, i) * S[i];
        }
        c.o[rec_row(c, s.b, t, h) * c.V + j] = c.scale * o;
    }
    for (int64_t i = 0; c.ht && i < c.K; i++) c.ht[((n * c.H + h) * c.K + i) * c.V + j] = S[i];
}

/*
 * One thread per row (n, h, i), the cpu rung's three passes on S[i, :] (cpu/recurrent.c says why each is so):
 * 1. forwards: P = D_t * S_{t-1}, dq_t[i] = scale * (P do_t + k_t[i] (v_t . do_t)), and the row's do-part
 *    term q_t[i] * scale * (P do_t)[i] into G_row;
 * 2. backwards, carrying dSP (from the outputs) and dSZ (dht decayed back): dk_t[i], the reverse sum of the
 *    do-part in G_row, each step's dht-part term k_t[i] * (dSZ v_t) in Z_row, and dh0;
 * 3. forwards: G_row[t] += the dht-part of every step before t (starting from h0's).
 */
__global__ void recurrent_bwd_rows_naive_kernel(rec_call c, double *G_row, double *Z_row) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= c.N * c.H * c.K) return;
    const int64_t i = e % c.K, h = (e / c.K) % c.H, n = e / (c.K * c.H);
    const rec_seq s = rec_seq_of(c, n);
    float S[MAXKV], dSZ[MAXKV]; /* S is dSP in passes 2 and 3 */
    for (int64_t j = 0; j < c.V; j++) S[j] = rec_ld(c.h0, n, h, i, j);
    for (int64_t step = 0; step < s.len; step++) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        const float gate = rec_row_gate(c, s.b, t, h, i), ki = rec_ld(c.k, s.b, t, h, i);
        float v_do = 0.0f;
        double Pdo = 0.0;
        for (int64_t j = 0; j < c.V; j++) {
            const float vj = rec_ld(c.v, s.b, t, h, j), doj = rec_ld(c.dO, s.b, t, h, j);
            const float P = (c.gv.p ? expf(gate + rec_ld(c.gv, s.b, t, h, j)) : expf(gate)) * S[j];
            v_do += vj * doj;
            Pdo += (double)P * doj;
            S[j] = P + ki * vj;
        }
        c.dq[row * c.K + i] = c.scale * ((float)Pdo + ki * v_do);
        if (G_row) G_row[row * c.K + i] = (double)rec_ld(c.q, s.b, t, h, i) * c.scale * Pdo;
    }
    for (int64_t j = 0; j < c.V; j++) S[j] = 0.0f, dSZ[j] = rec_ld(c.dht, n, h, i, j);
    double acc = 0.0;
    for (int64_t step = s.len - 1; step >= 0; step--) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        const float gate = rec_row_gate(c, s.b, t, h, i), ki = rec_ld(c.k, s.b, t, h, i);
        const float qi = rec_ld(c.q, s.b, t, h, i);
        float v_do = 0.0f;
        double Ev = 0.0, Zv = 0.0;
        for (int64_t j = 0; j < c.V; j++) {
            const float vj = rec_ld(c.v, s.b, t, h, j), doj = rec_ld(c.dO, s.b, t, h, j);
            v_do += vj * doj;
            Ev += (double)S[j] * vj;
            Zv += (double)dSZ[j] * vj;
        }
        c.dk[row * c.K + i] = (float)(Ev + Zv) + c.scale * qi * v_do;
        if (G_row) {
            acc += G_row[row * c.K + i] - (double)ki * Ev;
            G_row[row * c.K + i] = acc;
            Z_row[row * c.K + i] = (double)ki * Zv;
        }
        for (int64_t j = 0; j < c.V; j++) {
            const float decay = c.gv.p ? expf(gate + rec_ld(c.gv, s.b, t, h, j)) : expf(gate);
            S[j] = (S[j] + c.scale * qi * rec_ld(c.dO, s.b, t, h, j)) * decay;
            dSZ[j] *= decay;
        }
    }
    double z = 0.0;
    for (int64_t j = 0; j < c.V; j++) {
        if (c.dh0) c.dh0[((n * c.H + h) * c.K + i) * c.V + j] = S[j] + dSZ[j];
        z += (double)dSZ[j] * rec_ld(c.h0, n, h, i, j);
    }
    for (int64_t step = 0; G_row && step < s.len; step++) {
        const int64_t at = rec_row(c, s.b, rec_token(c, s, step), h) * c.K + i;
        G_row[at] += z;
        z += Z_row[at];
    }
}

/*
 * One thread per column (n, h, j): dv_t[j] = (dS_t^T k_t)[j], and with gv the column gate sums, in the same
 * three passes as the rows (pass 1 only for gv's do-part term do_t[j] * scale * (P^T q_t)[j]).
 */
__global__ void recurrent_bwd_cols_naive_kernel(rec_call c, double *G_col, double *Z_col) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= c.N * c.H * c.V) return;
    const int64_t j = e % c.V, h = (e / c.V) % c.H, n = e / (c.V * c.H);
    const rec_seq s = rec_seq_of(c, n);
    float S[MAXKV], dSZ[MAXKV];
    for (int64_t i = 0; G_col && i < c.K; i++) S[i] = rec_ld(c.h0, n, h, i, j);
    for (int64_t step = 0; G_col && step < s.len; step++) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        const float gvj = rec_ld(c.gv, s.b, t, h, j), vj = rec_ld(c.v, s.b, t, h, j);
        double Pq = 0.0;
        for (int64_t i = 0; i < c.K; i++) {
            const float P = expf(rec_row_gate(c, s.b, t, h, i) + gvj) * S[i];
            Pq += (double)P * rec_ld(c.q, s.b, t, h, i);
            S[i] = P + rec_ld(c.k, s.b, t, h, i) * vj;
        }
        G_col[row * c.V + j] = (double)rec_ld(c.dO, s.b, t, h, j) * c.scale * Pq;
    }
    for (int64_t i = 0; i < c.K; i++) S[i] = 0.0f, dSZ[i] = rec_ld(c.dht, n, h, i, j);
    double acc = 0.0;
    for (int64_t step = s.len - 1; step >= 0; step--) {
        const int64_t t = rec_token(c, s, step), row = rec_row(c, s.b, t, h);
        const float vj = rec_ld(c.v, s.b, t, h, j), doj = rec_ld(c.dO, s.b, t, h, j), gvj = rec_ld(c.gv, s.b, t, h, j);
        float q_k = 0.0f;
        double Ek = 0.0, Zk = 0.0;
        for (int64_t i = 0; i < c.K; i++) {
            const float ki = rec_ld(c.k, s.b, t, h, i);
            q_k += rec_ld(c.q, s.b, t, h, i) * ki;
            Ek += (double)S[i] * ki;
            Zk += (double)dSZ[i] * ki;
        }
        c.dv[row * c.V + j] = (float)(Ek + Zk) + c.scale * doj * q_k;
        if (G_col) {
            acc += G_col[row * c.V + j] - (double)vj * Ek;
            G_col[row * c.V + j] = acc;
            Z_col[row * c.V + j] = (double)vj * Zk;
        }
        for (int64_t i = 0; i < c.K; i++) {
            const float gate = rec_row_gate(c, s.b, t, h, i);
            const float decay = c.gv.p ? expf(gate + gvj) : expf(gate);
            S[i] = (S[i] + c.scale * rec_ld(c.q, s.b, t, h, i) * doj) * decay;
            dSZ[i] *= decay;
        }
    }
    double z = 0.0;
    for (int64_t i = 0; G_col && i < c.K; i++) z += (double)dSZ[i] * rec_ld(c.h0, n, h, i, j);
    for (int64_t step = 0; G_col && step < s.len; step++) {
        const int64_t at = rec_row(c, s.b, rec_token(c, s, step), h) * c.V + j;
        G_col[at] += z;
        z += Z_col[at];
    }
}

constexpr int THREADS = 128;

} // namespace

extern "C" ladder_status recurrent_fwd_gpu_naive(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const rec_call c = rec_call_of(p, a);
    recurrent_fwd_naive_kernel<<<ladder_blocks(c.N * c.H * c.V, THREADS), THREADS>>>(c);
    LADDER_LAUNCH_CHECK("recurrent_fwd_naive_kernel");
    return LADDER_OK;
}

extern "C" ladder_status recurrent_bwd_gpu_naive(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const rec_call c = rec_call_of(p, a);
    rec_gate_scratch s;
    LADDER_TRY(s.alloc(c));
    recurrent_bwd_rows_naive_kernel<<<ladder_blocks(c.N * c.H * c.K, THREADS), THREADS>>>(c, s.G_row, s.Z_row);
    LADDER_LAUNCH_CHECK("recurrent_bwd_rows_naive_kernel");
    recurrent_bwd_cols_naive_kernel<<<ladder_blocks(c.N * c.H * c.V, THREADS), THREADS>>>(c, s.G_col, s.Z_col);
    LADDER_LAUNCH_CHECK("recurrent_bwd_cols_naive_kernel");
    return rec_finish_gates(c, s);
}
