"""How the peers_*.py scripts time a call: as `ladder bench` times a kernel (chapter 0, "How performance is
reported"), the median of 20 CUDA-event timings after 3 untimed runs, with the L2 flushed before each timed run by
overwriting a buffer twice its size (the device's L2 as PyTorch reports it)."""
import torch

_FLUSH = []  # made on the first call, after the caller has chosen its device


def median_ms(fn, reps=20, warmup=3):
    if not _FLUSH:
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 50 * 2**20
        _FLUSH.append(torch.empty(2 * l2, dtype=torch.uint8, device="cuda"))
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        _FLUSH[0].zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return sorted(times)[reps // 2]
