"""Copies to the GPU in steps that already wait for it, and under an evaluation interval.

Expected findings:
- PLC001 on the host-drawn noise of the batch's whole shape in train_logged: the host
  draws it slowly whatever the step waits on.
Not expected (below the default --min-confidence, with the reason as evidence):
- PLC002 on the batch copies of train_logged, and PLC001 on its small index tensor: the
  step's loss.item() leaves the GPU's queue empty every step, so these copies cost their
  transfer, not a wait;
- SYN001 on that loss.item(): the step's blocking batch copies wait too, so removing the
  read alone removes no wait. Each wait hides the other: blind reviewers judged waits
  like these negligible in a step that waits elsewhere too (bench/audit/blind_round8.md);
- PLC002 on the copies of the validation pass that runs every `eval_interval` steps
  inside the training loop (nanoVLM's layout).
(A flag whose name contains "log", `if self.logit_normal:`, is not a logging interval:
host_tensor_placement.py's TimeSampler keeps its two findings.)
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


def train_logged(model, train_set, val_set, optimizer, device, eval_interval=500):
    train_loader = DataLoader(train_set, batch_size=64, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=64, num_workers=8, pin_memory=True)
    model.to(device)
    total = 0.0
    for step, batch in enumerate(train_loader):
        images = batch["images"].to(device)  # hint: PLC002
        labels = batch["labels"].to(device)  # hint: PLC002
        index = torch.arange(labels.shape[0]).to(device)  # hint: PLC001
        noise = torch.randn(images.shape).to(device)  # expect: PLC001
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images + noise)[index], labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        total += loss.item()  # hint: SYN001
        if step % eval_interval == 0:
            model.eval()
            with torch.no_grad():
                for val_batch in val_loader:
                    val_images = val_batch["images"].to(device)  # hint: PLC002
                    model(val_images)
            model.train()
    return total

