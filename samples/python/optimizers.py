"""Optimizers of a GPU training script, fused and not.

Expected findings:
- OPT001 on torch.optim.AdamW and optim.Adam built without fused= or foreach=.
Not expected: OPT001 where fused=True or foreach= is chosen, where the arguments come
from **kwargs, on SGD (fused for SGD is newer), and in a file that does not train
(samples/python/gpt_nanogpt.py builds AdamW in a model file).
"""

import torch
import torch.nn.functional as F
from torch import optim


def make_optimizers(model, cfg, extra):
    decay = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)  # expect: OPT001
    plain = optim.Adam(model.parameters(), lr=1e-3)  # expect: OPT001
    chosen = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=False)  # ok: OPT001
    configured = torch.optim.AdamW(model.parameters(), **extra)  # ok: OPT001
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # ok: OPT001
    return decay, plain, chosen, configured, sgd


def train(model, loader, device, cfg, extra):
    model.to(device)
    optimizer = make_optimizers(model, cfg, extra)[0]
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))  # expect: PRC001
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
