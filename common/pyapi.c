/* The descriptors as plain calls (see pyapi.h): what ctypes needs, and no algorithm by name. */
#include "pyapi.h"

#include <string.h>

size_t ladder_py_tensor_size(void) { return sizeof(ladder_tensor); }

int ladder_py_n_algos(void) { return ladder_n_algos; }

const ladder_algo *ladder_py_algo(int i) { return i >= 0 && i < ladder_n_algos ? ladder_algos[i] : NULL; }

const char *ladder_py_algo_name(const ladder_algo *a) { return a->name; }

const char *ladder_py_algo_summary(const ladder_algo *a) { return a->summary; }

size_t ladder_py_problem_size(const ladder_algo *a) { return a->problem_size; }

size_t ladder_py_args_size(const ladder_algo *a) { return a->args_size; }

int ladder_py_n_params(const ladder_algo *a) { return a->n_params; }

const char *ladder_py_param(const ladder_algo *a, int i, int *type, double *lo, double *hi, double *neutral,
                            int *is_size, const char **help) {
    if (i < 0 || i >= a->n_params) return NULL;
    const ladder_param *p = &a->params[i];
    *type = (int)p->type;
    *lo = p->lo;
    *hi = p->hi;
    *neutral = ladder_param_neutral(p);
    *is_size = ladder_param_is_size(a, i);
    *help = p->help;
    return p->name;
}

ladder_status ladder_py_param_parse(const ladder_algo *a, int i, const char *text, double *v) {
    if (i < 0 || i >= a->n_params) return ladder_fail(LADDER_ERR_ARG, "%s has no param %d", a->name, i);
    const ladder_param_names *names = ladder_param_names_of(a, i);
    if (!names) return ladder_fail(LADDER_ERR_ARG, "%s is '%s' but must be a number", a->params[i].name, text);
    return names->parse(text, v);
}

int ladder_py_n_tensors(const ladder_algo *a) { return a->n_tensors; }

const char *ladder_py_tensor(const ladder_algo *a, int i, const char **dims, unsigned *role, const char **grad_of) {
    if (i < 0 || i >= a->n_tensors) return NULL;
    const ladder_tensor_spec *s = &a->tensors[i];
    *dims = s->dims;
    *role = s->role;
    *grad_of = s->grad_of;
    return s->name;
}

void ladder_py_set_tensor(const ladder_algo *a, void *args, int i, const ladder_tensor *t) {
    if (i >= 0 && i < a->n_tensors) memcpy((char *)args + a->tensors[i].offset, t, sizeof *t);
}

ladder_status ladder_py_call(const ladder_algo *a, int rung, int pass, const void *problem, const void *args) {
    if (rung < 0 || rung >= LADDER_RUNG_COUNT || (pass != LADDER_PASS_FWD && pass != LADDER_PASS_BWD))
        return ladder_fail(LADDER_ERR_ARG, "rung %d or pass %d is not one of ladder's", rung, pass);
    LADDER_TRY(ladder_algo_rung_available(a, (ladder_rung)rung));
    return a->call((ladder_rung)rung, (ladder_pass)pass, problem, args);
}
