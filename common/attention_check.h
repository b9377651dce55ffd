/**
 * @file attention_check.h
 * @brief The checks every attention dispatcher (flash, memeff) runs once the problem itself is sound: the
 *        forward's outputs, the backward's gradients, the dtypes a rung takes, and whether the rung can run.
 *        Host only.
 */
#ifndef LADDER_ATTENTION_CHECK_H
#define LADDER_ATTENTION_CHECK_H

#include <stdbool.h>

#include "attention.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * o [B,Hq,Sq,Dv] and lse [B,Hq,Sq]: what the forward writes and the backward reads, present and contiguous.
 */
ladder_status ladder_attention_check_o_lse(const ladder_attention_problem *p, const ladder_tensor *o,
                                           const ladder_tensor *lse);

/**
 * The backward's own tensors: do [B,Hq,Sq,Dv] (any strides), dlse [B,Hq,Sq] when given, and the gradients dq, dk,
 * dv in the shapes of q, k, v, contiguous.
 */
ladder_status ladder_attention_check_grads(const ladder_attention_problem *t, const ladder_tensor *dout,
                                           const ladder_tensor *dlse, const ladder_tensor *dq, const ladder_tensor *dk,
                                           const ladder_tensor *dv);

/**
 * The float tensors @p ts (named @p names) take the rung's dtype: f32, or at gpu_tensorcore the dtype of ts[0],
 * bf16 or f16, or f32 where the algorithm @p algo has TF32 kernels (@p tc_f32) (LADDER_ERR_UNSUPPORTED otherwise,
 * naming @p algo); the @p n_f32 tensors @p f32s stay f32 where present (lse, dlse).
 */
ladder_status ladder_attention_check_dtypes(const char *algo, bool tc_f32, ladder_rung rung,
                                            const ladder_tensor *const *ts, const char *const *names,
                                            int n, const ladder_tensor *const *f32s, const char *const *f32_names,
                                            int n_f32);

/**
 * What an attention dispatcher checks last, once the arguments are sound: the GPU rungs' grid limits on Hq and B,
 * that @p rung can run here (ladder_rung_available()) and was @p built, then the cu_seqlens contents
 * (ladder_attention_check_seqlens(), read from the device at a GPU rung).
 */
ladder_status ladder_attention_check_rung(ladder_rung rung, const ladder_attention_problem *p, bool built,
                                          const ladder_tensor *cu_seqlens_q, const ladder_tensor *cu_seqlens_k);

#ifdef __cplusplus
}
#endif
#endif
