/* The end of the recurrent GPU backwards, shared by gpu_naive and gpu_tiled: see recurrent_gpu.cuh. */
#include "recurrent_gpu.cuh"

namespace {

/* One thread per token (b,t,h): dgk and dgv from the sums, dg_t = sum_i G_t[i] (kept for dg_gamma). */
__global__ void finish_tokens_kernel(rec_call c, const double *G_row, const double *G_col, double *G_tok) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= c.B * c.T * c.H) return;
    double sum = 0;
    for (int64_t i = 0; i < c.K; i++) {
        sum += G_row[e * c.K + i];
        if (c.dgk) c.dgk[e * c.K + i] = (float)G_row[e * c.K + i];
    }
    for (int64_t j = 0; c.dgv && j < c.V; j++) c.dgv[e * c.V + j] = (float)G_col[e * c.V + j];
    G_tok[e] = sum;
    if (c.dg) c.dg[e] = (float)sum;
}

/* One thread per head: dg_gamma[h] = sum of dg_t over every token, in token order. */
__global__ void finish_gamma_kernel(rec_call c, const double *G_tok) {
    int64_t h = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= c.H) return;
    double sum = 0;
    for (int64_t bt = 0; bt < c.B * c.T; bt++) sum += G_tok[bt * c.H + h];
    c.dg_gamma[h] = (float)sum;
}

} // namespace

ladder_status rec_finish_gates(const rec_call &c, const rec_gate_scratch &s) {
    if (!rec_has_gates(c)) return LADDER_OK;
    const int threads = 256;
    finish_tokens_kernel<<<ladder_blocks(c.B * c.T * c.H, threads), threads>>>(c, s.G_row, s.G_col, s.G_tok);
    LADDER_LAUNCH_CHECK("finish_tokens_kernel");
    if (c.dg_gamma) {
        finish_gamma_kernel<<<ladder_blocks(c.H, 32), 32>>>(c, s.G_tok);
        LADDER_LAUNCH_CHECK("finish_gamma_kernel");
    }
    return LADDER_OK;
}
