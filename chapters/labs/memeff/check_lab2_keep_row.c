/*
 * chapters/labs/memeff/check_lab2_keep_row.c: checks Lab 2 (lab2_keep_row).
 * Run:  make lab LAB=lab2_keep_row      Exit code: 0 PASS, 1 FAIL (see ../labcheck.h).
 *
 * Every bit is compared with ladder_dropout_keep() of common/philox.h, on rows whose first draw falls on each
 * word of a Philox block, with offsets below and past 2^32, and the calls to lab2_philox_block() are counted.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../labcheck.h"
#include "lab.h"

static const char *const LAB = "lab2_keep_row";
static long calls;

ladder_philox4 lab2_philox_block(uint64_t seed, uint64_t block) {
    calls++;
    return ladder_philox_block(seed, block);
}

/* Hq, Sq, Sk, b, h, i, j0, n, p in hundredths, offset */
typedef struct row {
    int64_t Hq, Sq, Sk, b, h, i, j0, n, p;
    uint64_t offset;
} row;

static const row rows[] = {
    {1, 1, 1, 0, 0, 0, 0, 1, 50, 0},
    {2, 3, 5, 1, 1, 2, 0, 5, 10, 7},
    {4, 17, 33, 0, 3, 16, 1, 32, 50, 2},
    {4, 17, 33, 1, 2, 5, 3, 30, 30, 1},
    {8, 64, 1000, 1, 7, 63, 13, 987, 50, 3},
    {16, 128, 4096, 3, 15, 127, 2, 4094, 10, (1ull << 32) - 4093},
    {16, 128, 4096, 2, 0, 0, 0, 4096, 90, (1ull << 33) + 1},
};

int main(void) {
    const int n_rows = (int)(sizeof rows / sizeof rows[0]);
    for (int r = 0; r < n_rows; r++) {
        const row *w = &rows[r];
        const float p = (float)w->p / 100.0f;
        const uint64_t seed = 0x243F6A8885A308D3ull + (uint64_t)r;
        uint8_t *keep = malloc((size_t)w->n);
        if (!keep) {
            printf("ERROR %s: out of memory\n", LAB);
            return LABCHECK_ERROR;
        }
        calls = 0;
        lab2_keep_row(seed, w->offset, p, w->Hq, w->Sq, w->Sk, w->b, w->h, w->i, w->j0, w->n, keep);
        for (int64_t x = 0; x < w->n; x++) {
            const uint64_t c = ladder_dropout_counter(w->offset, w->b, w->h, w->i, w->j0 + x, w->Hq, w->Sq, w->Sk);
            const uint8_t want = ladder_dropout_keep(seed, c, p);
            if (keep[x] != want) {
                printf("FAIL %s at b=%lld h=%lld i=%lld j=%lld (Hq=%lld Sq=%lld Sk=%lld offset=%llu p=%g): keep %d, "
                       "want %d\n", LAB, (long long)w->b, (long long)w->h, (long long)w->i, (long long)(w->j0 + x),
                       (long long)w->Hq, (long long)w->Sq, (long long)w->Sk, (unsigned long long)w->offset, p,
                       keep[x], want);
                free(keep);
                return LABCHECK_FAIL;
            }
        }
        free(keep);
        if (calls < 1 || calls > w->n / 4 + 2) {
            printf("FAIL %s at a row of %lld keys: %ld calls to lab2_philox_block(), where 1 to %lld are enough "
                   "(and the only Philox the lab may call)\n", LAB, (long long)w->n, calls, (long long)(w->n / 4 + 2));
            return LABCHECK_FAIL;
        }
    }
    return labcheck_pass(LAB, n_rows);
}
