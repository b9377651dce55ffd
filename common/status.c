#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

const char *ladder_last_error(void) { return last_error; }

void ladder_clear_error(void) { last_error[0] = '\0'; }

const char *ladder_status_name(ladder_status status) {
    switch (status) {
    case LADDER_OK: return "LADDER_OK";
    case LADDER_ERR_ARG: return "LADDER_ERR_ARG";
    case LADDER_ERR_SHAPE: return "LADDER_ERR_SHAPE";
    case LADDER_ERR_UNSUPPORTED: return "LADDER_ERR_UNSUPPORTED";
    case LADDER_ERR_UNAVAILABLE: return "LADDER_ERR_UNAVAILABLE";
    case LADDER_ERR_CUDA: return "LADDER_ERR_CUDA";
    case LADDER_ERR_NOMEM: return "LADDER_ERR_NOMEM";
    case LADDER_ERR_IO: return "LADDER_ERR_IO";
    }
    return "LADDER_ERR_UNKNOWN";
}

ladder_status ladder_fail(ladder_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}
