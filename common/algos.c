/* The registry of algorithms: adding one means adding its descriptor here (see engine.h). */
#include "engine.h"

extern const ladder_algo ladder_dynconv_algo;
extern const ladder_algo ladder_recurrent_algo;
extern const ladder_algo ladder_flash_algo;
extern const ladder_algo ladder_memeff_algo;
extern const ladder_algo ladder_flex_algo;

const ladder_algo *const ladder_algos[] = {&ladder_dynconv_algo, &ladder_recurrent_algo, &ladder_flash_algo,
                                         &ladder_memeff_algo, &ladder_flex_algo};
const int ladder_n_algos = sizeof ladder_algos / sizeof ladder_algos[0];
