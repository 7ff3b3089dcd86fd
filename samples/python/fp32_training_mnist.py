"""A GPU training loop on MNIST.

Not expected: PRC001 (below the default --min-confidence: a model for 28x28 images is
small, and mixed precision gains little). A `--fp16` flag anywhere in a file also silences
the rule (samples/python/gpt_train.py chooses through its config).
"""

import torch
import torch.nn.functional as F
from torchvision import datasets, transforms


def train_mnist(model, device):
    data = datasets.MNIST("../data", train=True, download=True, transform=transforms.ToTensor())
    loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model.to(device)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.nll_loss(model(x), y)  # ok: PRC001
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
