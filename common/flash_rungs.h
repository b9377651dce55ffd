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
