"""A training script that uses the GPU only when `--cuda` asks for it.

Not expected: PRC001 (below the default --min-confidence: the GPU is not the script's
usual target).
"""

import argparse

import torch
import torch.nn.functional as F


def main(model, loader):
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", default=False, help="train on the GPU")
    args = parser.parse_args()
    device = torch.device("cuda" if args.cuda else "cpu")
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(device)), y.to(device))  # ok: PRC001
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main(None, [])
