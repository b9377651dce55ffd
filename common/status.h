/**
 * @file status.h
 * @brief Status codes and the last-error message shared by every ladder call.
 *
 * Library code never exits, aborts or prints: it returns a ::ladder_status and
 * leaves a sentence in ladder_last_error() that names the argument at fault
 * and what was expected.
 */
#ifndef LADDER_STATUS_H
#define LADDER_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/** What a ladder call returns. */
typedef enum ladder_status {
    LADDER_OK = 0,          /**< success */
    LADDER_ERR_ARG,         /**< null required pointer, size <= 0, option out of range, malformed cu_seqlens */
    LADDER_ERR_SHAPE,       /**< tensors whose shapes disagree with each other or with the problem */
    LADDER_ERR_UNSUPPORTED, /**< valid input this rung does not take (a dtype, a stride, a size) */
    LADDER_ERR_UNAVAILABLE, /**< the rung was not built (no nvcc) or no GPU is present */
    LADDER_ERR_CUDA,        /**< a CUDA call failed; its error string is in the message */
    LADDER_ERR_NOMEM,       /**< a host or device allocation failed */
    LADDER_ERR_IO           /**< a file cannot be read or written, or is not a valid .npy */
} ladder_status;

/** The message of the last failed call on this thread ("" after a success). */
const char *ladder_last_error(void);

/** The enumerator's name, e.g. "LADDER_ERR_SHAPE". */
const char *ladder_status_name(ladder_status status);

/**
 * Record a failure: formats the message for ladder_last_error() and returns
 * @p status, so that a check reads `return ladder_fail(LADDER_ERR_ARG, "...")`.
 */
ladder_status ladder_fail(ladder_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/** Clear the message (done by every public entry point on success). */
void ladder_clear_error(void);

/**
 * @def LADDER_TRY
 * Return from the enclosing function with the status of @p expr unless it is
 * ::LADDER_OK; its message is already in ladder_last_error().
 */
#define LADDER_TRY(expr)                                                                                               \
    do {                                                                                                               \
        ladder_status ladder_st_ = (expr);                                                                             \
        if (ladder_st_ != LADDER_OK) return ladder_st_;                                                                \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
