"""Which constructs break a torch.compile graph, as torch._dynamo.explain reports them.

Each case is a small function run through torch._dynamo.explain with the torch installed;
the script prints, per case, the number of graph breaks and their reasons, as one JSON
object per line. CMP001's patterns report what this measures as a break and leave alone
what it measures as traced (bench/audit/graph_breaks.md quotes the run).

Usage: python bench/graph_break_probe.py [OUT_JSONL]
"""

import json
import logging
import math
import sys
import time
import warnings

import numpy as np
import torch
import torch._dynamo

logger = logging.getLogger("probe")
dev = "cuda" if torch.cuda.is_available() else "cpu"


def c_item(x):
    y = x * 2
    s = y.sum().item()
    return y * s


def c_tolist(x):
    y = x * 2
    v = y.tolist()
    return y + len(v)


def c_numpy(x):
    y = x.cpu() * 2
    a = y.numpy()
    return torch.from_numpy(a) + 1


def c_cpu_numpy_cuda(x):
    y = x * 2
    a = y.detach().cpu().numpy()
    return y + float(a.sum())


def c_cpu(x):
    y = x * 2
    z = y.cpu()
    return z + 1


def c_print(x):
    y = x * 2
    print("y", y.shape)
    return y + 1


def c_np_sum_tensor(x):
    y = x * 2
    s = np.sum(y)
    return y + s


def c_np_sqrt_python(x):
    y = x * 2
    return y / np.sqrt(64)


def c_np_random(x):
    y = x * 2
    r = np.random.rand()
    return y * r


def c_if_sum(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def c_while_any(x):
    y = x * 2
    while (y > 100).any():
        y = y / 2
    return y + 1


def c_if_any_mask(x):
    m = x > 0
    if m.any():
        x = x + 1
    return x * 2


def c_if_isnan(x):
    y = x * 2
    if torch.isnan(y).any():
        y = torch.nan_to_num(y)
    return y + 1


def c_if_max(x):
    y = x * 2
    if y.max() > 1.0:
        y = y / y.max()
    return y + 1


def c_if_equal(x):
    y = x * 2
    if torch.equal(y, x):
        return y
    return y + 1


def c_if_shape(x):
    y = x * 2
    if x.shape[1] > 4:
        y = y + 1
    if x.dim() == 2:
        y = y * 3
    if x.numel() > 0 and x.size(0) == 8:
        y = y - 1
    return y


def c_float(x):
    y = x * 2
    f = float(y.mean())
    return y * f


def c_int_shape_arg(x):
    y = x * 2
    n = int(y.abs().max())
    return y + n


def c_bool(x):
    y = x * 2
    if bool(y.any()):
        return y
    return y + 1


def c_assert(x):
    y = x * 2
    assert (y >= -1000).all(), "bad"
    return y + 1


def c_nonzero(x):
    y = x * 2
    idx = y.nonzero()
    return idx.sum() + y.sum()


def c_mask_index(x):
    y = x * 2
    z = y[y > 0]
    return z.sum() + 1


def c_unique(x):
    y = (x * 2).round()
    u = torch.unique(y)
    return u.sum() + 1


def c_time(x):
    y = x * 2
    t = time.time()
    return y + 1, t


def c_perf_counter(x):
    y = x * 2
    t = time.perf_counter()
    return y + 1, t


def c_logger(x):
    y = x * 2
    logger.info("step")
    return y + 1


def c_logging_module(x):
    y = x * 2
    logging.info("step")
    return y + 1


def c_warnings(x):
    y = x * 2
    warnings.warn("slow path")
    return y + 1


def c_open(x):
    y = x * 2
    with open("/dev/null") as f:
        f.read()
    return y + 1


def c_input_id(x):
    y = x * 2
    k = id(y)
    return y + (k % 2)


def c_globals(x):
    y = x * 2
    g = globals()
    return y + len(g)


def c_synchronize(x):
    y = x * 2
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return y + 1


def c_is_compiling_guard(x):
    y = x * 2
    if not torch.compiler.is_compiling():
        print("eager only", y.sum().item())
    return y + 1


def c_math(x):
    y = x * 2
    return y / math.sqrt(x.size(-1))


@torch.compiler.disable
def _disabled_helper(y):
    print(y.sum().item())


def c_calls_disabled(x):
    y = x * 2
    _disabled_helper(y)
    return y + 1


def c_data_ptr(x):
    y = x * 2
    p = y.data_ptr()
    return y + (p % 2)


def c_random(x):
    import random

    y = x * 2
    return y * random.random()


def c_tensor_ctor_from_item(x):
    y = x * 2
    n = y.shape[0]
    z = torch.zeros(n, device=y.device)
    return y + z[: x.size(1)].sum()


def c_numpy_array_of_tensor(x):
    y = x * 2
    a = np.array(y)
    return y + a.sum()


def c_len_tolist_shape(x):
    return x.reshape(list(x.shape)[::-1]) + 1


def c_sort_python(x):
    y = x * 2
    vals = sorted(y.tolist())
    return y + vals[0]


def c_repr(x):
    y = x * 2
    s = str(y)
    return y + len(s)


def c_f_string(x):
    y = x * 2
    s = f"{y.shape}"
    return y + len(s)


def c_if_tensor_bool(x):
    y = x * 2
    flag = y.sum() > 0
    if flag:
        return y
    return y + 1


def c_and_or(x):
    y = x * 2
    z = (y > 0).all() and (y < 10).all()
    return y + 1 if z else y


def c_ternary(x):
    y = x * 2
    return y + 1 if y.mean() > 0 else y - 1


def c_where_one_arg(x):
    y = x * 2
    idx = torch.where(y > 0)
    return idx[0].sum() + 1


def c_masked_select(x):
    y = x * 2
    return torch.masked_select(y, y > 0).sum() + 1


def c_argwhere(x):
    y = x * 2
    return torch.argwhere(y > 0).sum() + 1


def c_tolist_int(x):
    y = (x * 2).long()
    v = y.tolist()
    return y + len(v)


def c_time_sleep(x):
    y = x * 2
    time.sleep(0)
    return y + 1


def c_random_randint(x):
    import random

    y = x * 2
    return y * random.randint(1, 3)


def c_np_random_randn(x):
    y = x * 2
    return y * float(np.random.randn())


def c_locals(x):
    y = x * 2
    return y + len(locals())


def c_vars(x):
    y = x * 2
    return y + len(vars(math))


def c_logging_warning(x):
    y = x * 2
    logging.warning("careful")
    return y + 1


def c_if_norm_zero(x):
    scale = x.norm(float("inf"))
    if scale == 0:
        return scale
    return x / scale


def c_if_torch_max_two(x):
    y = x * 2
    if torch.max(y, x).sum() > 0:
        return y
    return y + 1


def c_shape_tolist(x):
    return x + len(torch.tensor(x.shape).tolist())


CASES = [(n, f) for n, f in sorted(globals().items()) if n.startswith("c_") and callable(f)]


def main():
    out = open(sys.argv[1], "w") if len(sys.argv) > 1 else None
    print(json.dumps({"torch": torch.__version__, "device": dev}))
    for name, fn in CASES:
        torch._dynamo.reset()
        x = torch.randn(8, 16, device=dev)
        if name == "c_numpy":
            x = x.cpu()
        try:
            e = torch._dynamo.explain(fn)(x)
            reasons = [str(b.reason).splitlines()[0][:200] for b in e.break_reasons]
            rec = {"case": name, "graphs": e.graph_count, "breaks": e.graph_break_count, "reasons": reasons}
        except Exception as ex:  # noqa: BLE001
            rec = {"case": name, "error": f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}"}
        line = json.dumps(rec)
        print(line)
        if out:
            out.write(line + "\n")


if __name__ == "__main__":
    main()
