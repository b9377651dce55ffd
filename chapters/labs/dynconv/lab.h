/*
 * chapters/labs/dynconv/lab.h: the functions the dynconv labs ask for.
 *
 * Each lab file (lab1_dx.c, lab2_varlen.c, lab3_naive_fwd.cu) defines one of
 * them; its checker (check_<lab>.c) runs it beside the cpu rung on random
 * inputs and prints PASS or FAIL. Run a lab:  make lab LAB=lab1_dx
 * All tensors here are contiguous, C order, fp32.
 */
#ifndef LADDER_LAB_DYNCONV_H
#define LADDER_LAB_DYNCONV_H

#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1, on the CPU (host pointers), no cu_seqlens: dx = dL/dx of the forward
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d]   (x = 0 before t = 0)
 * given dout = dL/dout.
 * dout is [B,T,D], kernels [B,T,D,W], dx [B,T,D] (write every element).
 */
void lab1_dx(int64_t B, int64_t T, int64_t D, int W, const float *dout, const float *kernels, float *dx);

/*
 * Lab 2, on the CPU (host pointers), one batch row of packed sequences:
 *     out[t,d] = sum_{w<W} kernels[t,d,w] * x[t+w-W+1, d]
 * where x counts as zero before the start of t's own sequence. Sequence i
 * owns tokens cu_seqlens[i] .. cu_seqlens[i+1]-1 (n_seqs + 1 offsets, from 0
 * to T, non-decreasing; a sequence may be empty).
 * x is [T,D], kernels [T,D,W], out [T,D].
 */
void lab2_varlen_fwd(int64_t T, int64_t D, int W, const float *x, const float *kernels, const int32_t *cu_seqlens,
                     int n_seqs, float *out);

/*
 * Lab 3, on the GPU (device pointers), no cu_seqlens: the forward
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t+w-W+1, d]   (x = 0 before t = 0)
 * as a CUDA kernel with one thread per output. Launches and returns;
 * LADDER_ERR_CUDA if the launch fails.
 * x is [B,T,D], kernels [B,T,D,W], out [B,T,D].
 */
ladder_status lab3_naive_fwd(int64_t B, int64_t T, int64_t D, int W, const float *x, const float *kernels,
                             float *out);

#ifdef __cplusplus
}
#endif
#endif
