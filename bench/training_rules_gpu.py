"""What the training rules claim, measured on a GPU (bench/README.md, "Training rules on a GPU").

Each case runs a loop written the way a rule reports it and the way its fix writes it,
side by side in one process, and prints milliseconds per step (median of repeats, host
clock after a synchronize at the end of each timed block) or peak memory:

- SYN001: a per-step `loss.item()` against reading the accumulated value once.
- PLC001: `torch.arange(n).cuda()` per step against `torch.arange(n, device=...)`.
- PLC002: a pinned batch copied with `.to(device)` against `non_blocking=True`.
- GRD001: an evaluation loop that keeps its outputs, with and without torch.no_grad().
- OPT001: one AdamW step, foreach (the default) against fused=True.

Two kinds of step: a launch-bound one (one 1024x1024 bf16 product and 40 small
element-wise kernels, the host's launches the bottleneck), and a "host work" one, where
each step also does some host-side work that does not need the GPU (a small NumPy
product, standing for collating a batch in the training process or Python bookkeeping)
beside about 0.9 ms of matrix products on the GPU: without a sync the two overlap, with
one per step they add up.
Usage: python bench/training_rules_gpu.py [OUT_JSON]
"""

import json
import statistics
import sys
import time

import torch

dev = torch.device("cuda")
torch.manual_seed(0)
STEPS, REPEATS = 200, 7


def per_step_ms(fn, steps=STEPS, repeats=REPEATS):
    fn(10)  # warm up
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(steps)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3 / steps)
    return statistics.median(times), min(times), max(times)


# A launch-bound step: one 1024x1024 bf16 product and 40 small element-wise kernels.
w = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)
x0 = torch.randn(1024, 1024, device=dev, dtype=torch.bfloat16)


def step(x):
    h = x @ w
    for _ in range(40):
        h = h * 0.999 + 0.001
    return h.float().mean()


# The host-work step: host work (a NumPy product) beside 4 products on the GPU.
import numpy as np

a_host = np.random.rand(160, 160)
w2 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
x2 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)


def host_work():
    return float((a_host @ a_host @ a_host).sum())


def step2(x):
    host_work()
    h = x
    for _ in range(4):
        h = (h @ w2) * 1e-2
    return h.float().mean()


def syn_item(steps):
    total = 0.0
    for _ in range(steps):
        total += step(x0).item()
    return total


def syn_deferred(steps):
    total = torch.zeros((), device=dev)
    for _ in range(steps):
        total += step(x0).detach()
    return total.item()


def plc_host(steps):
    acc = torch.zeros((), device=dev)
    for _ in range(steps):
        pos = torch.arange(1024).cuda()
        acc += step(x0) + pos.float().mean()
    return acc


def plc_device(steps):
    acc = torch.zeros((), device=dev)
    for _ in range(steps):
        pos = torch.arange(1024, device=dev)
        acc += step(x0) + pos.float().mean()
    return acc


batch_cpu = torch.randn(64, 3, 64, 64).pin_memory()


def plc2_blocking(steps):
    acc = torch.zeros((), device=dev)
    for _ in range(steps):
        b = batch_cpu.to(dev)
        acc += step(x0) + b.mean()
    return acc


def plc2_non_blocking(steps):
    acc = torch.zeros((), device=dev)
    for _ in range(steps):
        b = batch_cpu.to(dev, non_blocking=True)
        acc += step(x0) + b.mean()
    return acc


def hw(kind):
    def run(steps):
        acc = torch.zeros((), device=dev)
        total = 0.0
        for _ in range(steps):
            if kind == "item":
                total += step2(x2).item()
            elif kind == "host_arange":
                acc += step2(x2) + torch.arange(1024).cuda().float().mean()
            elif kind == "device_arange":
                acc += step2(x2) + torch.arange(1024, device=dev).float().mean()
            elif kind == "blocking":
                acc += step2(x2) + batch_cpu.to(dev).mean()
            elif kind == "non_blocking":
                acc += step2(x2) + batch_cpu.to(dev, non_blocking=True).mean()
            else:  # deferred: nothing waits
                acc += step2(x2).detach()
        return acc
    return run


def grd_memory(no_grad):
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.GELU()) for _ in range(8)]).to(dev)
    model.eval()
    batches = [torch.randn(512, 2048, device=dev) for _ in range(20)]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    outs = []
    t0 = time.perf_counter()
    ctx = torch.no_grad() if no_grad else torch.enable_grad()
    with ctx:
        for b in batches:
            outs.append(model(b)[:, :10])  # a slice of the logits, as a metric would keep
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / len(batches)
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    del outs, model, batches
    torch.cuda.empty_cache()
    return peak, ms


def opt_step_ms(fused):
    params = [torch.randn(1024, 1024, device=dev, requires_grad=True) for _ in range(100)]  # 105M parameters
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-4, fused=fused) if fused else torch.optim.AdamW(params, lr=1e-4)

    def run(steps):
        for _ in range(steps):
            opt.step()

    result = per_step_ms(run, steps=20, repeats=7)
    del opt, params
    torch.cuda.empty_cache()
    return result


def main():
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    results["SYN001 item per step"] = per_step_ms(syn_item)
    results["SYN001 deferred"] = per_step_ms(syn_deferred)
    results["PLC001 host arange .cuda()"] = per_step_ms(plc_host)
    results["PLC001 device arange"] = per_step_ms(plc_device)
    results["PLC002 pinned .to(device)"] = per_step_ms(plc2_blocking)
    results["PLC002 pinned non_blocking"] = per_step_ms(plc2_non_blocking)
    t0 = time.perf_counter()
    for _ in range(50):
        host_work()
    results["host work alone (ms)"] = ((time.perf_counter() - t0) * 1e3 / 50,)
    gpu = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    h = x2
    gpu[0].record()
    for _ in range(20):
        for _ in range(4):
            h = (h @ w2) * 1e-2
    gpu[1].record()
    torch.cuda.synchronize()
    results["GPU work alone (ms)"] = (gpu[0].elapsed_time(gpu[1]) / 20,)
    for kind in ["deferred", "item", "host_arange", "device_arange", "blocking", "non_blocking"]:
        results[f"host-work step: {kind}"] = per_step_ms(hw(kind), steps=100)
    results["GRD001 grad on (MiB, ms/batch)"] = grd_memory(False)
    results["GRD001 no_grad (MiB, ms/batch)"] = grd_memory(True)
    results["OPT001 AdamW foreach"] = opt_step_ms(False)
    results["OPT001 AdamW fused"] = opt_step_ms(True)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(results, f, indent=1)
    print(f"{results['device']}, torch {results['torch']}")
    for k, v in results.items():
        if isinstance(v, (list, tuple)):
            print(f"{k:34s} " + "  ".join(f"{x:9.3f}" for x in v))


if __name__ == "__main__":
    main()
