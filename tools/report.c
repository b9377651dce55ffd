/*
 * Benchmark reports: one CSV (the committed record), a Markdown table and an SVG bar chart.
 * A ceiling that was not measured (no GPU, no --gemm-tflops) leaves its cells empty in the CSV and "-" in the
 * Markdown: never 0. The floor is the larger of the byte floor and the FLOP floor, so a GPU row with FLOPs has one
 * only when both ceilings were measured. A row's % of copy and byte floor are against the copy bandwidth of the
 * processor that ran it: the host's (cpu_copy_gbps, at cpu_threads threads) for the cpu rung, the device's
 * (copy_gbps) for the GPU rungs; the GEMM ceiling is the GPU's, and no cpu row is measured against it. cpu_gflops,
 * the host's rate on a loop of multiply-adds at cpu_threads, is no row's ceiling: against the same column of a run at
 * one thread it gives the host's own parallel efficiency (tools/gpu/cpu_summary.py).
 * tools/bench_tables.py prints the CSV's values with the same formats as the Markdown here.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

/* Lower-case short name of a GPU for file names ("NVIDIA H100 80GB HBM3" -> "h100"). */
static void report_gpu_slug(const char *gpu, char *slug, size_t n) {
    /* the first word that is letters then digits ("H100", "A100", "L40S") names the chip */
    for (const char *p = gpu; *p; p++) {
        if ((p == gpu || p[-1] == ' ') && isalpha((unsigned char)p[0]) && isdigit((unsigned char)p[1])) {
            size_t i = 0;
            for (; p[i] && p[i] != ' ' && i + 1 < n; i++) slug[i] = (char)tolower((unsigned char)p[i]);
            slug[i] = '\0';
            return;
        }
    }
    size_t i = 0;
    for (; gpu[i] && i + 1 < n; i++) slug[i] = isalnum((unsigned char)gpu[i]) ? (char)tolower((unsigned char)gpu[i]) : '-';
    slug[i] = '\0';
}

/* What the report says about one row; a ceiling not measured is negative. */
typedef struct derived {
    double gbps, tflops, pct_copy, pct_gemm, floor_ms;
} derived;

/* The copy ceiling of the processor that ran @p r: the host's for the cpu rung, the device's for the others. */
static double copy_of(const bench_env *env, const bench_row *r) {
    return strcmp(r->rung, "cpu") == 0 ? env->cpu_copy_gbps : env->copy_gbps;
}

static derived derive(const bench_env *env, const bench_row *r) {
    derived d = {.pct_copy = -1, .pct_gemm = -1, .floor_ms = -1};
    d.gbps = r->bytes / (r->median_ms * 1e-3) / 1e9;
    d.tflops = r->flops / (r->median_ms * 1e-3) / 1e12;
    const double copy = copy_of(env, r);
    const bool gpu = strcmp(r->rung, "cpu") != 0;
    if (copy > 0) d.pct_copy = 100 * d.gbps / copy;
    if (gpu && env->gemm_tflops > 0) d.pct_gemm = 100 * d.tflops / env->gemm_tflops;
    /* The floor is the larger of the byte floor and the FLOP floor, so it needs every ceiling that has a say: either
     * one alone can be far below the floor (a compute-bound pass's byte floor) and would still read as the floor. A
     * cpu row has no FLOP floor (no GEMM of its own), and a row without FLOPs (build) has a FLOP floor of 0. */
    const bool flop_floor = gpu && r->flops > 0;
    if (copy > 0 && (!flop_floor || env->gemm_tflops > 0)) {
        d.floor_ms = r->bytes / (copy * 1e9) * 1e3;
        const double f = flop_floor ? r->flops / (env->gemm_tflops * 1e12) * 1e3 : 0;
        if (f > d.floor_ms) d.floor_ms = f;
    }
    return d;
}

/* A value in @p fmt, or @p empty when it was not measured (negative). */
static const char *cell(char *buf, size_t n, const char *fmt, double v, const char *empty) {
    if (v < 0) snprintf(buf, n, "%s", empty);
    else snprintf(buf, n, fmt, v);
    return buf;
}

static int write_csv(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    fprintf(f, "gpu,date,commit,algo,pass,rung,dtype,shape,median_ms,bytes,flops,gbps,tflops,copy_gbps,gemm_tflops,"
               "pct_of_copy,pct_of_gemm,floor_ms,speedup_vs_cpu,cpu_copy_gbps,cpu_threads,cpu_gflops\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        derived d = derive(env, r);
        char copy[32], gemm[32], pc[32], pg[32], fl[32], sp[32], hc[32], th[32], hf[32];
        fprintf(f, "%s,%s,%s,%s,%s,%s,%s,%s,%.4f,%.0f,%.0f,%.1f,%.3f,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", env->gpu, env->date,
                env->commit, r->algo, r->pass, r->rung, r->dtype, r->shape, r->median_ms, r->bytes, r->flops, d.gbps,
                d.tflops, cell(copy, sizeof copy, "%.1f", env->copy_gbps > 0 ? env->copy_gbps : -1, ""),
                cell(gemm, sizeof gemm, "%.1f", env->gemm_tflops > 0 ? env->gemm_tflops : -1, ""),
                cell(pc, sizeof pc, "%.1f", d.pct_copy, ""), cell(pg, sizeof pg, "%.2f", d.pct_gemm, ""),
                cell(fl, sizeof fl, "%.4f", d.floor_ms, ""),
                cell(sp, sizeof sp, "%.1f", r->speedup_vs_cpu > 0 ? r->speedup_vs_cpu : -1, ""),
                cell(hc, sizeof hc, "%.1f", env->cpu_copy_gbps > 0 ? env->cpu_copy_gbps : -1, ""),
                cell(th, sizeof th, "%.0f", env->cpu_copy_gbps > 0 ? env->cpu_threads : -1, ""),
                cell(hf, sizeof hf, "%.2f", env->cpu_gflops > 0 ? env->cpu_gflops : -1, ""));
    }
    return fclose(f) != 0;
}

static int write_md(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    char copy[32], gemm[32], host[64] = "n/a";
    if (env->cpu_copy_gbps > 0)
        snprintf(host, sizeof host, "%.0f GB/s at %d thread%s", env->cpu_copy_gbps, env->cpu_threads,
                 env->cpu_threads == 1 ? "" : "s");
    fprintf(f, "Measured on %s on %s (commit %s); device-to-device copy %s GB/s, host copy %s and bf16 GEMM %s TFLOP/s "
               "in the same run (%% of copy: of the host's for the cpu rung, of the device's for the others).\n\n",
            env->gpu, env->date, env->commit, cell(copy, sizeof copy, "%.0f", env->copy_gbps > 0 ? env->copy_gbps : -1, "n/a"),
            host, cell(gemm, sizeof gemm, "%.0f", env->gemm_tflops > 0 ? env->gemm_tflops : -1, "n/a"));
    fprintf(f, "| algo | pass | rung | dtype | shape | median ms | GB/s | TFLOP/s | %% of copy | %% of GEMM | floor ms | "
               "x cpu |\n");
    fprintf(f, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        derived d = derive(env, r);
        char pc[32], pg[32], fl[32], sp[32];
        fprintf(f, "| %s | %s | %s | %s | %s | %.3f | %.0f | %.2f | %s | %s | %s | %s |\n", r->algo, r->pass, r->rung,
                r->dtype, r->shape, r->median_ms, d.gbps, d.tflops, cell(pc, sizeof pc, "%.0f%%", d.pct_copy, "-"),
                cell(pg, sizeof pg, "%.1f%%", d.pct_gemm, "-"), cell(fl, sizeof fl, "%.3f", d.floor_ms, "-"),
                cell(sp, sizeof sp, "%.1f", r->speedup_vs_cpu > 0 ? r->speedup_vs_cpu : -1, "-"));
    }
    return fclose(f) != 0;
}

/* Horizontal bars of GB/s, one per row, with the copy bandwidth as a dashed line. */
static int write_svg(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    double max = env->copy_gbps;
    bool shapes = false; /* label rows with their shape when there are several */
    for (int i = 0; i < n; i++) {
        double g = derive(env, &rows[i]).gbps;
        if (g > max) max = g;
        shapes |= strcmp(rows[i].shape, rows[0].shape) != 0;
    }
    if (max <= 0) max = 1;
    const int left = shapes ? 420 : 260, width = 460, bar = 22, top = 40;
    int height = top + n * (bar + 6) + 30;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n", left + width + 80, height);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">GB/s on %s, %s%s%s</text>\n", env->gpu, env->date,
            shapes ? "" : ", ", shapes ? "" : rows[0].shape);
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        double g = derive(env, r).gbps;
        int y = top + i * (bar + 6);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s %s %s %s%s%s</text>\n", left - 8, y + 15, r->algo,
                r->pass, r->rung, r->dtype, shapes ? " " : "", shapes ? r->shape : "");
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left, y, width * g / max, bar,
                strcmp(r->pass, "fwd") ? "#d08040" : "#4080c0");
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n", left + width * g / max + 4, y + 15, g);
    }
    if (env->copy_gbps > 0) {
        double x = left + width * env->copy_gbps / max;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n", x,
                top - 6, x, height - 24);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">copy %.0f GB/s</text>\n", x, height - 8,
                env->copy_gbps);
    }
    fprintf(f, "</svg>\n");
    return fclose(f) != 0;
}

int report_write(const char *dir, const bench_env *env, const bench_row *rows, int n_rows) {
    if (!dir || !*dir) return fprintf(stderr, "ladder: --out is empty\n"), TOOL_USAGE;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fprintf(stderr, "ladder: cannot create %s: %s\n", dir, strerror(errno)), TOOL_FAIL;
    char slug[64], csv[4096], md[4096], svg[4096];
    report_gpu_slug(env->gpu, slug, sizeof slug);
    int k = snprintf(csv, sizeof csv, "%s/%s-%s.csv", dir, slug, env->date);
    if (k < 0 || (size_t)k >= sizeof csv) return fprintf(stderr, "ladder: --out %s is too long\n", dir), TOOL_USAGE;
    snprintf(md, sizeof md, "%s/%s-%s.md", dir, slug, env->date);
    snprintf(svg, sizeof svg, "%s/%s-%s.svg", dir, slug, env->date);
    int rc = write_csv(csv, env, rows, n_rows) | write_md(md, env, rows, n_rows) | write_svg(svg, env, rows, n_rows);
    if (rc) return TOOL_FAIL;
    FILE *m = fopen(md, "r");
    for (int ch; m && (ch = fgetc(m)) != EOF;) putchar(ch);
    if (m) fclose(m);
    printf("\nwrote %s, %s, %s\n", csv, md, svg);
    return TOOL_OK;
}
