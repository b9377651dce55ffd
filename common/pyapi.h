/**
 * @file pyapi.h
 * @brief The descriptors as plain calls, for callers that cannot read C structs: the Python module (ctypes).
 *
 * `python/ladder` builds its whole API from these: it walks every algorithm's params and tensors, fills a problem
 * and an args struct through them, and calls the validating dispatcher. Nothing here knows one algorithm from
 * another, so an algorithm added to ::ladder_algos appears in Python with no Python written for it. Everything
 * else the module calls (ladder_param_set(), ladder_tensor_shape_of(), ladder_last_error(), ...) is in engine.h
 * and the headers it includes.
 */
#ifndef LADDER_PYAPI_H
#define LADDER_PYAPI_H

#include <stddef.h>

#include "engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/** sizeof(::ladder_tensor): the module checks its own copy of the struct against it before any call. */
size_t ladder_py_tensor_size(void);
/** How many algorithms there are (::ladder_n_algos). */
int ladder_py_n_algos(void);
/** Algorithm @p i (0 .. ladder_py_n_algos() - 1) of ::ladder_algos, or NULL. */
const ladder_algo *ladder_py_algo(int i);
/** Its name ("flash"). */
const char *ladder_py_algo_name(const ladder_algo *a);
/** Its one-line summary. */
const char *ladder_py_algo_summary(const ladder_algo *a);
/** sizeof its problem struct: the caller allocates that many bytes, 8-byte aligned. */
size_t ladder_py_problem_size(const ladder_algo *a);
/** sizeof its args struct: the caller allocates that many bytes, zeroed, 8-byte aligned. */
size_t ladder_py_args_size(const ladder_algo *a);
/** How many params its problem has. */
int ladder_py_n_params(const ladder_algo *a);
/**
 * Param @p i: returns its name and writes its ::ladder_param_type, range, neutral value (ladder_param_neutral())
 * and whether it is a size (ladder_param_is_size()); @p help gets its one-line help. NULL when @p i is out of range.
 */
const char *ladder_py_param(const ladder_algo *a, int i, int *type, double *lo, double *hi, double *neutral,
                            int *is_size, const char **help);
/**
 * Param @p i given by name (flex's score_mod="alibi", mask_mod="causal+document": ladder_param_names_of()): its value
 * into *@p v. LADDER_ERR_ARG naming the accepted names, or saying that the param takes a number.
 */
ladder_status ladder_py_param_parse(const ladder_algo *a, int i, const char *text, double *v);
/** How many named tensors it has. */
int ladder_py_n_tensors(const ladder_algo *a);
/**
 * Tensor @p i: returns its name and writes its dims ("B,Hq,Sq,D"), its ::ladder_tensor_role flags and the tensor
 * it is the gradient of (NULL if none). NULL when @p i is out of range.
 */
const char *ladder_py_tensor(const ladder_algo *a, int i, const char **dims, unsigned *role, const char **grad_of);
/** Store @p t as tensor @p i of the args struct @p args (the tensor's field, at its offset). */
void ladder_py_set_tensor(const ladder_algo *a, void *args, int i, const ladder_tensor *t);
/**
 * The public dispatcher of @p pass (0 forward, 1 backward) at @p rung: validates everything, then runs the rung.
 * GPU rungs run on the CUDA default stream of device 0 and may return before the kernels finish; call
 * ladder_gpu_sync() before reading the outputs.
 */
ladder_status ladder_py_call(const ladder_algo *a, int rung, int pass, const void *problem, const void *args);

#ifdef __cplusplus
}
#endif
#endif
