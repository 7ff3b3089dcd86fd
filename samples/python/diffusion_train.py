"""DDPM training and sampling for an image diffusion model.

Models: a linear beta schedule with its cumulative products, the forward noising
q_sample, a training loop that shows the loss in a tqdm progress bar every step
(`pbar.set_postfix(loss=loss.item())`), an EMA of the weights, and an ancestral
sampling loop under torch.no_grad that moves the final images to the CPU.

Expected findings:
- OPT001 at the AdamW built without fused=True (a preview rule).
- FUS003 (a hint, below the default threshold) at q_sample's `a * x_start + s * noise`: two multiplies and an add on
  full-size images, three kernels where one would do.
- FUS003 (a hint, below the default threshold) at the ancestral update `img = ... * (img - coef * eps) + sigma * noise`:
  multiply, subtract, multiply, add on full-size images, every sampling step.
Not expected: SYN001 at `pbar.set_postfix(loss=loss.item())` at the default
--min-confidence (a device sync on every step, but its value only feeds the progress
bar, the loop's chosen output: reported at 0.45), in the sampling loop (no backward),
nor on the final `.cpu()`;
FUS003 on the schedule tables built once in __init__.
"""

import copy

import torch
import torch.nn.functional as F
from tqdm import tqdm


def linear_beta_schedule(timesteps, beta_start=1e-4, beta_end=0.02):
    return torch.linspace(beta_start, beta_end, timesteps, dtype=torch.float64)


class GaussianDiffusion:
    def __init__(self, timesteps=1000, device="cuda"):
        betas = linear_beta_schedule(timesteps)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        self.timesteps = timesteps
        self.betas = betas.float().to(device)
        self.sqrt_alphas_cumprod = alphas_cumprod.sqrt().float().to(device)
        self.sqrt_one_minus_alphas_cumprod = (1.0 - alphas_cumprod).sqrt().float().to(device)  # ok: FUS003
        self.sqrt_recip_alphas = (1.0 / alphas).sqrt().float().to(device)  # ok: FUS003

    def q_sample(self, x_start, t, noise):
        a = self.sqrt_alphas_cumprod[t][:, None, None, None]
        s = self.sqrt_one_minus_alphas_cumprod[t][:, None, None, None]
        return a * x_start + s * noise  # hint: FUS003

    @torch.no_grad()
    def sample(self, model, shape, device="cuda"):
        img = torch.randn(shape, device=device)
        for i in reversed(range(self.timesteps)):
            t = torch.full((shape[0],), i, device=device, dtype=torch.long)
            eps = model(img, t)
            coef = self.betas[t][:, None, None, None] / self.sqrt_one_minus_alphas_cumprod[t][:, None, None, None]
            sigma = self.betas[t][:, None, None, None].sqrt()
            noise = torch.randn_like(img) if i > 0 else torch.zeros_like(img)
            img = self.sqrt_recip_alphas[t][:, None, None, None] * (img - coef * eps) + sigma * noise  # hint: FUS003
        return img.clamp(-1, 1).cpu()  # ok: SYN001


@torch.no_grad()
def ema_update(ema_model, model, decay=0.9999):
    for ema_p, p in zip(ema_model.parameters(), model.parameters()):
        ema_p.lerp_(p, 1.0 - decay)


def train(model, dataloader, epochs=100, lr=2e-4, device="cuda"):
    diffusion = GaussianDiffusion(device=device)
    ema_model = copy.deepcopy(model).eval()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)  # expect: OPT001
    for epoch in range(epochs):
        pbar = tqdm(dataloader, desc=f"epoch {epoch}")
        for images, _ in pbar:
            images = images.to(device)
            t = torch.randint(0, diffusion.timesteps, (images.shape[0],), device=device)
            noise = torch.randn_like(images)
            x_t = diffusion.q_sample(images, t, noise)
            loss = F.mse_loss(model(x_t, t), noise)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            ema_update(ema_model, model)
            pbar.set_postfix(loss=loss.item())  # ok: SYN001
    return ema_model
