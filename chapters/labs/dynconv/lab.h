/*
 * chapters/labs/dynconv/lab.h: the functions the dynconv labs ask for.
 *
 * Each lab file (lab1_dx.c, lab2_varlen.c, lab3_naive_dx.cu) defines one of
 * them; its checker (check_<lab>.c) runs it on seeded inputs and prints PASS
 * or FAIL. Run a lab:  make lab LAB=lab1_dx
 * All tensors here are contiguous, C order, fp32.
 */
#ifndef LADDER_LAB_DYNCONV_H
#define LADDER_LAB_DYNCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1, on the CPU (host pointers): dx = dL/dx of the DILATED forward
 *     out[b,t,d] = sum_{w<W} kernels[b,t,d,w] * x[b, t-(W-1-w)*dil, d]      (x = 0 before token 0)
 * given dout = dL/dout. Weight w reaches back (W-1-w)*dil tokens: dil = 1 is the library's forward,
 * dil = 2 skips every other token, and the window spans (W-1)*dil + 1 tokens.
 * dout is [B,T,D], kernels [B,T,D,W], dx [B,T,D] (write every element); dil >= 1.
 */
void lab1_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout, const float *kernels, float *dx);

/*
 * The forward that Lab 2 tests, for one batch row (host pointers):
 *     out[t,d] = sum_{w<W} kernels[t,d,w] * x[t+w-W+1, d]
 * where x counts as zero before the start of t's own sequence. Sequence i owns tokens
 * cu_seqlens[i] .. cu_seqlens[i+1]-1 (n_seqs + 1 offsets from 0 to T, non-decreasing; a sequence may be
 * empty). cu_seqlens == NULL means the whole row is one sequence (n_seqs is then ignored).
 * x is [T,D], kernels [T,D,W], out [T,D].
 */
typedef void (*lab2_fwd_fn)(int64_t T, int64_t D, int W, const float *x, const float *kernels,
                            const int32_t *cu_seqlens, int n_seqs, float *out);

/*
 * Lab 2: a test. Return true when @p fwd computes the forward above correctly, false when it does not.
 * The checker calls it with correct forwards and with broken ones.
 */
bool lab2_varlen_test(lab2_fwd_fn fwd);

/*
 * Lab 3, on the GPU (device pointers): Lab 1's dx of the dilated forward as a CUDA kernel with one
 * thread per dx element. Launches and returns; LADDER_ERR_CUDA if the launch fails.
 * dout is [B,T,D], kernels [B,T,D,W], dx [B,T,D]; dil >= 1.
 */
ladder_status lab3_naive_dx(int64_t B, int64_t T, int64_t D, int W, int dil, const float *dout, const float *kernels,
                            float *dx);

#ifdef __cplusplus
}
#endif
#endif
