/*
 * ladder: list the rungs, run and check them, run one on .npy files, benchmark them.
 *
 *   ladder list
 *   ladder run ALGO|all [--rung R]... [the algorithm's flags] [--dtype bf16|fp16|fp32] [--seed N] [--frozen A,B]
 *   ladder run ALGO --in DIR [--out DIR] [--rung R] [--dtype bf16|fp16|fp32] [--frozen A,B]
 *   ladder bench ALGO|all [--rung R]... [flags] [--frozen A,B|none] [--reps N] [--warmup N] [--cpu-reps N]
 *                [--out DIR] [--gemm-tflops X]
 *
 * Everything algorithm-specific (flags, file names, shapes) comes from the descriptors in common/ (engine.h).
 * Exit codes: 0 all good, 1 a failed check or run, 2 a usage error (bad flag, bad file, a rung that cannot run).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tool.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: ladder COMMAND [options]\n"
            "\n"
            "commands:\n"
            "  list                      algorithms, rungs, which are built, the GPU found\n"
            "  run ALGO|all              run every chosen rung, check it against the cpu rung, print one table\n"
            "                            (exit 1 on any failed check)\n"
            "  run ALGO --in DIR         run one rung on DIR/<name>.npy, write its outputs as float32 .npy\n"
            "  bench ALGO|all            warmed-up timings (median), GB/s and TFLOP/s beside the copy bandwidth\n"
            "                            (the device's, and the host's for the cpu rung) measured in the same\n"
            "                            run; writes CSV, Markdown and SVG into --out DIR\n"
            "  help                      this text (also --help; `ladder run --help` for the flags)\n"
            "\n"
            "algorithms:\n");
    for (int i = 0; i < ladder_n_algos; i++) fprintf(f, "  %-10s %s\n", ladder_algos[i]->name, ladder_algos[i]->summary);
    fprintf(f, "\nexit codes: 0 all good, 1 a failed check or run, 2 a usage error (bad flag, bad file, a rung\n"
               "that cannot run here)\n");
}

/* The flags and files of one algorithm, from its descriptor. */
static void algo_usage(FILE *f, const ladder_algo *a) {
    fprintf(f, "\n%s flags (defaults in brackets; with --in every option not given is off):\n", a->name);
    for (int i = 0; i < a->n_params; i++) {
        const ladder_param *p = &a->params[i];
        const ladder_param_names *names = ladder_param_names_of(a, i);
        char flag[32];
        snprintf(flag, sizeof flag, "--%s %s", p->name, names ? "NAME" : p->type == LADDER_PARAM_BOOL ? "0|1" : "N");
        if (names) {
            char def[128];
            names->format(p->run_default, def, sizeof def);
            fprintf(f, "  %-17s %s: %s [%s; with --in none]\n", flag, p->help, names->list, def);
            continue;
        }
        double neutral = ladder_param_neutral(p);
        char with_in[32] = ""; /* an option whose run default is not neutral takes the neutral value with --in */
        if (!ladder_param_is_size(a, i) && neutral != p->run_default)
            snprintf(with_in, sizeof with_in, "; with --in %g", neutral);
        fprintf(f, "  %-17s %s, %.0f..%.0f [%g%s]\n", flag, p->help, p->lo, p->hi, p->run_default, with_in);
    }
    if (a->varlen_dim)
        fprintf(f, "  --varlen L1,L2,.. packed sequences of these lengths (%s = 1, %s = their sum; not with --%s or "
                   "--%s)\n",
                a->varlen_batch, a->varlen_dim, a->varlen_batch, a->varlen_dim);
    if (a->varlen_dim2)
        fprintf(f, "  --varlen2 L1,L2,.. with --varlen: the same sequences' lengths along %s (default: those of "
                   "--varlen)\n",
                a->varlen_dim2);
    for (int i = 0, first = 1; i < a->n_tensors; i++) /* the optional tensors `ladder run` includes unless --with */
        if ((a->run_with >> i) & 1u) {
            fprintf(f, "%s%s", first ? "  --with A,B        without --with, `ladder run` includes " : ",",
                    a->tensors[i].name);
            first = 0;
        }
    if (a->run_with) fprintf(f, "\n");
    for (int i = 0, first = 1; i < a->n_tensors; i++) /* the inputs whose gradient may be left out */
        if ((ladder_algo_freezable(a) >> i) & 1u) {
            fprintf(f, "%s%s", first ? "  --frozen A,B      inputs that may be frozen: " : ", ", a->tensors[i].name);
            first = 0;
        }
    if (ladder_algo_freezable(a)) fprintf(f, "\n");
    for (int i = 0; i < a->n_tensors; i++) /* a broadcast input's own flag */
        if (a->tensors[i].role & LADDER_BROADCAST) {
            char flag[32];
            snprintf(flag, sizeof flag, "--%s %s", a->tensors[i].name, a->tensors[i].dims);
            fprintf(f, "  %-17s the %s's shape with 1 on each broadcast axis (1 for %s: one for all), or none [full]\n", flag,
                    a->tensors[i].name, a->varlen_batch ? a->varlen_batch : "the first");
        }
    for (int out = 0; out < 2; out++) {
        fprintf(f, out ? "  writes:" : "  --in DIR reads:");
        for (int i = 0; i < a->n_tensors; i++) {
            const ladder_tensor_spec *s = &a->tensors[i];
            bool in = s->role & (LADDER_IN_FWD | LADDER_IN_BWD | LADDER_INDEX);
            if (in == (out == 1)) continue;
            fprintf(f, " %s%s.npy [%s]%s%s", (s->role & LADDER_OPTIONAL) ? "(" : "", s->name, s->dims,
                    (s->role & (LADDER_IN_BWD | LADDER_OUT_BWD)) ? " backward" : "",
                    (s->role & LADDER_OPTIONAL) ? ")" : "");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "  (in parentheses: optional; without the backward's inputs only the forward runs)\n");
}

/* `ladder run --help`: the options, then the flags of @p only (NULL: of every algorithm). */
static void run_usage(FILE *f, const ladder_algo *only) {
    fprintf(f,
            "usage: ladder run ALGO|all [options]\n"
            "       ladder run ALGO --in DIR [--out DIR] [--rung R] [--dtype bf16|fp16|fp32]\n"
            "       ladder bench ALGO|all [options]\n"
            "\n"
            "options:\n"
            "  --rung R          cpu, gpu_naive, gpu_tiled or gpu_tensorcore; repeat to pick several\n"
            "                    (default: every available rung; with --in: cpu)\n"
            "  --dtype bf16|fp16|fp32  input precision of the gpu_tensorcore rung (default bf16; bench: bf16\n"
            "                    and fp16 unless given); the fp32 rungs ignore it. fp32 (TF32 products) only\n"
            "                    where the algorithm has it (memeff: --allow_tf32 1 for one TF32 product\n"
            "                    instead of three). With --in, the inputs are rounded to it for that rung\n"
            "  --seed N          seed of the input generator (default 1)\n"
            "  --with A,B        include these optional tensors (inputs, or outputs asked for)\n"
            "  --frozen A,B      read these inputs but do not ask for their gradients (frozen, as a PyTorch\n"
            "                    tensor without requires_grad: d<name> is not written); only inputs whose\n"
            "                    gradient may be left out. bench: replaces each problem's own set (none:\n"
            "                    every such input learnable)\n"
            "  --in DIR          read the inputs from DIR/<name>.npy: float tensors as float32 or float16,\n"
            "                    index tensors (cu_seqlens) as int32 or int64\n"
            "  --out DIR         with --in: where the outputs go (default DIR, created if missing); with\n"
            "                    bench: where the CSV, Markdown and SVG go (default build/bench)\n"
            "  --reps N          bench: timed runs per measurement, median reported (default 20, at least 20)\n"
            "  --warmup N        bench: untimed runs first (default 3)\n"
            "  --cpu-reps N      bench: timed runs of the cpu rung, median reported (default 1: its validated\n"
            "                    call, no warm-up; above 1: one untimed run first); a build row runs once\n"
            "  --gemm-tflops X   bench: the measured bf16 GEMM rate, for the FLOP floor (without it the GPU\n"
            "                    rows' %% of GEMM and floor are left empty)\n"
            "\n"
            "environment:\n"
            "  LADDER_TC_PATH    the gpu_tensorcore rung's kernels: auto (default: wgmma on sm_90 GPUs, else mma), mma\n"
            "                    (mma.sync everywhere) or wgmma (the Hopper kernels where they cover the problem:\n"
            "                    the forwards of flash, memeff and flex at head dims up to 128 and at 256 (memeff's\n"
            "                    bias up to 128); the backwards at 64 and 128, with flex's buffer gradients there\n"
            "                    for alibi, and at 128 for the other additive mods; refused on GPUs other than\n"
            "                    sm_90),\n"
            "                    with every Hopper idea so far; wgmma-1, wgmma-2 and wgmma-3 pick the Hopper\n"
            "                    forward of the first idea alone (wgmma from shared memory, each product waited\n"
            "                    on at once), of the second (the softmax of one key tile beside the P V of the one\n"
            "                    before) and of the third (a producer warpgroup copying by TMA for two consumers)\n"
            "  LADDER_COMMIT     bench: the commit stamped on the results (default unknown; make bench and\n"
            "                    the GPU machine's scripts set it)\n");
    for (int i = 0; i < ladder_n_algos; i++)
        if (!only || only == ladder_algos[i]) algo_usage(f, ladder_algos[i]);
}

static int list(void) {
    printf("algorithms:");
    for (int i = 0; i < ladder_n_algos; i++) printf(" %s", ladder_algos[i]->name);
    printf("\nrungs:\n");
    for (int r = 0; r < LADDER_RUNG_COUNT; r++) {
        ladder_status st = ladder_rung_available((ladder_rung)r);
        printf("  %-15s %s\n", ladder_rung_name((ladder_rung)r), st == LADDER_OK ? "available" : ladder_last_error());
    }
    for (int i = 0; i < ladder_n_algos; i++) { /* what an algorithm lacks, and what it takes by name */
        const ladder_algo *a = ladder_algos[i];
        for (int r = 0; r < LADDER_RUNG_COUNT; r++)
            if ((a->rungs_missing >> r) & 1u) printf("  %s has no %s rung yet\n", a->name, ladder_rung_name((ladder_rung)r));
        for (int k = 0; k < a->n_named_params; k++)
            printf("%s --%s: %s\n", a->name, a->named_params[k].param, a->named_params[k].list);
    }
    char name[128];
    if (ladder_gpu_count() > 0 && ladder_gpu_name(name, sizeof name) == LADDER_OK) printf("gpu: %s\n", name);
    else printf("gpu: none (%s)\n", ladder_gpu_absent_reason());
    return TOOL_OK;
}

static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out) {
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || end == v || x < lo || x > hi) {
        fprintf(stderr, "ladder: %s needs a whole number in %lld..%lld, got '%s'\n", flag, lo, hi, v);
        return TOOL_USAGE;
    }
    *out = x;
    return TOOL_OK;
}

/* Is --NAME a param of one of the algorithms the command runs? */
static bool some_algo_has(const ladder_algo *chosen, const char *name) {
    for (int i = 0; i < ladder_n_algos; i++)
        if ((!chosen || chosen == ladder_algos[i]) && ladder_algo_param(ladder_algos[i], name) >= 0) return true;
    return false;
}

/* Does the chosen algorithm (or any, with none chosen) have a broadcast input called @p name (memeff's bias)? */
static bool some_algo_broadcasts(const ladder_algo *chosen, const char *name) {
    for (int i = 0; i < ladder_n_algos; i++) {
        const int t = ladder_algo_tensor(ladder_algos[i], name);
        if ((!chosen || chosen == ladder_algos[i]) && t >= 0 && ladder_algos[i]->tensors[t].role & LADDER_BROADCAST)
            return true;
    }
    return false;
}

static int parse_opts(int argc, char **argv, const ladder_algo *chosen, tool_opts *o) {
    memset(o, 0, sizeof *o);
    o->dtype = LADDER_BF16;
    o->seed = 1;
    o->warmup = 3;
    o->reps = 20;
    o->cpu_reps = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout, chosen);
            exit(TOOL_OK);
        }
        if (strncmp(a, "--", 2) != 0 || !v) {
            fprintf(stderr, "ladder: %s %s (see ladder run --help)\n", a,
                    strncmp(a, "--", 2) ? "is not an option" : "needs a value");
            return TOOL_USAGE;
        }
        i++;
        if (!strcmp(a, "--rung")) {
            ladder_rung r;
            if (ladder_rung_parse(v, &r) != LADDER_OK) {
                fprintf(stderr, "ladder: %s\n", ladder_last_error());
                return TOOL_USAGE;
            }
            o->rung_chosen[r] = o->any_rung_chosen = true;
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "bf16")) o->dtype = LADDER_BF16;
            else if (!strcmp(v, "fp16") || !strcmp(v, "f16")) o->dtype = LADDER_F16;
            else if (!strcmp(v, "fp32") || !strcmp(v, "f32")) o->dtype = LADDER_F32;
            else {
                fprintf(stderr, "ladder: --dtype must be bf16, fp16 or fp32, not '%s'\n", v);
                return TOOL_USAGE;
            }
            o->dtype_chosen = true;
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(a, v, 0, 1LL << 62, &x)) return TOOL_USAGE;
            o->seed = (uint64_t)x;
            o->not_with_in = a;
        } else if (!strcmp(a, "--reps")) {
            if (parse_int(a, v, 20, 100000, &x)) return TOOL_USAGE;
            o->reps = (int)x;
        } else if (!strcmp(a, "--cpu-reps")) {
            if (parse_int(a, v, 1, 100000, &x)) return TOOL_USAGE;
            o->cpu_reps = (int)x;
        } else if (!strcmp(a, "--warmup")) {
            if (parse_int(a, v, 0, 100000, &x)) return TOOL_USAGE;
            o->warmup = (int)x;
        } else if (!strcmp(a, "--gemm-tflops")) {
            char *end;
            o->gemm_tflops = strtod(v, &end);
            if (end == v || *end || !(o->gemm_tflops >= 0)) {
                fprintf(stderr, "ladder: --gemm-tflops needs a rate >= 0 in TFLOP/s, got '%s'\n", v);
                return TOOL_USAGE;
            }
        } else if (!strcmp(a, "--varlen")) {
            o->varlen = v;
            o->not_with_in = a;
        } else if (!strcmp(a, "--varlen2")) {
            o->varlen2 = v;
            o->not_with_in = a;
        } else if (!strcmp(a, "--with")) {
            o->with = v;
            o->not_with_in = a;
        } else if (!strcmp(a, "--frozen")) {
            o->frozen = v;
        } else if (!strcmp(a, "--in") || !strcmp(a, "--out")) {
            if (!*v) {
                fprintf(stderr, "ladder: %s needs a directory, not an empty string\n", a);
                return TOOL_USAGE;
            }
            *(a[2] == 'i' ? &o->in_dir : &o->out_dir) = v;
        } else if (some_algo_broadcasts(chosen, a + 2)) {
            o->bcast_name = a + 2, o->bcast = v;
            o->not_with_in = a;
        } else if (some_algo_has(chosen, a + 2) && o->n_flags < TOOL_MAX_FLAGS) {
            o->flag[o->n_flags][0] = a + 2;
            o->flag[o->n_flags++][1] = v;
        } else {
            fprintf(stderr, "ladder: unknown option '%s'%s%s (see ladder run --help)\n", a, chosen ? " for " : "",
                    chosen ? chosen->name : "");
            return TOOL_USAGE;
        }
    }
    return TOOL_OK;
}

static int bench(const ladder_algo *chosen, const tool_opts *o) {
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
            return TOOL_FAIL;
        }
        env.copy_gbps /= 1e9;
        fprintf(stderr, "bench: %s, device-to-device copy %.0f GB/s (read + write)\n", env.gpu, env.copy_gbps);
    } else {
        snprintf(env.gpu, sizeof env.gpu, "cpu-only");
        fprintf(stderr, "bench: %s: only the cpu rung is timed; the device copy and GEMM ceilings are n/a\n",
                ladder_gpu_absent_reason());
    }
    if (tool_rung_wanted(o, LADDER_RUNG_CPU)) {
        if (tool_cpu_copy_gbps(&env.cpu_copy_gbps, &env.cpu_threads) != TOOL_OK) return TOOL_FAIL;
        fprintf(stderr, "bench: host copy %.0f GB/s (read + write) at %d thread%s\n", env.cpu_copy_gbps,
                env.cpu_threads, env.cpu_threads == 1 ? "" : "s");
        env.cpu_gflops = tool_cpu_fma_gflops();
        fprintf(stderr, "bench: host multiply-add loop %.1f GFLOP/s at %d thread%s\n", env.cpu_gflops,
                env.cpu_threads, env.cpu_threads == 1 ? "" : "s");
    }
    enum { MAX_ROWS = 512 };
    static bench_row rows[MAX_ROWS];
    int n = 0, rc = TOOL_OK;
    for (int i = 0; i < ladder_n_algos; i++)
        if (!chosen || chosen == ladder_algos[i]) {
            int r = tool_bench(ladder_algos[i], o, rows, MAX_ROWS, &n);
            if (r > rc) rc = r;
        }
    if (rc == TOOL_USAGE) return rc;
    int w = report_write(o->out_dir ? o->out_dir : "build/bench", &env, rows, n);
    return w > rc ? w : rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TOOL_USAGE : TOOL_OK;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "list")) return list();
    if (strcmp(cmd, "run") && strcmp(cmd, "bench")) {
        fprintf(stderr, "ladder: unknown command '%s'\n", cmd);
        usage(stderr);
        return TOOL_USAGE;
    }
    if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
        run_usage(argc < 3 ? stderr : stdout, NULL);
        return argc < 3 ? TOOL_USAGE : TOOL_OK;
    }
    const ladder_algo *algo = ladder_algo_find(argv[2]);
    if (!algo && strcmp(argv[2], "all")) {
        fprintf(stderr, "ladder: unknown algorithm '%s' (known:", argv[2]);
        for (int i = 0; i < ladder_n_algos; i++) fprintf(stderr, " %s", ladder_algos[i]->name);
        fprintf(stderr, ", or all)\n");
        return TOOL_USAGE;
    }
    tool_opts o;
    if (parse_opts(argc - 3, argv + 3, algo, &o) != TOOL_OK) return TOOL_USAGE;
    /* a precision the tensor-core rung of a chosen algorithm has no kernels for is refused, never replaced */
    for (int i = 0; tool_rung_wanted(&o, LADDER_RUNG_GPU_TENSORCORE) && i < ladder_n_algos; i++)
        if ((!algo || algo == ladder_algos[i]) &&
            ladder_algo_takes(ladder_algos[i], LADDER_RUNG_GPU_TENSORCORE, o.dtype) != LADDER_OK) {
            fprintf(stderr, "ladder: --dtype %s: %s (pick --rung, or another --dtype)\n", ladder_dtype_name(o.dtype),
                    ladder_last_error());
            return TOOL_USAGE;
        }
    if (!strcmp(cmd, "bench")) return bench(algo, &o);
    if (o.in_dir) {
        if (!algo) {
            fprintf(stderr, "ladder: --in needs one algorithm, not all\n");
            return TOOL_USAGE;
        }
        return tool_run_npy(algo, &o);
    }
    int rc = TOOL_OK;
    for (int i = 0; i < ladder_n_algos; i++)
        if (!algo || algo == ladder_algos[i]) {
            int r = tool_run(ladder_algos[i], &o);
            if (r > rc) rc = r;
        }
    return rc;
}
