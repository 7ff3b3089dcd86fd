"""Evaluation and generation loops, with and without autograd turned off.

Expected findings:
- GRD001 on the validation loop that only calls model.eval() (eval mode does not turn
  autograd off), on a generation loop, and on an evaluation helper found by its
  .eval() call alone.
Not expected: GRD001 where the function is decorated with @torch.no_grad(), where the
loop runs under `with torch.inference_mode():`, where the only caller wraps the call in
torch.no_grad(), under a project's own wrapper decorator (@smart_inference_mode()), in
a pipeline whose loop lives in a no_grad helper it calls, in a training loop, in
test-time adaptation that calls backward(), and (at the default --min-confidence) in a
GAN's sample grid that the training loop draws every `sample_interval` steps.
"""

import torch
import torch.nn.functional as F

DEVICE = torch.device("cuda")


def validate(model, loader, loss_fn):
    model.eval()  # "turn off gradients"
    losses = 0.0
    for src, tgt in loader:
        logits = model(src.to(DEVICE))  # expect: GRD001
        losses += loss_fn(logits, tgt.to(DEVICE)).item()
    return losses / len(loader)


def generate(model, tokens, steps):
    for _ in range(steps):
        logits = model(tokens)[:, -1]  # expect: GRD001
        tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
    return tokens


def report(student, loader):
    student.eval()
    outs = []
    for x, _ in loader:
        outs.append(student(x.to(DEVICE)))  # expect: GRD001
    return torch.cat(outs)


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x.to(DEVICE)).argmax(-1) == y.to(DEVICE)).sum()  # ok: GRD001
    return correct


def predict(model, loader):
    model.eval()
    preds = []
    with torch.inference_mode():
        for x in loader:
            preds.append(model(x.to(DEVICE)))  # ok: GRD001
    return preds


def sample_images(model, noise, steps):
    for t in range(steps):
        noise = model(noise, t)  # ok: GRD001
    return noise


def run_sampling(model, noise):
    with torch.no_grad():
        return sample_images(model, noise, 50)


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        loss = F.cross_entropy(model(x.to(DEVICE)), y.to(DEVICE))  # expect: PRC001 # ok: GRD001
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def adapt_and_predict(model, loader, optimizer):
    model.eval()
    for x in loader:
        loss = model(x.to(DEVICE)).entropy().mean()  # ok: GRD001
        loss.backward()
        optimizer.step()


def smart_inference_mode():
    return torch.inference_mode()


@smart_inference_mode()
def val_run(model, loader):
    model.eval()
    for images, _ in loader:
        model(images.to(DEVICE))  # ok: GRD001


@torch.no_grad()
def extract_features(model, loader):
    feats = []
    for x, _ in loader:
        feats.append(model(x.to(DEVICE)))  # ok: GRD001
    return torch.cat(feats)


def extract_feature_pipeline(model, loader):
    model.eval()
    return extract_features(model, loader)


def sample_grid(generator, latents):
    generator.eval()
    rows = []
    for z in latents:
        rows.append(generator(z.to(DEVICE)))  # ok: GRD001
    generator.train()
    return torch.cat(rows)


def train_gan(generator, loader, optimizer, latents, sample_interval=400):
    for step, (x, _) in enumerate(loader):
        loss = generator(x.to(DEVICE)).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % sample_interval == 0:
            sample_grid(generator, latents)
