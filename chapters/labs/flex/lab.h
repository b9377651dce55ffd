/*
 * chapters/labs/flex/lab.h: the functions the flex attention labs ask for.
 *
 * Each lab file (lab1_alibi_sym.c, lab2_transpose.c, lab3_tile_lists.cu) defines one of them; its checker (check_<lab>.c) runs it on
 * seeded inputs and prints PASS or FAIL. Run a lab:  make lab LAB=lab1_alibi_sym
 */
#ifndef LADDER_LAB_FLEX_H
#define LADDER_LAB_FLEX_H

#include <stdint.h>

#include "flex_mods.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Lab 1: a new score mod, symmetric ALiBi with learnable slopes, in the shape of common/flex_mods.h's mods:
 *     S = s - slopes[h] * |i - j|          (slopes: e->slopes, f32 [Hq])
 * and its derivatives: dS/ds, and the one buffer element it reads (read 0: its flat index in slopes, and
 * dS/dslopes[h]).
 */
float lab1_alibi_sym(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j);
ladder_flex_grad lab1_alibi_sym_grad(float s, const ladder_flex_env *e, int64_t b, int64_t h, int64_t i, int64_t j);

/*
 * Lab 2: the backward's block lists from the forward's, for one batch row and head: given each query tile's
 * partial key tiles (kv_num [Tq], kv_idx [Tq][Tk], the first kv_num[tq] of a row, ascending) and full ones
 * (full_kv_num, full_kv_idx), write each key tile's partial query tiles (q_num [Tk], q_idx [Tk][Tq], ascending)
 * and full ones (full_q_num, full_q_idx): tile (tq, tk) is listed in the same kind both ways.
 */
void lab2_transpose(int64_t Tq, int64_t Tk, const int32_t *kv_num, const int32_t *kv_idx, const int32_t *full_kv_num,
                    const int32_t *full_kv_idx, int32_t *q_num, int32_t *q_idx, int32_t *full_q_num,
                    int32_t *full_q_idx);

/*
 * Lab 3 (needs a GPU): the forward's block lists of one batch row and head, one thread block per query tile, on the
 * device. For query tile tq (0..Tq-1) and key tile tk (0..Tk-1), the tile's kind under the mask mods @p masks is
 * ladder_flex_tile_kind(masks, e, 0, 0, tq, tk); write query tile tq's partial key tiles into kv_idx [Tq][Tk] (row
 * tq, ascending) and their count into kv_num [Tq], its full ones into full_kv_idx and full_kv_num. @p e holds device
 * pointers; every output is device memory, contiguous. Returns LADDER_OK once the kernel is launched.
 */
ladder_status lab3_tile_lists(unsigned masks, const ladder_flex_env *e, int64_t Tq, int64_t Tk, int32_t *kv_num,
                              int32_t *kv_idx, int32_t *full_kv_num, int32_t *full_kv_idx);

#ifdef __cplusplus
}
#endif
#endif
