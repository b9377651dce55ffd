/*
 * ladder: list the rungs, run and check them, run one on .npy files, benchmark them.
 *
 *   ladder list
 *   ladder run ALGO|all [--rung R]... [shape flags] [--dtype bf16|fp16] [--seed N]
 *   ladder run ALGO --in DIR [--out DIR] [--rung R] [--dtype bf16|fp16]
 *   ladder bench ALGO|all [--rung R]... [shape flags] [--reps N] [--warmup N] [--out DIR] [--gemm-tflops X]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

static const tool_algo *const algos[] = {&dynconv_tool};
#define N_ALGOS (int)(sizeof algos / sizeof algos[0])

static void usage(FILE *f) {
    fprintf(f,
            "usage: ladder COMMAND [options]\n"
            "\n"
            "commands:\n"
            "  list                      algorithms, rungs, which are built, the GPU found\n"
            "  run ALGO|all              run every chosen rung, check it against the cpu rung, print one table\n"
            "                            (exit 1 on any failed check)\n"
            "  run ALGO --in DIR         run one rung on DIR/<name>.npy, write its outputs as float32 .npy\n"
            "  bench ALGO|all            warmed-up timings (median), GB/s, %% of the copy bandwidth measured in\n"
            "                            the same run; writes CSV, Markdown and SVG into --out DIR\n"
            "  help                      this text (also --help; `ladder run --help` for the run flags)\n"
            "\n"
            "algorithms: dynconv\n");
}

static void run_usage(FILE *f) {
    fprintf(f,
            "usage: ladder run ALGO|all [options]\n"
            "       ladder run ALGO --in DIR [--out DIR] [--rung R] [--dtype bf16|fp16]\n"
            "       ladder bench ALGO|all [options]\n"
            "\n"
            "options:\n"
            "  --rung R          cpu, gpu_naive, gpu_tiled or gpu_tensorcore; repeat to pick several\n"
            "                    (default: every available rung; with --in: cpu)\n"
            "  --dtype bf16|fp16 input precision of the gpu_tensorcore rung (default bf16); the fp32 rungs\n"
            "                    ignore it. With --in, the inputs are rounded to it for that rung\n"
            "  --seed N          seed of the input generator (default 1)\n"
            "  --in DIR          read the inputs from DIR/<name>.npy (float32, float16, int32 or int64)\n"
            "  --out DIR         with --in: where the outputs go (default DIR); with bench: where the\n"
            "                    CSV, Markdown and SVG go (default build/bench)\n"
            "  --reps N          bench: timed runs per measurement, median reported (default 20, at least 20)\n"
            "  --warmup N        bench: untimed runs first (default 3)\n"
            "  --gemm-tflops X   bench: the measured bf16 GEMM rate, for the FLOP floor\n");
    for (int i = 0; i < N_ALGOS; i++) fprintf(f, "\n%s flags:\n%s", algos[i]->name, algos[i]->flags_help);
}

static int list(void) {
    printf("algorithms:");
    for (int i = 0; i < N_ALGOS; i++) printf(" %s", algos[i]->name);
    printf("\nrungs:\n");
    for (int r = 0; r < LADDER_RUNG_COUNT; r++) {
        ladder_status st = ladder_rung_available((ladder_rung)r);
        printf("  %-15s %s\n", ladder_rung_name((ladder_rung)r), st == LADDER_OK ? "available" : ladder_last_error());
    }
    char name[128];
    if (ladder_gpu_count() > 0 && ladder_gpu_name(name, sizeof name) == LADDER_OK) printf("gpu: %s\n", name);
    else printf("gpu: none (%s)\n", ladder_gpu_absent_reason());
    return 0;
}

static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out) {
    char *end;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "ladder: %s needs a whole number in %lld..%lld, got '%s'\n", flag, lo, hi, v ? v : "");
        return 1;
    }
    *out = x;
    return 0;
}

static int parse_opts(int argc, char **argv, tool_opts *o) {
    memset(o, 0, sizeof *o);
    o->dtype = LADDER_BF16;
    o->seed = 1;
    o->warmup = 3;
    o->reps = 20;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "ladder: %s needs a value (or is not an option; see ladder run --help)\n", a);
            return 1;
        }
        i++;
        if (!strcmp(a, "--rung")) {
            ladder_rung r;
            if (ladder_rung_parse(v, &r) != LADDER_OK) {
                fprintf(stderr, "ladder: %s\n", ladder_last_error());
                return 1;
            }
            o->rung_chosen[r] = true;
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "bf16")) o->dtype = LADDER_BF16;
            else if (!strcmp(v, "fp16") || !strcmp(v, "f16")) o->dtype = LADDER_F16;
            else {
                fprintf(stderr, "ladder: --dtype must be bf16 or fp16, not '%s'\n", v);
                return 1;
            }
        } else if (!strcmp(a, "--B") || !strcmp(a, "--T") || !strcmp(a, "--D")) {
            if (parse_int(a, v, 1, 1LL << 40, &x)) return 1;
            *(a[2] == 'B' ? &o->B : a[2] == 'T' ? &o->T : &o->D) = x;
        } else if (!strcmp(a, "--W")) {
            if (parse_int(a, v, 1, LADDER_DYNCONV_MAX_W, &x)) return 1;
            o->W = (int)x;
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(a, v, 0, 1LL << 62, &x)) return 1;
            o->seed = (uint64_t)x;
        } else if (!strcmp(a, "--reps")) {
            if (parse_int(a, v, 20, 100000, &x)) return 1;
            o->reps = (int)x;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_int(a, v, 0, 100000, &x)) return 1;
            o->warmup = (int)x;
        } else if (!strcmp(a, "--gemm-tflops")) {
            char *end;
            o->gemm_tflops = strtod(v, &end);
            if (end == v || *end || !(o->gemm_tflops >= 0)) {
                fprintf(stderr, "ladder: --gemm-tflops needs a rate >= 0 in TFLOP/s, got '%s'\n", v);
                return 1;
            }
        } else if (!strcmp(a, "--varlen")) {
            o->varlen = v;
        } else if (!strcmp(a, "--in")) {
            o->in_dir = v;
        } else if (!strcmp(a, "--out")) {
            o->out_dir = v;
        } else {
            fprintf(stderr, "ladder: unknown option '%s' (see ladder run --help)\n", a);
            return 1;
        }
    }
    return 0;
}

static int bench(const char *algo, const tool_opts *o) {
    bench_env env = {0};
    time_t now = time(NULL);
    strftime(env.date, sizeof env.date, "%Y-%m-%d", gmtime(&now));
    const char *commit = getenv("LADDER_COMMIT");
    snprintf(env.commit, sizeof env.commit, "%s", commit ? commit : "unknown");
    env.gemm_tflops = o->gemm_tflops;
    if (ladder_gpu_count() > 0) {
        if (ladder_gpu_name(env.gpu, sizeof env.gpu) != LADDER_OK ||
            ladder_gpu_copy_bandwidth((size_t)1 << 30, &env.copy_gbps) != LADDER_OK) {
            fprintf(stderr, "ladder: %s\n", ladder_last_error());
            return 1;
        }
        env.copy_gbps /= 1e9;
        fprintf(stderr, "bench: %s, device-to-device copy %.0f GB/s (read + write)\n", env.gpu, env.copy_gbps);
    } else {
        snprintf(env.gpu, sizeof env.gpu, "cpu-only");
        fprintf(stderr, "bench: no GPU (%s): only the cpu rung is timed\n", ladder_gpu_absent_reason());
    }
    bench_row rows[256];
    int n = 0, rc = 0;
    for (int i = 0; i < N_ALGOS; i++)
        if (!strcmp(algo, "all") || !strcmp(algo, algos[i]->name)) {
            int got = 0;
            rc |= algos[i]->bench(o, &env, rows + n, 256 - n, &got);
            n += got;
        }
    return rc | report_write(o->out_dir ? o->out_dir : "build/bench", &env, rows, n);
}

static const tool_algo *find_algo(const char *name) {
    for (int i = 0; i < N_ALGOS; i++)
        if (!strcmp(name, algos[i]->name)) return algos[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "list")) return list();
    if (strcmp(cmd, "run") && strcmp(cmd, "bench")) {
        fprintf(stderr, "ladder: unknown command '%s'\n", cmd);
        usage(stderr);
        return 2;
    }
    if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
        run_usage(argc < 3 ? stderr : stdout);
        return argc < 3 ? 2 : 0;
    }
    const char *algo = argv[2];
    const tool_algo *a = find_algo(algo);
    if (!a && strcmp(algo, "all")) {
        fprintf(stderr, "ladder: unknown algorithm '%s' (known: dynconv, or all)\n", algo);
        return 2;
    }
    tool_opts o;
    if (parse_opts(argc - 3, argv + 3, &o)) return 2;
    if (!strcmp(cmd, "bench")) return bench(algo, &o);
    if (o.in_dir) {
        if (!a) {
            fprintf(stderr, "ladder: --in needs one algorithm, not all\n");
            return 2;
        }
        return a->run_npy(&o);
    }
    int rc = 0;
    for (int i = 0; i < N_ALGOS; i++)
        if (!a || a == algos[i]) rc |= algos[i]->run(&o);
    return rc;
}
