"""Evaluation loops whose model records no graph without being told to.

Expected findings:
- GRD001 in restore_partly_frozen: only the backbone is frozen, and the head's
  parameters still need gradients, so every forward records the head's graph.
Not expected:
- GRD001 in restore_frozen (KAIR's test scripts): every parameter of the model is set to
  requires_grad = False before the loop, and the inputs need no grad, so no graph is
  recorded;
- GRD001 in restore_requires_grad_off: the same through model.requires_grad_(False);
- GRD001 in caption_images (below the default --min-confidence): its only model call is
  generate(), which transformers runs under torch.no_grad() (as do most projects' own).
"""

import torch

DEVICE = torch.device("cuda")


def restore_frozen(model, images):
    model.eval()
    for k, v in model.named_parameters():
        v.requires_grad = False
    model = model.to(DEVICE)
    outputs = []
    for img in images:
        outputs.append(model(img.to(DEVICE)))  # ok: GRD001
    return outputs


def restore_requires_grad_off(net, images):
    net.eval().requires_grad_(False)
    results = []
    for img in images:
        results.append(net(img.to(DEVICE)).argmax(-1))  # ok: GRD001
    return results


def restore_partly_frozen(model, images):
    model.eval()
    for p in model.backbone.parameters():
        p.requires_grad = False
    scores = []
    for img in images:
        scores.append(model(img.to(DEVICE)))  # expect: GRD001
    return scores


def caption_images(vlm, processor, images):
    vlm.eval()
    captions = []
    for img in images:
        ids = vlm.generate(**processor(images=img, return_tensors="pt").to(DEVICE), max_new_tokens=30)  # ok: GRD001
        captions.append(processor.decode(ids[0]))
    return captions
