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
 * Keys per tile of the tensor-core forward (flash_tc_fwd.cuh, fwd_cfg::BC, which is defined by it), whose P is
 * rounded per tile: 64 up to a head dim of 128, 32 above (where a warp's O and S would not fit in registers).
 */
#define LADDER_FLASH_TC_FWD_KEYS(D, Dv) ((D) <= 128 && (Dv) <= 128 ? 64 : 32)

/**
 * The cpu forward with P rounded to @p round (bf16 or f16; f32: the plain cpu rung) as the tensor-core rung rounds
 * it: exp(S - m) against the running max m of its key tiles (::LADDER_FLASH_TC_FWD_KEYS). For tests.
 */
ladder_status flash_fwd_cpu_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round);
/** flash_fwd_cpu_emulating() behind the forward dispatcher's validation (the cpu rung's rules). */
ladder_status flash_fwd_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round);
/**
 * The cpu backward with P and dS rounded to @p round (bf16 or f16; f32: the plain cpu rung) where the tensor-core
 * rung rounds them: the reference of that rung, for tests. Same preconditions as the rungs.
 */
ladder_status flash_bwd_cpu_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round);
/** flash_bwd_cpu_emulating() behind the backward dispatcher's validation (the cpu rung's rules). */
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
