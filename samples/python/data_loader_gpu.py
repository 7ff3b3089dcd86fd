"""An image classifier trained on a GPU, with its data loaders.

Expected findings:
- DAT001 on the training loader (no workers, no pinned memory).
Not expected: DAT001 on the loader with workers and pinned memory, on the one whose
settings come from **kwargs, on the one configured from the command line, and (at the
default --min-confidence) on the evaluation loader that has workers but no pinned memory
(its workers already load ahead; pinning alone saves a staging copy), on a loader read for
one fixed batch with next(iter(...)) outside any loop, and on loaders of
in-memory datasets: a TensorDataset, a replay buffer, and a class whose __getitem__ only
indexes what __init__ built. A dataset that reads its files in __getitem__ is still
reported. Nor on a loader over `range(n)` (benchmarking-gnns' edge batches): it only
shuffles indices into tensors the step already holds, and workers would hand back integers.
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset


def train(model, train_set, val_set, args, loader_kwargs, epochs=10):
    device = torch.device("cuda")
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train_loader = DataLoader(train_set, batch_size=256, shuffle=True)  # expect: DAT001
    val_loader = DataLoader(val_set, batch_size=512, num_workers=4)  # ok: DAT001
    fast_loader = DataLoader(train_set, batch_size=256, num_workers=8, pin_memory=True)  # ok: DAT001
    kw_loader = DataLoader(train_set, **loader_kwargs)  # ok: DAT001
    cli_loader = DataLoader(train_set, num_workers=args.workers, pin_memory=args.pin)  # ok: DAT001
    sample_loader = DataLoader(val_set, batch_size=16, shuffle=True)  # ok: DAT001
    fixed_images, _ = next(iter(sample_loader))
    for epoch in range(epochs):
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)  # expect: PRC001
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return model, val_loader, fast_loader, kw_loader, cli_loader, fixed_images


class RandomPairs(Dataset):
    def __init__(self, n):
        self.x = torch.rand(n, 20)
        self.y = torch.rand(n, 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class ImageFiles(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.load(self.paths[i])


def train_small(model, optimizer, paths, self_play):
    device = torch.device("cuda")
    model.to(device)
    pairs = RandomPairs(2048)
    toy_loader = DataLoader(pairs, batch_size=32)  # ok: DAT001
    tensor_loader = DataLoader(TensorDataset(torch.rand(64, 20), torch.rand(64, 1)), batch_size=8)  # ok: DAT001
    files = ImageFiles(paths)
    file_loader = DataLoader(files, batch_size=32)  # expect: DAT001
    replay_loader = DataLoader(self_play.replay_buffer, batch_size=64)  # ok: DAT001
    index_loader = DataLoader(range(4096), 256, shuffle=True)  # ok: DAT001
    for loader in (toy_loader, tensor_loader, file_loader, replay_loader, index_loader):
        for x, y in loader:
            F.mse_loss(model(x.to(device)), y.to(device)).backward()
            optimizer.step()

