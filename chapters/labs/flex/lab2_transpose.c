/*
 * chapters/labs/flex/lab2_transpose.c: Lab 2, the backward's block lists from the forward's (CPU).
 *
 * The forward walks, per query tile, the key tiles it must visit; the dK/dV pass walks, per key tile, the query
 * tiles that visit it: the same tiles, transposed. From the forward's partial and full lists of one batch row and
 * head, write the backward's, each list ascending (chapter 5, "Block masks"). Check it:  make lab LAB=lab2_transpose
 */
#include "lab.h"

void lab2_transpose(int64_t Tq, int64_t Tk, const int32_t *kv_num, const int32_t *kv_idx, const int32_t *full_kv_num,
                    const int32_t *full_kv_idx, int32_t *q_num, int32_t *q_idx, int32_t *full_q_num,
                    int32_t *full_q_idx) {
    for (int64_t tk = 0; tk < Tk; tk++) q_num[tk] = full_q_num[tk] = 0;
    /* TODO(lab 2): for every tile a query tile lists, list that query tile under the key tile, in the same kind */
    (void)Tq, (void)kv_num, (void)kv_idx, (void)full_kv_num, (void)full_kv_idx, (void)q_idx, (void)full_q_idx;
}
