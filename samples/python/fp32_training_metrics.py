"""A GPU training loop in fp32 whose names only look like precision choices: a
`precision_score` metric and a scikit-learn `scaler` for the features.

Expected: PRC001 at the first model call of the loop (nothing chooses a number format).
"""

import torch
import torch.nn.functional as F
from sklearn.metrics import precision_score
from sklearn.preprocessing import StandardScaler


def train(model, loader, features):
    scaler = StandardScaler().fit(features)
    model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in loader:
        x = torch.as_tensor(scaler.transform(x), dtype=torch.float32).cuda(non_blocking=True)
        logits = model(x)  # expect: PRC001
        loss = F.cross_entropy(logits, y.cuda(non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return precision_score(y.numpy(), logits.argmax(-1).cpu().numpy(), average="macro")
