/* chapters/labs/labcheck.c: the helpers every lab checker shares (see labcheck.h). */
#include "labcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "compare.h"
#include "gpu.h"

ladder_tensor labcheck_alloc(ladder_dtype dtype, int rank, const int64_t *shape) {
    ladder_tensor t;
    if (ladder_tensor_alloc(&t, dtype, rank, shape) != LADDER_OK) {
        printf("ERROR: cannot allocate a host tensor: %s\n", ladder_last_error());
        exit(LABCHECK_ERROR);
    }
    return t;
}

void labcheck_case(const char *lab, const ladder_algo *algo, const void *problem, uint64_t seed, ladder_case *c,
                   ladder_result *ref) {
    ladder_case_opts opts = {.seed = seed};
    labcheck_ok(lab, ladder_case_make(c, algo, problem, &opts), "making random inputs");
    ladder_run_opts once = {0};
    labcheck_ok(lab, ladder_run(LADDER_RUNG_CPU, LADDER_F32, c, &once, ref), "the cpu rung");
}

ladder_tensor *labcheck_tensor(ladder_case *c, ladder_result *ref, const char *name) {
    int i = ladder_algo_tensor(c->algo, name);
    if (i < 0) {
        printf("ERROR: %s has no tensor %s\n", c->algo->name, name);
        exit(LABCHECK_ERROR);
    }
    return c->t[i].data ? &c->t[i] : &ref->t[i];
}

void labcheck_ok(const char *lab, ladder_status st, const char *what) {
    if (st == LADDER_OK) return;
    printf("ERROR %s: %s: %s (%s)\n", lab, what, ladder_last_error(), ladder_status_name(st));
    exit(LABCHECK_ERROR);
}

bool labcheck_compare(const char *lab, const char *shape, const char *tensor, const ladder_tensor *got,
                      const ladder_tensor *want) {
    ladder_cmp cmp = ladder_compare(got, want, LADDER_TOL_F32);
    if (cmp.ok) return true;
    char what[512];
    ladder_cmp_describe(&cmp, what, sizeof what);
    printf("FAIL %s at %s: %s %s\n", lab, shape, tensor, what);
    if (cmp.first_bad >= 0 && isnan(cmp.got_at_bad) && !isnan(cmp.want_at_bad))
        printf("     (NaN there: outputs are poisoned with NaN before each run, so that element was never written)\n");
    return false;
}

void labcheck_require_gpu(const char *lab) {
    if (ladder_gpu_built() && ladder_gpu_count() >= 1) return;
    printf("SKIP %s needs a CUDA GPU: %s\n", lab,
           ladder_gpu_built() ? ladder_gpu_absent_reason() : "ladder was built without nvcc");
    exit(LABCHECK_SKIP);
}

int labcheck_pass(const char *lab, int n_shapes) {
    printf("PASS %s: all %d shapes match\n", lab, n_shapes);
    return LABCHECK_PASS;
}
