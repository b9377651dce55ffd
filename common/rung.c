#include "rung.h"

#include <string.h>

#include "gpu.h"

static const char *const names[LADDER_RUNG_COUNT] = {"cpu", "gpu_naive", "gpu_tiled", "gpu_tensorcore"};

const char *ladder_rung_name(ladder_rung rung) {
    return (unsigned)rung < LADDER_RUNG_COUNT ? names[rung] : "unknown";
}

ladder_status ladder_rung_parse(const char *name, ladder_rung *rung) {
    for (int r = 0; name && r < LADDER_RUNG_COUNT; r++)
        if (strcmp(name, names[r]) == 0) {
            *rung = (ladder_rung)r;
            return LADDER_OK;
        }
    return ladder_fail(LADDER_ERR_ARG, "rung '%s' is not one of cpu, gpu_naive, gpu_tiled, gpu_tensorcore",
                       name ? name : "(null)");
}

bool ladder_rung_is_gpu(ladder_rung rung) { return rung != LADDER_RUNG_CPU; }

ladder_status ladder_rung_available(ladder_rung rung) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT)
        return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", (int)rung);
    if (!ladder_rung_is_gpu(rung)) return LADDER_OK;
    if (!ladder_gpu_built())
        return ladder_fail(LADDER_ERR_UNAVAILABLE, "rung %s was not built: this build has no CUDA (nvcc was not found, or SANITIZE=1)",
                           names[rung]);
    if (ladder_gpu_count() < 1)
        return ladder_fail(LADDER_ERR_UNAVAILABLE, "rung %s needs a CUDA GPU: %s", names[rung],
                           ladder_gpu_absent_reason());
    return LADDER_OK;
}
