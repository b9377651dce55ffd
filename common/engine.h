/**
 * @file engine.h
 * @brief One engine under every algorithm: descriptors, random cases, running a rung, checking, .npy by name.
 *
 * An algorithm tells the engine what it is through one small descriptor,
 * ::ladder_algo: its named tensors (the names are also the `.npy` file
 * names) with their role, the dimensions each shape is made of, the
 * problem's sizes and options with their ranges, its dispatcher, and the
 * byte and FLOP counts of each pass. Everything else is written once, here,
 * against descriptors, and shared by the `ladder` program, the tests, the
 * labs and the benchmark:
 *
 * - ladder_case_make(): seeded random inputs of a problem (also strided views
 *   into NaN-padded buffers, and packed variable-length sequences);
 * - ladder_case_rounded(): the same inputs rounded to bf16 or fp16, for the
 *   CPU reference of the tensor-core rung;
 * - ladder_run(): one rung, forward then backward: inputs converted to the
 *   rung's dtype, mirrored to the device for the GPU rungs, outputs poisoned
 *   with NaN, one validated call per pass, then (optionally) timed repeats of
 *   the rung alone, outputs copied back;
 * - ladder_result_check(): every present output compared with the one comparator;
 * - ladder_case_read_dir() / ladder_result_write_dir(): `.npy` in and out by name.
 *
 * The rung files never see any of this: they take the algorithm's own
 * problem and args structs, as a user's call would.
 */
#ifndef LADDER_ENGINE_H
#define LADDER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare.h"
#include "gpu.h"
#include "rung.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most named tensors one algorithm has (flex has 31): a set of them is a uint32_t. */
#define LADDER_MAX_TENSORS 32
/** Most sizes and options one problem has. */
#define LADDER_MAX_PARAMS 24
/** Largest problem struct, in bytes. */
#define LADDER_PROBLEM_MAX 256 /* bytes, 8-byte aligned: problem structs hold int64, int, double and bool fields */
/** Most packed sequences a generated varlen case has. */
#define LADDER_MAX_SEQS 16

/** The two passes. */
typedef enum ladder_pass {
    LADDER_PASS_FWD = 0, /**< forward */
    LADDER_PASS_BWD = 1  /**< backward */
} ladder_pass;

/** What a tensor is to its algorithm: flags combined with `|`. */
enum ladder_tensor_role {
    LADDER_IN_FWD = 1u << 0,   /**< the forward reads it (and so does the backward) */
    LADDER_IN_BWD = 1u << 1,   /**< only the backward reads it (dout, dht); from a file, its absence means forward only */
    LADDER_OUT_FWD = 1u << 2,  /**< the forward writes it (the backward may read it too: see ::LADDER_READ_BY_BWD) */
    LADDER_OUT_BWD = 1u << 3,  /**< the backward writes it */
    LADDER_OPTIONAL = 1u << 4, /**< may be absent (an optional input, or an output written only when asked for) */
    LADDER_INDEX = 1u << 5,    /**< an i32 index tensor (cu_seqlens): never rounded, never differentiated */
    LADDER_KEEP_F32 = 1u << 6, /**< stays f32 at every rung (lse, recurrent states) */
    LADDER_READ_BY_BWD = 1u << 7, /**< a forward output the backward reads (o, lse) */
    /** an input that may broadcast (memeff's bias): each dimension the size its dims name or 1, any strides (0
     *  too); its gradient takes the shape the input has (ladder_case_shape()). Cases draw it as
     *  ladder_case_opts::broadcast and ladder_case_opts::stride0 say. */
    LADDER_BROADCAST = 1u << 8,
    /** a gradient that may be left out while its input is given (flex's buffer gradients, memeff's dbias): the input
     *  is then read but frozen, as a PyTorch tensor without requires_grad (ladder_case_opts::frozen). Without it, an
     *  optional gradient is written whenever its input is given (recurrent's dg, dh0, ...). */
    LADDER_FREEZABLE = 1u << 9
};

/** How ladder_case_make() draws an input. */
typedef enum ladder_fill {
    LADDER_FILL_NORMAL = 0, /**< N(0, 1) */
    LADDER_FILL_FAN_IN,     /**< N(0, 1/n), n the size of the last dimension: sums over it stay near unit scale */
    LADDER_FILL_LOG_GATE    /**< logsigmoid(N(0,1)) / normalizer: a gate in log space, <= 0 */
} ladder_fill;

/** One named tensor of an algorithm. */
typedef struct ladder_tensor_spec {
    const char *name;    /**< the args field and the .npy name: "x" */
    const char *dims;    /**< its shape as dimension names: "B,T,D,W" (problem params or derived dims) */
    unsigned role;       /**< ::ladder_tensor_role flags */
    size_t offset;       /**< offsetof(args struct, this tensor) */
    const char *grad_of; /**< for a gradient, the tensor it belongs to ("x" for "dx", "out" for "dout"); else NULL */
    ladder_fill fill;    /**< how random inputs are drawn */
} ladder_tensor_spec;

/** Type of a problem field. */
typedef enum ladder_param_type {
    LADDER_PARAM_I64 = 0, /**< int64_t size */
    LADDER_PARAM_INT,     /**< int */
    LADDER_PARAM_BOOL,    /**< bool (flag value 0 or 1) */
    LADDER_PARAM_DOUBLE,  /**< double */
    LADDER_PARAM_U64      /**< uint64_t (a seed, a counter offset): exact through the double-valued helpers up to 2^53 */
} ladder_param_type;

/**
 * How a param chosen by name is written (flex's --score_mod alibi, --mask_mod causal+document): the value stays a
 * number in the problem struct (an id, a set of ids), and these turn it into text and back.
 */
typedef struct ladder_param_names {
    const char *param; /**< the param's name ("score_mod") */
    /** @p text into the value; LADDER_ERR_ARG naming every accepted name otherwise. */
    ladder_status (*parse)(const char *text, double *v);
    /** The value as text ("causal+document"). */
    void (*format)(double v, char *buf, size_t n);
    /** Every accepted name, separated by spaces (for ladder list and --help). */
    const char *list;
} ladder_param_names;

/** One field of the problem struct; also the command-line flag --NAME and, for sizes, a dimension name. */
typedef struct ladder_param {
    const char *name;       /**< "W" */
    ladder_param_type type; /**< the field's C type */
    size_t offset;          /**< offsetof(problem struct, field) */
    double lo;              /**< the smallest value accepted */
    double hi;              /**< the largest value accepted */
    double run_default;     /**< the value `ladder run` uses */
    const char *help;       /**< one line for --help */
} ladder_param;

struct ladder_case; /* below: a problem with its inputs */

/**
 * The magnitudes of a case's outputs that are sums of terms that cancel (ladder_algo::magnitudes): for output i,
 * terms[i] and rounding[i] (::ladder_magnitude's two arrays, C order, the output's shape), or NULL for an output
 * compared by the plain rule.
 */
typedef struct ladder_magnitudes {
    double *terms[LADDER_MAX_TENSORS];    /**< per output: each element's sum of |term|, or NULL */
    double *rounding[LADDER_MAX_TENSORS]; /**< per output: each element's sum of its terms' rounding coefficients */
} ladder_magnitudes;

/**
 * Building what a user with a fixed problem computes once and passes to every call (ladder_algo::fixed_inputs; flex:
 * the block lists of a mask), as `ladder bench` times it on its own: one row per rung in @p rungs, pass "build", at
 * @p problem with the command line's flags applied.
 */
typedef struct ladder_bench_build {
    const void *problem; /**< the problem built for (flex: the document mask at 128k tokens) */
    uint32_t rungs;      /**< bit r: time rung r's builder (a builder several rungs share: the lowest of them) */
    /**
     * Draw what building reads for @p problem at @p rung (in the rung's memory) and allocate what it writes, into
     * *@p state; *@p bytes: the bytes one build reads and writes. @p shape, the row's shape column, holds the
     * problem (ladder_problem_str()); begin() appends what it drew (flex: " docs=32").
     */
    ladder_status (*begin)(ladder_rung rung, const void *problem, void **state, double *bytes, char *shape, size_t n);
    ladder_work_fn run; /**< one build, on begin()'s state: what the timer brackets */
    void (*end)(void *state); /**< free begin()'s state (safe after a failed begin) */
} ladder_bench_build;

/** An algorithm, as the engine sees it. Each algorithm defines one (common/ALGO_desc.c). */
typedef struct ladder_algo {
    const char *name;    /**< "dynconv" */
    const char *summary; /**< one line for ladder list and --help */
    size_t problem_size; /**< sizeof its problem struct (at most ::LADDER_PROBLEM_MAX) */
    size_t args_size;    /**< sizeof its args struct */
    const ladder_param *params;        /**< the problem's fields, in struct order */
    int n_params;                      /**< how many */
    const ladder_tensor_spec *tensors; /**< every named tensor, inputs and outputs */
    int n_tensors;                     /**< how many */
    const char *varlen_dim;   /**< the size packed sequences share ("T"), NULL without varlen */
    const char *varlen_dim2;  /**< the size a second index tensor packs ("Sk" beside "Sq"); NULL: one index tensor */
    const char *varlen_batch; /**< the size that is 1 when sequences are packed ("B") */
    /** A dimension that is not a param (e.g. N, the number of sequences), or -1 if @p name is unknown. May be NULL. */
    int64_t (*derived_dim)(const void *problem, const ladder_tensor *index, const char *name);
    /** The public dispatcher of @p pass: validates, then runs the rung. */
    ladder_status (*call)(ladder_rung rung, ladder_pass pass, const void *problem, const void *args);
    /** The rung function alone, on input the dispatcher has already validated (for timing). */
    ladder_status (*call_rung)(ladder_rung rung, ladder_pass pass, const void *problem, const void *args);
    /**
     * The tensor-core rung's reference, run in place of the cpu rung: the pass in fp32 with the intermediates that
     * rung rounds (attention: P and dS, common/attention_tc_reference.h) rounded to @p round (bf16 or f16) at the
     * same places, behind the dispatcher's validation (ladder_run_opts::emulate, ladder_run_tc_reference()). NULL:
     * the tensor-core rung rounds only its inputs and outputs, and its reference is the plain cpu rung on rounded
     * inputs (dynconv, recurrent).
     */
    ladder_status (*call_emulating)(ladder_dtype round, ladder_pass pass, const void *problem, const void *args);
    /** Bytes the pass must move at least: float tensors of @p dtype, the tensors in @p present (bit i: tensor i). */
    double (*bytes)(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype);
    /** Floating-point operations of the pass (a multiply-add counts 2). */
    double (*flops)(const void *problem, ladder_pass pass);
    const void *bench_problems; /**< problem structs `ladder bench` sweeps, problem_size apart */
    int n_bench_problems;       /**< how many */
    uint32_t rungs_missing;     /**< bit r: the algorithm has no rung r yet (skipped, like a rung not built) */
    /**
     * Per bench problem, the rungs `ladder bench` runs at it (bit r: rung r), or NULL: every rung. The lowest rung
     * of the set that is available here and takes f32 inputs is the reference every other rung is checked against
     * (a set without one, such as flex's tensor-core rung alone, is timed and only checked for NaN); the "x cpu"
     * column is filled where that is the cpu rung. So the sizes a peer is measured at leave out the rungs that would
     * take minutes (the cpu rung) or hours (flash's gpu_naive) there, and a small problem beside them climbs the
     * whole ladder. A problem with no rung available here is left out, and the bench says so.
     */
    const uint32_t *bench_rungs;
    const uint32_t *bench_with; /**< per bench problem, the optional tensors it includes (bit i: tensor i), or NULL */
    /** per bench problem, the inputs it freezes (bit i: tensor i, whose gradient is ::LADDER_FREEZABLE), or NULL:
     *  none; `ladder bench --frozen` replaces it, as --with replaces bench_with */
    const uint32_t *bench_frozen;
    uint32_t run_with;          /**< the optional tensors `ladder run` includes when --with is not given */
    /** The tensor-core rung takes f32 inputs too (TF32 products: memeff), beside bf16 and f16. Its problem may then
     *  have a bool param "allow_tf32": set, one TF32 product per multiply (ladder_run_tolerance()). */
    bool tc_f32;
    /**
     * The optional inputs @p problem cannot run without (bit i: tensor i; flex: the buffers its mods read), which
     * ladder_case_make() includes as if asked for. NULL: none.
     */
    uint32_t (*needs)(const void *problem);
    const ladder_param_names *named_params; /**< the params given by name (INT params holding an id or a set) */
    int n_named_params;                     /**< how many */
    /**
     * Draw index tensor @p i (one that packs no sequences: flex's document ids, prefix lengths, block lists) for
     * @p problem into @p t (allocated here, i32), from @p seed. NULL: the algorithm has no such tensor.
     */
    ladder_status (*draw_index)(const void *problem, int i, uint64_t seed, ladder_tensor *t);
    /**
     * Add to case @p c, as inputs, what a user with a fixed problem computes once and passes to every call (flex:
     * the block lists of its mask mods), unless the case has them already. `ladder bench` calls it before timing,
     * so that the timed runs are the passes alone. NULL: the algorithm has nothing of the kind.
     */
    ladder_status (*fixed_inputs)(struct ladder_case *c);
    const ladder_bench_build *bench_build; /**< building fixed_inputs() timed on its own, or NULL */
    /**
     * The magnitudes of the outputs of case @p c whose elements are sums of terms that cancel, into @p m (allocated
     * here; ladder_magnitudes_free()): flex's dq, dk, dv and buffer gradients and memeff's dbias, sums of dS over
     * scores, which a row's softmax makes cancel. Computed in double from the case's inputs alone (no rung's
     * result), at about the cost of a cpu backward. ladder_result_check() holds those outputs to them
     * (ladder_compare_magnitude()). NULL: every output is compared by the plain rule.
     */
    ladder_status (*magnitudes)(const struct ladder_case *c, ladder_magnitudes *m);
} ladder_algo;

/** Every algorithm, in chapter order. */
extern const ladder_algo *const ladder_algos[];
/** How many there are. */
extern const int ladder_n_algos;
/** The algorithm called @p name, or NULL. */
const ladder_algo *ladder_algo_find(const char *name);

/**
 * LADDER_OK when @p algo can run on @p rung here: ladder_rung_available(), and the algorithm has that rung
 * (LADDER_ERR_UNAVAILABLE "flash has no gpu_tensorcore rung yet" otherwise).
 */
ladder_status ladder_algo_rung_available(const ladder_algo *algo, ladder_rung rung);

/** Index of the tensor called @p name, or -1. */
int ladder_algo_tensor(const ladder_algo *algo, const char *name);
/** How param @p i is given by name (ladder_algo::named_params), or NULL: it is a number. */
const ladder_param_names *ladder_param_names_of(const ladder_algo *algo, int i);
/** Index of the param called @p name, or -1. */
int ladder_algo_param(const ladder_algo *algo, const char *name);
/**
 * The optional tensors named in @p names ("g,gk,h0") as a set (bit i: tensor i); LADDER_ERR_ARG naming the
 * first name that is not an optional, non-index tensor of @p algo.
 */
ladder_status ladder_algo_with(const ladder_algo *algo, const char *names, uint32_t *with);
/** The inputs of @p algo that may be frozen (bit i: tensor i, an input whose gradient is ::LADDER_FREEZABLE). */
uint32_t ladder_algo_freezable(const ladder_algo *algo);
/**
 * The inputs named in @p names ("slopes,bq", or "none" for no input) as a set of inputs to freeze (bit i: tensor i);
 * LADDER_ERR_ARG naming the first name that is not an input of @p algo with a ::LADDER_FREEZABLE gradient, and the
 * inputs that are.
 */
ladder_status ladder_algo_frozen(const ladder_algo *algo, const char *names, uint32_t *frozen);
/** The value of param @p i in @p problem, as a double. */
double ladder_param_get(const ladder_algo *algo, const void *problem, int i);
/** Store @p v into param @p i of @p problem. */
void ladder_param_set(const ladder_algo *algo, void *problem, int i, double v);
/** Fill @p problem with every param's run default. */
void ladder_problem_defaults(const ladder_algo *algo, void *problem);
/**
 * The value of @p p that turns its option off (no mask, no flag, the default scale): what `ladder run --in` and the
 * Python module take for an option not given, as a zeroed problem does in C. The descriptors follow one rule, so that
 * it needs no field of its own: an option's smallest value is its neutral one (a flag's or an enum's 0, a window's -1
 * for no limit, a scale's 0 for its default), except for a signed option (lo below -1, recurrent's scale), whose
 * neutral value is 0. For a size it is its smallest value, a stand-in until the tensors give it.
 */
double ladder_param_neutral(const ladder_param *p);
/** Fill @p problem with every param's neutral value (ladder_param_neutral()). */
void ladder_problem_neutral(const ladder_algo *algo, void *problem);
/** True when param @p i is a size (a dimension of one of the algorithm's tensors: B, Sq, D), false for an option. */
bool ladder_param_is_size(const ladder_algo *algo, int i);
/**
 * The problem as ladder_problem_str() writes it, except that a param called "scale" shows the value the kernels use:
 * 0 means 1/sqrt(the last dimension of the algorithm's first tensor) (DESIGN.md: 1/sqrt(K), for attention 1/sqrt(D)),
 * written "scale=0.125 (1/sqrt(D))". This is the line that says which problem ran.
 */
void ladder_problem_describe(const ladder_algo *algo, const void *problem, char *buf, size_t n);
/** "B=2 T=1024 D=512 W=4" (every size and option, in param order; a bool as NAME=0 or NAME=1; a named param as its
 *  names: score_mod=alibi). */
void ladder_problem_str(const ladder_algo *algo, const void *problem, char *buf, size_t n);
/**
 * The shape of tensor @p i for @p problem (@p index: the case's index tensor, for derived dims).
 * Returns the rank, or -1 when a dimension name is unknown (a descriptor bug).
 */
int ladder_tensor_shape_of(const ladder_algo *algo, const void *problem, const ladder_tensor *index, int i,
                           int64_t *shape);
/** The dtype tensor @p i has at a rung whose float inputs are @p dtype (index: i32, ::LADDER_KEEP_F32: f32). */
ladder_dtype ladder_tensor_dtype_at(const ladder_algo *algo, int i, ladder_dtype dtype);
/** The float dtype the rung takes: bf16, fp16 or f32 (@p tc_dtype) for gpu_tensorcore, f32 for the others. */
ladder_dtype ladder_rung_dtype(ladder_rung rung, ladder_dtype tc_dtype);
/**
 * LADDER_OK when @p algo's rung @p rung takes float inputs of @p dtype (ladder_rung_dtype()): the fp32 rungs f32,
 * the tensor-core rung bf16 and f16, and f32 where ladder_algo::tc_f32 says so; LADDER_ERR_UNSUPPORTED naming the
 * algorithm, the rung and the dtype otherwise, so that no caller silently runs another precision.
 */
ladder_status ladder_algo_takes(const ladder_algo *algo, ladder_rung rung, ladder_dtype dtype);

/** How ladder_case_make() builds a case. Zero-initialised: seed 0, contiguous, no varlen, no optional inputs. */
typedef struct ladder_case_opts {
    uint64_t seed;                        /**< seeds every input */
    bool strided;                         /**< inputs are views into larger NaN-padded buffers */
    int n_seqs;                           /**< > 0: pack sequences of these lengths along varlen_dim */
    int64_t seqlens[LADDER_MAX_SEQS];     /**< their lengths (0 allowed) */
    bool has_seqlens2;                    /**< a second index tensor packs seqlens2 (else the same seqlens) */
    int64_t seqlens2[LADDER_MAX_SEQS];    /**< the n_seqs lengths along a second index tensor's size (flash: keys) */
    uint32_t with;                        /**< bit i: include optional tensor i (input, or output asked for) */
    uint32_t frozen;                      /**< bit i: input i is read but frozen: its gradient (::LADDER_FREEZABLE,
                                               else the case is refused) is not asked for */
    unsigned broadcast;                   /**< bit d: every ::LADDER_BROADCAST input has size 1 on dimension d */
    unsigned stride0;                     /**< bit d: every ::LADDER_BROADCAST input is a view with stride 0 along
                                               dimension d (the problem's size there, over one element of its buffer) */
    double gate_normalizer;               /**< ::LADDER_FILL_LOG_GATE divides by it (0 means 1) */
} ladder_case_opts;

/** A problem with its host inputs (f32, index tensors i32); absent tensors have data NULL. */
typedef struct ladder_case {
    const ladder_algo *algo;                   /**< what it is a case of */
    _Alignas(8) unsigned char problem[LADDER_PROBLEM_MAX]; /**< the algorithm's problem struct */
    ladder_tensor t[LADDER_MAX_TENSORS];       /**< input views (strided ones point into buf) */
    ladder_tensor buf[LADDER_MAX_TENSORS];     /**< the allocations the views point into */
    uint32_t present;                          /**< bit i: tensor i takes part (inputs given, outputs written) */
    bool backward;                             /**< the backward runs too (its inputs are present) */
} ladder_case;

/**
 * The sizes @p opts's packed sequences give @p problem: the algorithm's varlen_batch 1, its varlen_dim the sum of
 * the lengths, its varlen_dim2 the sum of seqlens2 (or of the same lengths). Nothing without packed sequences.
 */
void ladder_problem_packed(const ladder_algo *algo, const ladder_case_opts *opts, void *problem);
/**
 * Make a seeded random case of @p problem (copied). Varlen options build every index tensor of the algorithm
 * (the first from seqlens, a second from seqlens2 or seqlens) and set each one's packed size and varlen_batch.
 */
ladder_status ladder_case_make(ladder_case *c, const ladder_algo *algo, const void *problem,
                               const ladder_case_opts *opts);
/**
 * The shape tensor @p i has in case @p c: an input's own (a broadcast one may have 1 where the problem has more),
 * the gradient of an input its input's, any other output ladder_tensor_shape_of()'s. Returns the rank, or -1 for a
 * bad dimension name.
 */
int ladder_case_shape(const ladder_case *c, int i, int64_t *shape);
/** The same case with every float input rounded to @p precision (bf16 or f16), strides and NaN padding kept. */
ladder_status ladder_case_rounded(const ladder_case *c, ladder_dtype precision, ladder_case *rounded);
/**
 * Freeze the inputs in @p frozen (bit i: tensor i): their gradients leave the case's outputs, so that no rung writes
 * them. LADDER_ERR_ARG naming an input whose gradient is not ::LADDER_FREEZABLE (the case is then unchanged).
 * ladder_case_make() applies ladder_case_opts::frozen so; a case read from files (ladder_case_read_dir()) takes it
 * here.
 */
ladder_status ladder_case_freeze(ladder_case *c, uint32_t frozen);
/** Free what a case owns (safe on a zeroed case). */
void ladder_case_free(ladder_case *c);

/** How ladder_run() runs. Zero-initialised: one validated call per pass, no timing. */
typedef struct ladder_run_opts {
    int warmup;       /**< untimed runs of the rung alone before the timed ones */
    int reps;         /**< timed runs of the rung alone (median reported); 0: none; the cpu rung with reps 1 and
                           warmup 0 times its validated call instead of running again */
    bool flush_l2;    /**< GPU: between timed runs, outside the timed region, overwrite a buffer twice the L2 size,
                           then read another as large (ladder_gpu_median_ms) */
    bool forward_only;/**< skip the backward even when the case has its inputs */
    /** bf16/f16: run the cpu rung through ladder_algo::call_emulating, where the algorithm has one (it rounds
     *  what the tensor-core rung rounds); other rungs, and timed repeats, are refused. LADDER_F32 (zero): off */
    ladder_dtype emulate;
} ladder_run_opts;

/** One rung's outputs, on the host in the rung's dtypes, with its median times. */
typedef struct ladder_result {
    ladder_tensor t[LADDER_MAX_TENSORS]; /**< outputs (inputs stay absent) */
    double ms[2];                        /**< median ms per pass (0 when not timed or not run) */
} ladder_result;

/**
 * Run @p rung on @p c: forward, then backward (when the case has its
 * inputs). Float inputs go in as ladder_rung_dtype(rung, @p tc_dtype) with
 * their strides; GPU rungs run on device mirrors. Each pass is called once
 * through the validating dispatcher on NaN-poisoned outputs; with
 * opts->reps > 0 the rung function is then timed alone (CUDA events on the
 * GPU, the host clock on the CPU). A failure returns its status with
 * ladder_last_error() set, and @p r holds nothing.
 */
ladder_status ladder_run(ladder_rung rung, ladder_dtype tc_dtype, const ladder_case *c, const ladder_run_opts *opts,
                         ladder_result *r);
/**
 * The reference of the tensor-core rung at @p dtype (bf16 or f16): the cpu rung, run once on @p c's inputs rounded
 * to @p dtype, with the algorithm's intermediates rounded where the tensor-core rung rounds them
 * (ladder_algo::call_emulating; without one, the plain cpu rung). Compare with ladder_tolerance(@p dtype).
 */
ladder_status ladder_run_tc_reference(const ladder_case *c, ladder_dtype dtype, ladder_result *r);
/** Free a result (safe on a zeroed one). */
void ladder_result_free(ladder_result *r);
/**
 * The tolerance @p rung's outputs on case @p c are checked at against their reference: ladder_tolerance() of the
 * dtype the rung takes (ladder_rung_dtype(@p rung, @p tc_dtype)), except LADDER_TOL_TF32 for the tensor-core rung
 * on f32 inputs when the problem has a param "allow_tf32" that is set (one TF32 product per multiply). Its
 * reference is the cpu rung on the same f32 inputs: no rounding to emulate.
 */
double ladder_run_tolerance(const ladder_case *c, ladder_rung rung, ladder_dtype tc_dtype);

/** What ladder_result_check() found. */
typedef struct ladder_check {
    bool ok;          /**< every output passed */
    /** the largest relative L2 error; for an output held to its magnitudes, tol times the largest share of its
     *  bound an element used (either way at most tol when the output passes); infinity on a NaN/Inf mismatch */
    double worst;
    char why[512];    /**< the first failure: "dx: rel_l2 ... first bad [0,3,7]: got .. want .." */
} ladder_check;

/**
 * The magnitudes of case @p c's outputs (ladder_algo::magnitudes) into @p m, zeroed first: nothing when the
 * algorithm has none or the case runs no backward.
 */
ladder_status ladder_case_magnitudes(const ladder_case *c, ladder_magnitudes *m);
/** Free what ladder_case_magnitudes() allocated (safe on a zeroed one). */
void ladder_magnitudes_free(ladder_magnitudes *m);
/** Compare output @p i: held to its magnitudes where @p m has them (@p m may be NULL), else by the plain rule. */
ladder_cmp ladder_output_compare(const ladder_magnitudes *m, int i, const ladder_tensor *got, const ladder_tensor *want,
                                 double tol);

/**
 * Compare every output present in both results at tolerance @p tol: those the algorithm gives magnitudes for
 * (ladder_case_magnitudes(), computed here) against them, the others by the plain rule.
 */
ladder_check ladder_result_check(const ladder_case *c, const ladder_result *got, const ladder_result *want,
                                 double tol);

/**
 * Read the inputs from DIR/NAME.npy: float tensors may be float32 or
 * float16 files, index tensors int32 or int64 (checked to fit i32).
 * Sizes come from the files' shapes (checked against each param's range);
 * @p options supplies the rest of the problem (non-size params). A missing
 * optional input stays absent; a missing backward input means forward only.
 * Errors are LADDER_ERR_IO or LADDER_ERR_ARG naming the file.
 */
ladder_status ladder_case_read_dir(ladder_case *c, const ladder_algo *algo, const char *dir, const void *options);
/**
 * What a reader of @p dir should be told after ladder_case_read_dir() read @p c from it: one line per `.npy` file
 * there that the algorithm neither reads nor writes ("flash does not read cu_seqlens.npy ..."), and per backward
 * input that was read but cannot be used ("dlse.npy is not used: without do.npy only the forward runs"). @p buf is
 * empty when there is nothing to say; LADDER_ERR_IO when the directory cannot be listed.
 */
ladder_status ladder_case_dir_warnings(const ladder_case *c, const char *dir, char *buf, size_t n);
/**
 * Write every output of @p r as DIR/NAME.npy (float32; DIR is created if missing). @p written: one name per line.
 * Each file is written whole under a temporary name in DIR first, and only when every one is complete are they
 * renamed into place: a full disk or a crash leaves no half-written output, and a symlink standing where an output
 * goes is replaced, never written through.
 */
ladder_status ladder_result_write_dir(const ladder_case *c, const ladder_result *r, const char *dir, char *written,
                                      size_t n);

/**
 * Bytes of host memory this machine can give now (MemAvailable in /proc/meminfo), or -1 when that is unknown.
 * ladder_run() refuses a case whose outputs would not fit (LADDER_ERR_NOMEM) before allocating them: a small input
 * can imply a huge output (a cu_seqlens of 100,000 empty sequences asks recurrent for 100,000 final states).
 */
int64_t ladder_memory_available(void);

/**
 * Median milliseconds of @p o->reps runs of @p fn after @p o->warmup runs: CUDA events (and @p o->flush_l2) at a GPU
 * @p rung (ladder_gpu_median_ms()), the host clock at the cpu rung.
 */
ladder_status ladder_time_ms(ladder_rung rung, ladder_work_fn fn, void *ctx, const ladder_run_opts *o, double *ms);

/** Median of @p n times (sorts them in place). */
double ladder_median(double *ms, int n);

#ifdef __cplusplus
}
#endif
#endif
