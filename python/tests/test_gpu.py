"""The Python module at every GPU rung, with CUDA PyTorch tensors passed without copies: flash against
torch.nn.functional.scaled_dot_product_attention (forward, lse) and against autograd's gradients of it, every
algorithm against the cpu rung, the caller's stream, and what a GPU rung refuses. Skipped, with one line saying why,
where PyTorch, a CUDA GPU or ladder's GPU rungs are missing."""

import numpy as np
import pytest

import ladder

torch = pytest.importorskip("torch", reason="PyTorch is not installed, so the GPU rungs are not tested from Python")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU here, so the GPU rungs are not tested from Python", allow_module_level=True)
if not ladder.available("gpu_naive"):
    pytest.skip("libladder.so cannot run its GPU rungs here (built without nvcc?)", allow_module_level=True)

from test_cpu import random_inputs, rel_l2  # noqa: E402  (after the skips: they need only NumPy)

F = torch.nn.functional
DEV = "cuda:0"
# (rung, dtype, relative L2 tolerance against float64 on the same rounded inputs): ladder's tolerances per precision
# (common/compare.h), doubled for the distance to float64 rather than to the cpu rung
PRECISIONS = [("gpu_naive", torch.float32, 2e-5), ("gpu_tiled", torch.float32, 2e-5),
              ("gpu_tensorcore", torch.bfloat16, 2e-2), ("gpu_tensorcore", torch.float16, 4e-3)]
# memeff's tensor-core rung takes float32 too: three TF32 products (fp32's tolerance), or one with allow_tf32
# (LADDER_TOL_TF32), each doubled as above; the last field is allow_tf32
MEMEFF_PRECISIONS = [p + (0,) for p in PRECISIONS] + [("gpu_tensorcore", torch.float32, 2e-5, 0),
                                                      ("gpu_tensorcore", torch.float32, 4e-3, 1)]


def err(got, want):
    return rel_l2(got.double().cpu().numpy(), want.double().cpu().numpy())


@pytest.fixture(autouse=True)
def exact_torch_reference():
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # the float64 reference does not need it, but leave nothing on
    yield
    torch.backends.cuda.matmul.allow_tf32 = tf32


@pytest.mark.parametrize("rung,dtype,tol", PRECISIONS, ids=lambda x: str(x).replace("torch.", ""))
@pytest.mark.parametrize("causal,sq,sk", [(0, 77, 130), (2, 130, 77), (2, 64, 64)])
def test_flash_against_sdpa_and_autograd(rung, dtype, tol, causal, sq, sk):
    g = torch.Generator(device=DEV).manual_seed(sq * 1000 + sk + causal)
    B, Hq, Hkv, D = 2, 4, 2, 64
    q = torch.randn(B, Hq, sq, D, device=DEV, generator=g).to(dtype)
    k = torch.randn(B, Hkv, sk, D, device=DEV, generator=g).to(dtype)
    v = torch.randn(B, Hkv, sk, D, device=DEV, generator=g).to(dtype)
    do = torch.randn(B, Hq, sq, D, device=DEV, generator=g).to(dtype)
    # causal=2 is ladder's top-left diagonal, the one torch's is_causal takes
    o, lse = ladder.flash_fwd(q, k, v, causal=causal, rung=rung)
    dq, dk, dv = ladder.flash_bwd(q, k, v, o, lse, do, causal=causal, rung=rung)
    assert o.dtype == dtype and o.device == q.device and lse.dtype == torch.float32

    # the reference: SDPA in float64 on the same (rounded) inputs, GQA by repeating k and v, autograd for the rest
    q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
    rep = Hq // Hkv
    kr, vr = k64.repeat_interleave(rep, 1), v64.repeat_interleave(rep, 1)
    want_o = F.scaled_dot_product_attention(q64, kr, vr, is_causal=bool(causal))
    want_o.backward(do.double())
    s = q64.detach() @ kr.detach().transpose(-1, -2) / D**0.5
    if causal:
        s = s.masked_fill(torch.ones(sq, sk, device=DEV, dtype=torch.bool).triu(1), float("-inf"))
    want_lse = torch.logsumexp(s, -1)
    for name, got, want in (("o", o, want_o.detach()), ("lse", lse, want_lse), ("dq", dq, q64.grad),
                            ("dk", dk, k64.grad), ("dv", dv, v64.grad)):
        assert err(got, want) < tol, f"{rung} {dtype} {name}: relative L2 error {err(got, want):.2e} > {tol}"


@pytest.mark.parametrize("rung,dtype,tol,allow_tf32", MEMEFF_PRECISIONS, ids=lambda x: str(x).replace("torch.", ""))
def test_memeff_bias_against_sdpa_and_autograd(rung, dtype, tol, allow_tf32):
    if "memeff" not in ladder.algorithms():
        pytest.skip("no memeff in this build")
    g = torch.Generator(device=DEV).manual_seed(5)
    B, Hq, Hkv, sq, sk, D = 2, 4, 2, 70, 90, 64
    q = torch.randn(B, Hq, sq, D, device=DEV, generator=g).to(dtype)
    k = torch.randn(B, Hkv, sk, D, device=DEV, generator=g).to(dtype)
    v = torch.randn(B, Hkv, sk, D, device=DEV, generator=g).to(dtype)
    bias = torch.randn(1, Hq, 1, sk, device=DEV, generator=g).to(dtype)  # broadcast over batch and queries
    do = torch.randn(B, Hq, sq, D, device=DEV, generator=g).to(dtype)
    try:
        o, lse = ladder.memeff_fwd(q, k, v, bias=bias, rung=rung, allow_tf32=allow_tf32)
    except ladder.LadderError as e:
        if e.status != "LADDER_ERR_UNAVAILABLE":
            raise
        pytest.skip(f"memeff at {rung}: {e.message}")
    grads = ladder.memeff_bwd(q, k, v, o, lse, do, bias=bias, rung=rung, allow_tf32=allow_tf32)
    assert grads.dbias.shape == bias.shape
    q64, k64, v64, b64 = (x.double().requires_grad_() for x in (q, k, v, bias))
    rep = Hq // Hkv
    want_o = F.scaled_dot_product_attention(q64, k64.repeat_interleave(rep, 1), v64.repeat_interleave(rep, 1),
                                            attn_mask=b64)
    want_o.backward(do.double())
    for name, got, want in (("o", o, want_o.detach()), ("dq", grads.dq, q64.grad), ("dk", grads.dk, k64.grad),
                            ("dv", grads.dv, v64.grad), ("dbias", grads.dbias, b64.grad)):
        assert err(got, want) < tol, (f"memeff {rung} {dtype} allow_tf32={allow_tf32} {name}: relative L2 error "
                                      f"{err(got, want):.2e} > {tol}")


@pytest.mark.parametrize("rung,dtype,tol", PRECISIONS, ids=lambda x: str(x).replace("torch.", ""))
@pytest.mark.parametrize("algo", ladder.algorithms())
def test_every_algorithm_against_the_cpu_rung(algo, rung, dtype, tol):
    a = ladder._ALGOS[algo]
    inputs = random_inputs(algo, "fwd", seed=11)
    rounded = {n: x if a.tensor[n].role & ladder._KEEP_F32 else torch.from_numpy(x).to(dtype).float().numpy()
               for n, x in inputs.items()}
    want = ladder.run(algo, "fwd", **rounded)
    on_gpu = {n: torch.from_numpy(x).to(DEV, torch.float32 if a.tensor[n].role & ladder._KEEP_F32 else dtype)
              for n, x in rounded.items()}
    try:
        got = ladder.run(algo, "fwd", rung=rung, **on_gpu)
    except ladder.LadderError as e:
        if e.status not in ("LADDER_ERR_UNSUPPORTED", "LADDER_ERR_UNAVAILABLE"):
            raise
        pytest.skip(f"{algo} at {rung}: {e.message}")  # a documented refusal, or a rung the algorithm has not yet
    assert set(got) == set(want)
    for name in want:
        e = rel_l2(got[name].double().cpu().numpy(), want[name].astype(np.float64))
        assert e < 2 * tol, f"{algo} {rung} {dtype} {name}: relative L2 error {e:.2e} against the cpu rung"


def test_strided_views_are_read_in_place_on_the_callers_stream():
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # inputs written on a side stream: the call must wait for them
        big = torch.randn(2, 4, 70, 64 * 2, device=DEV)
        q = big[..., ::2]  # every other element: a last stride of 2, passed as it is
        k = torch.randn(2, 64, 2, 90, device=DEV).permute(0, 2, 3, 1)  # [B,Hkv,Sk,D] with transposed strides
        v = torch.randn(2, 2, 90, 64, device=DEV)
        got = ladder.flash_fwd(q, k, v, rung="gpu_tiled").o
        want = ladder.flash_fwd(q.contiguous(), k.contiguous(), v, rung="gpu_tiled").o
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    ref = ladder.flash_fwd(q.cpu(), k.cpu(), v.cpu()).o
    assert err(got, ref) < 1e-5


def expect(status, fn, *args, **kwargs):
    with pytest.raises(ladder.LadderError) as e:
        fn(*args, **kwargs)
    assert e.value.status == status, str(e.value)


def test_what_a_gpu_rung_refuses():
    q = torch.randn(1, 2, 8, 64, device=DEV)
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q.cpu().numpy(), q.cpu().numpy(), q.cpu().numpy(), rung="gpu_tiled")
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q.cpu(), q.cpu(), q.cpu(), rung="gpu_tiled")
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q, q, q)  # CUDA tensors at the cpu rung
    expect("LADDER_ERR_UNSUPPORTED", ladder.flash_fwd, q.half(), q.half(), q.half(), rung="gpu_tiled")
    expect("LADDER_ERR_UNSUPPORTED", ladder.flash_fwd, q, q, q, rung="gpu_tensorcore")  # float32 there
    expect("LADDER_ERR_UNSUPPORTED", ladder.flash_fwd, q.bfloat16(), q.half(), q.half(), rung="gpu_tensorcore")
    expect("LADDER_ERR_SHAPE", ladder.flash_fwd, q, q[:, :, :4], q, rung="gpu_tiled")
    cu = torch.tensor([0, 8], device=DEV)  # int64: GPU rungs convert nothing
    expect("LADDER_ERR_UNSUPPORTED", ladder.flash_fwd, q[:1], q[:1], q[:1], cu_seqlens_q=cu, cu_seqlens_k=cu,
           rung="gpu_tiled")
    cu = torch.tensor([0, 5], device=DEV, dtype=torch.int32)  # ends at 5, not Sq = 8: read back and refused
    expect("LADDER_ERR_ARG", ladder.flash_fwd, q[:1], q[:1], q[:1], cu_seqlens_q=cu, cu_seqlens_k=cu,
           rung="gpu_tiled")
