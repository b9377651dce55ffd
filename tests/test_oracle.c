/*
 * tests/test_oracle.c: every algorithm's float64 oracle backward against central finite differences of its own
 * forward, for loss = sum over the forward's outputs of sum(out * dout), at every coordinate of every input that
 * has a gradient (tests/<algo>_cases.c gives the shapes, the step and the tolerance).
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* loss = sum_j sum(out_j * dout_j) over the forward's outputs j, with dout_j the backward input that is their gradient */
static double loss(const ladder_case *c, double *const *t) {
    const ladder_algo *algo = c->algo;
    const ladder_tensor *index = NULL;
    for (int i = 0; i < algo->n_tensors; i++)
        if ((algo->tensors[i].role & LADDER_INDEX) && c->t[i].data && !index) index = &c->t[i];
    test_algo_of(algo)->oracle_fwd(c, index ? index->data : NULL, index ? (int)index->shape[0] - 1 : 0, t);
    double sum = 0;
    for (int j = 0; j < algo->n_tensors; j++) {
        if (!(algo->tensors[j].role & LADDER_OUT_FWD) || !t[j]) continue;
        for (int g = 0; g < algo->n_tensors; g++) {
            const char *of = algo->tensors[g].grad_of;
            if (!of || strcmp(of, algo->tensors[j].name) != 0 || !t[g]) continue;
            int64_t shape[LADDER_MAX_RANK], n = 1;
            int rank = ladder_tensor_shape_of(algo, c->problem, index, j, shape);
            for (int d = 0; d < rank; d++) n *= shape[d];
            for (int64_t e = 0; e < n; e++) sum += t[j][e] * t[g][e];
        }
    }
    return sum;
}

ParameterizedTestParameters(oracle, backward_matches_finite_differences) {
    return test_all(TEST_FD, LADDER_RUNG_CPU, LADDER_F32);
}

ParameterizedTest(const test_case *t, oracle, backward_matches_finite_differences) {
    const test_algo *ta = test_algo_of(test_case_algo(t));
    const ladder_algo *algo = test_case_algo(t);
    ladder_case c;
    test_make(t, &c);
    double *v[LADDER_MAX_TENSORS];
    test_oracle_run(&c, v); /* inputs, the forward's outputs and the oracle's gradients */
    for (int g = 0; g < algo->n_tensors; g++) {
        int i = ladder_algo_tensor(algo, algo->tensors[g].grad_of);
        if (!(algo->tensors[g].role & LADDER_OUT_BWD) || i < 0 || !v[i] || !v[g]) continue;
        int64_t n = ladder_tensor_numel(&c.t[i]);
        double *fd = malloc((size_t)(n > 0 ? n : 1) * sizeof *fd);
        cr_assert(fd);
        for (int64_t e = 0; e < n; e++) {
            double keep = v[i][e];
            v[i][e] = keep + ta->fd_step;
            double up = loss(&c, v);
            v[i][e] = keep - ta->fd_step;
            double down = loss(&c, v);
            v[i][e] = keep;
            fd[e] = (up - down) / (2 * ta->fd_step);
        }
        ladder_cmp cmp = ladder_compare_f64(v[g], fd, c.t[i].rank, c.t[i].shape, ta->fd_tol);
        test_expect_close("oracle backward vs finite differences", t, algo->tensors[g].name, &cmp);
        free(fd);
    }
    test_oracle_free(v);
    ladder_case_free(&c);
}
