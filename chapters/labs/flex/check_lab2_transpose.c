/*
 * chapters/labs/flex/check_lab2_transpose.c: checks Lab 2 (lab2_transpose).
 * Run:  make lab LAB=lab2_transpose      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * The library builds both lists from a mask (ladder_flex_block_mask()); the lab gets the forward's and must give
 * back the backward's, count for count and entry for entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../labcheck.h"
#include "flex.h"
#include "lab.h"

static const char *const LAB = "lab2_transpose";

/* Sq, Sk, mask mods, window */
static const int64_t shapes[][4] = {
    {300, 300, (1 << LADDER_FLEX_CAUSAL), -1},
    {700, 450, (1 << LADDER_FLEX_WINDOW), 200},
    {129, 900, (1 << LADDER_FLEX_CAUSAL) | (1 << LADDER_FLEX_WINDOW), 300},
};

static bool check_one(int s) {
    const int64_t *sh = shapes[s];
    const ladder_flex_problem p = {.attn = {.B = 1, .Hq = 1, .Hkv = 1, .Sq = sh[0], .Sk = sh[1], .D = 1, .Dv = 1},
                                   .mask_mods = (int)sh[2], .window_left = sh[3]};
    ladder_flex_args a = {0}, l = {0};
    labcheck_ok(LAB, ladder_flex_block_mask(&p, &a, &l), "building the block lists");
    const int64_t Tq = ladder_flex_tiles(p.attn.Sq), Tk = ladder_flex_tiles(p.attn.Sk);
    int32_t *q_num = calloc((size_t)Tk, 4), *q_idx = calloc((size_t)(Tk * Tq), 4);
    int32_t *fq_num = calloc((size_t)Tk, 4), *fq_idx = calloc((size_t)(Tk * Tq), 4);
    lab2_transpose(Tq, Tk, l.kv_num_blocks.data, l.kv_indices.data, l.full_kv_num_blocks.data, l.full_kv_indices.data,
                   q_num, q_idx, fq_num, fq_idx);
    bool ok = true;
    const int32_t *want[4] = {l.q_num_blocks.data, l.q_indices.data, l.full_q_num_blocks.data, l.full_q_indices.data};
    const int32_t *got[4] = {q_num, q_idx, fq_num, fq_idx};
    const char *names[2] = {"q", "full_q"};
    for (int kind = 0; kind < 2 && ok; kind++)
        for (int64_t tk = 0; tk < Tk && ok; tk++) {
            const int32_t n = want[2 * kind][tk];
            ok = got[2 * kind][tk] == n && memcmp(got[2 * kind + 1] + tk * Tq, want[2 * kind + 1] + tk * Tq,
                                                  (size_t)n * 4) == 0;
            if (!ok)
                printf("FAIL %s at Sq=%lld Sk=%lld: key tile %lld's %s list has %d tiles, want %d (or differs in "
                       "its entries)\n", LAB, (long long)p.attn.Sq, (long long)p.attn.Sk, (long long)tk, names[kind],
                       got[2 * kind][tk], n);
        }
    free(q_num), free(q_idx), free(fq_num), free(fq_idx);
    ladder_tensor *all = &l.kv_num_blocks;
    for (int x = 0; x < 8; x++) ladder_tensor_free(&all[x]);
    return ok;
}

int main(void) {
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int s = 0; s < n; s++)
        if (!check_one(s)) return LABCHECK_FAIL;
    return labcheck_pass(LAB, n);
}
