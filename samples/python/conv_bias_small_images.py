"""A DCGAN discriminator trained on MNIST in the same script (PyTorch-GAN style).

Its convolutions keep their default bias before BatchNorm2d, but the images are 32x32:
the activations are small, so the bias's add and its gradient's reduction cost little.

Not expected, at the default --min-confidence (each reported below it, saying why): LAY001,
and PRC002 in the training loop (cudnn.benchmark is never set, but MNIST's convolutions are
tiny).
"""

import torch
import torch.nn as nn
from torchvision import datasets, transforms


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 3, 2, 1)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 128, 3, 2, 1)
        self.bn2 = nn.BatchNorm2d(128)
        self.head = nn.Linear(128 * 8 * 8, 1, bias=False)

    def forward(self, img):
        x = torch.relu(self.bn1(self.conv1(img)))  # ok: LAY001
        x = torch.relu(self.bn2(self.conv2(x)))  # ok: LAY001
        return self.head(x.flatten(1))


if __name__ == "__main__":
    data = datasets.MNIST("data", train=True, download=True,
                          transform=transforms.Compose([transforms.Resize(32), transforms.ToTensor()]))
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
    model = Discriminator().cuda()
    opt = torch.optim.Adam(model.parameters(), lr=2e-4, fused=True)
    for imgs, _ in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(imgs.cuda(non_blocking=True)).mean()  # ok: PRC002
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
