"""An ImageNet-style classifier script that leaves cuDNN's autotuner off.

Models: a torchvision ResNet-50 trained on 224x224 random crops, in bf16 autocast, with
workers and pinned memory: everything set for speed but torch.backends.cudnn.benchmark.

Expected findings:
- PRC002 at the first model call of the training loop.
"""

import argparse

import torch
import torch.nn.functional as F
import torchvision
from torchvision import datasets, transforms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--epochs", type=int, default=90)
    args = parser.parse_args()
    train_tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor()])
    dataset = datasets.ImageFolder(args.data, train_tf)
    loader = torch.utils.data.DataLoader(dataset, batch_size=256, shuffle=True, num_workers=8, pin_memory=True)
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        for images, labels in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(images.cuda(non_blocking=True))  # expect: PRC002
                loss = F.cross_entropy(logits, labels.cuda(non_blocking=True))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
