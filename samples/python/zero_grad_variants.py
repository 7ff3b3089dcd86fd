"""Clearing gradients between training steps, with and without set_to_none=False.

A small classifier trained with SGD and a GAN-style step that clears a module's
gradients. No code in this file reads .grad, so zero_grad() with its default
(set_to_none=True since torch 2.0) is an exact replacement.

Expected findings:
- TRN001 on optimizer.zero_grad(set_to_none=False) and on model.zero_grad(False),
  each with the rewrite to the default zero_grad().
Not expected: TRN001 on zero_grad() with its default, on set_to_none=True, on a
set_to_none taken from a config value, and on a call that forwards **kwargs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def train(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad(set_to_none=False)  # expect: TRN001
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()


def discriminator_step(disc, opt, real, fake):
    disc.zero_grad(False)  # expect: TRN001
    loss = F.softplus(-disc(real)).mean() + F.softplus(disc(fake)).mean()
    loss.backward()
    opt.step()


def train_default(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def train_configured(model, loader, optimizer, cfg, **zero_kwargs):
    for x, y in loader:
        optimizer.zero_grad(set_to_none=cfg.set_to_none)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        model.zero_grad(**zero_kwargs)
