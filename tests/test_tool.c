/* The `ladder` program as other builds use it: run --in DIR on .npy files, and its errors. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ladder.h"
#include "rng.h"

static char dir[64], ladder_bin[4096];

static void setup(void) {
    /* the program sits beside this test binary, in build/bin */
    char self[4096] = {0};
    cr_assert_gt(readlink("/proc/self/exe", self, sizeof self - 1), 0);
    snprintf(ladder_bin, sizeof ladder_bin, "%s/ladder", dirname(self));
    cr_assert_eq(access(ladder_bin, X_OK), 0, "%s is missing: build it with make", ladder_bin);
    harness_tmpdir_make(dir, sizeof dir, "tool");
}

static void teardown(void) { harness_tmpdir_remove(dir); }

TestSuite(tool, .init = setup, .fini = teardown);

/* Run the program with these arguments; stderr goes to dir/stderr. Returns the exit code. */
static int run_ladder(const char *args) {
    char cmd[16384];
    int n = snprintf(cmd, sizeof cmd, "%s %s >%s/stdout 2>%s/stderr", ladder_bin, args, dir, dir);
    cr_assert(n > 0 && (size_t)n < sizeof cmd, "the command line is too long for the test");
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* What the last run_ladder() wrote to @p stream ("stdout" or "stderr"), as a string (cut at @p n - 1 bytes). */
static void read_output(const char *stream, char *buf, size_t n) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, stream);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing", path);
    buf[fread(buf, 1, n - 1, f)] = '\0';
    fclose(f);
}

static void read_stderr(char *buf, size_t n) { read_output("stderr", buf, n); }

static void write_random(const char *name, ladder_dtype dtype, int rank, const int64_t *shape, uint64_t seed) {
    ladder_tensor t;
    cr_assert_eq(ladder_tensor_alloc(&t, dtype, rank, shape), LADDER_OK);
    ladder_rng rng;
    ladder_rng_seed(&rng, seed);
    ladder_rng_fill_normal(&rng, &t, 1.0);
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    cr_assert_eq(ladder_npy_write(path, &t), LADDER_OK, "%s", ladder_last_error());
    ladder_tensor_free(&t);
}

static ladder_tensor read_npy(const char *name) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    ladder_tensor t;
    cr_assert_eq(ladder_npy_read(path, &t), LADDER_OK, "%s", ladder_last_error());
    return t;
}

static void expect_failure(const char *why);

Test(tool, run_in_matches_the_cpu_rung) {
    int64_t btd[3] = {2, 37, 9}, btdw[4] = {2, 37, 9, 5};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F16, 4, btdw, 2); /* float16 files are read too */
    write_random("dout", LADDER_F32, 3, btd, 3);
    char args[256];
    snprintf(args, sizeof args, "run dynconv --in %s", dir);
    int rc = run_ladder(args);
    char err[2048];
    read_stderr(err, sizeof err);
    cr_assert_eq(rc, 0, "ladder run --in failed: %s", err);

    ladder_tensor x = read_npy("x"), k16 = read_npy("kernels"), dout = read_npy("dout"), k;
    cr_assert_eq(ladder_tensor_convert(&k16, &k, LADDER_F32), LADDER_OK);
    ladder_tensor out, dx, dk;
    cr_assert_eq(ladder_tensor_alloc(&out, LADDER_F32, 3, btd), LADDER_OK);
    cr_assert_eq(ladder_tensor_alloc(&dx, LADDER_F32, 3, btd), LADDER_OK);
    cr_assert_eq(ladder_tensor_alloc(&dk, LADDER_F32, 4, btdw), LADDER_OK);
    ladder_dynconv_problem p = {2, 37, 9, 5};
    ladder_dynconv_args a = {.x = x, .kernels = k, .out = out, .dout = dout, .dx = dx, .dkernels = dk};
    cr_assert_eq(ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK);
    cr_assert_eq(ladder_dynconv_bwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK);
    const char *names[] = {"out", "dx", "dkernels"};
    ladder_tensor *want[] = {&out, &dx, &dk};
    for (int i = 0; i < 3; i++) {
        ladder_tensor got = read_npy(names[i]);
        cr_assert_eq(got.dtype, LADDER_F32, "%s.npy must be float32", names[i]);
        ladder_cmp c = ladder_compare(&got, want[i], 0.0); /* tolerance 0: bitwise equal, NaN fails */
        cr_assert(c.ok, "%s.npy differs from the cpu rung run in-process (max abs %g, %lld NaN/Inf mismatches)",
                  names[i], c.max_abs, (long long)c.nonfinite_mismatches);
        ladder_tensor_free(&got);
    }
    ladder_tensor *all[] = {&x, &k16, &k, &dout, &out, &dx, &dk};
    for (int i = 0; i < 7; i++) ladder_tensor_free(all[i]);
}

Test(tool, run_in_forward_only_and_varlen) {
    int64_t btd[3] = {1, 10, 3}, btdw[4] = {1, 10, 3, 4}, n[1] = {4};
    write_random("x", LADDER_F32, 3, btd, 4);
    write_random("kernels", LADDER_F32, 4, btdw, 5);
    ladder_tensor cu;
    cr_assert_eq(ladder_tensor_alloc(&cu, LADDER_I64, 1, n), LADDER_OK);
    int64_t offs[4] = {0, 6, 6, 10}; /* int64 offsets are accepted, an empty sequence too */
    memcpy(cu.data, offs, sizeof offs);
    char path[128], args[256];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    cr_assert_eq(ladder_npy_write(path, &cu), LADDER_OK);
    ladder_tensor_free(&cu);
    snprintf(args, sizeof args, "run dynconv --in %s --out %s", dir, dir);
    cr_assert_eq(run_ladder(args), 0);
    snprintf(path, sizeof path, "%s/dx.npy", dir);
    cr_assert_neq(access(path, R_OK), 0, "dx.npy must not be written without dout.npy");
    snprintf(path, sizeof path, "%s/dkernels.npy", dir);
    cr_assert_neq(access(path, R_OK), 0, "dkernels.npy must not be written without dout.npy");

    /* out.npy is the cpu rung's answer with the same packing (the window never crosses offset 6) */
    ladder_tensor x = read_npy("x"), k = read_npy("kernels"), got = read_npy("out"), want;
    int32_t cu32[4] = {0, 6, 6, 10};
    cr_assert_eq(ladder_tensor_alloc(&want, LADDER_F32, 3, btd), LADDER_OK);
    ladder_dynconv_problem p = {1, 10, 3, 4};
    ladder_dynconv_args a = {.x = x, .kernels = k, .cu_seqlens = ladder_tensor_make(cu32, LADDER_I32, 1, n), .out = want};
    cr_assert_eq(ladder_dynconv_fwd(LADDER_RUNG_CPU, &p, &a), LADDER_OK, "%s", ladder_last_error());
    ladder_cmp c = ladder_compare(&got, &want, 0.0);
    cr_assert(c.ok, "out.npy differs from the cpu rung with cu_seqlens (max abs %g)", c.max_abs);
    ladder_tensor *all[] = {&x, &k, &got, &want};
    for (int i = 0; i < 4; i++) ladder_tensor_free(all[i]);
}

Test(tool, run_in_bad_values_in_files) {
    int64_t btd[3] = {1, 10, 3}, bad_w[4] = {1, 10, 3, 100}, n[1] = {3};
    write_random("x", LADDER_F32, 3, btd, 4);
    write_random("kernels", LADDER_F32, 4, bad_w, 5);
    expect_failure("kernels.npy has W = 100 (dimension 3) but W must be in 1..64");
    int64_t btdw[4] = {1, 10, 3, 4};
    write_random("kernels", LADDER_F32, 4, btdw, 5);
    ladder_tensor cu;
    cr_assert_eq(ladder_tensor_alloc(&cu, LADDER_I64, 1, n), LADDER_OK);
    int64_t offs[3] = {0, ((int64_t)1 << 32) + 2, 10};
    memcpy(cu.data, offs, sizeof offs);
    char path[128];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    cr_assert_eq(ladder_npy_write(path, &cu), LADDER_OK);
    ladder_tensor_free(&cu);
    expect_failure("cu_seqlens.npy entry 1 is 4294967298, outside the int32 range");
}

/* Each broken input directory is a usage error (exit 2) with a message that says why. */
static void expect_failure(const char *why) {
    char args[256], err[2048];
    snprintf(args, sizeof args, "run dynconv --in %s", dir);
    int rc = run_ladder(args);
    read_stderr(err, sizeof err);
    cr_assert_eq(rc, 2, "ladder run --in should exit 2 when %s (exit %d: %s)", why, rc, err);
    cr_assert_not_null(strstr(err, why), "stderr '%s' should say '%s'", err, why);
}

/* A FIFO where a file should be is refused at once: reading it would wait for a writer forever. */
Test(tool, run_in_refuses_a_fifo, .timeout = 20) {
    int64_t btdw[4] = {1, 8, 4, 3};
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", dir);
    cr_assert_eq(mkfifo(path, 0644), 0, "cannot make a FIFO");
    expect_failure("x.npy is a FIFO, not a regular file");
}

Test(tool, run_in_truncated_file) {
    int64_t btd[3] = {1, 8, 4}, btdw[4] = {1, 8, 4, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/kernels.npy", dir);
    cr_assert_eq(truncate(path, 200), 0);
    expect_failure("truncated");
}

Test(tool, run_in_missing_and_malformed_files) {
    int64_t btd[3] = {1, 8, 4}, btdw[4] = {1, 8, 4, 3}, wrong[3] = {1, 8, 5};
    write_random("x", LADDER_F32, 3, btd, 1);
    expect_failure("kernels.npy: cannot open");
    char path[128];
    snprintf(path, sizeof path, "%s/kernels.npy", dir);
    FILE *f = fopen(path, "wb");
    fputs("not an npy file", f);
    fclose(f);
    expect_failure("no \\x93NUMPY magic");
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    write_random("dout", LADDER_F32, 3, wrong, 3);
    expect_failure("dout has shape [1,8,5] but the problem needs [1,8,4]");
}

Test(tool, bad_flags_exit_2) {
    cr_assert_eq(run_ladder("run dynconv --rung gpu_fast"), 2);
    char err[2048];
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "gpu_fast"));
    cr_assert_eq(run_ladder("run dynconv --W 65"), 2);
    cr_assert_eq(run_ladder("run nosuchalgo"), 2);
    cr_assert_eq(run_ladder("run dynconv --varlen 3,x"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "--varlen"), "stderr '%s' should name --varlen", err);
    cr_assert_eq(run_ladder("run dynconv --varlen 1,99999999999999999999"), 2);
    cr_assert_eq(run_ladder("run dynconv --varlen ''"), 2, "an empty --varlen is a usage error");
    cr_assert_eq(run_ladder("run dynconv --varlen 0,0"), 2, "--varlen with no tokens is a usage error");
    cr_assert_eq(run_ladder("run dynconv --varlen 3,4 --T 7"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "do not also give --T"), "stderr '%s' should refuse --varlen with --T", err);
    cr_assert_eq(run_ladder("run dynconv --varlen 3,4 --varlen2 3,4"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "no --varlen2"), "stderr '%s' should say dynconv packs one size", err);
    cr_assert_eq(run_ladder("run flash --varlen 3,4 --varlen2 5"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "one per sequence"), "stderr '%s' should ask for as many lengths", err);
    cr_assert_eq(run_ladder("run flash --varlen2 5"), 2, "--varlen2 alone is a usage error");
    cr_assert_eq(run_ladder("run flash --varlen 3,4 --Sk 9"), 2, "--varlen sets Sk too");
    cr_assert_eq(run_ladder("bench dynconv --gemm-tflops abc"), 2);
    cr_assert_eq(run_ladder("run dynconv --nosuchflag 3"), 2);
    cr_assert_eq(run_ladder("run dynconv --in ''"), 2, "an empty --in is a usage error");
}

/* --dtype fp32 reaches the tensor-core rung only where the algorithm has TF32 kernels (memeff): elsewhere it is a
 * usage error naming the algorithm and the dtype, never a silent bf16 run; the fp32 rungs ignore it. */
Test(tool, dtype_fp32_only_where_the_tensor_core_rung_has_it) {
    char err[2048], out[4096];
    cr_assert_eq(run_ladder("run flash --dtype fp32"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "flash has no f32 inputs at rung gpu_tensorcore"), "stderr: %s", err);
    cr_assert_eq(run_ladder("run all --dtype fp32"), 2, "dynconv, flash and recurrent have no fp32 tensor-core rung");
    cr_assert_eq(run_ladder("bench recurrent --dtype fp32"), 2);
    cr_assert_eq(run_ladder("run memeff --dtype fp64"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "bf16, fp16 or fp32"), "stderr: %s", err);
    cr_assert_eq(run_ladder("run memeff --allow_tf32 3"), 2, "allow_tf32 is 0 or 1");
    cr_assert_eq(run_ladder("run flash --dtype fp32 --rung cpu --Hq 2 --Hkv 1 --Sq 9 --Sk 11 --D 8 --Dv 8"), 0,
                 "the cpu rung ignores --dtype");
    cr_assert_eq(run_ladder("run memeff --dtype fp32 --rung cpu --allow_tf32 1 --B 1 --Hq 2 --Hkv 1 --Sq 9 --Sk 11 "
                            "--D 8 --Dv 8"), 0);
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "allow_tf32=1"), "stdout '%s' should show the option", out);
}

/* On a GPU: memeff in fp32 at the tensor-core rung passes `ladder run`'s check, at each precision's tolerance. */
Test(tool, memeff_fp32_at_the_tensor_core_rung_passes_its_check) {
    if (ladder_rung_available(LADDER_RUNG_GPU_TENSORCORE) != LADDER_OK) cr_skip_test("no GPU here");
    char out[4096];
    for (int one = 0; one < 2; one++) {
        char args[256];
        snprintf(args, sizeof args, "run memeff --rung gpu_tensorcore --dtype fp32 --allow_tf32 %d --B 1 --Hq 2 "
                 "--Hkv 1 --Sq 70 --Sk 90 --D 40 --Dv 24", one);
        const int rc = run_ladder(args);
        read_output("stdout", out, sizeof out);
        cr_assert_eq(rc, 0, "%s exited %d: %s", args, rc, out);
        cr_assert_not_null(strstr(out, "gpu_tensorcore  f32"), "stdout '%s' should show the f32 row", out);
    }
}

/* --varlen2 gives the keys their own lengths: a sequence with queries and no keys, and one with keys and no queries. */
Test(tool, run_varlen2_packs_keys_apart) {
    cr_assert_eq(run_ladder("run flash --rung cpu --varlen 3,0,5 --varlen2 7,2,0 --D 8 --Dv 8 --Hq 2 --Hkv 1"), 0);
    char out[4096];
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "Sq=8 Sk=9"), "stdout '%s' should show Sq = 3+0+5 and Sk = 7+2+0", out);
    cr_assert_not_null(strstr(out, "varlen2 7,2,0"), "stdout '%s' should name the key lengths", out);
    cr_assert_not_null(strstr(out, "scale=0.353553391 (1/sqrt(D))"), "stdout '%s' should show the scale used", out);
}

/* A rung asked for by name that cannot run here is a usage error, never "ok". */
Test(tool, an_unavailable_requested_rung_exits_2) {
    if (ladder_rung_available(LADDER_RUNG_GPU_TILED) == LADDER_OK) cr_skip_test("gpu_tiled can run here");
    cr_assert_eq(run_ladder("run dynconv --rung gpu_tiled --T 8 --D 4"), 2);
    char err[2048];
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "gpu_tiled cannot run here"), "stderr '%s' should say why", err);
}

/* Without any --rung, unavailable GPU rungs are skipped, all named in one line, and the run passes. */
Test(tool, skipped_gpu_rungs_are_all_named) {
    if (ladder_gpu_count() > 0) cr_skip_test("a GPU is present here");
    cr_assert_eq(run_ladder("run dynconv --T 8 --D 4"), 0);
    char out[4096];
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "skipped gpu_naive, gpu_tiled, gpu_tensorcore: "), "stdout: %s", out);
}

/* --out names a directory that is created when missing; a path too long for the program is refused. */
Test(tool, run_in_creates_out_and_refuses_long_paths) {
    int64_t btd[3] = {1, 6, 2}, btdw[4] = {1, 6, 2, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char args[8192], path[256];
    snprintf(args, sizeof args, "run dynconv --in %s --out %s/new/deeper", dir, dir);
    cr_assert_eq(run_ladder(args), 0);
    snprintf(path, sizeof path, "%s/new/deeper/out.npy", dir);
    cr_assert_eq(access(path, R_OK), 0, "%s should have been written", path);
    char longdir[5000];
    memset(longdir, 'a', sizeof longdir - 1);
    longdir[sizeof longdir - 1] = '\0';
    snprintf(args, sizeof args, "run dynconv --in %s --out %s/%s", dir, dir, longdir);
    cr_assert_eq(run_ladder(args), 2, "a path longer than the program's buffer must be refused, not cut short");
}

/* `ladder bench FLAGS` into the test's directory must pass; its stdout (the report) into @p out. */
static void run_bench(const char *flags, char *out, size_t n) {
    char args[512];
    snprintf(args, sizeof args, "bench %s --out %s/b", flags, dir);
    cr_assert_eq(run_ladder(args), 0, "ladder %s should pass", args);
    read_output("stdout", out, n);
}

/* bench times both precisions of the tensor-core rung unless --dtype names one. */
Test(tool, bench_dtype_picks_one_precision) {
    if (ladder_rung_available(LADDER_RUNG_GPU_TENSORCORE) != LADDER_OK) cr_skip_test("gpu_tensorcore cannot run here");
    char out[8192];
    run_bench("dynconv --rung gpu_tensorcore --dtype fp16 --B 1 --T 64 --D 32 --W 4", out, sizeof out);
    cr_assert_not_null(strstr(out, "| gpu_tensorcore | f16 |"), "stdout '%s' should time fp16", out);
    cr_assert_null(strstr(out, "| bf16 |"), "stdout '%s' should not time bf16", out);
}

/* Each bench problem runs the rungs of its own set: only flash's first, small problem has the cpu rung (the sweep's
 * sizes would take it many minutes), so `--rung cpu` times that one problem, both passes, and nothing else. */
Test(tool, bench_runs_each_problem_at_its_rungs) {
    char out[8192];
    run_bench("flash --rung cpu", out, sizeof out);
    cr_assert_not_null(strstr(out, "| flash | fwd | cpu | f32 | B=1 Hq=8 Hkv=8 Sq=1024 "), "stdout: %s", out);
    cr_assert_not_null(strstr(out, "| flash | bwd | cpu | f32 | B=1 Hq=8 Hkv=8 Sq=1024 "), "stdout: %s", out);
    int rows = 0;
    for (const char *p = out; (p = strstr(p, "| flash |")) != NULL; p++) rows++;
    cr_assert_eq(rows, 2, "stdout '%s' should hold the small problem's two cpu rows and no other", out);
}

/* The cpu rung's rows are measured against the host's copy bandwidth, measured in the same run at the thread count
 * the rung ran with: the report names both, and the CSV carries them and the rows' % of copy, and the host's rate on
 * a multiply-add loop at that thread count. */
Test(tool, bench_measures_the_host_copy_ceiling_for_the_cpu_rung) {
    char out[8192], csv[8192], cmd[4400], err[8192];
    setenv("OMP_NUM_THREADS", "2", 1);
    run_bench("recurrent --rung cpu --B 1 --T 64 --H 2", out, sizeof out);
    unsetenv("OMP_NUM_THREADS");
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(out, " GB/s at 2 threads"), "stdout '%s' should name the host copy at 2 threads", out);
    snprintf(cmd, sizeof cmd, "cat %s/b/*.csv > %s/stdout", dir, dir);
    cr_assert_eq(system(cmd), 0);
    read_output("stdout", csv, sizeof csv);
    cr_assert_not_null(strstr(csv, ",speedup_vs_cpu,cpu_copy_gbps,cpu_threads,cpu_gflops\n"), "CSV header: %s", csv);
    const char *row = strstr(csv, ",recurrent,fwd,cpu,");
    cr_assert_not_null(row, "CSV '%s' should have the cpu forward row", csv);
    while (row > csv && row[-1] != '\n') row--;
    /* its fields: ... copy_gbps (13), gemm_tflops, pct_of_copy (15), ..., cpu_copy_gbps (19), cpu_threads (20),
     * cpu_gflops (21) */
    char line[1024], *field[22];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(row, "\n"), row);
    int n = 0;
    for (char *p = line; n < 22 && p; n++) {
        field[n] = p;
        p = strchr(p, ',');
        if (p) *p++ = '\0';
    }
    cr_assert_eq(n, 22, "the row should have 22 fields: %s", row);
    cr_assert(*field[15] && *field[19], "the cpu row's %% of copy and the host copy should be measured: %s", row);
    cr_assert_str_eq(field[20], "2", "the row should name 2 threads: %s", row);
    cr_assert(atof(field[21]) > 0.0, "the host's multiply-add rate should be measured: %s", row);
    cr_assert_not_null(strstr(err, "bench: host multiply-add loop "), "stderr: %s", err);
}

/* --cpu-reps times the cpu rung that many times (the median reported); below 1 it is a usage error. */
Test(tool, bench_cpu_reps) {
    char out[8192];
    run_bench("recurrent --rung cpu --B 1 --T 64 --H 2 --cpu-reps 3", out, sizeof out);
    cr_assert_not_null(strstr(out, "| recurrent | bwd | cpu |"), "stdout: %s", out);
    cr_assert_eq(run_ladder("bench recurrent --rung cpu --cpu-reps 0"), 2);
}

/* flex times building its block lists alone (the document mask, at 128k tokens unless the flags say otherwise), in a
 * row of its own at the cpu rung and, with a GPU, the GPU builder's; the passes' rows are timed with the lists given.
 * (B, Hq and Hkv are left to the problems: with every size given, the small problem that the cpu rung runs would be
 * the sweep's learnable ALiBi problem, which runs the tensor-core rung alone.) */
Test(tool, bench_times_building_the_block_lists_in_a_row_of_its_own) {
    char out[8192];
    run_bench("flex --rung cpu --Sq 300 --Sk 700 --D 8 --Dv 8", out, sizeof out);
    cr_assert_not_null(strstr(out, "| flex | fwd | cpu | f32 | B=1 Hq=8 Hkv=8 Sq=300 Sk=700 "), "stdout: %s", out);
    const char *row = strstr(out, "| flex | build | cpu | i32 | B=1 Hq=1 Hkv=1 Sq=300 Sk=700 D=8 Dv=8 ");
    cr_assert_not_null(row, "stdout '%s' should have the cpu builder's row at the flags' size", out);
    cr_assert_not_null(strstr(row, "mask_mod=document "), "the build row masks documents: %s", row);
    cr_assert_not_null(strstr(row, " docs="), "the build row names its documents: %s", row);
    cr_assert_eq(run_ladder("bench flex --rung cpu --Sq 0"), 2, "a bad size is a usage error, for the build row too");
}

/* A bench row says which of its inputs are frozen (read, their gradient not asked for), so that a frozen row and a
 * learnable row of one problem differ: flex's small problem has learnable slopes ("frozen=none"), --frozen replaces
 * every problem's own set, and a name that cannot be frozen is a usage error naming it. The sweep's sizes (the
 * tensor-core rung alone) have no reference rung, and a machine without a GPU leaves them out, naming them. */
Test(tool, bench_rows_name_their_frozen_inputs) {
    char out[8192], err[16384];
    run_bench("flex --rung cpu --Sq 64 --Sk 80 --D 8 --Dv 8", out, sizeof out);
    cr_assert_not_null(strstr(out, "| flex | bwd | cpu | f32 | B=1 Hq=8 Hkv=8 Sq=64 Sk=80 D=8 Dv=8 "), "stdout: %s",
                       out);
    cr_assert_not_null(strstr(out, "score_mod=alibi mask_mod=causal softcap=0 window_left=-1 num_buckets=32 "
                                   "frozen=none |"),
                       "the learnable row should say frozen=none: %s", out);
    run_bench("flex --rung cpu --Sq 64 --Sk 80 --D 8 --Dv 8 --frozen slopes", out, sizeof out);
    cr_assert_not_null(strstr(out, " num_buckets=32 frozen=slopes |"), "the frozen row should say so: %s", out);
    cr_assert_null(strstr(out, "frozen=none"), "--frozen slopes freezes every problem's slopes: %s", out);
    if (ladder_rung_available(LADDER_RUNG_GPU_TENSORCORE) != LADDER_OK) {
        run_bench("flex --rung gpu_tensorcore", out, sizeof out);
        read_stderr(err, sizeof err);
        cr_assert_not_null(strstr(err, "[B=2 Hq=16 Hkv=16 Sq=8192 Sk=8192 D=128 Dv=128 scale=0 score_mod=alibi "
                                        "mask_mod=causal+window softcap=0 window_left=1024 num_buckets=32 "
                                        "frozen=slopes] left out"),
                           "stderr should name the frozen window problem it leaves out: %s", err);
    }
    cr_assert_eq(run_ladder("bench flex --rung cpu --frozen slopes,q"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "--frozen slopes,q") && strstr(err, "'q'"), "stderr: %s", err);
}

/* Size flags that make the small problem the same as one of the sweep's take the sweep's rungs there: flash's first
 * problem at B=16 Hq=32 (the sweep's D=64 S=1024 size) must not run the cpu rung, which would take minutes. Flags that
 * move every problem to one small size keep the cpu rung: no problem that barred it is left at its size. */
Test(tool, bench_flags_that_merge_problems_keep_the_narrower_rung_set) {
    char out[8192];
    run_bench("flash --rung cpu --B 16 --Hq 32 --Hkv 32", out, sizeof out);
    cr_assert_null(strstr(out, "| flash |"), "stdout '%s' should hold no row: no problem of that size runs cpu", out);
    /* every size given, a small one: every problem becomes it, and none that barred the cpu rung is left at its size */
    run_bench("flash --rung cpu --B 1 --Hq 1 --Hkv 1 --Sq 64 --Sk 64 --D 16 --Dv 16", out, sizeof out);
    cr_assert_not_null(strstr(out, "| flash | fwd | cpu | f32 | B=1 Hq=1 Hkv=1 Sq=64 Sk=64 D=16 Dv=16 "),
                       "stdout '%s' should time the cpu rung at the small size the flags made", out);
}

/* ---- a command line that never surprises (issue 21) ------------------------------------------------------------ */

/* flash's q, k, v of B=1 Hq=Hkv=2 D=Dv=16 with Sq queries and Sk keys, and do when @p backward. */
static void write_flash(int64_t sq, int64_t sk, bool backward) {
    int64_t q[4] = {1, 2, sq, 16}, kv[4] = {1, 2, sk, 16};
    write_random("q", LADDER_F32, 4, q, 11);
    write_random("k", LADDER_F32, 4, kv, 12);
    write_random("v", LADDER_F32, 4, kv, 13);
    if (backward) write_random("do", LADDER_F32, 4, q, 14);
}

static void run_in(const char *flags, int want_rc, char *out, size_t n_out, char *err, size_t n_err) {
    char args[512];
    snprintf(args, sizeof args, "run %s --in %s", flags, dir);
    int rc = run_ladder(args);
    read_output("stdout", out, n_out);
    read_output("stderr", err, n_err);
    cr_assert_eq(rc, want_rc, "ladder %s exited %d, not %d: stdout '%s' stderr '%s'", args, rc, want_rc, out, err);
}

/* A size flag that disagrees with the files is refused; one that agrees runs. Either way the problem is printed. */
Test(tool, in_refuses_size_flags_that_disagree_with_the_files) {
    int64_t btd[3] = {2, 37, 9}, btdw[4] = {2, 37, 9, 5};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char out[4096], err[4096];
    run_in("dynconv --T 10", 2, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(err, "--T 10 but the files in"), "stderr '%s' should refuse --T 10", err);
    cr_assert_not_null(strstr(err, "T = 37"), "stderr '%s' should name the files' T", err);
    run_in("dynconv --T 37 --W 5", 0, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(out, "dynconv B=2 T=37 D=9 W=5"), "stdout '%s' should print the problem that ran", out);
    run_in("dynconv --seed 3", 2, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(err, "--seed makes a random one"), "stderr '%s' should refuse --seed", err);
    run_in("dynconv --with x", 2, out, sizeof out, err, sizeof err);
}

/* With --in every option not given is neutral: flash runs without a mask (the demo's causal = 1 does not apply), and
 * the line it prints shows the scale the kernels use, not 0. */
Test(tool, in_options_default_to_neutral_and_the_scale_used_is_printed) {
    write_flash(7, 9, false);
    char out[4096], err[4096];
    run_in("flash", 0, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(out, "scale=0.25 (1/sqrt(D))"), "stdout '%s' should show scale = 1/sqrt(16)", out);
    cr_assert_not_null(strstr(out, "causal=0 window_left=-1 window_right=-1"), "stdout '%s': no mask", out);
    ladder_tensor plain = read_npy("o");
    run_in("flash --causal 0", 0, out, sizeof out, err, sizeof err);
    ladder_tensor off = read_npy("o");
    cr_assert(ladder_compare(&plain, &off, 0.0).ok, "no --causal must be the same run as --causal 0");
    run_in("flash --causal 1", 0, out, sizeof out, err, sizeof err);
    ladder_tensor causal = read_npy("o");
    cr_assert_not(ladder_compare(&plain, &causal, 0.0).ok, "--causal 1 must change o (the test would be blind)");
    ladder_tensor_free(&plain);
    ladder_tensor_free(&off);
    ladder_tensor_free(&causal);
    /* a signed option's neutral value is 0, not its smallest: recurrent's scale is 1/sqrt(K), not -1e6 */
    int64_t qk[4] = {1, 3, 2, 64}, v[4] = {1, 3, 2, 8};
    write_random("q", LADDER_F32, 4, qk, 1);
    write_random("k", LADDER_F32, 4, qk, 2);
    write_random("v", LADDER_F32, 4, v, 3);
    run_in("recurrent", 0, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(out, "scale=0.125 (1/sqrt(K)) reverse=0"), "stdout '%s' should show 1/sqrt(64)", out);
}

/* --frozen reads an input without asking for its gradient: `ladder run` says which inputs it froze, `--in` writes no
 * gradient for them (and still every other output), and a name that cannot be frozen is refused, naming it. */
Test(tool, frozen_inputs_are_read_and_their_gradient_is_not_written) {
    char out[8192], err[4096], args[512], path[256];
    cr_assert_eq(run_ladder("run flex --rung cpu --score_mod alibi --Hq 2 --Hkv 2 --Sq 40 --Sk 50 --frozen slopes"), 0);
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "slopes [2] frozen"), "stdout '%s' should say slopes is frozen", out);
    cr_assert_eq(run_ladder("run flex --rung cpu --frozen q"), 2);
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "--frozen q") && strstr(err, "'q'") && strstr(err, "slopes"), "stderr: %s", err);
    int64_t q[4] = {1, 2, 20, 8}, kv[4] = {1, 2, 30, 8}, h[1] = {2};
    write_random("q", LADDER_F32, 4, q, 1);
    write_random("k", LADDER_F32, 4, kv, 2);
    write_random("v", LADDER_F32, 4, kv, 3);
    write_random("do", LADDER_F32, 4, q, 4);
    write_random("slopes", LADDER_F32, 1, h, 5);
    for (int frozen = 0; frozen < 2; frozen++) {
        snprintf(args, sizeof args, "run flex --in %s --out %s/out%d --score_mod alibi%s", dir, dir, frozen,
                 frozen ? " --frozen slopes" : "");
        cr_assert_eq(run_ladder(args), 0, "ladder %s should pass", args);
        snprintf(path, sizeof path, "%s/out%d/dq.npy", dir, frozen);
        cr_expect_eq(access(path, R_OK), 0, "%s should have been written", path);
        snprintf(path, sizeof path, "%s/out%d/dslopes.npy", dir, frozen);
        cr_expect_eq(access(path, F_OK), frozen ? -1 : 0, "%s should %sbe written", path, frozen ? "not " : "");
    }
}

/* Files the algorithm does not read, and a backward input that cannot be used, are named in warnings. */
Test(tool, in_warns_about_files_it_does_not_use) {
    write_flash(5, 6, false);
    int64_t n[1] = {2}, lse[3] = {1, 2, 5};
    write_random("dlse", LADDER_F32, 3, lse, 3);
    ladder_tensor cu;
    cr_assert_eq(ladder_tensor_alloc(&cu, LADDER_I32, 1, n), LADDER_OK);
    ((int32_t *)cu.data)[0] = 0, ((int32_t *)cu.data)[1] = 5;
    char path[128];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    cr_assert_eq(ladder_npy_write(path, &cu), LADDER_OK);
    ladder_tensor_free(&cu);
    char out[4096], err[4096];
    run_in("flash", 0, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(err, "warning: flash does not read cu_seqlens.npy"), "stderr: '%s'", err);
    cr_assert_not_null(strstr(err, "warning: dlse.npy is not used: without do.npy only the forward runs"),
                       "stderr: '%s'", err);
    run_in("flash", 0, out, sizeof out, err, sizeof err); /* o.npy and lse.npy are there now */
    cr_assert_null(strstr(err, "read o.npy"), "stderr '%s' should not warn about flash's own outputs", err);
    cr_assert_null(strstr(err, "read lse.npy"), "stderr '%s' should not warn about flash's own outputs", err);
}

/* An output this run did not write, left by an earlier run in the same folder, is named in a warning. */
Test(tool, in_warns_about_outputs_of_an_earlier_run) {
    int64_t btd[3] = {1, 8, 4}, btdw[4] = {1, 8, 4, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    write_random("dout", LADDER_F32, 3, btd, 3);
    char out[4096], err[4096], path[128];
    run_in("dynconv", 0, out, sizeof out, err, sizeof err);
    cr_assert_null(strstr(err, "earlier run"), "stderr '%s': every output was written", err);
    snprintf(path, sizeof path, "%s/dout.npy", dir);
    cr_assert_eq(unlink(path), 0);
    run_in("dynconv", 0, out, sizeof out, err, sizeof err); /* forward only now: dx.npy and dkernels.npy are old */
    cr_assert_not_null(strstr(err, "dx.npy is from an earlier run"), "stderr: '%s'", err);
    cr_assert_not_null(strstr(err, "dkernels.npy is from an earlier run"), "stderr: '%s'", err);
}

/* A symlink whose target is gone, standing where an optional input goes, is an error, not an absent file. */
Test(tool, in_a_dangling_symlink_is_an_error) {
    int64_t btd[3] = {1, 8, 4}, btdw[4] = {1, 8, 4, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char path[128], target[128];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    snprintf(target, sizeof target, "%s/gone.npy", dir);
    cr_assert_eq(symlink(target, path), 0);
    expect_failure("cu_seqlens.npy is a symlink to");
}

/* An empty or rank-0 cu_seqlens.npy is named as such, not as a tensor whose shape it would have fed (ht, out). */
Test(tool, in_an_empty_cu_seqlens_names_cu_seqlens) {
    int64_t btd[3] = {1, 8, 4}, btdw[4] = {1, 8, 4, 3}, empty[1] = {0};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char path[128];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    int32_t zero = 0;
    ladder_tensor scalar = ladder_tensor_make(&zero, LADDER_I32, 0, empty);
    ladder_tensor none = ladder_tensor_make(&zero, LADDER_I32, 1, empty);
    cr_assert_eq(ladder_npy_write(path, &scalar), LADDER_OK, "%s", ladder_last_error());
    expect_failure("cu_seqlens.npy has shape [] but cu_seqlens is [N+1]");
    cr_assert_eq(ladder_npy_write(path, &none), LADDER_OK, "%s", ladder_last_error());
    expect_failure("cu_seqlens.npy has shape [0] but cu_seqlens is [N+1]");
}

/* The same bad problem is a usage error (exit 2) from flags as from files. */
Test(tool, a_bad_problem_exits_2_with_or_without_in) {
    cr_assert_eq(run_ladder("run flash --rung cpu --Hq 4 --Hkv 3 --Sq 4 --Sk 4 --D 8 --Dv 8"), 2);
    char err[2048];
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "LADDER_ERR_"), "stderr '%s' should give the library's status", err);
}

/* An output is renamed into place: a symlink standing where it goes is replaced, and its target left alone. */
Test(tool, in_outputs_replace_a_symlink_not_its_target) {
    int64_t btd[3] = {1, 6, 2}, btdw[4] = {1, 6, 2, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    char path[128], target[128], text[16] = "";
    snprintf(target, sizeof target, "%s/precious.txt", dir);
    FILE *f = fopen(target, "w");
    cr_assert_not_null(f);
    fputs("keep", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/out.npy", dir);
    cr_assert_eq(symlink(target, path), 0);
    char args[256];
    snprintf(args, sizeof args, "run dynconv --in %s", dir);
    cr_assert_eq(run_ladder(args), 0);
    f = fopen(target, "r");
    cr_assert_not_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    cr_assert_str_eq(text, "keep", "the symlink's target was written through");
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISREG(sb.st_mode), "out.npy should now be a regular file");
    ladder_tensor out = read_npy("out");
    ladder_tensor_free(&out);
}

/* Outputs are written whole under temporary names and renamed only when all are complete: when the last one cannot
 * take its place (a directory called dkernels.npy), no output and no temporary file is left behind. */
Test(tool, in_a_failed_write_leaves_no_output) {
    int64_t btd[3] = {1, 6, 2}, btdw[4] = {1, 6, 2, 3};
    write_random("x", LADDER_F32, 3, btd, 1);
    write_random("kernels", LADDER_F32, 4, btdw, 2);
    write_random("dout", LADDER_F32, 3, btd, 3);
    char path[128];
    snprintf(path, sizeof path, "%s/dkernels.npy", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    char args[256];
    snprintf(args, sizeof args, "run dynconv --in %s", dir);
    cr_assert_neq(run_ladder(args), 0, "renaming onto a directory must fail");
    char cmd[256], listing[1024];
    snprintf(cmd, sizeof cmd, "ls -A %s > %s/listing", dir, dir);
    cr_assert_eq(system(cmd), 0);
    read_output("listing", listing, sizeof listing);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, i ? "dx" : "out");
        cr_assert_neq(access(path, F_OK), 0, "%s was written although dkernels.npy failed", path);
    }
    cr_assert_null(strstr(listing, ".npy."), "a temporary file was left behind: %s", listing);
}

/* A tiny input that implies a huge output (1,000 empty sequences, each with a 4096 x 128 x 128 final state: 268 TB)
 * is refused before anything is allocated, with a message that says which output. */
Test(tool, in_a_tiny_input_implying_a_huge_output_is_refused, .timeout = 30) {
    int64_t qk[4] = {1, 1, 4096, 128}, n[1] = {1001};
    write_random("q", LADDER_F32, 4, qk, 1);
    write_random("k", LADDER_F32, 4, qk, 2);
    write_random("v", LADDER_F32, 4, qk, 3);
    ladder_tensor cu;
    cr_assert_eq(ladder_tensor_alloc(&cu, LADDER_I32, 1, n), LADDER_OK);
    memset(cu.data, 0, 1001 * sizeof(int32_t));
    ((int32_t *)cu.data)[1000] = 1;
    char path[128];
    snprintf(path, sizeof path, "%s/cu_seqlens.npy", dir);
    cr_assert_eq(ladder_npy_write(path, &cu), LADDER_OK);
    ladder_tensor_free(&cu);
    char out[4096], err[4096];
    run_in("recurrent", 1, out, sizeof out, err, sizeof err);
    cr_assert_not_null(strstr(err, "LADDER_ERR_NOMEM"), "stderr: '%s'", err);
    cr_assert_not_null(strstr(err, "ht alone"), "stderr '%s' should name the output that is too large", err);
}

/* `ladder run ALGO --help` gives ALGO's flags, not every algorithm's. */
Test(tool, run_help_names_only_the_algorithms_flags) {
    cr_assert_eq(run_ladder("run dynconv --help"), 0);
    char out[16384];
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "dynconv flags"), "stdout: '%s'", out);
    for (int i = 0; i < ladder_n_algos; i++) {
        char other[64];
        snprintf(other, sizeof other, "\n%s flags", ladder_algos[i]->name);
        if (strcmp(ladder_algos[i]->name, "dynconv") != 0)
            cr_assert_null(strstr(out, other), "stdout of run dynconv --help names %s's flags", ladder_algos[i]->name);
    }
    /* the environment that changes what runs is named too */
    cr_assert_not_null(strstr(out, "LADDER_TC_PATH"), "stdout of run --help should name LADDER_TC_PATH: '%s'", out);
}

/* --bias gives memeff's bias its shape, 1 on each broadcast axis (packed sequences count as one batch row of their
 * summed lengths), or none; a size that is neither the problem's nor 1 is a usage error naming the flag. */
Test(tool, bias_flag_shapes_or_drops_the_bias) {
    const char *sizes = "run memeff --rung cpu --B 2 --Hq 2 --Hkv 1 --Sq 5 --Sk 7 --D 8 --Dv 8";
    char cmd[512], err[2048], out[4096];
    snprintf(cmd, sizeof cmd, "%s --bias 1,2,1,7", sizes);
    cr_assert_eq(run_ladder(cmd), 0, "a bias broadcast over B and Sq runs");
    read_output("stdout", out, sizeof out);
    cr_assert_not_null(strstr(out, "bias [1,2,1,7]"), "stdout '%s' should show the bias's shape", out);
    snprintf(cmd, sizeof cmd, "%s --bias none", sizes);
    cr_assert_eq(run_ladder(cmd), 0);
    read_output("stdout", out, sizeof out);
    cr_assert_null(strstr(out, "bias"), "stdout '%s' should run without a bias", out);
    snprintf(cmd, sizeof cmd, "%s --bias 2,2,5,6", sizes);
    cr_assert_eq(run_ladder(cmd), 2, "Sk = 7: 6 is neither 7 nor 1");
    read_stderr(err, sizeof err);
    cr_assert_not_null(strstr(err, "--bias 2,2,5,6") && strstr(err, "2,2,5,7"), "stderr '%s' should name the flag and the sizes", err);
    snprintf(cmd, sizeof cmd, "%s --bias 2,2,5", sizes);
    cr_assert_eq(run_ladder(cmd), 2, "three sizes for a rank-4 bias");
    cr_assert_eq(run_ladder("run memeff --rung cpu --varlen 3,0,4 --Hq 2 --Hkv 1 --D 8 --Dv 8 --bias 1,2,7,7"), 0,
                 "packed sequences: B = 1, Sq = Sk = 7");
    cr_assert_eq(run_ladder("run flash --rung cpu --bias 1,2,1,7"), 2, "flash has no bias");
    snprintf(cmd, sizeof cmd, "run memeff --in %s --bias none", dir);
    cr_assert_eq(run_ladder(cmd), 2, "with --in the files say whether there is a bias");
}
