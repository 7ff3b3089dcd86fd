#!/usr/bin/env python3
"""What limits the memory-bound kernels at mid-sized shapes (4096x4096 bf16, ~64 MB moved):
times device-to-device copies of the same byte counts and the fused kernels under several
timing methods, on this machine's GPU.

  python3 kernels/bench/probe_small.py --lib /tmp/kb/libmlsem_kernels.so [--out FILE]

Methods (each a median over many launches):
  do_bench    triton.testing.do_bench as bench.py uses it: the L2 is flushed by zeroing a
              256 MB buffer before each launch (so it holds dirty lines), one launch timed
  clean       the L2 is flushed by reading a 256 MB buffer (clean lines only), one launch timed
  warm1       no flush; launches rotate over enough buffer sets that none is in L2 at its
              turn, events around each single launch
  graph       CUDA graph of 64 launches rotating over the buffer sets; time per launch
Copies: torch's copy_ (cudaMemcpyAsync), and copy kernels (NVRTC through CuPy) with one
block per chunk of `threads x unroll` 16-byte packs (chunk) or a grid of `waves` blocks per
SM walking the data (persistent).
"""
import argparse
import ctypes
import json
import math
import sys
from pathlib import Path

import cupy
import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import Library  # noqa: E402

MB = 1 << 20
SRC = r"""
extern "C" __global__ void copy_chunk_U(const uint4* __restrict__ x, uint4* __restrict__ y, long long n) {
  long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  uint4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) { long long i = base + (long long)u * blockDim.x; if (i < n) v[u] = x[i]; }
#pragma unroll
  for (int u = 0; u < U; ++u) { long long i = base + (long long)u * blockDim.x; if (i < n) y[i] = v[u]; }
}
extern "C" __global__ void copy2_chunk_U(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                         uint4* __restrict__ y, long long n) {
  long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x;
  uint4 v[U], w[U];
#pragma unroll
  for (int u = 0; u < U; ++u) { long long i = base + (long long)u * blockDim.x; if (i < n) { v[u] = a[i]; w[u] = b[i]; } }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    long long i = base + (long long)u * blockDim.x;
    if (i < n) y[i] = make_uint4(v[u].x ^ w[u].x, v[u].y ^ w[u].y, v[u].z ^ w[u].z, v[u].w ^ w[u].w);
  }
}
extern "C" __global__ void copy_persist_U(const uint4* __restrict__ x, uint4* __restrict__ y, long long n) {
  for (long long base = (long long)blockIdx.x * blockDim.x * U + threadIdx.x; base < n;
       base += (long long)gridDim.x * blockDim.x * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) { long long i = base + (long long)u * blockDim.x; if (i < n) v[u] = x[i]; }
#pragma unroll
    for (int u = 0; u < U; ++u) { long long i = base + (long long)u * blockDim.x; if (i < n) y[i] = v[u]; }
  }
}
extern "C" __global__ void empty_kernel(int* p) { if (p && threadIdx.x == 9999) *p = 0; }
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kernels-only", action="store_true", help="the fused kernels (no compile, no rope) and the 1 GB copy")
    ap.add_argument("--only", default=None, help="only the rows whose name starts so (comma-separated prefixes; the torch copies always)")
    args = ap.parse_args()
    lib = Library(args.lib)
    dev = "cuda"
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}: {sms} SMs, L2 {props.L2_cache_size / MB:.0f} MB", flush=True)
    mods = {}

    def kern(name, unroll):
        key = (name, unroll)
        if key not in mods:
            mod = cupy.RawModule(code="#define U %d\n" % unroll + SRC.replace("_U(", "(" ), options=("-std=c++17",),
                                 name_expressions=None)
            mods[key] = mod.get_function(name)
        return mods[key]

    def cp(t):
        return cupy.asarray(t.view(torch.uint8))

    def on_stream(launch):
        def run():
            with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                launch()
        return run

    flush_w = torch.empty(256 * MB, dtype=torch.uint8, device=dev)
    flush_r = torch.ones(64 * MB, dtype=torch.float32, device=dev)  # 256 MB

    def t_do_bench(fns):
        return do_bench(fns[0], warmup=25, rep=100, return_mode="median")

    def t_single(fns, flush, n=200):
        for f in fns:
            f()
        times = []
        for i in range(n):
            if flush == "read":
                flush_r.amax()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fns[i % len(fns)]()
            e.record()
            times.append((s, e))
        torch.cuda.synchronize()
        ts = sorted(s.elapsed_time(e) for s, e in times)
        return ts[len(ts) // 2]

    def t_graph(fns, launches=64, replays=20):
        g = torch.cuda.CUDAGraph()
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for f in fns:
                f()
        torch.cuda.current_stream().wait_stream(st)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for i in range(launches):
                fns[i % len(fns)]()
        g.replay()
        torch.cuda.synchronize()
        out = []
        for _ in range(replays):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e) / launches)
        out.sort()
        return out[len(out) // 2]

    def measure(fns):
        return {"do_bench": t_do_bench(fns), "clean": t_single(fns, "read"), "warm1": t_single(fns, None),
                "graph": t_graph(fns)}

    def sets_for(nbytes):
        return max(2, math.ceil(768 * MB / nbytes))

    rows = []

    def record(what, traffic, res, extra=None):
        if callable(res):  # measured only when wanted
            if args.only and traffic and not what.startswith(tuple(args.only.split(",") + ["torch copy_"])):
                return
            res = res()
        r = {"what": what, "traffic_mb": round(traffic / MB, 2)}
        for k, ms in res.items():
            r[k + "_ms"] = round(ms, 5)
            r[k + "_gbps"] = round(traffic / ms / 1e6, 1)
        r.update(extra or {})
        rows.append(r)
        print(what, f"{traffic / MB:.0f}MB", " ".join(f"{k} {ms * 1000:.2f}us {traffic / ms / 1e6:.0f}GB/s"
                                                         for k, ms in res.items()), flush=True)

    # -- fixed costs: an empty kernel under each method
    ek = kern("empty_kernel", 1)
    record("empty kernel", 0, measure([on_stream(lambda: ek((1,), (32,), (cupy.uint64(0),)))]))
    ek2 = kern("empty_kernel", 1)
    record("empty kernel 2048 blocks", 0, measure([on_stream(lambda: ek2((2048,), (256,), (cupy.uint64(0),)))]))

    # -- copies: traffic (read + write) in MB
    copy_traffic = [64, 96, 128, 512, 2048] if not args.quick else [64, 512, 2048]
    if args.kernels_only:
        copy_traffic = [2048]
    for traffic_mb in copy_traffic:
        nbytes = traffic_mb * MB // 2
        k = sets_for(traffic_mb * MB)
        src = [torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev) for _ in range(k)]
        dst = [torch.empty_like(s) for s in src]
        fns = [lambda s=s, d=d: d.copy_(s) for s, d in zip(src, dst)]
        record("torch copy_", traffic_mb * MB, (lambda fns=fns: measure(fns)))
        n16 = nbytes // 16
        variants = [("chunk", u, t) for u in (1, 2, 4, 8) for t in (256,)] + [("chunk", 4, 128), ("chunk", 4, 512),
                                                                             ("chunk", 2, 1024)]
        variants += [("persist", 4, 256, w) for w in (1, 2, 4, 8)] + [("persist", 1, 1024, 2)]
        if args.kernels_only:
            variants = []
        elif traffic_mb > 128:
            variants = [("chunk", 1, 256), ("chunk", 4, 256), ("persist", 4, 256, 8)]
        for v in variants:
            kind, u, threads = v[:3]
            if kind == "chunk":
                f = kern("copy_chunk", u)
                grid = math.ceil(n16 / (threads * u))
            else:
                f = kern("copy_persist", u)
                grid = sms * v[3] * 256 // threads
            cps = [(cp(s), cp(d)) for s, d in zip(src, dst)]
            fns = [on_stream(lambda a=a, b=b, f=f, grid=grid, threads=threads:
                             f((grid,), (threads,), (a, b, cupy.int64(n16)))) for a, b in cps]
            name = f"copy kernel {kind} u{u} t{threads} grid {grid}" + (f" ({v[3]}/SM)" if kind == "persist" else "")
            record(name, traffic_mb * MB, (lambda fns=fns: measure(fns)))
        if traffic_mb == 96:  # two reads, one write, like gated_mlp
            n16b = traffic_mb * MB // 3 // 16
            a_ = [torch.empty(n16b * 16, dtype=torch.uint8, device=dev) for _ in range(k)]
            b_ = [torch.empty(n16b * 16, dtype=torch.uint8, device=dev) for _ in range(k)]
            y_ = [torch.empty(n16b * 16, dtype=torch.uint8, device=dev) for _ in range(k)]
            for u in (1, 2, 4):
                f = kern("copy2_chunk", u)
                grid = math.ceil(n16b / (256 * u))
                fns = [on_stream(lambda a=cp(a), b=cp(b), y=cp(y), f=f, grid=grid: f((grid,), (256,), (a, b, y, cupy.int64(n16b))))
                       for a, b, y in zip(a_, b_, y_)]
                record(f"2-read copy kernel chunk u{u} t256 grid {grid}", traffic_mb * MB, (lambda fns=fns: measure(fns)))
            del a_, b_, y_
        del src, dst
        torch.cuda.empty_cache()

    # -- the fused kernels
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)  # noqa: E731
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    bf = torch.bfloat16
    shapes2 = [(4096, 4096), (16384, 8192)]

    def rnd(*s):
        return torch.randn(*s, device=dev, dtype=torch.float32).to(bf)

    for (rows_, cols) in shapes2:
        n = rows_ * cols
        k = sets_for(4 * n)
        xs = [rnd(rows_, cols) for _ in range(k)]
        ys = [torch.empty_like(x) for x in xs]
        w, b = rnd(cols), rnd(cols)
        tr = 4 * n
        for mode in (1, 0):
            fns = [lambda x=x, y=y, mode=mode: lib.call("bias_gelu", "fused", ptr(x), ptr(b), ptr(y), rows_, cols, mode, 2, stream())
                   for x, y in zip(xs, ys)]
            record(f"bias_gelu {'tanh' if mode else 'erf'} {rows_}x{cols}", tr + 2 * cols, (lambda fns=fns: measure(fns)))
        fns = [lambda x=x, y=y: lib.call("softmax", "fused", ptr(x), ptr(y), rows_, cols, 2, stream()) for x, y in zip(xs, ys)]
        record(f"softmax {rows_}x{cols}", tr, (lambda fns=fns: measure(fns)))
        fns = [lambda x=x, y=y: lib.call("layernorm", "fused", ptr(x), ptr(w), ptr(b), ptr(y), rows_, cols, 1e-5, 2, stream())
               for x, y in zip(xs, ys)]
        record(f"layernorm {rows_}x{cols}", tr + 4 * cols, (lambda fns=fns: measure(fns)))
        fns = [lambda x=x, y=y: lib.call("rmsnorm", "fused", ptr(x), ptr(w), ptr(y), rows_, cols, 1e-6, 2, stream())
               for x, y in zip(xs, ys)]
        record(f"rmsnorm {rows_}x{cols}", tr + 2 * cols, (lambda fns=fns: measure(fns)))
        # torch.compile'd rmsnorm (Inductor), for the same methods
        def eager_rms(x, w, eps=1e-6):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w
        crms = torch.compile(eager_rms, dynamic=False)
        fns = [lambda x=x: crms(x, w) for x in xs]
        try:
            if args.kernels_only:
                raise RuntimeError("skipped")
            record(f"compile rmsnorm {rows_}x{cols}", tr + 2 * cols, (lambda fns=fns: measure(fns)))
        except Exception as e:  # graph capture of a compiled function may refuse
            print("compile rmsnorm:", type(e).__name__, e)
        del xs, ys
        torch.cuda.empty_cache()
        k = sets_for(6 * n)
        projs = [rnd(rows_, 2 * cols) for _ in range(k)]
        ys = [torch.empty(rows_, cols, device=dev, dtype=bf) for _ in range(k)]
        for act, name in ((0, "swiglu"), (1, "geglu")):
            fns = [lambda p=p, y=y, act=act: lib.call("gated_mlp", "fused", ptr(p), ptr(p[:, cols:]), 2 * cols, ptr(y), rows_, cols, act, 2, stream())
                   for p, y in zip(projs, ys)]
            record(f"gated_mlp {name} {rows_}x{cols}", 6 * n, (lambda fns=fns: measure(fns)))
        import torch.nn.functional as F

        def eager_swiglu(proj):
            g, u = proj.chunk(2, dim=-1)
            return F.silu(g) * u
        csw = torch.compile(eager_swiglu, dynamic=False)
        fns = [lambda p=p: csw(p) for p in projs]
        try:
            if args.kernels_only:
                raise RuntimeError("skipped")
            record(f"compile swiglu {rows_}x{cols}", 6 * n, (lambda fns=fns: measure(fns)))
        except Exception as e:
            print("compile swiglu:", type(e).__name__, e)
        del projs, ys
        torch.cuda.empty_cache()

    for tokens in (() if args.kernels_only else (8192, 32768)):
        heads, dim, seq = 32, 128, (1024 if tokens <= 8192 else 4096)
        n = tokens * heads * dim
        k = sets_for(4 * n)
        xs = [rnd(tokens, heads, dim) for _ in range(k)]
        ys = [torch.empty_like(x) for x in xs]
        cos32 = torch.rand(seq, dim // 2, device=dev)
        sin32 = torch.rand(seq, dim // 2, device=dev)
        fns = [lambda x=x, y=y: lib.call("rope", "fused", ptr(x), ptr(cos32), ptr(sin32), ptr(y), tokens, seq, heads, dim, 2, stream())
               for x, y in zip(xs, ys)]
        record(f"rope {tokens}x{heads}x{dim}", 4 * n, (lambda fns=fns: measure(fns)))
        del xs, ys
        torch.cuda.empty_cache()

    doc = {"device": torch.cuda.get_device_name(0), "sms": sms, "l2_mb": props.L2_cache_size / MB, "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    big = next(r for r in rows if r["what"] == "torch copy_" and r["traffic_mb"] == 2048)
    print(f"\nreference: torch copy_ 1 GB (2 GB moved): " + ", ".join(
        f"{m} {big[m + '_gbps']:.0f}" for m in ("do_bench", "clean", "warm1", "graph")) + " GB/s")
    print(f"{'what':<52}{'MB':>6}" + "".join(f"{m:>10}" for m in ("do_bench", "clean", "warm1", "graph")) +
          "   (% of the 1 GB copy under do_bench)")
    for r in rows:
        if r["traffic_mb"]:
            print(f"{r['what']:<52}{r['traffic_mb']:>6.0f}" + "".join(
                f"{100 * r[m + '_gbps'] / big['do_bench_gbps']:>9.0f}%" for m in ("do_bench", "clean", "warm1", "graph")))
        else:
            print(f"{r['what']:<52}{0:>6}" + "".join(f"{1000 * r[m + '_ms']:>8.2f}us" for m in ("do_bench", "clean", "warm1", "graph")))


if __name__ == "__main__":
    main()
