"""float()/int() of configuration values in a training loop: Python numbers, no sync.

Models a torchtune-style recipe class: hyperparameters read from a config in
__init__ (`cfg.get("clip_grad_norm", None)`, `cfg.training.get(...)`, `cfg.x`, a
typed constructor argument, int() of a config read) and converted with float()/int()
on every step where the optimizer or the gradient clipping needs a plain number; a
module-level constant; an attribute whose origin the file does not show (set by a base
class elsewhere). None of these is a tensor, so none is a device-to-host read.

Also an attribute the loop itself sets from the loss (`self._last_loss = loss.detach()`),
read with float() on every step: that one is a tensor, and a sync.

Expected findings:
- SYN001 on float(self._last_loss).
Not expected: SYN001 on float()/int() of the config values, the constant and the
attribute of unknown origin. PRC001 on the fp32 forward (no autocast, no TF32).
"""

import torch
import torch.nn.functional as F

LOSS_WEIGHT = 1.0


class FullFinetuneRecipe:
    def __init__(self, cfg, model, optimizer, max_steps: int = 1000):
        self._device = torch.device("cuda")
        self._model = model.to(self._device)
        self._optimizer = optimizer
        self._clip_grad_norm = cfg.get("clip_grad_norm", None)
        self._kl_coeff = cfg.training.get("kl_coeff", 0.1)
        self._grad_accum = int(cfg.gradient_accumulation_steps)
        self._warmup = cfg.lr_scheduler.num_warmup_steps
        self._max_steps = max_steps
        self._last_loss = None

    def train(self, dataloader):
        self._model.train()
        for step, batch in enumerate(dataloader):
            tokens = batch["tokens"].to(self._device, non_blocking=True)
            labels = batch["labels"].to(self._device, non_blocking=True)
            logits = self._model(tokens)  # expect: PRC001
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten()) * float(LOSS_WEIGHT)  # ok: SYN001
            loss = loss / int(self._grad_accum)  # ok: SYN001
            loss.backward()
            if self._clip_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(
                    self._model.parameters(),
                    max_norm=float(self._clip_grad_norm),  # ok: SYN001
                )
            for group in self._optimizer.param_groups:
                group["lr"] = group["initial_lr"] * min(1.0, (step + 1) / float(self._warmup))  # ok: SYN001
                group["weight_decay"] = float(self._kl_coeff) * float(self._weight_decay)  # ok: SYN001
            self._optimizer.step()
            self._optimizer.zero_grad(set_to_none=True)
            self._last_loss = loss.detach()
            self._losses.append(float(self._last_loss))  # expect: SYN001
            if step >= int(self._max_steps):  # ok: SYN001
                break
