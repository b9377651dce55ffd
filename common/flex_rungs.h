/**
 * @file flex_rungs.h
 * @brief Internal: the flex rung functions behind ladder_flex_fwd/bwd, the block lists as the rungs read them, and
 *        each rung's block-mask builder.
 *
 * One signature at every rung. The rung functions assume validated input with every block list present (the
 * dispatcher builds them when the caller gave none); call the dispatchers, not these.
 */
#ifndef LADDER_FLEX_RUNGS_H
#define LADDER_FLEX_RUNGS_H

#include "flex.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signature shared by every flex rung function. */
typedef ladder_status (*flex_fn)(const ladder_flex_problem *p, const ladder_flex_args *a);

/** The rung functions by ::ladder_rung (NULL: the rung does not exist yet, or was not built). */
extern const flex_fn flex_fwd_rungs[LADDER_RUNG_COUNT];
/** The backward's table. */
extern const flex_fn flex_bwd_rungs[LADDER_RUNG_COUNT];
/**
 * Each rung's block-mask builder: fills the eight lists of @p a (allocated by the dispatcher in the rung's memory,
 * contiguous, of ladder_flex_block_dims()'s MB and MH) from the mask mods and the buffers of @p a.
 */
extern const flex_fn flex_build_rungs[LADDER_RUNG_COUNT];

ladder_status flex_fwd_cpu(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_bwd_cpu(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_build_cpu(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_fwd_gpu_naive(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_bwd_gpu_naive(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_build_gpu(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_fwd_gpu_tiled(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_bwd_gpu_tiled(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_fwd_gpu_tensorcore(const ladder_flex_problem *p, const ladder_flex_args *a);
ladder_status flex_bwd_gpu_tensorcore(const ladder_flex_problem *p, const ladder_flex_args *a);

/**
 * The tensor-core rung's reference (common/attention_tc_reference.h, with the mods, the block lists and the buffer
 * gradients) behind the forward dispatcher's validation (the cpu rung's rules; lists built on the host when none are
 * given): o and lse with P rounded to @p round (bf16 or f16; f32: nowhere) where that rung rounds it. For tests,
 * through ladder_algo::call_emulating.
 */
ladder_status flex_fwd_emulating(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_dtype round);
/**
 * The tensor-core rung's reference behind the backward dispatcher's validation: dq, dk, dv with o, P and dS rounded
 * to @p round where that rung rounds them, and each buffer gradient given (summed in double from fp32 shares). For
 * tests, through ladder_algo::call_emulating.
 */
ladder_status flex_bwd_emulating(const ladder_flex_problem *p, const ladder_flex_args *a, ladder_dtype round);

/**
 * Run pass @p backward of @p rung on validated input: with no block lists in @p a, build them first (in the rung's
 * memory, for this call alone, with flex_build_rungs[rung]). The dispatchers and the engine's timed runs call it.
 */
ladder_status flex_run(ladder_rung rung, bool backward, const ladder_flex_problem *p, const ladder_flex_args *a);
/** Allocate the eight lists of @p a for @p p (ladder_flex_block_dims()), on the device when @p on_device. */
ladder_status flex_alloc_lists(const ladder_flex_problem *p, bool on_device, ladder_flex_args *a);
/** Free what flex_alloc_lists() allocated (safe after a partial failure). */
void flex_free_lists(bool on_device, ladder_flex_args *a);
/**
 * The contents of eight host lists whose shapes are checked: counts in range, each list ascending and in range, no
 * tile both partial and full, and the backward's lists exactly the transpose of the forward's (LADDER_ERR_ARG naming
 * the list, the tile and the batch row and head).
 */
ladder_status flex_check_lists(const ladder_flex_args *lists);

/** The block lists as every rung reads them: contiguous i32 arrays and their sizes. */
typedef struct flex_blocks {
    const int32_t *kv_num, *kv_idx, *full_kv_num, *full_kv_idx; /**< forward: per query tile, [MB,MH,Tq](,Tk) */
    const int32_t *q_num, *q_idx, *full_q_num, *full_q_idx;     /**< backward: per key tile, [MB,MH,Tk](,Tq) */
    int64_t MB, MH, Tq, Tk;                                     /**< 1 or B, 1 or Hq, tiles along Sq and Sk */
} flex_blocks;

/** The lists of @p a (all present). */
flex_blocks flex_blocks_of(const ladder_flex_args *a);

/** Where the lists of batch row @p b, head @p h and tile @p t start in a [MB,MH,T] count array (times T for the indices). */
LADDER_HOST_DEVICE int64_t flex_list_row(const flex_blocks *k, int64_t b, int64_t h, int64_t t, int64_t T) {
    return ((k->MB == 1 ? 0 : b) * k->MH + (k->MH == 1 ? 0 : h)) * T + t;
}

#ifdef __cplusplus
}
#endif
#endif
