/*
 * chapters/labs/memeff/lab2_keep_row.c: Lab 2, a row of dropout's mask at a quarter of a Philox call per
 * element (CPU).
 *
 * A kernel that regenerates dropout's mask must draw exactly what PyTorch draws, and Philox4x32-10 is ten
 * rounds of multiplies per call: a call per element would cost more than the attention around it. Write the
 * keep bits of keys j0 .. j0 + n - 1 of query row i (head h, batch row b) of a [B,Hq,Sq,Sk] problem, each
 * exactly what ladder_dropout_keep() says for that element, using lab2_philox_block() (and no other Philox
 * function) at most n / 4 + 2 times. Mind an offset that is not a multiple of 4, and counters past 2^32.
 * Check it:  make lab LAB=lab2_keep_row
 */
#include "lab.h"

void lab2_keep_row(uint64_t seed, uint64_t offset, float p, int64_t Hq, int64_t Sq, int64_t Sk, int64_t b, int64_t h,
                   int64_t i, int64_t j0, int64_t n, uint8_t *keep) {
    for (int64_t x = 0; x < n; x++) {
        /* TODO(lab 2): which Philox output does element (b, h, i, j0 + x) draw, which block of four holds it,
         * and which word of that block is it? Fetch each block once. */
        keep[x] = 1;
    }
    (void)seed, (void)offset, (void)p, (void)Hq, (void)Sq, (void)Sk, (void)b, (void)h, (void)i, (void)j0;
}
