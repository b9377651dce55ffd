/* `ladder run`: every chosen rung against the cpu rung on a random case, or one rung on .npy files. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

bool tool_rung_wanted(const tool_opts *o, ladder_rung r) { return !o->any_rung_chosen || o->rung_chosen[r]; }

double tool_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* "5,0,1,9", the value of @p flag, into @p lens and @p n; TOOL_USAGE (printed) if malformed or empty. */
static int parse_lengths(const char *flag, const char *spec, int64_t *lens, int *n) {
    const char *p = spec;
    int64_t total = 0;
    *n = 0;
    do {
        char *end;
        errno = 0;
        long long len = strtoll(p, &end, 10);
        if (end == p || errno || len < 0 || (*end && *end != ',') || *n == LADDER_MAX_SEQS ||
            (total += len) > INT32_MAX) {
            fprintf(stderr,
                    "ladder: %s needs 1 to %d comma-separated lengths >= 0 such as 5,0,1,9, at most %d in all; "
                    "got '%s'\n",
                    flag, LADDER_MAX_SEQS, INT32_MAX, spec);
            return TOOL_USAGE;
        }
        lens[(*n)++] = len;
        p = end + (*end == ',');
    } while (p[-1] == ',');
    if (total == 0) {
        fprintf(stderr, "ladder: %s '%s' has no tokens in all\n", flag, spec);
        return TOOL_USAGE;
    }
    return TOOL_OK;
}

/* --varlen and --varlen2 into @p co's packed sequences. */
static int parse_varlen(const ladder_algo *algo, const tool_opts *o, ladder_case_opts *co) {
    if (!algo->varlen_dim) {
        fprintf(stderr, "ladder: %s takes no --varlen\n", algo->name);
        return TOOL_USAGE;
    }
    if (parse_lengths("--varlen", o->varlen, co->seqlens, &co->n_seqs) != TOOL_OK) return TOOL_USAGE;
    if (!o->varlen2) return TOOL_OK;
    if (!algo->varlen_dim2) {
        fprintf(stderr, "ladder: %s takes no --varlen2 (it packs one size, %s)\n", algo->name, algo->varlen_dim);
        return TOOL_USAGE;
    }
    int n2;
    if (parse_lengths("--varlen2", o->varlen2, co->seqlens2, &n2) != TOOL_OK) return TOOL_USAGE;
    if (n2 != co->n_seqs) {
        fprintf(stderr, "ladder: --varlen2 gives %d lengths, --varlen %d: one per sequence in both\n", n2,
                co->n_seqs);
        return TOOL_USAGE;
    }
    co->has_seqlens2 = true;
    return TOOL_OK;
}

int tool_problem(const ladder_algo *algo, const tool_opts *o, const void *base, void *problem, ladder_case_opts *co) {
    memset(co, 0, sizeof *co);
    co->seed = o->seed;
    if (base) memcpy(problem, base, algo->problem_size);
    else ladder_problem_defaults(algo, problem);
    for (int f = 0; f < o->n_flags; f++) {
        int i = ladder_algo_param(algo, o->flag[f][0]);
        if (i < 0) continue; /* another algorithm's flag (main() checked that some algorithm has it) */
        const ladder_param *p = &algo->params[i];
        const ladder_param_names *names = ladder_param_names_of(algo, i);
        char *end;
        double v = 0;
        if (names && names->parse(o->flag[f][1], &v) != LADDER_OK) {
            fprintf(stderr, "ladder: --%s: %s\n", p->name, ladder_last_error());
            return TOOL_USAGE;
        }
        if (!names) v = strtod(o->flag[f][1], &end);
        bool whole = p->type != LADDER_PARAM_DOUBLE;
        if (!names && (end == o->flag[f][1] || *end || !(v >= p->lo && v <= p->hi) || (whole && v != floor(v)))) {
            fprintf(stderr, "ladder: --%s needs %s in %g..%g, got '%s'\n", p->name, whole ? "a whole number" : "a number",
                    p->lo, p->hi, o->flag[f][1]);
            return TOOL_USAGE;
        }
        if (o->varlen && algo->varlen_dim &&
            (!strcmp(p->name, algo->varlen_dim) || !strcmp(p->name, algo->varlen_batch) ||
             (algo->varlen_dim2 && !strcmp(p->name, algo->varlen_dim2)))) {
            fprintf(stderr, "ladder: --varlen sets %s = 1 and %s%s%s = the sum of the lengths; do not also give --%s\n",
                    algo->varlen_batch, algo->varlen_dim, algo->varlen_dim2 ? " and " : "",
                    algo->varlen_dim2 ? algo->varlen_dim2 : "", p->name);
            return TOOL_USAGE;
        }
        ladder_param_set(algo, problem, i, v);
    }
    if (o->varlen2 && !o->varlen) {
        fprintf(stderr, "ladder: --varlen2 gives the second lengths of packed sequences: give --varlen too\n");
        return TOOL_USAGE;
    }
    if (o->varlen && parse_varlen(algo, o, co) != TOOL_OK) return TOOL_USAGE;
    co->with = algo->run_with; /* the descriptor's choice, unless --with gives one */
    if (o->with && ladder_algo_with(algo, o->with, &co->with) != LADDER_OK) {
        fprintf(stderr, "ladder: --with %s: %s\n", o->with, ladder_last_error());
        return TOOL_USAGE;
    }
    if (o->frozen && ladder_algo_frozen(algo, o->frozen, &co->frozen) != LADDER_OK) {
        fprintf(stderr, "ladder: --frozen %s: %s\n", o->frozen, ladder_last_error());
        return TOOL_USAGE;
    }
    return tool_broadcast_flag(algo, o, problem, co);
}

int tool_broadcast_flag(const ladder_algo *algo, const tool_opts *o, const void *problem, ladder_case_opts *co) {
    const int t = ladder_algo_tensor(algo, o->bcast_name);
    if (!o->bcast || t < 0 || !(algo->tensors[t].role & LADDER_BROADCAST)) return TOOL_OK;
    co->broadcast = 0;
    if (!strcmp(o->bcast, "none")) {
        co->with &= ~(1u << t);
        return TOOL_OK;
    }
    /* the problem's sizes as the case will have them (packed sequences change them) */
    _Alignas(8) unsigned char sized[LADDER_PROBLEM_MAX];
    memcpy(sized, problem, algo->problem_size);
    ladder_problem_packed(algo, co, sized);
    int64_t full[LADDER_MAX_RANK];
    const int rank = ladder_tensor_shape_of(algo, sized, NULL, t, full);
    const char *p = o->bcast;
    for (int d = 0; d < rank; d++) {
        char *end;
        errno = 0;
        const long long n = strtoll(p, &end, 10);
        if (end == p || errno || (n != 1 && n != full[d]) || (d + 1 < rank ? *end != ',' : *end != '\0')) {
            char want[160] = "";
            for (int e = 0, at = 0; e < rank && at < (int)sizeof want; e++)
                at += snprintf(want + at, sizeof want - (size_t)at, "%s%lld", e ? "," : "", (long long)full[e]);
            fprintf(stderr,
                    "ladder: --%s %s: give %d sizes (%s), each the problem's (%s) or 1 to broadcast along it, or "
                    "none\n",
                    o->bcast_name, o->bcast, rank, algo->tensors[t].dims, want);
            return TOOL_USAGE;
        }
        if (n == 1 && full[d] != 1) co->broadcast |= 1u << d;
        p = end + 1;
    }
    co->with |= 1u << t;
    return TOOL_OK;
}

static double gbps(const ladder_case *c, ladder_pass pass, ladder_dtype dt, double ms) {
    return ms > 0 ? c->algo->bytes(c->problem, c->present, pass, dt) / (ms * 1e-3) / 1e9 : 0;
}

int tool_exit_code(ladder_status st) {
    if (st == LADDER_OK) return TOOL_OK;
    bool input = st == LADDER_ERR_ARG || st == LADDER_ERR_SHAPE || st == LADDER_ERR_UNSUPPORTED ||
                 st == LADDER_ERR_IO || st == LADDER_ERR_UNAVAILABLE;
    return input ? TOOL_USAGE : TOOL_FAIL;
}

/* A failed library call, said on stderr with its status; its exit code. */
static int report_failure(ladder_status st) {
    fprintf(stderr, "ladder: %s: %s\n", ladder_status_name(st), ladder_last_error());
    return tool_exit_code(st);
}

int tool_run(const ladder_algo *algo, const tool_opts *o) {
    _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX];
    ladder_case_opts co;
    if (tool_problem(algo, o, NULL, problem, &co) != TOOL_OK) return TOOL_USAGE;
    for (int r = 0; r < LADDER_RUNG_COUNT; r++)
        if (o->rung_chosen[r] && ladder_algo_rung_available(algo, (ladder_rung)r) != LADDER_OK) {
            fprintf(stderr, "ladder: --rung %s cannot run here: %s\n", ladder_rung_name((ladder_rung)r),
                    ladder_last_error());
            return TOOL_USAGE;
        }
    ladder_case c;
    if (ladder_case_make(&c, algo, problem, &co) != LADDER_OK) {
        fprintf(stderr, "ladder: %s\n", ladder_last_error());
        return TOOL_USAGE;
    }
    char shape[512];
    ladder_problem_describe(algo, c.problem, shape, sizeof shape); /* the scale the kernels use, not 0 */
    char extras[256] = ""; /* the optional inputs the case has, with their shapes (a broadcast bias's 1s) */
    for (int i = 0, at = 0; i < algo->n_tensors && at < (int)sizeof extras; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!(s->role & LADDER_OPTIONAL) || (s->role & LADDER_INDEX) || !(s->role & (LADDER_IN_FWD | LADDER_IN_BWD)) ||
            !c.t[i].data)
            continue;
        at += snprintf(extras + at, sizeof extras - (size_t)at, "  %s [", s->name);
        for (int d = 0; d < c.t[i].rank && at < (int)sizeof extras; d++)
            at += snprintf(extras + at, sizeof extras - (size_t)at, "%s%lld", d ? "," : "", (long long)c.t[i].shape[d]);
        if (at < (int)sizeof extras)
            at += snprintf(extras + at, sizeof extras - (size_t)at, "]%s", (co.frozen >> i) & 1u ? " frozen" : "");
    }
    printf("%s  %s%s%s%s%s%s  seed %llu\n", algo->name, shape, o->varlen ? "  varlen " : "", o->varlen ? o->varlen : "",
           o->varlen2 ? "  varlen2 " : "", o->varlen2 ? o->varlen2 : "", extras, (unsigned long long)o->seed);
    printf("%-15s %-5s %9s %9s %9s %9s %8s %8s %11s  %s\n", "rung", "dtype", "fwd ms", "bwd ms", "fwd GB/s",
           "bwd GB/s", "fwd x", "bwd x", "rel err", "check");
    /* the reference: the cpu rung on the f32 inputs (timed, so its row is also the speedup baseline) */
    const ladder_run_opts timed = {.warmup = 1, .reps = 5};
    ladder_result ref, ref_rounded = {0};
    bool have_rounded = false;
    ladder_status st_ref = ladder_run(LADDER_RUNG_CPU, LADDER_F32, &c, &timed, &ref);
    if (st_ref != LADDER_OK) {
        ladder_case_free(&c);
        return report_failure(st_ref); /* bad flags exit 2 here as they do with --in */
    }
    int failures = 0;
    char skipped[128] = "", skip_reason[512] = "";
    for (int r = 0; r < LADDER_RUNG_COUNT; r++) {
        ladder_rung rung = (ladder_rung)r;
        ladder_dtype dt = ladder_rung_dtype(rung, o->dtype);
        if (!tool_rung_wanted(o, rung)) continue;
        if (ladder_algo_rung_available(algo, rung) != LADDER_OK) {
            size_t used = strlen(skipped);
            snprintf(skipped + used, sizeof skipped - used, "%s%s", used ? ", " : "", ladder_rung_name(rung));
            const char *why = strstr(ladder_last_error(), ": "); /* the same reason for every GPU rung */
            snprintf(skip_reason, sizeof skip_reason, "%s", why ? why + 2 : ladder_last_error());
            continue;
        }
        ladder_result got = ref;
        const ladder_result *want = &ref;
        ladder_status st = LADDER_OK;
        if (rung != LADDER_RUNG_CPU) {
            st = ladder_run(rung, o->dtype, &c, &timed, &got);
            if (st == LADDER_OK && dt != LADDER_F32 && !have_rounded) {
                st = ladder_run_tc_reference(&c, dt, &ref_rounded);
                have_rounded = st == LADDER_OK;
            }
            if (dt != LADDER_F32) want = &ref_rounded;
        }
        if (st != LADDER_OK) {
            printf("%-15s %-5s FAIL: %s\n", ladder_rung_name(rung), ladder_dtype_name(dt), ladder_last_error());
            failures++;
            continue;
        }
        ladder_check k = {.ok = true};
        if (rung != LADDER_RUNG_CPU) k = ladder_result_check(&c, &got, want, ladder_run_tolerance(&c, rung, o->dtype));
        char err[16];
        snprintf(err, sizeof err, rung == LADDER_RUNG_CPU ? "reference" : "%.1e", k.worst);
        printf("%-15s %-5s %9.3f %9.3f %9.1f %9.1f %8.1f %8.1f %11s  %s\n", ladder_rung_name(rung),
               ladder_dtype_name(dt), got.ms[0], got.ms[1], gbps(&c, LADDER_PASS_FWD, dt, got.ms[0]),
               gbps(&c, LADDER_PASS_BWD, dt, got.ms[1]), ref.ms[0] / got.ms[0], ref.ms[1] / got.ms[1],
               err, k.ok ? "PASS" : "FAIL");
        if (!k.ok) {
            printf("    %s\n", k.why);
            failures++;
        }
        if (rung != LADDER_RUNG_CPU) ladder_result_free(&got);
    }
    if (skipped[0]) printf("skipped %s: %s\n", skipped, skip_reason);
    printf("%s: %d failed check%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
    ladder_result_free(&ref);
    ladder_result_free(&ref_rounded);
    ladder_case_free(&c);
    return failures ? TOOL_FAIL : TOOL_OK;
}

/*
 * With --in the files give every size: a size flag that disagrees with them is refused (a run of some other size
 * than the one asked for would be a surprise), one that agrees is harmless.
 */
static int sizes_agree(const ladder_algo *algo, const tool_opts *o, const ladder_case *c) {
    for (int f = 0; f < o->n_flags; f++) {
        int i = ladder_algo_param(algo, o->flag[f][0]);
        if (i < 0 || !ladder_param_is_size(algo, i)) continue;
        double file = ladder_param_get(algo, c->problem, i);
        if (strtod(o->flag[f][1], NULL) != file) {
            fprintf(stderr, "ladder: --%s %s but the files in %s have %s = %.0f: with --in the sizes come from the "
                            "files; drop --%s\n",
                    o->flag[f][0], o->flag[f][1], o->in_dir, o->flag[f][0], file, o->flag[f][0]);
            return TOOL_USAGE;
        }
    }
    return TOOL_OK;
}

/* An output file this run did not write (a forward-only run beside an earlier run's dq.npy) is named: it would
 * otherwise pass for this run's. */
static void warn_stale_outputs(const ladder_algo *algo, const ladder_result *res, const char *dir) {
    for (int i = 0; i < algo->n_tensors; i++) {
        if (!(algo->tensors[i].role & (LADDER_OUT_FWD | LADDER_OUT_BWD)) || res->t[i].data) continue;
        char path[4096];
        int n = snprintf(path, sizeof path, "%s/%s.npy", dir, algo->tensors[i].name);
        if (n > 0 && (size_t)n < sizeof path && access(path, F_OK) == 0)
            fprintf(stderr, "ladder: warning: %s is from an earlier run: this one did not write it\n", path);
    }
}

int tool_run_npy(const ladder_algo *algo, const tool_opts *o) {
    ladder_rung rung = LADDER_RUNG_CPU;
    int chosen = 0;
    for (int r = 0; r < LADDER_RUNG_COUNT; r++)
        if (o->rung_chosen[r]) rung = (ladder_rung)r, chosen++;
    if (chosen > 1) {
        fprintf(stderr, "ladder: --in runs one rung; pick one --rung\n");
        return TOOL_USAGE;
    }
    if (o->not_with_in) {
        fprintf(stderr, "ladder: with --in the files are the case: %s makes a random one, so it cannot be given with "
                        "--in (packed sequences come from the cu_seqlens files, optional tensors from which files are "
                        "there)\n",
                o->not_with_in);
        return TOOL_USAGE;
    }
    if (ladder_algo_rung_available(algo, rung) != LADDER_OK) return report_failure(LADDER_ERR_UNAVAILABLE);
    /* every option not given is neutral (no mask, the default scale), as in a zeroed problem in C: the demo
     * defaults of `ladder run` (flash's causal mask) would silently change a user's reference */
    _Alignas(8) unsigned char neutral[LADDER_PROBLEM_MAX], options[LADDER_PROBLEM_MAX];
    ladder_problem_neutral(algo, neutral);
    ladder_case_opts co;
    if (tool_problem(algo, o, neutral, options, &co) != TOOL_OK) return TOOL_USAGE;
    ladder_case c, rounded = {0};
    ladder_status st = ladder_case_read_dir(&c, algo, o->in_dir, options);
    if (st != LADDER_OK) return report_failure(st);
    if ((st = ladder_case_freeze(&c, co.frozen)) != LADDER_OK) { /* --frozen: those gradients are not written */
        ladder_case_free(&c);
        return report_failure(st);
    }
    if (sizes_agree(algo, o, &c) != TOOL_OK) {
        ladder_case_free(&c);
        return TOOL_USAGE;
    }
    char notes[4096];
    if (ladder_case_dir_warnings(&c, o->in_dir, notes, sizeof notes) != LADDER_OK)
        fprintf(stderr, "ladder: warning: %s\n", ladder_last_error());
    for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(stderr, "ladder: warning: %s\n", line);
    ladder_dtype dt = ladder_rung_dtype(rung, o->dtype);
    char problem[512];
    ladder_problem_describe(algo, c.problem, problem, sizeof problem);
    printf("%s %s  rung %s (%s)%s\n", algo->name, problem, ladder_rung_name(rung), ladder_dtype_name(dt),
           c.backward ? "" : "  forward only");
    if (dt != LADDER_F32) st = ladder_case_rounded(&c, dt, &rounded); /* the inputs as the rung sees them */
    ladder_result res;
    ladder_run_opts once = {0};
    if (st == LADDER_OK) st = ladder_run(rung, o->dtype, dt != LADDER_F32 ? &rounded : &c, &once, &res);
    int rc = TOOL_OK;
    if (st != LADDER_OK) rc = report_failure(st);
    else {
        char written[2048];
        const char *out_dir = o->out_dir ? o->out_dir : o->in_dir;
        st = ladder_result_write_dir(&c, &res, out_dir, written, sizeof written);
        if (st != LADDER_OK) rc = report_failure(st);
        else {
            for (char *line = strtok(written, "\n"); line; line = strtok(NULL, "\n")) printf("wrote %s\n", line);
            warn_stale_outputs(algo, &res, out_dir);
        }
        ladder_result_free(&res);
    }
    ladder_case_free(&rounded);
    ladder_case_free(&c);
    return rc;
}
