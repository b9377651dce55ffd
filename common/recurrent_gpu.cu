/*
 * The end of the recurrent GPU backwards: rec_finish_gates() for gpu_naive and gpu_tiled, rec_finish_dg() for
 * gpu_tensorcore, which writes dgk and dgv itself (see recurrent_gpu.cuh).
 */
#include "recurrent_gpu.cuh"

namespace {

/*
 * One warp per token (b,t,h): dgk and dgv from the sums, dg_t = sum_i G_t[i] (kept for dg_gamma). The lanes take
 * consecutive channels, so that every load of G_row and every store of dgk is one contiguous run: a thread per
 * token, walking its own row, made each store of a warp touch 32 rows and took many times what its bytes need (the
 * recurrent run records have the times). Each lane sums its channels in order, then the lanes' sums meet in a fixed
 * tree (bitwise-repeatable).
 */
__global__ void finish_tokens_kernel(rec_call c, const double *G_row, const double *G_col, double *G_tok) {
    const int64_t e = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (e >= c.B * c.T * c.H) return;
    double sum = 0;
    for (int64_t i = lane; i < c.K; i += 32) {
        sum += G_row[e * c.K + i];
        if (c.dgk) c.dgk[e * c.K + i] = (float)G_row[e * c.K + i];
    }
    for (int64_t j = lane; c.dgv && j < c.V; j += 32) c.dgv[e * c.V + j] = (float)G_col[e * c.V + j];
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    if (lane != 0) return;
    G_tok[e] = sum;
    if (c.dg) c.dg[e] = (float)sum;
}

/*
 * One thread per token (b,t,h): dg_t = the sum of the @p parts partial sums of G_t over blocks of rows, in
 * block order (bitwise-repeatable), kept in G_tok for dg_gamma.
 */
__global__ void finish_dg_kernel(rec_call c, const double *G_part, int parts, double *G_tok) {
    const int64_t tokens = c.B * c.T * c.H, e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= tokens) return;
    double sum = 0;
    for (int p = 0; p < parts; p++) sum += G_part[p * tokens + e];
    G_tok[e] = sum;
    if (c.dg) c.dg[e] = (float)sum;
}

constexpr int GAMMA_THREADS = 256;

/*
 * One block per head: dg_gamma[h] = sum of dg_t over every token. Each thread sums the tokens x, x + 256, ... in
 * order, then the threads' sums meet in a fixed tree (bitwise-repeatable). A thread per head walking all B*T
 * tokens in order put H threads on the whole GPU, each waiting on one load per token.
 */
__global__ void finish_gamma_kernel(rec_call c, const double *G_tok) {
    __shared__ double part[GAMMA_THREADS];
    const int64_t h = blockIdx.x;
    double sum = 0;
    for (int64_t bt = threadIdx.x; bt < c.B * c.T; bt += GAMMA_THREADS) sum += G_tok[bt * c.H + h];
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int w = GAMMA_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) c.dg_gamma[h] = (float)part[0];
}

/* dg_gamma from G_tok, when it is asked for. */
ladder_status finish_gamma(const rec_call &c, const double *G_tok) {
    if (c.dg_gamma) {
        finish_gamma_kernel<<<(unsigned)c.H, GAMMA_THREADS>>>(c, G_tok);
        LADDER_LAUNCH_CHECK("finish_gamma_kernel");
    }
    return LADDER_OK;
}

} // namespace

ladder_status rec_finish_gates(const rec_call &c, const rec_gate_scratch &s) {
    if (!rec_has_gates(c)) return LADDER_OK;
    const int threads = 256;
    finish_tokens_kernel<<<ladder_blocks(c.B * c.T * c.H * 32, threads), threads>>>(c, s.G_row, s.G_col, s.G_tok);
    LADDER_LAUNCH_CHECK("finish_tokens_kernel");
    return finish_gamma(c, s.G_tok);
}

ladder_status rec_finish_dg(const rec_call &c, const double *G_part, int parts, double *G_tok) {
    const int threads = 256;
    finish_dg_kernel<<<ladder_blocks(c.B * c.T * c.H, threads), threads>>>(c, G_part, parts, G_tok);
    LADDER_LAUNCH_CHECK("finish_dg_kernel");
    return finish_gamma(c, G_tok);
}
