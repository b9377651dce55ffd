/*
 * chapters/labs/memeff/solutions/lab2_keep_row.c: a reference solution of Lab 2 (see ../lab2_keep_row.c).
 * The row's draws are consecutive outputs n0 .. n0 + n - 1, so they walk the blocks n0 / 4 .. (n0 + n - 1) / 4
 * in order: one call per block, the first and the last possibly partial.
 */
#include "../lab.h"

void lab2_keep_row(uint64_t seed, uint64_t offset, float p, int64_t Hq, int64_t Sq, int64_t Sk, int64_t b, int64_t h,
                   int64_t i, int64_t j0, int64_t n, uint8_t *keep) {
    const uint64_t n0 = ladder_dropout_counter(offset, b, h, i, j0, Hq, Sq, Sk);
    ladder_philox4 x = {{0, 0, 0, 0}};
    for (int64_t e = 0; e < n; e++) {
        const uint64_t c = n0 + (uint64_t)e;
        if (e == 0 || c % 4 == 0) x = lab2_philox_block(seed, c / 4);
        keep[e] = ladder_philox_uniform(x.w[c % 4]) > p;
    }
}
