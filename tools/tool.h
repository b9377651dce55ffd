/* What the parts of the `ladder` program share: options, the algorithm table, timing and reporting. */
#ifndef LADDER_TOOL_H
#define LADDER_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ladder.h"

/* Parsed command-line options (every algorithm reads the ones it uses). */
typedef struct tool_opts {
    bool rung_chosen[LADDER_RUNG_COUNT]; /* --rung R (repeatable); none chosen = all */
    int64_t B, T, D;                     /* --B --T --D (0 = the algorithm's default) */
    int W;                               /* --W */
    const char *varlen;                  /* --varlen 5,0,1,9: packed sequence lengths (B = 1) */
    ladder_dtype dtype;                  /* --dtype bf16|fp16: the tensor-core rung's input precision */
    uint64_t seed;                       /* --seed N */
    const char *in_dir, *out_dir;        /* --in DIR, --out DIR */
    int warmup, reps;                    /* --warmup N, --reps N (bench) */
    double gemm_tflops;                  /* --gemm-tflops X: measured bf16 GEMM rate for the FLOP floor (bench) */
} tool_opts;

/* One row of a benchmark: one pass of one rung at one dtype. */
typedef struct bench_row {
    const char *algo, *pass, *rung, *dtype;
    int64_t B, T, D;
    int W;
    double median_ms, bytes, flops, speedup_vs_cpu;
} bench_row;

/* The machine facts every row is reported against. */
typedef struct bench_env {
    char gpu[128], date[16], commit[48];
    double copy_gbps;   /* device-to-device copy bandwidth measured in this run (0 without a GPU) */
    double gemm_tflops; /* bf16 GEMM rate passed with --gemm-tflops (0 if not given) */
} bench_env;

/* What an algorithm offers the program. Each returns a process exit code. */
typedef struct tool_algo {
    const char *name;
    const char *flags_help; /* its shape flags, for --help */
    int (*run)(const tool_opts *o);                 /* run every chosen rung, check, print one table */
    int (*run_npy)(const tool_opts *o);             /* --in DIR: one rung on files, write outputs */
    int (*bench)(const tool_opts *o, const bench_env *env, bench_row *rows, int max_rows, int *n_rows);
} tool_algo;

extern const tool_algo dynconv_tool;

/* Should rung r run (chosen, or nothing chosen)? */
bool tool_rung_wanted(const tool_opts *o, ladder_rung r);
/* Host wall-clock milliseconds. */
double tool_now_ms(void);
/* Median ms of fn(ctx) on the host clock (CPU rung), after warmup runs. */
ladder_status tool_cpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, double *median_ms);
/* Median ms on the rung's clock: CUDA events for GPU rungs, the host clock for the CPU rung. */
ladder_status tool_median_ms(ladder_rung rung, ladder_work_fn fn, void *ctx, int warmup, int reps, double *median_ms);
/* Parse "5,0,1,9" into cu_seqlens offsets (host i32 [N+1]); total tokens in *T. */
ladder_status tool_parse_varlen(const char *spec, ladder_tensor *cu_seqlens, int64_t *T);

/* Write rows as CSV, Markdown and an SVG bar chart into dir (named <gpu>-<date>.*). */
int report_write(const char *dir, const bench_env *env, const bench_row *rows, int n_rows);

#endif
