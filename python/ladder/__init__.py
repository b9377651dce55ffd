"""ladder's kernels from Python: NumPy arrays at the cpu rung, PyTorch tensors at every rung.

    import numpy as np, ladder
    o, lse = ladder.flash_fwd(q, k, v, causal=1)                 # NumPy in, NumPy out: the cpu rung
    dq, dk, dv = ladder.flash_bwd(q, k, v, o, lse, do, causal=1)
    out = ladder.run("recurrent", "fwd", q=q, k=k, v=v, g=g)     # the same, by name: a dict of outputs

The API is built at import from the engine's descriptors (libladder.so, through ctypes; nothing is compiled):
each algorithm ALGO gets ALGO_fwd and ALGO_bwd, whose positional arguments are the pass's required inputs in the
order of DESIGN.md's tensor table (for the backward: the forward's inputs, the forward outputs it reads, then
do), whose keywords are the optional inputs (g=, cu_seqlens=, dlse=, ...) and the problem's options (causal=,
scale=, ...), and which return the pass's outputs as a named tuple (o, lse / dq, dk, dv, and the gradients of the
optional inputs given). Sizes come from the tensors' shapes; options not given are neutral (no mask, no dropout,
the default scale 1/sqrt(head dim)), as in a zeroed problem in C. `help(ladder.flash_fwd)` lists them all.

Tensors:
- rung="cpu" (the default) takes NumPy arrays or CPU PyTorch tensors, with any strides (negative NumPy strides are
  copied to a contiguous array first: ladder's strides are >= 0). float32 is passed as it is; float16 and bfloat16
  are widened to float32 exactly; float64 is rounded to the nearest float32 (a copy). Index tensors (cu_seqlens)
  may be int32 or int64 (checked to fit int32). Outputs are float32, of the inputs' kind.
- rung="gpu_naive", "gpu_tiled", "gpu_tensorcore" take CUDA PyTorch tensors on device 0 (ladder's C API has no
  device argument: set CUDA_VISIBLE_DEVICES to pick the GPU), passed by data pointer and strides, never copied.
  gpu_naive and gpu_tiled take float32; gpu_tensorcore bfloat16 or float16 (all float inputs alike), or float32
  where the algorithm has TF32 kernels (memeff: three TF32 products per multiply, fp32-level error, or one with
  allow_tf32=1; the others refuse float32 there with the library's message), with the tensors ladder keeps in
  float32 (lse, dlse, recurrent's gates and states) in float32. Index tensors are int32.
  A tensor of another dtype or device is refused, not converted. Outputs are new CUDA tensors.
- Streams: ladder launches its kernels on the CUDA default stream. A call first waits for the caller's current
  stream (so inputs written there are complete) and returns only when ladder's kernels are done, so its outputs
  can be used on any stream at once.

Errors: every failure raises LadderError, carrying the library's status name (e.status, e.g. "LADDER_ERR_SHAPE")
and its message; the library validates every tensor against the problem before any kernel runs, and this module
checks what the library cannot see (an array's kind, dtype and device) before calling it. Misused Python (an
unknown keyword, a missing argument) raises TypeError.

The library: LADDER_LIB, if set, names libladder.so; else the module looks beside itself, then in the checkout it
came from (build/lib/libladder.so, after `make`), then on the system's library path.
"""

import collections
import ctypes
import os
import pathlib

import numpy as np

__all__ = ["LadderError", "run", "algorithms", "rungs", "available"]


def _load():
    here = pathlib.Path(__file__).resolve().parent
    tried = []
    candidates = [os.environ["LADDER_LIB"]] if os.environ.get("LADDER_LIB") else []
    candidates += [str(here / "libladder.so"), str(here.parent.parent / "build" / "lib" / "libladder.so")]
    for path in candidates:
        if os.path.exists(path) or path == os.environ.get("LADDER_LIB"):
            try:
                return ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path}: {e}")
    try:
        return ctypes.CDLL("libladder.so")
    except OSError as e:
        tried.append(f"libladder.so on the library path: {e}")
    raise ImportError("ladder cannot load libladder.so (run `make` in the ladder checkout, or set LADDER_LIB to its "
                      "path); tried: " + "; ".join(tried))


_lib = _load()

_MAX_RANK = 4


class _Tensor(ctypes.Structure):
    """ladder_tensor (common/tensor.h): data pointer, dtype, rank, shape and strides in elements."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * _MAX_RANK), ("strides", ctypes.c_int64 * _MAX_RANK)]


def _sig(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


_P, _c = ctypes.c_void_p, ctypes.c_char_p
_sig("ladder_py_tensor_size", ctypes.c_size_t)
_sig("ladder_py_n_algos", ctypes.c_int)
_sig("ladder_py_algo", _P, ctypes.c_int)
_sig("ladder_py_algo_name", _c, _P)
_sig("ladder_py_algo_summary", _c, _P)
_sig("ladder_py_problem_size", ctypes.c_size_t, _P)
_sig("ladder_py_args_size", ctypes.c_size_t, _P)
_sig("ladder_py_n_params", ctypes.c_int, _P)
_dbl = ctypes.POINTER(ctypes.c_double)
_int = ctypes.POINTER(ctypes.c_int)
_sig("ladder_py_param", _c, _P, ctypes.c_int, _int, _dbl, _dbl, _dbl, _int, ctypes.POINTER(_c))
_sig("ladder_py_param_parse", ctypes.c_int, _P, ctypes.c_int, _c, _dbl)
_sig("ladder_py_n_tensors", ctypes.c_int, _P)
_sig("ladder_py_tensor", _c, _P, ctypes.c_int, ctypes.POINTER(_c), ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(_c))
_sig("ladder_py_set_tensor", None, _P, _P, ctypes.c_int, ctypes.POINTER(_Tensor))
_sig("ladder_py_call", ctypes.c_int, _P, ctypes.c_int, ctypes.c_int, _P, _P)
_sig("ladder_param_set", None, _P, _P, ctypes.c_int, ctypes.c_double)
_sig("ladder_tensor_shape_of", ctypes.c_int, _P, _P, ctypes.POINTER(_Tensor), ctypes.c_int,
     ctypes.POINTER(ctypes.c_int64 * _MAX_RANK))
_sig("ladder_last_error", _c)
_sig("ladder_status_name", _c, ctypes.c_int)
_sig("ladder_rung_name", _c, ctypes.c_int)
_sig("ladder_rung_parse", ctypes.c_int, _c, _int)
_sig("ladder_rung_available", ctypes.c_int, ctypes.c_int)
_sig("ladder_dtype_name", _c, ctypes.c_int)
_sig("ladder_gpu_sync", ctypes.c_int)
_sig("ladder_memory_available", ctypes.c_int64)

if _lib.ladder_py_tensor_size() != ctypes.sizeof(_Tensor):
    raise ImportError(f"libladder.so's ladder_tensor is {_lib.ladder_py_tensor_size()} bytes, this module's "
                      f"{ctypes.sizeof(_Tensor)}: the library and the module come from different versions")

# ladder_dtype and ladder_tensor_role (common/tensor.h, common/engine.h); the dtype names are checked below
_F32, _F16, _BF16, _I32 = 0, 1, 2, 3
for _code, _name in ((_F32, "f32"), (_F16, "f16"), (_BF16, "bf16"), (_I32, "i32")):
    if _lib.ladder_dtype_name(_code).decode() != _name:
        raise ImportError("libladder.so's dtype codes differ from this module's: rebuild both from one checkout")
(_IN_FWD, _IN_BWD, _OUT_FWD, _OUT_BWD, _OPTIONAL, _INDEX, _KEEP_F32, _READ_BY_BWD, _BROADCAST,
 _FREEZABLE) = (1 << i for i in range(10))
_OK, _ERR_ARG, _ERR_SHAPE, _ERR_UNSUPPORTED, _ERR_UNAVAILABLE, _ERR_CUDA, _ERR_NOMEM = range(7)
_PASSES = {"fwd": 0, "bwd": 1}


class LadderError(Exception):
    """A failed ladder call: `status` is the library's status name ("LADDER_ERR_SHAPE"), `code` its number,
    and the message the sentence the library (or this module, for what it checks first) gave."""

    def __init__(self, code, message):
        self.code = code
        self.status = _lib.ladder_status_name(code).decode()
        self.message = message
        super().__init__(f"{self.status}: {message}")


def _check(status):
    if status != _OK:
        raise LadderError(status, _lib.ladder_last_error().decode())


def _rung_names():
    names, i, r = [], 0, ctypes.c_int()
    while True:
        name = _lib.ladder_rung_name(i).decode()
        if _lib.ladder_rung_parse(name.encode(), ctypes.byref(r)) != _OK or r.value != i:
            return names
        names.append(name)
        i += 1


_RUNGS = _rung_names()


def rungs():
    """The rungs, lowest first: ["cpu", "gpu_naive", "gpu_tiled", "gpu_tensorcore"]."""
    return list(_RUNGS)


def available(rung):
    """True when `rung` can run here (built, and a GPU present for the GPU rungs)."""
    return _rung_index(rung) == 0 or _lib.ladder_rung_available(_rung_index(rung)) == _OK


def _rung_index(rung):
    r = ctypes.c_int()
    _check(_lib.ladder_rung_parse(str(rung).encode(), ctypes.byref(r)))
    return r.value


# ---- the descriptors, walked once -------------------------------------------------------------------------------

_Param = collections.namedtuple("_Param", "index name type lo hi neutral is_size help")
_Spec = collections.namedtuple("_Spec", "index name dims role grad_of")
_PARAM_DOUBLE = 3  # ladder_param_type: I64, INT, BOOL, DOUBLE


class _Algo:
    def __init__(self, ptr):
        self.ptr = ptr
        self.name = _lib.ladder_py_algo_name(ptr).decode()
        self.summary = _lib.ladder_py_algo_summary(ptr).decode()
        self.problem_size = _lib.ladder_py_problem_size(ptr)
        self.args_size = _lib.ladder_py_args_size(ptr)
        self.params = []
        for i in range(_lib.ladder_py_n_params(ptr)):
            t, lo, hi, neutral, size, help_ = (ctypes.c_int(), ctypes.c_double(), ctypes.c_double(),
                                               ctypes.c_double(), ctypes.c_int(), _c())
            name = _lib.ladder_py_param(ptr, i, ctypes.byref(t), ctypes.byref(lo), ctypes.byref(hi),
                                        ctypes.byref(neutral), ctypes.byref(size), ctypes.byref(help_))
            self.params.append(_Param(i, name.decode(), t.value, lo.value, hi.value, neutral.value, bool(size.value),
                                      help_.value.decode()))
        self.tensors = []
        for i in range(_lib.ladder_py_n_tensors(ptr)):
            dims, role, grad_of = _c(), ctypes.c_uint(), _c()
            name = _lib.ladder_py_tensor(ptr, i, ctypes.byref(dims), ctypes.byref(role), ctypes.byref(grad_of))
            self.tensors.append(_Spec(i, name.decode(), dims.value.decode().split(","), role.value,
                                      grad_of.value.decode() if grad_of.value else None))
        self.param = {p.name: p for p in self.params}
        self.tensor = {s.name: s for s in self.tensors}

    def inputs(self, pass_):
        """The tensors a pass reads: the forward's inputs and index tensors; the backward adds its own inputs
        (do, dlse) and the forward outputs it reads (o, lse)."""
        reads = _IN_FWD | _INDEX | (_IN_BWD | _READ_BY_BWD if pass_ == "bwd" else 0)
        return [s for s in self.tensors if s.role & reads and (pass_ == "bwd" or not s.role & _IN_BWD)]

    def outputs(self, pass_):
        return [s for s in self.tensors if s.role & (_OUT_FWD if pass_ == "fwd" else _OUT_BWD)]


_ALGOS = {}
for _i in range(_lib.ladder_py_n_algos()):
    _a = _Algo(_lib.ladder_py_algo(_i))
    _ALGOS[_a.name] = _a


def algorithms():
    """The algorithms' names, in chapter order."""
    return list(_ALGOS)


# ---- tensors in and out -----------------------------------------------------------------------------------------

def _torch():
    import torch  # only when a tensor is one: the module needs no torch for NumPy
    return torch


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


class _Call:
    """One call's tensors: what is passed to the library, and the objects that must outlive the call."""

    def __init__(self, algo, rung):
        self.algo, self.rung = algo, rung
        self.gpu = _RUNGS[rung] != "cpu"
        self.keep = []
        self.kind = None  # "numpy" or "torch"
        self.device = None
        self.float_dtype = None  # the rung's float dtype code, fixed by the first float input

    def fail(self, code, message):
        raise LadderError(code, message)

    def kind_of(self, name, x):
        kind = "torch" if _is_torch(x) else "numpy" if isinstance(x, np.ndarray) else None
        if kind is None:
            self.fail(_ERR_ARG, f"{name} is a {type(x).__name__}, not a NumPy array or a PyTorch tensor")
        if self.kind not in (None, kind):
            self.fail(_ERR_ARG, f"{name} is a {kind} tensor but the others are {self.kind}: give one kind")
        self.kind = kind
        return kind

    def host(self, spec, x):
        """A cpu-rung tensor: float32 (or int32 for an index), converted when it is not, any non-negative strides."""
        index = spec.role & _INDEX
        if self.kind_of(spec.name, x) == "torch":
            if x.device.type != "cpu":
                self.fail(_ERR_ARG, f"{spec.name} is on {x.device} but the cpu rung takes host memory: "
                                    f"pick a GPU rung (rung='gpu_tiled') or move it with .cpu()")
            torch = _torch()
            if index:
                if x.dtype not in (torch.int32, torch.int64):
                    self.fail(_ERR_ARG, f"{spec.name} is {x.dtype} but must be torch.int32 or torch.int64")
                x = torch.from_numpy(self.index_values(spec.name, x.detach().numpy()))
            elif x.dtype != torch.float32:
                if not x.dtype.is_floating_point:
                    self.fail(_ERR_ARG, f"{spec.name} is {x.dtype} but must be a float tensor")
                x = x.detach().float()  # f16/bf16 exactly, f64 rounded to nearest
            x = x.detach()
            self.keep.append(x)
            return self.describe(x.data_ptr(), _I32 if index else _F32, x.shape, x.stride(), spec.name)
        if index:
            if x.dtype not in (np.int32, np.int64):
                self.fail(_ERR_ARG, f"{spec.name} is {x.dtype} but must be int32 or int64")
            x = self.index_values(spec.name, x)
        elif x.dtype != np.float32:
            if x.dtype not in (np.float16, np.float64):
                self.fail(_ERR_ARG, f"{spec.name} is {x.dtype} but must be float32, float16 or float64")
            x = x.astype(np.float32)  # float16 exactly; float64 rounded to the nearest float32
        if any(s < 0 or s % x.itemsize for s in x.strides):
            x = np.ascontiguousarray(x)  # ladder's strides are whole elements, >= 0
        self.keep.append(x)
        return self.describe(x.ctypes.data, _I32 if index else _F32, x.shape,
                             [s // x.itemsize for s in x.strides], spec.name)

    def index_values(self, name, x):
        if x.dtype == np.int64 and x.size and (x.min() < -2**31 or x.max() >= 2**31):
            self.fail(_ERR_ARG, f"{name} holds {x.max() if x.max() >= 2**31 else x.min()}, outside the int32 range")
        return np.ascontiguousarray(x, dtype=np.int32)

    def device_tensor(self, spec, x):
        """A GPU-rung tensor: a CUDA PyTorch tensor of the dtype the rung takes, passed as it is."""
        if self.kind_of(spec.name, x) != "torch":
            self.fail(_ERR_ARG, f"{spec.name} is a NumPy array but {_RUNGS[self.rung]} takes CUDA PyTorch "
                                f"tensors (NumPy arrays go to the cpu rung)")
        torch = _torch()
        if x.device.type != "cuda":
            self.fail(_ERR_ARG, f"{spec.name} is on {x.device} but {_RUNGS[self.rung]} takes CUDA tensors")
        if x.device.index != 0:
            self.fail(_ERR_UNSUPPORTED, f"{spec.name} is on {x.device} but ladder runs on cuda:0 (its C API has no "
                                        f"device argument): set CUDA_VISIBLE_DEVICES to choose the GPU")
        codes = {torch.float32: _F32, torch.float16: _F16, torch.bfloat16: _BF16, torch.int32: _I32}
        code = codes.get(x.dtype)
        if spec.role & _INDEX:
            want = _I32
        elif spec.role & _KEEP_F32:
            want = _F32
        elif _RUNGS[self.rung] == "gpu_tensorcore":
            if self.float_dtype is None and code in (_F16, _BF16, _F32):
                self.float_dtype = code  # float32: the library refuses it where the algorithm has no TF32 kernels
            want = self.float_dtype if self.float_dtype is not None else _BF16
        else:
            want = _F32
        if code != want:
            names = {_F32: "torch.float32", _F16: "torch.float16", _BF16: "torch.bfloat16", _I32: "torch.int32"}
            self.fail(_ERR_UNSUPPORTED, f"{spec.name} is {x.dtype} but {_RUNGS[self.rung]} takes {names[want]} "
                                        f"there (GPU rungs convert nothing: pass it as {names[want]})")
        if x.requires_grad:
            x = x.detach()  # the same memory: ladder's gradients are explicit outputs, not autograd's
        self.device = x.device
        self.keep.append(x)
        return self.describe(x.data_ptr(), code, x.shape, x.stride(), spec.name)

    def describe(self, ptr, dtype, shape, strides, name):
        if len(shape) > _MAX_RANK:
            self.fail(_ERR_SHAPE, f"{name} has {len(shape)} dimensions; ladder's tensors have at most {_MAX_RANK}")
        t = _Tensor(ptr, dtype, len(shape))
        for d, (n, s) in enumerate(zip(shape, strides)):
            t.shape[d], t.strides[d] = int(n), int(s)
        return t

    def output(self, spec, shape):
        dtype = self.out_dtype(spec)
        if self.kind == "torch":
            torch = _torch()
            tdt = {_F32: torch.float32, _F16: torch.float16, _BF16: torch.bfloat16}[dtype]
            x = torch.empty(shape, dtype=tdt, device=self.device if self.gpu else "cpu")
            ptr, strides = x.data_ptr(), x.stride()
        else:
            x = np.empty(shape, dtype=np.float32)
            ptr, strides = x.ctypes.data, [s // 4 for s in x.strides]
        return x, self.describe(ptr, dtype, shape, strides, spec.name)

    def out_dtype(self, spec):
        if not self.gpu or spec.role & _KEEP_F32 or _RUNGS[self.rung] != "gpu_tensorcore":
            return _F32
        return self.float_dtype if self.float_dtype is not None else _BF16


# ---- one call ---------------------------------------------------------------------------------------------------

def run(algo, pass_="fwd", rung="cpu", *, want=(), frozen=(), **kwargs):
    """Run one pass of `algo` ("fwd" or "bwd") at `rung` on tensors and options given by name; return a dict of
    its outputs by name, in the descriptor's order.

    The tensors are the pass's inputs by their names (q=, k=, v=, cu_seqlens_q=, do=, ...); the options are the
    problem's non-size params (causal=, scale=, ...), neutral when not given. `want` names optional outputs that are
    not gradients (recurrent's "ht"), which are written only when asked for. `frozen` names inputs that are read but
    whose gradient is not asked for (flex's buffers, memeff's bias: as a PyTorch tensor without requires_grad); the
    backward then neither computes nor returns it. See the module's help for which arrays each rung takes."""
    a = _ALGOS.get(algo)
    if a is None:
        raise TypeError(f"ladder has no algorithm {algo!r} (it has {', '.join(_ALGOS)})")
    if pass_ not in _PASSES:
        raise TypeError(f"pass must be 'fwd' or 'bwd', not {pass_!r}")
    r = _rung_index(rung)
    if r != 0:
        _check(_lib.ladder_rung_available(r))
    inputs = {s.name: s for s in a.inputs(pass_)}
    outputs = a.outputs(pass_)
    for name in want:
        if name not in a.tensor or a.tensor[name] not in outputs:
            raise TypeError(f"{a.name} {pass_} has no output {name!r} to ask for")
    if isinstance(frozen, str):  # one name
        frozen = (frozen,)
    for name in frozen:
        grad = next((s for s in a.tensors if s.grad_of == name and s.role & _FREEZABLE), None)
        if grad is None:
            raise LadderError(_ERR_ARG, f"frozen: {name!r} is not an input of {a.name} whose gradient may be left out")
    problem = ctypes.create_string_buffer(a.problem_size)
    for p in a.params:
        _lib.ladder_param_set(a.ptr, problem, p.index, p.neutral)
    tensors = {}
    for key, value in kwargs.items():
        if key in inputs:
            if value is not None:
                tensors[key] = value
        elif key in a.param and not a.param[key].is_size:
            _set_option(a, problem, a.param[key], value)
        elif key in a.param:
            raise TypeError(f"{key} is a size of {a.name}: it comes from the tensors' shapes")
        else:
            raise TypeError(f"{a.name} {pass_} takes no argument {key!r} (tensors: {', '.join(inputs)}; options: "
                            f"{', '.join(p.name for p in a.params if not p.is_size)})")
    missing = [s.name for s in inputs.values() if not s.role & _OPTIONAL and s.name not in tensors]
    if missing:
        raise TypeError(f"{a.name} {pass_} needs {', '.join(missing)}")

    call = _Call(a, r)
    args = ctypes.create_string_buffer(a.args_size)
    given = {}
    for s in a.tensors:  # descriptor order: the first float input fixes the tensor-core rung's dtype
        if s.name in tensors:
            t = call.device_tensor(s, tensors[s.name]) if call.gpu else call.host(s, tensors[s.name])
            given[s.name] = t
            _lib.ladder_py_set_tensor(a.ptr, args, s.index, ctypes.byref(t))
    _sizes_from_shapes(a, problem, given)
    index = next((given[s.name] for s in a.tensors if s.role & _INDEX and s.name in given), None)
    shapes = []
    for s in outputs:
        present = s.name in want or not s.role & _OPTIONAL or (s.grad_of in given and s.grad_of not in frozen)
        if not present:
            continue
        of = given.get(s.grad_of)
        if of is not None and a.tensor[s.grad_of].role & _BROADCAST:
            shapes.append((s, tuple(of.shape[:of.rank])))  # the gradient of a broadcast input takes its shape
            continue
        shape = (ctypes.c_int64 * _MAX_RANK)()
        rank = _lib.ladder_tensor_shape_of(a.ptr, problem, ctypes.byref(index) if index is not None else None, s.index,
                                           ctypes.byref(shape))
        if rank < 0:
            raise LadderError(_ERR_ARG, f"{s.name}'s shape [{','.join(s.dims)}] cannot be worked out from the "
                                        f"tensors given")
        shapes.append((s, tuple(shape[:rank])))
    if not call.gpu:
        _fits_in_memory(a, shapes)
    result = {}
    for s, shape in shapes:
        x, t = call.output(s, shape)
        result[s.name] = x
        call.keep.append(t)
        _lib.ladder_py_set_tensor(a.ptr, args, s.index, ctypes.byref(t))
    if call.gpu and call.device is not None:
        _torch().cuda.current_stream(call.device).synchronize()  # the inputs are complete on the caller's stream
    _check(_lib.ladder_py_call(a.ptr, r, _PASSES[pass_], problem, args))
    if call.gpu:
        _check(_lib.ladder_gpu_sync())  # ladder's kernels (default stream) are done: the outputs are ready
    return result


def _set_option(a, problem, p, value):
    if isinstance(value, str):  # a param given by name (flex's score_mod="alibi", mask_mod="causal+document")
        named = ctypes.c_double()
        _check(_lib.ladder_py_param_parse(a.ptr, p.index, value.encode(), ctypes.byref(named)))
        value = named.value
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise LadderError(_ERR_ARG, f"{p.name} is {value!r} but must be a number") from None
    whole = p.type != _PARAM_DOUBLE
    if not (p.lo <= v <= p.hi) or (whole and v != int(v)):
        raise LadderError(_ERR_ARG, f"{p.name} is {value!r} but must be {'a whole number' if whole else 'a number'} "
                                    f"in {p.lo:g}..{p.hi:g} ({p.help})")
    _lib.ladder_param_set(a.ptr, problem, p.index, v)


def _sizes_from_shapes(a, problem, given):
    """Each size from the first tensor that has it; the dispatcher then checks every tensor against them."""
    known = set()
    for s in a.tensors:
        if s.name not in given or s.role & (_INDEX | _BROADCAST):
            continue  # a broadcast input (memeff's bias) may have 1 where the problem has more
        t = given[s.name]
        if t.rank != len(s.dims):
            shape = ",".join(str(t.shape[d]) for d in range(t.rank))
            raise LadderError(_ERR_SHAPE, f"{s.name} has shape [{shape}] but {s.name} is [{','.join(s.dims)}]")
        for d, dim in enumerate(s.dims):
            p = a.param.get(dim)
            if p is None or dim in known:
                continue
            n = t.shape[d]
            if not p.lo <= n <= p.hi:
                raise LadderError(_ERR_ARG, f"{s.name} has {dim} = {n} (dimension {d}) but {dim} must be in "
                                            f"{p.lo:.0f}..{p.hi:.0f}")
            _lib.ladder_param_set(a.ptr, problem, p.index, float(n))
            known.add(dim)


def _fits_in_memory(a, shapes):
    """Refuse outputs larger than the memory available before allocating them (a small cu_seqlens can ask for
    huge states), as ladder_run() does in C."""
    sizes = [(int(np.prod(shape, dtype=np.float64)) * 4, s.name) for s, shape in shapes]
    total = sum(n for n, _ in sizes)
    avail = _lib.ladder_memory_available()
    if sizes and avail >= 0 and total > avail:
        largest, name = max(sizes)
        raise LadderError(_ERR_NOMEM, f"the outputs of this {a.name} problem need {total / 1e9:.3g} GB ({name} alone "
                                      f"{largest / 1e9:.3g} GB) but this machine has {avail / 1e9:.3g} GB available: "
                                      f"check the sizes (and how many sequences cu_seqlens holds)")


# ---- ALGO_fwd and ALGO_bwd for every algorithm, from its descriptor ---------------------------------------------

def _make_pass(a, pass_):
    inputs = a.inputs(pass_)
    positional = [s.name for s in inputs if not s.role & _OPTIONAL]
    optional = [s.name for s in inputs if s.role & _OPTIONAL]
    options = [p for p in a.params if not p.is_size]
    result_types = {}

    def call(*tensors, rung="cpu", want=(), frozen=(), **kwargs):
        if len(tensors) > len(positional):
            raise TypeError(f"{a.name}_{pass_} takes {len(positional)} tensors by position ({', '.join(positional)}), "
                            f"not {len(tensors)}")
        for name, x in zip(positional, tensors):
            if name in kwargs:
                raise TypeError(f"{a.name}_{pass_} got {name} twice")
            kwargs[name] = x
        out = run(a.name, pass_, rung, want=want, frozen=frozen, **kwargs)
        names = tuple(out)
        if names not in result_types:
            result_types[names] = collections.namedtuple(f"{a.name}_{pass_}_outputs", names)
        return result_types[names](**out)

    call.__name__ = call.__qualname__ = f"{a.name}_{pass_}"
    lines = [f"{a.name} {'forward' if pass_ == 'fwd' else 'backward'}: {a.summary}", "",
             f"{a.name}_{pass_}({', '.join(positional)}, *, rung='cpu', ...) -> "
             f"({', '.join(s.name for s in a.outputs(pass_))})",
             "", "Tensors by position (shapes as dimension names; the sizes come from them):"]
    lines += [f"  {s.name} [{','.join(s.dims)}]" for s in inputs if not s.role & _OPTIONAL]
    if optional:
        lines += ["Optional tensors by keyword:"] + [f"  {s.name}= [{','.join(s.dims)}]" for s in inputs
                                                     if s.role & _OPTIONAL]
    if options:
        lines += ["Options by keyword (default: the neutral value):"]
        lines += [f"  {p.name}={p.neutral:g}  {p.help} ({p.lo:g}..{p.hi:g})" for p in options]
    freezable = [s.grad_of for s in a.outputs(pass_) if s.role & _FREEZABLE]
    if freezable:
        lines += [f"frozen=(names): inputs read without their gradient (of {', '.join(freezable)})"]
    lines += ["Outputs, a named tuple (optional ones when their input is given and not frozen, or named in want=):"]
    lines += [f"  {s.name} [{','.join(s.dims)}]" for s in a.outputs(pass_)]
    lines += ["", "Arrays, rungs and errors: see help(ladder)."]
    call.__doc__ = "\n".join(lines)
    return call


for _a in _ALGOS.values():
    for _pass in _PASSES:
        globals()[f"{_a.name}_{_pass}"] = _make_pass(_a, _pass)
        __all__.append(f"{_a.name}_{_pass}")
