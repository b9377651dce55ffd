/*
 * gpu_naive/dynconv.cu: dynamic causal convolution, the naive GPU rung.
 *
 * What changed since cpu/: the loops over (b, t, d) became a grid, one
 * thread per output element, reading its operands straight from global
 * memory. Nothing is shared between threads: each x value is fetched by up
 * to W threads, and each thread reads its W kernel weights with a stride of
 * W floats between neighbouring threads. It is the direct port, and the
 * baseline the next rungs improve on.
 *
 * Preconditions: validated by ladder_dynconv_fwd/bwd (f32, device pointers,
 * any input strides, contiguous outputs).
 * Run it:  build/bin/ladder run dynconv --rung gpu_naive
 */
#include "cuda_check.cuh"
#include "dynconv_rungs.h"
#include "varlen.h"

namespace {

/* What each kernel needs: base pointers, strides, sizes, sequence offsets. */
struct naive_args {
    const float *x, *k, *dout;
    int64_t sx[3], sk[4], sg[3];
    float *out, *dx, *dk;
    int64_t B, T, D;
    int W;
    const int32_t *cu_seqlens; /* nullptr: every batch row is one sequence */
    int n_seqs;
};

/* One thread per out[b,t,d]: out = sum_w kernels[b,t,d,w] * x[b, t+w-W+1, d]. */
__global__ void dynconv_fwd_naive_kernel(naive_args a) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.B * a.T * a.D) return;
    int64_t d = i % a.D, t = (i / a.D) % a.T, b = i / (a.D * a.T);
    int64_t start, end;
    ladder_sequence_bounds(a.cu_seqlens, a.n_seqs, a.T, t, &start, &end);
    float acc = 0.0f;
    for (int w = 0; w < a.W; w++) {
        int64_t src = t + w - a.W + 1;
        if (src >= start)
            acc += a.k[b * a.sk[0] + t * a.sk[1] + d * a.sk[2] + w * a.sk[3]] *
                   a.x[b * a.sx[0] + src * a.sx[1] + d * a.sx[2]];
    }
    a.out[i] = acc;
}

/* One thread per dkernels[b,t,d,w] = dout[b,t,d] * x[b, t+w-W+1, d]. */
__global__ void dynconv_bwd_dk_naive_kernel(naive_args a) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.B * a.T * a.D * a.W) return;
    int w = (int)(i % a.W);
    int64_t d = (i / a.W) % a.D, t = (i / (a.W * a.D)) % a.T, b = i / (a.W * a.D * a.T);
    int64_t start, end;
    ladder_sequence_bounds(a.cu_seqlens, a.n_seqs, a.T, t, &start, &end);
    int64_t src = t + w - a.W + 1;
    a.dk[i] = src >= start ? a.dout[b * a.sg[0] + t * a.sg[1] + d * a.sg[2]] * a.x[b * a.sx[0] + src * a.sx[1] + d * a.sx[2]]
                           : 0.0f;
}

/* One thread per dx[b,s,d] = sum_w dout[b, s+W-1-w, d] * kernels[b, s+W-1-w, d, w], inside s's sequence. */
__global__ void dynconv_bwd_dx_naive_kernel(naive_args a) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.B * a.T * a.D) return;
    int64_t d = i % a.D, s = (i / a.D) % a.T, b = i / (a.D * a.T);
    int64_t start, end;
    ladder_sequence_bounds(a.cu_seqlens, a.n_seqs, a.T, s, &start, &end);
    float acc = 0.0f;
    for (int w = 0; w < a.W; w++) {
        int64_t dst = s + a.W - 1 - w;
        if (dst < end)
            acc += a.dout[b * a.sg[0] + dst * a.sg[1] + d * a.sg[2]] *
                   a.k[b * a.sk[0] + dst * a.sk[1] + d * a.sk[2] + w * a.sk[3]];
    }
    a.dx[i] = acc;
}

naive_args pack(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    naive_args n = {};
    n.x = (const float *)a->x.data;
    n.k = (const float *)a->kernels.data;
    n.dout = (const float *)a->dout.data;
    for (int i = 0; i < 3; i++) n.sx[i] = a->x.strides[i], n.sg[i] = a->dout.strides[i];
    for (int i = 0; i < 4; i++) n.sk[i] = a->kernels.strides[i];
    n.out = (float *)a->out.data;
    n.dx = (float *)a->dx.data;
    n.dk = (float *)a->dkernels.data;
    n.B = p->B, n.T = p->T, n.D = p->D, n.W = p->W;
    n.cu_seqlens = (const int32_t *)a->cu_seqlens.data;
    n.n_seqs = a->cu_seqlens.data ? (int)a->cu_seqlens.shape[0] - 1 : 0;
    return n;
}

constexpr int THREADS = 256;

} // namespace

extern "C" ladder_status dynconv_fwd_gpu_naive(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    naive_args n = pack(p, a);
    dynconv_fwd_naive_kernel<<<ladder_blocks(p->B * p->T * p->D, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("dynconv_fwd_naive_kernel");
    return LADDER_OK;
}

extern "C" ladder_status dynconv_bwd_gpu_naive(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    naive_args n = pack(p, a);
    dynconv_bwd_dx_naive_kernel<<<ladder_blocks(p->B * p->T * p->D, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("dynconv_bwd_dx_naive_kernel");
    dynconv_bwd_dk_naive_kernel<<<ladder_blocks(p->B * p->T * p->D * p->W, THREADS), THREADS>>>(n);
    LADDER_LAUNCH_CHECK("dynconv_bwd_dk_naive_kernel");
    return LADDER_OK;
}
