/* What the parts of the `ladder` program share: options, benchmark rows, the machine's ceilings. */
#ifndef LADDER_TOOL_H
#define LADDER_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "ladder.h"

/* Exit codes, everywhere (DESIGN.md): */
#define TOOL_OK 0     /* all good */
#define TOOL_FAIL 1   /* a failed check or a failed run */
#define TOOL_USAGE 2  /* a bad flag, a bad file, a requested rung that cannot run here */

/* Most --NAME VALUE flags of the algorithms' own params one command line gives. */
#define TOOL_MAX_FLAGS 32

/* Parsed command-line options. */
typedef struct tool_opts {
    bool rung_chosen[LADDER_RUNG_COUNT]; /* --rung R (repeatable); none chosen = every available rung */
    bool any_rung_chosen;
    const char *flag[TOOL_MAX_FLAGS][2]; /* --NAME VALUE for the algorithms' own params, applied per algorithm */
    int n_flags;
    const char *varlen;                  /* --varlen 5,0,1,9: packed sequence lengths */
    const char *varlen2;                 /* --varlen2 7,3,0,9: their lengths along a second index (flash: keys) */
    const char *with;                    /* --with NAME,...: optional tensors to include */
    const char *frozen;                  /* --frozen NAME,... or none: inputs read but not differentiated */
    const char *bcast_name, *bcast;      /* --bias B,Hq,Sq,Sk or none: a broadcast input's shape (1 on each
                                            broadcast axis), or leave it out */
    ladder_dtype dtype;                  /* --dtype bf16|fp16: the tensor-core rung's input precision */
    bool dtype_chosen;                   /* --dtype given: bench times only that precision, not both */
    uint64_t seed;                       /* --seed N */
    const char *in_dir, *out_dir;        /* --in DIR, --out DIR */
    const char *not_with_in;             /* the last flag given that makes a random case (--seed, --varlen, --with,
                                            --bias):
                                            with --in the files are the case, so it is refused there */
    int warmup, reps;                    /* --warmup N, --reps N (bench) */
    int cpu_reps;                        /* --cpu-reps N (bench): timed runs of the cpu rung */
    double gemm_tflops;                  /* --gemm-tflops X: measured bf16 GEMM rate (bench) */
} tool_opts;

/* Should rung r run (chosen, or nothing chosen)? */
bool tool_rung_wanted(const tool_opts *o, ladder_rung r);
/*
 * The problem and case options for @p algo from its defaults (or @p base) and the command line.
 * Returns TOOL_OK or TOOL_USAGE (after printing why).
 */
int tool_problem(const ladder_algo *algo, const tool_opts *o, const void *base, void *problem, ladder_case_opts *co);
/* --bias (a broadcast input's flag) applied to @p co's optional tensors (co->with) and broadcast axes, for
 * @p problem with @p co's packed sequences; TOOL_USAGE (printed) if its shape does not fit the problem. */
int tool_broadcast_flag(const ladder_algo *algo, const tool_opts *o, const void *problem, ladder_case_opts *co);
/* The exit code of a failed library call, the same from every command: TOOL_USAGE when the input was at fault (a bad
 * argument, shape or file, a rung that cannot take it or cannot run here), TOOL_FAIL when the run was. */
int tool_exit_code(ladder_status st);
/* Host wall-clock milliseconds. */
double tool_now_ms(void);

/* `ladder run ALGO`: every chosen rung against the cpu rung, one table. */
int tool_run(const ladder_algo *algo, const tool_opts *o);
/* `ladder run ALGO --in DIR`: one rung on DIR/<name>.npy, outputs written as .npy. */
int tool_run_npy(const ladder_algo *algo, const tool_opts *o);

/* One row of a benchmark: one pass (fwd, bwd, or build: ladder_bench_build) of one rung at one dtype and shape. */
typedef struct bench_row {
    char algo[24], pass[8], rung[16], dtype[8], shape[320];
    double median_ms, bytes, flops, speedup_vs_cpu;
} bench_row;

/* The machine facts every row is reported against; 0 means not measured. */
typedef struct bench_env {
    char gpu[128], date[16], commit[48];
    double copy_gbps;     /* device-to-device copy bandwidth measured in this run */
    double gemm_tflops;   /* bf16 GEMM rate passed with --gemm-tflops */
    double cpu_copy_gbps; /* host memory copy bandwidth measured in this run, at cpu_threads OpenMP threads */
    int cpu_threads;      /* the OpenMP threads the cpu rung runs with (OMP_NUM_THREADS, else one a core) */
    double cpu_gflops;    /* the host's multiply-add loop rate in this run, at cpu_threads threads (GFLOP/s) */
} bench_env;

/* The host's copy bandwidth in GB/s (read + write), at every OpenMP thread the cpu rung would use: the ceiling of the
 * cpu rung's bytes/s, as the device-to-device copy is the GPU rungs'. Returns TOOL_OK or TOOL_FAIL (no memory). */
int tool_cpu_copy_gbps(double *gbps, int *threads);

/* The host's rate in GFLOP/s on a loop of multiply-adds in registers, at every OpenMP thread the cpu rung would use:
 * its rate at N threads over N times its rate at one is the host's own parallel efficiency, the ceiling of the cpu
 * rung's (clocks fall as more cores run; shared cores run slower). */
double tool_cpu_fma_gflops(void);

/* `ladder bench ALGO`: append rows (at most max_rows in all) for every bench problem of @p algo. */
int tool_bench(const ladder_algo *algo, const tool_opts *o, bench_row *rows, int max_rows, int *n_rows);

/* Write rows as CSV, Markdown and an SVG bar chart into dir (named <gpu>-<date>.*), then print the Markdown. */
int report_write(const char *dir, const bench_env *env, const bench_row *rows, int n_rows);

#endif
