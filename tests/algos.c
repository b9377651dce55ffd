/* tests/algos.c: every algorithm's test data (tests/<algo>_cases.c), as the generic suites loop over it. */
#include "harness.h"

extern const test_algo dynconv_tests;
extern const test_algo recurrent_tests;
extern const test_algo flash_tests;
extern const test_algo memeff_tests;
extern const test_algo flex_tests;

const test_algo *const test_algos[] = {&dynconv_tests, &recurrent_tests, &flash_tests, &memeff_tests,
                                      &flex_tests};
const int test_n_algos = sizeof test_algos / sizeof test_algos[0];
