"""The classifier script of cudnn_autotune.py, made reproducible on purpose.

Not expected: PRC002 (the file asks for deterministic algorithms, which the autotuner's
timing would undo).
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
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        for images, labels in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(images.cuda(non_blocking=True))  # ok: PRC002
                loss = F.cross_entropy(logits, labels.cuda(non_blocking=True))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
