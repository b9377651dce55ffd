"""The Python module at the cpu rung, with NumPy: the same outputs as `ladder run --in` (the cpu rung through the
command line), the float64 reference of each algorithm's math, any strides and dtypes, and every error raised as a
LadderError with the library's status. Needs NumPy only (tools/install-deps.sh test installs it)."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

import ladder

ROOT = pathlib.Path(__file__).resolve().parents[2]
LADDER_BIN = os.environ.get("LADDER_BIN", str(ROOT / "build" / "bin" / "ladder"))

# Small sizes per algorithm, by param name: the only thing the tests know of each algorithm. An algorithm missing
# here is tested at sizes of 3 (1 for the head counts that must divide each other).
SIZES = {
    "dynconv": dict(B=2, T=19, D=5, W=4),
    "recurrent": dict(B=2, T=11, H=3, K=8, V=6, N=2),  # N: the sequences, B without cu_seqlens
    "flash": dict(B=2, Hq=4, Hkv=2, Sq=13, Sk=17, D=16, Dv=8),
    "flex": dict(B=2, Hq=4, Hkv=2, Sq=13, Sk=17, D=16, Dv=8, R=29, num_buckets=8),  # R = Sq + Sk - 1 (rel_bias)
}


def sizes_of(name):
    return SIZES.get(name, {})


def dims_shape(spec_dims, sizes):
    return tuple(sizes.get(d, 3) for d in spec_dims)


def random_inputs(algo, pass_, seed=0, with_optional=False):
    """Seeded inputs of `algo` for `pass_`, as float32 NumPy arrays, by name (the descriptor's shapes)."""
    a = ladder._ALGOS[algo]
    sizes = sizes_of(algo)
    rng = np.random.default_rng(seed)
    out = {}
    for s in a.inputs(pass_):
        if s.role & ladder._INDEX or (s.role & ladder._OPTIONAL and not with_optional):
            continue
        if s.role & ladder._OUT_FWD:
            continue  # a forward output the backward reads: made by the forward below
        x = rng.standard_normal(dims_shape(s.dims, sizes)).astype(np.float32)
        if s.name.startswith("g"):  # gates are in log space, <= 0
            x = -np.abs(x) * 0.1
        out[s.name] = x
    return out


def run_both(algo, seed=0, with_optional=False):
    """Forward, then backward (with the forward outputs it reads), through the module; inputs and outputs by name."""
    a = ladder._ALGOS[algo]
    fwd_in = random_inputs(algo, "fwd", seed, with_optional)
    fwd = ladder.run(algo, "fwd", **fwd_in)
    bwd_in = dict(fwd_in)
    rng = np.random.default_rng(seed + 1)
    for s in a.inputs("bwd"):
        if s.role & ladder._READ_BY_BWD:
            bwd_in[s.name] = fwd[s.name]
        elif s.role & ladder._IN_BWD and not s.role & ladder._OPTIONAL:
            bwd_in[s.name] = rng.standard_normal(fwd[s.grad_of].shape).astype(np.float32)
    bwd = ladder.run(algo, "bwd", **bwd_in)
    return bwd_in, {**fwd, **bwd}


@pytest.mark.parametrize("with_optional", [False, True], ids=["required", "optional"])
@pytest.mark.parametrize("algo", ladder.algorithms())
def test_the_same_outputs_as_ladder_run_in(algo, with_optional, tmp_path):
    if not os.access(LADDER_BIN, os.X_OK):
        pytest.skip(f"{LADDER_BIN} is not built")
    inputs, outputs = run_both(algo, with_optional=with_optional)
    for name, x in inputs.items():
        if not ladder._ALGOS[algo].tensor[name].role & ladder._OUT_FWD:
            np.save(tmp_path / f"{name}.npy", x)
    done = subprocess.run([LADDER_BIN, "run", algo, "--in", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for name, got in outputs.items():
        want = np.load(tmp_path / f"{name}.npy")
        assert got.dtype == np.float32 and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want, err_msg=f"{algo} {name}: the module and ladder run --in differ")


def rel_l2(got, want):
    return np.linalg.norm(np.asarray(got, np.float64) - want) / max(np.linalg.norm(want), 1e-300)


def flash_reference(q, k, v, do, causal):
    """Softmax attention in float64, bottom-right causal as FlashAttention-2 aligns it, with its gradients."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    scale = 1 / np.sqrt(q.shape[-1])
    s = scale * q @ k.transpose(0, 1, 3, 2)
    sq, sk = s.shape[-2:]
    if causal:
        keep = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + sk - sq
        s = np.where(keep, s, -np.inf)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1)
    p = np.exp(s - lse[..., None])
    o = p @ v
    dp = do @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    dq = scale * ds @ k
    dk = scale * ds.transpose(0, 1, 3, 2) @ q
    dv = p.transpose(0, 1, 3, 2) @ do
    fold = lambda g: g.reshape(g.shape[0], -1, rep, *g.shape[2:]).sum(2)  # GQA: sum over the heads that share
    return o, lse, dq, fold(dk), fold(dv)


@pytest.mark.parametrize("causal", [0, 1])
def test_flash_against_a_float64_reference(causal):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 13, 16)).astype(np.float32)
    k = rng.standard_normal((2, 2, 17, 16)).astype(np.float32)
    v = rng.standard_normal((2, 2, 17, 8)).astype(np.float32)
    do = rng.standard_normal((2, 4, 13, 8)).astype(np.float32)
    o, lse = ladder.flash_fwd(q, k, v, causal=causal)
    dq, dk, dv = ladder.flash_bwd(q, k, v, o, lse, do, causal=causal)
    want = flash_reference(q, k, v, do, causal)
    for name, got, ref in zip(("o", "lse", "dq", "dk", "dv"), (o, lse, dq, dk, dv), want):
        assert rel_l2(got, ref) < 1e-5, f"{name}: relative L2 error {rel_l2(got, ref):.2e}"


def test_flex_mods_by_name_and_the_slopes_gradient():
    """flex with score_mod="alibi" and mask_mod="causal" by name; dslopes against a float64 reference."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 13, 16)).astype(np.float32)
    k = rng.standard_normal((2, 2, 17, 16)).astype(np.float32)
    v = rng.standard_normal((2, 2, 17, 8)).astype(np.float32)
    do = rng.standard_normal((2, 4, 13, 8)).astype(np.float32)
    slopes = (0.2 * rng.standard_normal(4)).astype(np.float32)
    mods = dict(score_mod="alibi", mask_mod="causal")
    o, lse = ladder.flex_fwd(q, k, v, slopes=slopes, **mods)
    dq, dk, dv, dslopes = ladder.flex_bwd(q, k, v, o, lse, do, slopes=slopes, **mods)
    i, j = np.arange(13)[:, None], np.arange(17)[None, :]
    rel = (j - i).astype(np.float64)
    rep = 2
    kk, vv = np.repeat(k.astype(np.float64), rep, 1), np.repeat(v.astype(np.float64), rep, 1)
    s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) / 4.0 + slopes[None, :, None, None] * rel
    s = np.where(i >= j, s, -np.inf)
    p = np.exp(s - (np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1)) + s.max(-1))[..., None])
    want_o = p @ vv
    ds = p * (do @ vv.transpose(0, 1, 3, 2) - (do * want_o).sum(-1, keepdims=True))
    want = (ds * rel).sum((0, 2, 3))
    assert rel_l2(o, want_o) < 1e-5
    assert rel_l2(dslopes, want) < 1e-4, f"dslopes: relative L2 error {rel_l2(dslopes, want):.2e}"
    with pytest.raises(ladder.LadderError, match="'alibbi' is not registered"):
        ladder.flex_fwd(q, k, v, slopes=slopes, score_mod="alibbi")
    # frozen slopes: read as before, no dslopes, and the other gradients bit for bit the same
    frozen = ladder.flex_bwd(q, k, v, o, lse, do, slopes=slopes, frozen="slopes", **mods)
    assert frozen._fields == ("dq", "dk", "dv")
    for got, ref in zip(frozen, (dq, dk, dv)):
        assert np.array_equal(got, ref)
    with pytest.raises(ladder.LadderError, match="frozen: 'q' is not an input of flex"):
        ladder.flex_bwd(q, k, v, o, lse, do, slopes=slopes, frozen=("q",), **mods)


def test_dynconv_against_a_float64_reference():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 19, 5)).astype(np.float32)
    kern = rng.standard_normal((2, 19, 5, 4)).astype(np.float32)
    (out,) = ladder.dynconv_fwd(x, kern)
    W, T = kern.shape[-1], x.shape[1]
    want = np.zeros(x.shape)
    for w in range(W):  # out[b,t,d] = sum_w K[b,t,d,w] * x[b, t+w-W+1, d], zero before the sequence starts
        src = np.arange(T) + w - W + 1
        ok = src >= 0
        want[:, ok] += kern[..., w][:, ok] * x[:, src[ok]]
    assert rel_l2(out, want) < 1e-6


def test_recurrent_against_a_float64_reference():
    rng = np.random.default_rng(5)
    B, T, H, K, V = 2, 11, 3, 8, 6
    q, k = (rng.standard_normal((B, T, H, K)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal((B, T, H, V)).astype(np.float32)
    g = (-np.abs(rng.standard_normal((B, T, H))) * 0.2).astype(np.float32)
    o, ht = ladder.recurrent_fwd(q, k, v, g=g, want=("ht",))
    h = np.zeros((B, H, K, V))
    want = np.zeros((B, T, H, V))
    for t in range(T):  # h_t = h_{t-1} * exp(g_t) + k_t v_t^T, o_t = scale * h_t^T q_t
        h = h * np.exp(g[:, t])[..., None, None] + k[:, t, :, :, None].astype(np.float64) * v[:, t, :, None, :]
        want[:, t] = np.einsum("bhkv,bhk->bhv", h, q[:, t]) / np.sqrt(K)
    assert rel_l2(o, want) < 1e-5
    assert rel_l2(ht, h) < 1e-5


def test_any_strides_and_the_documented_conversions():
    rng = np.random.default_rng(6)
    base = rng.standard_normal((2, 4, 16, 13)).astype(np.float32)
    q = base.transpose(0, 1, 3, 2)  # a last stride that is not 1
    k = rng.standard_normal((2, 2, 20, 16)).astype(np.float32)[:, :, 1:18]  # a slice
    v = rng.standard_normal((2, 2, 17, 8)).astype(np.float32)
    want = ladder.flash_fwd(np.ascontiguousarray(q), np.ascontiguousarray(k), v).o
    np.testing.assert_array_equal(ladder.flash_fwd(q, k, v).o, want)
    np.testing.assert_array_equal(ladder.flash_fwd(q, k, v[:, :, ::-1][:, :, ::-1]).o, want)  # negative strides
    # float16 is widened exactly; float64 is rounded to the nearest float32, as astype does
    q16 = q.astype(np.float16)
    np.testing.assert_array_equal(ladder.flash_fwd(q16, k, v).o, ladder.flash_fwd(q16.astype(np.float32), k, v).o)
    q64 = q.astype(np.float64) + 1e-9
    np.testing.assert_array_equal(ladder.flash_fwd(q64, k, v).o, ladder.flash_fwd(q64.astype(np.float32), k, v).o)


def test_packed_sequences_are_independent_runs():
    rng = np.random.default_rng(7)
    lq, lk = [5, 0, 7], [6, 3, 9]
    q = rng.standard_normal((1, 2, sum(lq), 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, sum(lk), 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, sum(lk), 8)).astype(np.float32)
    cq, ck = np.cumsum([0] + lq), np.cumsum([0] + lk)  # int64: converted, checked to fit int32
    o = ladder.flash_fwd(q, k, v, cu_seqlens_q=cq, cu_seqlens_k=ck, causal=1).o
    for i in range(3):
        if lq[i] == 0:
            continue
        one = ladder.flash_fwd(q[:, :, cq[i]:cq[i + 1]], k[:, :, ck[i]:ck[i + 1]], v[:, :, ck[i]:ck[i + 1]], causal=1)
        np.testing.assert_allclose(o[:, :, cq[i]:cq[i + 1]], one.o, rtol=1e-6, atol=1e-6)


def expect(status, fn, *args, **kwargs):
    with pytest.raises(ladder.LadderError) as e:
        fn(*args, **kwargs)
    assert e.value.status == status, str(e.value)
    assert e.value.message
    return e.value


def test_failures_raise_the_librarys_status_and_message():
    rng = np.random.default_rng(8)
    q = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    err = expect("LADDER_ERR_SHAPE", ladder.flash_fwd, q, k, k[:, :, :5])
    assert "v has shape" in err.message
    expect("LADDER_ERR_SHAPE", ladder.flash_fwd, q[0], k, k)  # a rank the descriptor does not have
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q, k, k, causal=3)
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q, k, k, causal=0.5)
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q.astype(np.int32), k, k)
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q.tolist(), k, k)
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q[:1, :, :5], k[:1], k[:1], cu_seqlens_q=np.array([0, 3]),
           cu_seqlens_k=np.array([0, 6]))  # cu_seqlens_q ends at 3, not Sq = 5
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q, k, k, cu_seqlens_q=np.array([0, 2**40]),
           cu_seqlens_k=np.array([0, 6]))
    expect("LADDER_ERR_ARG", ladder.recurrent_fwd, q, k, k, scale=1e39)  # finite, but not as a float
    with pytest.raises(TypeError, match="comes from the tensors"):
        ladder.flash_fwd(q, k, k, Sq=5)
    with pytest.raises(TypeError, match="takes no argument"):
        ladder.flash_fwd(q, k, k, casual=1)
    with pytest.raises(TypeError, match="needs"):
        ladder.flash_fwd(q, k)
    if not ladder.available("gpu_tiled"):
        expect("LADDER_ERR_UNAVAILABLE", ladder.flash_fwd, q, k, k, rung="gpu_tiled")
    else:
        expect("LADDER_ERR_ARG", ladder.flash_fwd, q, k, k, rung="gpu_tiled")  # NumPy never reaches a GPU rung


def test_a_tiny_input_implying_a_huge_output_is_refused_before_allocating():
    q = np.ones((1, 1, 4096, 128), np.float32)  # 1,000 empty sequences, each with a 4096 x 128 x 128 state
    cu = np.zeros(1001, np.int32)
    cu[-1] = 1
    err = expect("LADDER_ERR_NOMEM", ladder.recurrent_fwd, q, q, q, cu_seqlens=cu, want=("ht",))
    assert "ht alone" in err.message


def test_a_broadcast_input_and_its_gradient():
    a = ladder._ALGOS.get("memeff")
    if a is None:
        pytest.skip("no algorithm with a broadcast input (memeff) in this build")
    rng = np.random.default_rng(10)
    q = rng.standard_normal((2, 4, 5, 8)).astype(np.float32)
    k, v = (rng.standard_normal((2, 2, 7, 8)).astype(np.float32) for _ in range(2))
    bias = rng.standard_normal((1, 4, 1, 7)).astype(np.float32)  # one row of key biases per head, for every query
    full = np.ascontiguousarray(np.broadcast_to(bias, (2, 4, 5, 7)))
    o, lse = ladder.memeff_fwd(q, k, v, bias=bias)
    np.testing.assert_allclose(o, ladder.memeff_fwd(q, k, v, bias=full).o, rtol=1e-6, atol=1e-7)
    do = rng.standard_normal(o.shape).astype(np.float32)
    g = ladder.memeff_bwd(q, k, v, o, lse, do, bias=bias)
    assert g.dbias.shape == bias.shape  # the gradient of a broadcast input has the input's shape
    g_full = ladder.memeff_bwd(q, k, v, o, lse, do, bias=full)
    np.testing.assert_allclose(g.dbias, g_full.dbias.sum(axis=(0, 2), keepdims=True), rtol=1e-5, atol=1e-6)


def test_torch_cpu_tensors_at_the_cpu_rung():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: its CPU tensors are not tested")
    inputs = random_inputs("flash", "fwd", seed=9)
    want = ladder.flash_fwd(**inputs, causal=1)
    got = ladder.flash_fwd(**{n: torch.from_numpy(x) for n, x in inputs.items()}, causal=1)
    assert isinstance(got.o, torch.Tensor)
    np.testing.assert_array_equal(got.o.numpy(), want.o)
