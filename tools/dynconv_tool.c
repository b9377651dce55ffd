/* The `ladder` program's dynconv: random cases, the run table, .npy in and out, benchmark rows. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* One problem with its host inputs (f32; cu_seqlens i32 or absent). */
typedef struct dc_case {
    ladder_dynconv_problem p;
    ladder_tensor x, kernels, dout, cu_seqlens;
} dc_case;

/* One rung's outputs, as f32 host tensors. */
typedef struct dc_result {
    ladder_tensor out, dx, dkernels;
    double fwd_ms, bwd_ms;
} dc_result;

static void free_case(dc_case *c) {
    ladder_tensor_free(&c->x);
    ladder_tensor_free(&c->kernels);
    ladder_tensor_free(&c->dout);
    ladder_tensor_free(&c->cu_seqlens);
}

static void free_result(dc_result *r) {
    ladder_tensor_free(&r->out);
    ladder_tensor_free(&r->dx);
    ladder_tensor_free(&r->dkernels);
}

static ladder_status make_case(const tool_opts *o, int64_t B, int64_t T, int64_t D, int W, dc_case *c) {
    memset(c, 0, sizeof *c);
    c->p = (ladder_dynconv_problem){o->B ? o->B : B, o->T ? o->T : T, o->D ? o->D : D, o->W ? o->W : W};
    if (o->varlen) {
        ladder_status st = tool_parse_varlen(o->varlen, &c->cu_seqlens, &c->p.T);
        if (st != LADDER_OK) return st;
        c->p.B = 1;
    }
    int64_t btd[3] = {c->p.B, c->p.T, c->p.D}, btdw[4] = {c->p.B, c->p.T, c->p.D, c->p.W};
    int64_t bytes = ladder_shape_bytes(LADDER_F32, 4, btdw);
    if (bytes < 0 || bytes > ((int64_t)1 << 36))
        return ladder_fail(LADDER_ERR_ARG, "--B %lld --T %lld --D %lld --W %d needs more than 64 GiB for kernels alone",
                           (long long)c->p.B, (long long)c->p.T, (long long)c->p.D, c->p.W);
    ladder_status st = ladder_tensor_alloc(&c->x, LADDER_F32, 3, btd);
    if (st == LADDER_OK) st = ladder_tensor_alloc(&c->kernels, LADDER_F32, 4, btdw);
    if (st == LADDER_OK) st = ladder_tensor_alloc(&c->dout, LADDER_F32, 3, btd);
    if (st != LADDER_OK) return st;
    ladder_rng rng;
    ladder_rng_seed(&rng, o->seed);
    ladder_rng_fill_normal(&rng, &c->x, 1.0);
    ladder_rng_fill_normal(&rng, &c->kernels, 0.5);
    ladder_rng_fill_normal(&rng, &c->dout, 1.0);
    return LADDER_OK;
}

/* The arguments and problem one timed call needs. */
typedef struct dc_call {
    ladder_rung rung;
    const ladder_dynconv_problem *p;
    ladder_dynconv_args *a;
} dc_call;

static ladder_status call_fwd(void *ctx) {
    dc_call *c = ctx;
    return ladder_dynconv_fwd(c->rung, c->p, c->a);
}

static ladder_status call_bwd(void *ctx) {
    dc_call *c = ctx;
    return ladder_dynconv_bwd(c->rung, c->p, c->a);
}

/*
 * Run one rung on the case, forward and backward, each timed (median of reps
 * after warmup; reps = 1, warmup = 0 to just run it). The inputs go in at
 * @p dtype (f32 for the fp32 rungs); the outputs come back as f32.
 */
static ladder_status run_rung(ladder_rung rung, ladder_dtype dtype, const dc_case *c, int warmup, int reps,
                              dc_result *res) {
    memset(res, 0, sizeof *res);
    ladder_dynconv_args a = {0};
    int64_t btd[3] = {c->p.B, c->p.T, c->p.D}, btdw[4] = {c->p.B, c->p.T, c->p.D, c->p.W};
    ladder_status st = LADDER_OK;
    if (dtype == LADDER_F32) {
        a.x = c->x, a.kernels = c->kernels, a.dout = c->dout;
    } else {
        st = ladder_tensor_convert(&c->x, &a.x, dtype);
        if (st == LADDER_OK) st = ladder_tensor_convert(&c->kernels, &a.kernels, dtype);
        if (st == LADDER_OK) st = ladder_tensor_convert(&c->dout, &a.dout, dtype);
    }
    a.cu_seqlens = c->cu_seqlens;
    if (st == LADDER_OK) st = ladder_tensor_alloc(&a.out, dtype, 3, btd);
    if (st == LADDER_OK) st = ladder_tensor_alloc(&a.dx, dtype, 3, btd);
    if (st == LADDER_OK) st = ladder_tensor_alloc(&a.dkernels, dtype, 4, btdw);

    ladder_mirror m = {0};
    bool mirrored = false;
    if (st == LADDER_OK && ladder_rung_is_gpu(rung)) {
        ladder_tensor *ins[] = {&a.x, &a.kernels, &a.dout, &a.cu_seqlens};
        ladder_tensor *outs[] = {&a.out, &a.dx, &a.dkernels};
        st = ladder_mirror_begin(&m, ins, 4, outs, 3);
        mirrored = st == LADDER_OK;
    } else if (st == LADDER_OK) {
        ladder_tensor_poison(&a.out);
        ladder_tensor_poison(&a.dx);
        ladder_tensor_poison(&a.dkernels);
    }
    dc_call call = {rung, &c->p, &a};
    if (st == LADDER_OK) st = tool_median_ms(rung, call_fwd, &call, warmup, reps, &res->fwd_ms);
    if (st == LADDER_OK) st = tool_median_ms(rung, call_bwd, &call, warmup, reps, &res->bwd_ms);
    if (st == LADDER_OK && mirrored) st = ladder_gpu_sync();
    if (mirrored) {
        ladder_status end = ladder_mirror_end(&m, st == LADDER_OK);
        if (st == LADDER_OK) st = end;
    }
    if (st == LADDER_OK) st = ladder_tensor_convert(&a.out, &res->out, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&a.dx, &res->dx, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&a.dkernels, &res->dkernels, LADDER_F32);
    if (dtype != LADDER_F32) {
        ladder_tensor_free(&a.x);
        ladder_tensor_free(&a.kernels);
        ladder_tensor_free(&a.dout);
    }
    ladder_tensor_free(&a.out);
    ladder_tensor_free(&a.dx);
    ladder_tensor_free(&a.dkernels);
    if (st != LADDER_OK) free_result(res);
    return st;
}

static void free_rounded(dc_case *r) {
    ladder_tensor_free(&r->x);
    ladder_tensor_free(&r->kernels);
    ladder_tensor_free(&r->dout);
}

/* The same case with its inputs rounded to dtype (what the tensor-core rung sees), for the CPU reference. */
static ladder_status round_case(const dc_case *c, ladder_dtype dtype, dc_case *r) {
    *r = *c;
    r->x.data = r->kernels.data = r->dout.data = NULL; /* r owns only what the conversions below make */
    ladder_status st = ladder_tensor_convert(&c->x, &r->x, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&c->kernels, &r->kernels, LADDER_F32);
    if (st == LADDER_OK) st = ladder_tensor_convert(&c->dout, &r->dout, LADDER_F32);
    if (st != LADDER_OK) {
        free_rounded(r);
        return st;
    }
    ladder_tensor_round_to(&r->x, dtype);
    ladder_tensor_round_to(&r->kernels, dtype);
    ladder_tensor_round_to(&r->dout, dtype);
    r->cu_seqlens = c->cu_seqlens;
    return LADDER_OK;
}

/* Compare all three outputs; the worst relative L2 error goes to *worst. */
static bool check_result(const dc_result *got, const dc_result *want, double tol, double *worst, char *why, size_t n) {
    const ladder_tensor *g[] = {&got->out, &got->dx, &got->dkernels}, *w[] = {&want->out, &want->dx, &want->dkernels};
    const char *names[] = {"out", "dx", "dkernels"};
    bool ok = true;
    *worst = 0;
    why[0] = '\0';
    for (int i = 0; i < 3; i++) {
        ladder_cmp cmp = ladder_compare(g[i], w[i], tol);
        if (cmp.rel_l2 > *worst || cmp.nonfinite_mismatches) *worst = cmp.nonfinite_mismatches ? 1.0 / 0.0 : cmp.rel_l2;
        if (!cmp.ok && ok) {
            int used = snprintf(why, n, "%s: ", names[i]);
            ladder_cmp_describe(&cmp, why + used, n - (size_t)used);
            ok = false;
        }
    }
    return ok;
}

static ladder_dtype rung_dtype(ladder_rung r, ladder_dtype tc_dtype) {
    return r == LADDER_RUNG_GPU_TENSORCORE ? tc_dtype : LADDER_F32;
}

static int dynconv_run(const tool_opts *o) {
    dc_case c;
    ladder_status st = make_case(o, 2, 1024, 512, 4, &c);
    if (st != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        free_case(&c);
        return 1;
    }
    printf("dynconv  B=%lld T=%lld D=%lld W=%d%s%s  seed %llu\n", (long long)c.p.B, (long long)c.p.T,
           (long long)c.p.D, c.p.W, o->varlen ? "  varlen " : "", o->varlen ? o->varlen : "",
           (unsigned long long)o->seed);
    printf("%-15s %-5s %9s %9s %9s %9s %8s %8s %11s  %s\n", "rung", "dtype", "fwd ms", "bwd ms", "fwd GB/s",
           "bwd GB/s", "fwd x", "bwd x", "rel err", "check");
    /* the reference: the cpu rung on the f32 inputs (timed, so its row doubles as the speedup baseline) */
    dc_result ref, ref_rounded = {0};
    st = run_rung(LADDER_RUNG_CPU, LADDER_F32, &c, 1, 5, &ref);
    if (st != LADDER_OK) {
        fprintf(stderr, "ladder: cpu rung failed: %s\n", ladder_last_error());
        free_case(&c);
        return 1;
    }
    int failures = 0;
    const char *skipped = NULL;
    char skip_reason[512] = "";
    for (int r = 0; r < LADDER_RUNG_COUNT; r++) {
        if (!tool_rung_wanted(o, (ladder_rung)r)) continue;
        ladder_dtype dt = rung_dtype((ladder_rung)r, o->dtype);
        if (ladder_rung_available((ladder_rung)r) != LADDER_OK) {
            printf("%-15s %-5s %s\n", ladder_rung_name((ladder_rung)r), ladder_dtype_name(dt), "skipped");
            skipped = ladder_rung_name((ladder_rung)r);
            snprintf(skip_reason, sizeof skip_reason, "%s", ladder_last_error());
            continue;
        }
        dc_result res;
        const dc_result *want = &ref;
        if (r == LADDER_RUNG_CPU) res = ref;
        else {
            st = run_rung((ladder_rung)r, dt, &c, 1, 5, &res);
            if (st == LADDER_OK && dt != LADDER_F32 && !ref_rounded.out.data) {
                dc_case rc;
                st = round_case(&c, dt, &rc);
                if (st == LADDER_OK) st = run_rung(LADDER_RUNG_CPU, LADDER_F32, &rc, 0, 1, &ref_rounded);
                free_rounded(&rc);
            }
            if (dt != LADDER_F32) want = &ref_rounded;
        }
        if (st != LADDER_OK) {
            printf("%-15s %-5s FAIL: %s\n", ladder_rung_name((ladder_rung)r), ladder_dtype_name(dt),
                   ladder_last_error());
            failures++;
            continue;
        }
        double worst = 0;
        char why[512];
        bool ok = r == LADDER_RUNG_CPU || check_result(&res, want, ladder_tolerance(dt), &worst, why, sizeof why);
        char err[16];
        snprintf(err, sizeof err, r == LADDER_RUNG_CPU ? "reference" : "%.1e", worst);
        printf("%-15s %-5s %9.3f %9.3f %9.1f %9.1f %8.1f %8.1f %11s  %s\n", ladder_rung_name((ladder_rung)r),
               ladder_dtype_name(dt), res.fwd_ms, res.bwd_ms, ladder_dynconv_fwd_bytes(&c.p, dt) / res.fwd_ms * 1e-6,
               ladder_dynconv_bwd_bytes(&c.p, dt) / res.bwd_ms * 1e-6, ref.fwd_ms / res.fwd_ms,
               ref.bwd_ms / res.bwd_ms, err, ok ? "PASS" : "FAIL");
        if (!ok) {
            printf("    %s\n", why);
            failures++;
        }
        if (r != LADDER_RUNG_CPU) free_result(&res);
    }
    if (skipped) printf("GPU rungs skipped: %s\n", skip_reason);
    printf("%s: %d failed check%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
    free_result(&ref);
    free_result(&ref_rounded);
    free_case(&c);
    return failures ? 1 : 0;
}

/* Read DIR/name.npy into *t; a missing optional file leaves t absent. */
static int read_input(const char *dir, const char *name, bool required, ladder_tensor *t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f && errno == ENOENT && !required) return 0; /* absent; any other failure is reported below */
    if (f) fclose(f);
    if (ladder_npy_read(path, t) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return 1;
    }
    return 0;
}

static int write_output(const char *dir, const char *name, const ladder_tensor *t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    ladder_tensor f32;
    ladder_status st = ladder_tensor_convert(t, &f32, LADDER_F32);
    if (st == LADDER_OK) st = ladder_npy_write(path, &f32);
    ladder_tensor_free(&f32);
    if (st != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

/* Turn a file's tensor into the f32 (or i32, for cu_seqlens) the case holds. */
static int to_dtype(ladder_tensor *t, ladder_dtype dtype, const char *name) {
    if (!t->data || t->dtype == dtype) return 0;
    if (ladder_dtype_is_float(t->dtype) != ladder_dtype_is_float(dtype)) {
        fprintf(stderr, "ladder: %s.npy holds %s but must hold %s\n", name, ladder_dtype_name(t->dtype),
                dtype == LADDER_I32 ? "integers (int32 or int64)" : "floats (float32 or float16)");
        return 1;
    }
    if (dtype == LADDER_I32)
        for (int64_t i = 0; i < ladder_tensor_numel(t); i++) {
            double v = ladder_tensor_get(t, i);
            if (v < INT32_MIN || v > INT32_MAX) {
                fprintf(stderr, "ladder: %s.npy entry %lld is %.0f, outside the int32 range\n", name, (long long)i, v);
                return 1;
            }
        }
    ladder_tensor conv;
    if (ladder_tensor_convert(t, &conv, dtype) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return 1;
    }
    ladder_tensor_free(t);
    *t = conv;
    return 0;
}

static int dynconv_run_npy(const tool_opts *o) {
    ladder_rung rung = LADDER_RUNG_CPU;
    int chosen = 0;
    for (int r = 0; r < LADDER_RUNG_COUNT; r++)
        if (o->rung_chosen[r]) rung = (ladder_rung)r, chosen++;
    if (chosen > 1) {
        fprintf(stderr, "ladder: --in runs one rung; pick one --rung\n");
        return 2;
    }
    if (ladder_rung_available(rung) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return 1;
    }
    dc_case c = {0};
    int rc = read_input(o->in_dir, "x", true, &c.x) || read_input(o->in_dir, "kernels", true, &c.kernels) ||
             read_input(o->in_dir, "dout", false, &c.dout) || read_input(o->in_dir, "cu_seqlens", false, &c.cu_seqlens) ||
             to_dtype(&c.x, LADDER_F32, "x") || to_dtype(&c.kernels, LADDER_F32, "kernels") ||
             to_dtype(&c.dout, LADDER_F32, "dout") || to_dtype(&c.cu_seqlens, LADDER_I32, "cu_seqlens");
    if (!rc && c.kernels.rank == 4 && (c.kernels.shape[3] < 1 || c.kernels.shape[3] > LADDER_DYNCONV_MAX_W)) {
        fprintf(stderr, "ladder: kernels.npy has W = %lld (its last dimension) but W must be in 1..%d\n",
                (long long)c.kernels.shape[3], LADDER_DYNCONV_MAX_W);
        rc = 1;
    }
    if (!rc && (c.x.rank != 3 || c.kernels.rank != 4)) {
        char xs[64], ks[64];
        ladder_tensor_shape_str(&c.x, xs, sizeof xs);
        ladder_tensor_shape_str(&c.kernels, ks, sizeof ks);
        fprintf(stderr, "ladder: x.npy has shape %s and kernels.npy %s, but dynconv needs x [B,T,D] and kernels [B,T,D,W]\n",
                xs, ks);
        rc = 1;
    }
    if (!rc) {
        c.p = (ladder_dynconv_problem){c.x.shape[0], c.x.shape[1], c.x.shape[2], (int)c.kernels.shape[3]};
        bool backward = c.dout.data != NULL;
        if (!backward) {
            /* the run does both passes; without dout.npy give it x's shape and write only out */
            if (ladder_tensor_convert(&c.x, &c.dout, LADDER_F32) != LADDER_OK) rc = 1;
        }
        ladder_dtype dt = rung_dtype(rung, o->dtype);
        dc_case rounded = {0};
        dc_result res;
        ladder_status st = LADDER_OK;
        if (!rc && dt != LADDER_F32) st = round_case(&c, dt, &rounded); /* inputs rounded as the rung sees them */
        if (!rc && st == LADDER_OK) st = run_rung(rung, dt, dt != LADDER_F32 ? &rounded : &c, 0, 1, &res);
        if (dt != LADDER_F32) free_rounded(&rounded);
        if (!rc && st != LADDER_OK) {
            fprintf(stderr, "ladder: %s: %s\n", ladder_status_name(st), ladder_last_error());
            rc = 1;
        }
        if (!rc) {
            const char *out_dir = o->out_dir ? o->out_dir : o->in_dir;
            rc = write_output(out_dir, "out", &res.out);
            if (!rc && backward) rc = write_output(out_dir, "dx", &res.dx) || write_output(out_dir, "dkernels", &res.dkernels);
            free_result(&res);
        }
    }
    free_case(&c);
    return rc;
}

static int dynconv_bench(const tool_opts *o, const bench_env *env, bench_row *rows, int max_rows, int *n_rows) {
    dc_case c;
    *n_rows = 0;
    fprintf(stderr, "bench dynconv: generating inputs\n");
    ladder_status st = make_case(o, 8, 4096, 2048, 4, &c);
    if (st != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        free_case(&c);
        return 1;
    }
    int failures = 0;
    dc_result cpu;
    fprintf(stderr, "bench dynconv: rung cpu f32\n");
    st = run_rung(LADDER_RUNG_CPU, LADDER_F32, &c, o->warmup, o->reps, &cpu);
    if (st != LADDER_OK) {
        fprintf(stderr, "ladder: cpu rung: %s\n", ladder_last_error());
        free_case(&c);
        return 1;
    }
    struct { ladder_rung rung; ladder_dtype dtype; } plan[] = {
        {LADDER_RUNG_CPU, LADDER_F32},          {LADDER_RUNG_GPU_NAIVE, LADDER_F32},
        {LADDER_RUNG_GPU_TILED, LADDER_F32},    {LADDER_RUNG_GPU_TENSORCORE, LADDER_BF16},
        {LADDER_RUNG_GPU_TENSORCORE, LADDER_F16},
    };
    for (size_t i = 0; i < sizeof plan / sizeof plan[0] && *n_rows + 2 <= max_rows; i++) {
        ladder_rung r = plan[i].rung;
        ladder_dtype dt = plan[i].dtype;
        if (!tool_rung_wanted(o, r) || ladder_rung_available(r) != LADDER_OK) continue;
        dc_result res = cpu;
        if (r != LADDER_RUNG_CPU) {
            fprintf(stderr, "bench dynconv: rung %s %s\n", ladder_rung_name(r), ladder_dtype_name(dt));
            st = run_rung(r, dt, &c, o->warmup, o->reps, &res);
            dc_result ref = cpu;
            dc_case rounded;
            if (st == LADDER_OK && dt != LADDER_F32) {
                st = round_case(&c, dt, &rounded);
                if (st == LADDER_OK) st = run_rung(LADDER_RUNG_CPU, LADDER_F32, &rounded, 0, 1, &ref);
                free_rounded(&rounded);
            }
            if (st != LADDER_OK) {
                fprintf(stderr, "ladder: %s %s: %s\n", ladder_rung_name(r), ladder_dtype_name(dt), ladder_last_error());
                failures++;
                continue;
            }
            double worst;
            char why[512];
            if (!check_result(&res, &ref, ladder_tolerance(dt), &worst, why, sizeof why)) {
                fprintf(stderr, "ladder: %s %s gives wrong results at the bench shape: %s\n", ladder_rung_name(r),
                        ladder_dtype_name(dt), why);
                failures++;
            }
            if (dt != LADDER_F32) free_result(&ref);
        }
        for (int pass = 0; pass < 2; pass++) {
            bench_row *row = &rows[(*n_rows)++];
            *row = (bench_row){"dynconv", pass ? "bwd" : "fwd", ladder_rung_name(r), ladder_dtype_name(dt),
                               c.p.B, c.p.T, c.p.D, c.p.W, pass ? res.bwd_ms : res.fwd_ms,
                               pass ? ladder_dynconv_bwd_bytes(&c.p, dt) : ladder_dynconv_fwd_bytes(&c.p, dt),
                               /* forward: W multiply-adds per output; backward: W for dx plus W multiplies for dkernels */
                               (pass ? 3.0 : 2.0) * c.p.W * (double)c.p.B * (double)c.p.T * (double)c.p.D,
                               (pass ? cpu.bwd_ms : cpu.fwd_ms) / (pass ? res.bwd_ms : res.fwd_ms)};
        }
        if (r != LADDER_RUNG_CPU) free_result(&res);
    }
    (void)env;
    free_result(&cpu);
    free_case(&c);
    return failures ? 1 : 0;
}

const tool_algo dynconv_tool = {
    "dynconv",
    "  --B N --T N --D N --W N   batch, tokens, channels, kernel width 1..64\n"
    "                            (run default 2 1024 512 4; bench default 8 4096 2048 4)\n"
    "  --varlen L1,L2,...        packed sequences of these lengths (B = 1, T = their sum)\n"
    "  --in DIR reads x.npy [B,T,D], kernels.npy [B,T,D,W], optional dout.npy [B,T,D] and\n"
    "  cu_seqlens.npy [N+1]; writes out.npy, and dx.npy and dkernels.npy when dout.npy is given\n",
    dynconv_run,
    dynconv_run_npy,
    dynconv_bench,
};
