/* Benchmark reports: one CSV (the committed record), a Markdown table and an SVG bar chart. */
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

static double floor_ms(const bench_env *env, const bench_row *r) {
    double t = env->copy_gbps > 0 ? r->bytes / (env->copy_gbps * 1e9) * 1e3 : 0;
    double f = env->gemm_tflops > 0 ? r->flops / (env->gemm_tflops * 1e12) * 1e3 : 0;
    return t > f ? t : f;
}

static int write_csv(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    fprintf(f, "gpu,date,commit,algo,pass,rung,dtype,B,T,D,W,median_ms,bytes,gbps,copy_gbps,pct_of_copy,floor_ms,"
               "speedup_vs_cpu\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        double gbps = r->bytes / (r->median_ms * 1e-3) / 1e9;
        fprintf(f, "%s,%s,%s,%s,%s,%s,%s,%lld,%lld,%lld,%d,%.4f,%.0f,%.1f,%.1f,%.1f,%.4f,%.1f\n", env->gpu, env->date,
                env->commit, r->algo, r->pass, r->rung, r->dtype, (long long)r->B, (long long)r->T, (long long)r->D,
                r->W, r->median_ms, r->bytes, gbps, env->copy_gbps, env->copy_gbps > 0 ? 100 * gbps / env->copy_gbps : 0,
                floor_ms(env, r), r->speedup_vs_cpu);
    }
    return fclose(f) != 0;
}

static int write_md(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    fprintf(f, "Measured on %s on %s (commit %s); device-to-device copy %.0f GB/s in the same run.\n\n", env->gpu,
            env->date, env->commit, env->copy_gbps);
    fprintf(f, "| algo | pass | rung | dtype | shape | median ms | GB/s | %% of copy | floor ms | x cpu |\n");
    fprintf(f, "|---|---|---|---|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        double gbps = r->bytes / (r->median_ms * 1e-3) / 1e9;
        fprintf(f, "| %s | %s | %s | %s | B=%lld T=%lld D=%lld W=%d | %.3f | %.0f | %.0f%% | %.3f | %.1f |\n", r->algo,
                r->pass, r->rung, r->dtype, (long long)r->B, (long long)r->T, (long long)r->D, r->W, r->median_ms, gbps,
                env->copy_gbps > 0 ? 100 * gbps / env->copy_gbps : 0, floor_ms(env, r), r->speedup_vs_cpu);
    }
    return fclose(f) != 0;
}

/* Horizontal bars of GB/s, one per row, with the copy bandwidth as a dashed line. */
static int write_svg(const char *path, const bench_env *env, const bench_row *rows, int n) {
    FILE *f = fopen(path, "w");
    if (!f) return fprintf(stderr, "ladder: cannot write %s: %s\n", path, strerror(errno)), 1;
    double max = env->copy_gbps;
    for (int i = 0; i < n; i++) {
        double g = rows[i].bytes / (rows[i].median_ms * 1e-3) / 1e9;
        if (g > max) max = g;
    }
    if (max <= 0) max = 1;
    const int left = 260, width = 460, bar = 22, top = 40;
    int height = top + n * (bar + 6) + 30;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n", left + width + 80, height);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">GB/s on %s, %s (dashed: device-to-device copy)</text>\n",
            env->gpu, env->date);
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        double g = r->bytes / (r->median_ms * 1e-3) / 1e9;
        int y = top + i * (bar + 6);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s %s %s %s</text>\n", left - 8, y + 15, r->algo, r->pass,
                r->rung, r->dtype);
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
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return fprintf(stderr, "ladder: cannot create %s: %s\n", dir, strerror(errno)), 1;
    char slug[64], base[4096];
    report_gpu_slug(env->gpu, slug, sizeof slug);
    snprintf(base, sizeof base, "%s/%s-%s", dir, slug, env->date);
    char csv[4200], md[4200], svg[4200];
    snprintf(csv, sizeof csv, "%s.csv", base);
    snprintf(md, sizeof md, "%s.md", base);
    snprintf(svg, sizeof svg, "%s.svg", base);
    int rc = write_csv(csv, env, rows, n_rows) | write_md(md, env, rows, n_rows) | write_svg(svg, env, rows, n_rows);
    if (!rc) {
        FILE *m = fopen(md, "r");
        for (int ch; m && (ch = fgetc(m)) != EOF;) putchar(ch);
        if (m) fclose(m);
        printf("\nwrote %s, %s, %s\n", csv, md, svg);
    }
    return rc;
}
