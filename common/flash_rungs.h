/**
 * @file flash_rungs.h
 * @brief Internal: the flash rung functions behind ladder_flash_fwd/bwd.
 *
 * One signature at every rung. They assume the dispatcher validated the input
 * (sizes, shapes, dtypes, cu_seqlens); call the dispatchers, not these.
 */
#ifndef LADDER_FLASH_RUNGS_H
#define LADDER_FLASH_RUNGS_H

#include "flash.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signature shared by every flash rung function. */
typedef ladder_status (*flash_fn)(const ladder_flash_problem *p, const ladder_flash_args *a);

/** The rung functions by ::ladder_rung (NULL where a rung was not built): the dispatcher's table. */
extern const flash_fn flash_fwd_rungs[LADDER_RUNG_COUNT];
/** The backward's table. */
extern const flash_fn flash_bwd_rungs[LADDER_RUNG_COUNT];

ladder_status flash_fwd_cpu(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_bwd_cpu(const ladder_flash_problem *p, const ladder_flash_args *a);
/**
 * The tensor-core rung's reference (common/attention_tc_reference.h) behind the forward dispatcher's validation (the
 * cpu rung's rules): o and lse with P rounded to @p round (bf16 or f16; f32: nowhere) where that rung rounds it.
 * For tests, through ladder_algo::call_emulating.
 */
ladder_status flash_fwd_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round);
/**
 * The tensor-core rung's reference behind the backward dispatcher's validation: dq, dk, dv with o, P and dS rounded
 * to @p round where that rung rounds them. For tests, through ladder_algo::call_emulating.
 */
ladder_status flash_bwd_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round);
ladder_status flash_fwd_gpu_naive(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_bwd_gpu_naive(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_fwd_gpu_tiled(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_bwd_gpu_tiled(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_fwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a);
ladder_status flash_bwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a);

#ifdef __cplusplus
}
#endif
#endif
