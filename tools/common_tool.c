/* Helpers every algorithm's tool code shares: rung choice, clocks, varlen parsing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

bool tool_rung_wanted(const tool_opts *o, ladder_rung r) {
    bool any = false;
    for (int i = 0; i < LADDER_RUNG_COUNT; i++) any |= o->rung_chosen[i];
    return !any || o->rung_chosen[r];
}

double tool_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ladder_status tool_cpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, double *median_ms) {
    for (int i = 0; i < warmup; i++) {
        ladder_status st = fn(ctx);
        if (st != LADDER_OK) return st;
    }
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate timings");
    for (int i = 0; i < reps; i++) {
        double t0 = tool_now_ms();
        ladder_status st = fn(ctx);
        ms[i] = tool_now_ms() - t0;
        if (st != LADDER_OK) {
            free(ms);
            return st;
        }
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    *median_ms = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    free(ms);
    return LADDER_OK;
}

ladder_status tool_median_ms(ladder_rung rung, ladder_work_fn fn, void *ctx, int warmup, int reps, double *median_ms) {
    return ladder_rung_is_gpu(rung) ? ladder_gpu_median_ms(fn, ctx, warmup, reps, median_ms)
                                    : tool_cpu_median_ms(fn, ctx, warmup, reps, median_ms);
}

ladder_status tool_parse_varlen(const char *spec, ladder_tensor *cu, int64_t *T) {
    int n = 1;
    for (const char *p = spec; *p; p++) n += *p == ',';
    int64_t shape[1] = {n + 1};
    ladder_status st = ladder_tensor_alloc(cu, LADDER_I32, 1, shape);
    if (st != LADDER_OK) return st;
    int32_t *v = cu->data;
    v[0] = 0;
    const char *p = spec;
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long len = strtol(p, &end, 10);
        if (end == p || errno || len < 0 || len > 2000000000 || (*end && *end != ',') ||
            (int64_t)v[i] + len > 2000000000) {
            ladder_tensor_free(cu);
            return ladder_fail(LADDER_ERR_ARG,
                               "--varlen needs comma-separated lengths >= 0 such as 5,0,1,9, at most 2e9 in all; got '%s'",
                               spec);
        }
        v[i + 1] = v[i] + (int32_t)len;
        p = end + (*end == ',');
    }
    *T = v[n];
    if (*T == 0) {
        ladder_tensor_free(cu);
        return ladder_fail(LADDER_ERR_ARG, "--varlen '%s' has no tokens in all", spec);
    }
    return LADDER_OK;
}
