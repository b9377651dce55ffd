/*
 * tests/test_memeff_magnitudes.c: the magnitudes memeff's dbias is held to (common/memeff_magnitudes.c, on
 * common/attention_magnitudes.c's pass) are the sums they claim to be, the check they give fails a wrong gradient,
 * and it holds a correct fp32 rung where the plain rule does not:
 *
 * 1. Where no term cancels (dO = 0 and dlse > 0 make every dS positive), each element's sum of |term| is its value,
 *    for a full bias and for each broadcast, with dropout, a mask and GQA.
 * 2. On the problem where the plain rule failed a correct gpu_tiled dbias (top-left causal, so row 0 sees one key
 *    and its dS is rounding residue; dropout 0.5; D = 192), the cpu rung against the float64 oracle passes the
 *    magnitudes with room, and an element moved past its bound fails them.
 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "memeff.h"

extern const ladder_algo ladder_memeff_algo;

static int T(const char *name) { return ladder_algo_tensor(&ladder_memeff_algo, name); }

static ladder_memeff_problem problem(int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Sk, int64_t D, int causal, double p) {
    return (ladder_memeff_problem){.attn = {.B = 2, .Hq = Hq, .Hkv = Hkv, .Sq = Sq, .Sk = Sk, .D = D, .Dv = D,
                                            .mask = {.causal = causal, .window_left = -1, .window_right = -1}},
                                   .dropout_p = p, .philox_seed = 7, .philox_offset = 12};
}


/* Output dbias of case @p c: how many elements. */
static int64_t numel_of(const ladder_case *c, int i) {
    int64_t shape[LADDER_MAX_RANK], n = 1;
    for (int d = 0, rank = ladder_case_shape(c, i, shape); d < rank; d++) n *= shape[d];
    return n;
}

Test(memeff_magnitudes, where_no_term_cancels_the_sum_of_terms_is_the_value) {
    /* the bias's broadcast dims as test_case's mask: none, batch rows, batch rows and heads, all but the keys */
    const unsigned broadcasts[] = {0u, 1u, 3u, 7u};
    for (size_t k = 0; k < sizeof broadcasts / sizeof broadcasts[0]; k++) {
        const ladder_memeff_problem p = problem(4, 2, 70, 90, 16, k % 2 ? LADDER_CAUSAL_TOP_LEFT : LADDER_CAUSAL_NONE,
                                                0.3);
        test_case t = test_case_of(&ladder_memeff_algo, &p);
        t.opts.with |= 1u << T("dlse") | 1u << T("bias");
        t.opts.broadcast = broadcasts[k];
        ladder_case c;
        test_make(&t, &c);
        test_set_input(&c, "do", test_zero); /* dP = 0, Delta = -dlse: dS = P dlse > 0 */
        test_set_input(&c, "dlse", test_positive);
        double *v[LADDER_MAX_TENSORS];
        test_oracle_run(&c, v);
        ladder_magnitudes m;
        test_magnitudes(&c, &m);
        const int i = T("dbias");
        cr_assert(m.terms[i], "broadcast %u: dbias has magnitudes", broadcasts[k]);
        int64_t bad = -1, low = -1;
        for (int64_t x = 0; x < numel_of(&c, i); x++) {
            if (bad < 0 && !(fabs(m.terms[i][x] - fabs(v[i][x])) <= 1e-5 * fabs(v[i][x]))) bad = x;
            if (low < 0 && !(m.rounding[i][x] >= m.terms[i][x])) low = x;
        }
        cr_expect(bad < 0, "broadcast %u, dbias[%lld]: terms %.9g but the value is %.9g", broadcasts[k],
                  (long long)bad, bad < 0 ? 0 : m.terms[i][bad], bad < 0 ? 0 : v[i][bad]);
        cr_expect(low < 0, "broadcast %u, dbias[%lld]: a rounding coefficient below the terms' magnitude",
                  broadcasts[k], (long long)low);
        for (int o = 0; o < ladder_memeff_algo.n_tensors; o++)
            cr_expect(o == i || !m.terms[o], "%s has magnitudes: only dbias should",
                      ladder_memeff_algo.tensors[o].name);
        ladder_magnitudes_free(&m);
        test_oracle_free(v);
        ladder_case_free(&c);
    }
}

Test(memeff_magnitudes, a_row_of_one_key_passes_inside_its_bound_and_fails_beyond) {
    ladder_memeff_problem p = problem(6, 2, 128, 217, 192, LADDER_CAUSAL_TOP_LEFT, 0.5);
    p.attn.B = 1, p.attn.Dv = 128;
    test_case t = test_case_of(&ladder_memeff_algo, &p);
    t.opts.with |= 1u << T("bias");
    ladder_case c;
    test_make(&t, &c);
    ladder_result cpu;
    test_run(&t, LADDER_RUNG_CPU, LADDER_F32, &c, &cpu);
    double *v[LADDER_MAX_TENSORS];
    test_oracle_run(&c, v);
    ladder_magnitudes m;
    test_magnitudes(&c, &m);
    const int i = T("dbias");
    const int64_t shape[4] = {1, 6, 128, 217};
    const ladder_magnitude mi = {m.terms[i], m.rounding[i]};
    /* the cpu rung's dbias as doubles, against the oracle's */
    const int64_t n = numel_of(&c, i);
    double *got = malloc((size_t)n * sizeof *got);
    cr_assert(got);
    for (int64_t x = 0; x < n; x++) got[x] = ladder_tensor_get(&cpu.t[i], x);
    ladder_cmp cmp = ladder_compare_f64_magnitude(got, v[i], 4, shape, &mi, LADDER_TOL_F32);
    char why[256];
    ladder_cmp_describe(&cmp, why, sizeof why);
    cr_expect(cmp.ok && cmp.worst_share < 0.25, "the cpu rung's dbias against the oracle's: %s", why);
    /* element (0, 3, 0, 0), row 0's one key: moved to twice its bound past the oracle's value, it fails */
    const int64_t x = 3 * 128 * 217;
    const double bound = LADDER_TOL_F32 * m.terms[i][x] + LADDER_F32_ROUNDING * m.rounding[i][x];
    got[x] = v[i][x] + 2 * bound;
    cmp = ladder_compare_f64_magnitude(got, v[i], 4, shape, &mi, LADDER_TOL_F32);
    cr_expect(!cmp.ok && cmp.first_bad == x, "an element twice its bound away passed (bound %g)", bound);
    got[x] = v[i][x] + 0.5 * bound;
    cmp = ladder_compare_f64_magnitude(got, v[i], 4, shape, &mi, LADDER_TOL_F32);
    cr_expect(cmp.ok || cmp.first_bad != x, "an element half its bound away failed (bound %g)", bound);
    free(got);
    ladder_magnitudes_free(&m);
    test_oracle_free(v);
    ladder_result_free(&cpu);
    ladder_case_free(&c);
}
