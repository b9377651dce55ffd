/*
 * tests/test_report.c: the cells of `ladder bench`'s report that follow from the ceilings.
 *
 * tools/report.c is linked into this binary, so that rows made by hand reach report_write() with any ceiling
 * missing: a machine without a GPU never times a GPU row, and the GPU rows are where a floor needs both ceilings.
 * A row's floor is the larger of its byte floor (bytes over the copy) and its FLOP floor (FLOPs over the GEMM), so
 * a GPU row with FLOPs has no floor unless both were measured; a cpu row has no FLOP floor, and its byte floor is
 * against the host's copy (docs/results/README.md, "The CSV").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../tools/tool.h"
#include "harness.h"

static char dir[64];

static void setup(void) {
    harness_tmpdir_make(dir, sizeof dir, "report");
    /* report_write() prints the Markdown; the test reads the files */
    cr_assert_not_null(freopen("/dev/null", "w", stdout));
}

static void teardown(void) { harness_tmpdir_remove(dir); }

TestSuite(report, .init = setup, .fini = teardown);

/* A made-up row (1 GB moved, @p flops done, 1 ms), round so that every derived cell is exact. */
static bench_row row(const char *pass, const char *rung, double flops) {
    bench_row r = {.median_ms = 1, .bytes = 1e9, .flops = flops, .speedup_vs_cpu = strcmp(rung, "cpu") ? 10 : 0};
    snprintf(r.algo, sizeof r.algo, "flash");
    snprintf(r.pass, sizeof r.pass, "%s", pass);
    snprintf(r.rung, sizeof r.rung, "%s", rung);
    snprintf(r.dtype, sizeof r.dtype, "%s", strcmp(rung, "cpu") ? "bf16" : "f32");
    snprintf(r.shape, sizeof r.shape, "B=1");
    return r;
}

/* Made-up ceilings for the rows above; a ceiling given as 0 is not measured. The tests pass round ones, so that each
 * expected cell follows by hand (a copy of 4000 GB/s puts the 1 GB row's byte floor at 0.25 ms). */
static bench_env env_of(double copy_gbps, double gemm_tflops, double cpu_copy_gbps) {
    bench_env e = {.copy_gbps = copy_gbps, .gemm_tflops = gemm_tflops, .cpu_copy_gbps = cpu_copy_gbps,
                   .cpu_threads = 4};
    snprintf(e.gpu, sizeof e.gpu, "NVIDIA H200");
    snprintf(e.date, sizeof e.date, "2026-12-01");
    snprintf(e.commit, sizeof e.commit, "abc1234");
    return e;
}

/* The rows every test writes: a GPU forward, a GPU build row (no FLOPs), a cpu forward. */
enum { GPU_FWD, GPU_BUILD, CPU_FWD, N_ROWS };

/* The CSV's columns that follow from the ceilings */
enum { PCT_OF_COPY = 15, PCT_OF_GEMM = 16, FLOOR_MS = 17, N_FIELDS = 21 };

/* Write the report of the rows under @p env; the CSV's fields of each row into @p field (strings in @p lines),
 * the Markdown into @p md. */
static void write_report(const bench_env *env, char lines[N_ROWS][1024], char *field[N_ROWS][N_FIELDS], char *md,
                         size_t md_n) {
    const bench_row rows[N_ROWS] = {row("fwd", "gpu_tensorcore", 1e12), row("build", "gpu_tensorcore", 0),
                                    row("fwd", "cpu", 1e12)};
    cr_assert_eq(report_write(dir, env, rows, N_ROWS), TOOL_OK);
    char path[128], header[1024];
    snprintf(path, sizeof path, "%s/h200-2026-12-01.csv", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s should have been written", path);
    cr_assert_not_null(fgets(header, sizeof header, f));
    const char *at = strstr(header, ",pct_of_copy,pct_of_gemm,floor_ms,");
    int commas = 0;
    for (const char *p = header; at && p <= at; p++) commas += *p == ',';
    cr_assert_eq(commas, PCT_OF_COPY, "the columns moved: %s", header);
    for (int i = 0; i < N_ROWS; i++) {
        cr_assert_not_null(fgets(lines[i], sizeof lines[i], f), "%s should have %d rows", path, N_ROWS);
        lines[i][strcspn(lines[i], "\n")] = '\0';
        int n = 0;
        for (char *p = lines[i]; n < N_FIELDS && p; n++) {
            field[i][n] = p;
            p = strchr(p, ',');
            if (p) *p++ = '\0';
        }
        cr_assert_eq(n, N_FIELDS, "row %d of %s should have %d fields", i, path, N_FIELDS);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/h200-2026-12-01.md", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f, "%s should have been written", path);
    md[fread(md, 1, md_n - 1, f)] = '\0';
    fclose(f);
}

/* Assert that row @p r's cell @p col is @p want ("" for empty); @p what names the cell. */
static void cell_is(char *field[N_ROWS][N_FIELDS], int r, int col, const char *want, const char *what) {
    cr_assert_str_eq(field[r][col], want, "%s: '%s' in the CSV, want '%s'", what, field[r][col], want);
}

/* Without the GEMM ceiling, the copy floor alone is not a GPU row's floor: its floor and % of GEMM are empty ("-" in
 * the Markdown). A build row has no FLOPs, so its floor is its byte floor still; the cpu row's is the host's. */
Test(report, a_gpu_row_without_the_gemm_ceiling_has_no_floor) {
    char lines[N_ROWS][1024], *field[N_ROWS][N_FIELDS], md[8192];
    bench_env env = env_of(4000, 0, 100);
    write_report(&env, lines, field, md, sizeof md);
    cell_is(field, GPU_FWD, PCT_OF_COPY, "25.0", "gpu fwd row's % of copy");
    cell_is(field, GPU_FWD, PCT_OF_GEMM, "", "gpu fwd row's % of GEMM, with no GEMM ceiling");
    cell_is(field, GPU_FWD, FLOOR_MS, "", "gpu fwd row's floor, with no GEMM ceiling: the copy floor "
                                                   "(0.25 ms) is not its floor");
    cr_assert_not_null(strstr(md, "| 1.000 | 1000 | 1000.00 | 25% | - | - | 10.0 |"),
                       "the Markdown's gpu fwd row should have '-' for %% of GEMM and floor: %s", md);
    cell_is(field, GPU_BUILD, FLOOR_MS, "0.2500", "gpu build row (no FLOPs): its floor is the copy's");
    cell_is(field, CPU_FWD, PCT_OF_COPY, "1000.0", "cpu row's % of copy, of the host's");
    cell_is(field, CPU_FWD, FLOOR_MS, "10.0000", "cpu row's floor: the host's copy floor");
}

/* Without the copy ceiling, the FLOP floor alone is not the floor either. */
Test(report, a_gpu_row_without_the_copy_ceiling_has_no_floor) {
    char lines[N_ROWS][1024], *field[N_ROWS][N_FIELDS], md[8192];
    bench_env env = env_of(0, 800, 0);
    write_report(&env, lines, field, md, sizeof md);
    cell_is(field, GPU_FWD, PCT_OF_COPY, "", "gpu fwd row's % of copy, with no copy ceiling");
    cell_is(field, GPU_FWD, PCT_OF_GEMM, "125.00", "gpu fwd row's % of GEMM");
    cell_is(field, GPU_FWD, FLOOR_MS, "", "gpu fwd row's floor, with no copy ceiling: the FLOP floor "
                                                   "(1.25 ms) is not its floor");
    cell_is(field, GPU_BUILD, FLOOR_MS, "", "gpu build row's floor, with no copy ceiling");
    cell_is(field, CPU_FWD, FLOOR_MS, "", "cpu row's floor, with no host copy ceiling");
}

/* With both, a GPU row's floor is the larger of the two (here the FLOP floor); the cpu row is never measured
 * against the GPU's GEMM. */
Test(report, the_floor_is_the_larger_of_the_two) {
    char lines[N_ROWS][1024], *field[N_ROWS][N_FIELDS], md[8192];
    bench_env env = env_of(4000, 800, 100);
    write_report(&env, lines, field, md, sizeof md);
    cell_is(field, GPU_FWD, FLOOR_MS, "1.2500", "gpu fwd row's floor: the FLOP floor, the larger");
    cell_is(field, GPU_BUILD, FLOOR_MS, "0.2500", "gpu build row's floor: the copy's");
    cell_is(field, CPU_FWD, PCT_OF_GEMM, "", "cpu row's % of GEMM");
    cell_is(field, CPU_FWD, FLOOR_MS, "10.0000", "cpu row's floor: the host's copy floor, no FLOP floor");
}
