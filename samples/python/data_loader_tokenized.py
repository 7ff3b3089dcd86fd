"""Fine-tuning on a tokenized Hugging Face dataset (the layout of transformers' run_glue.py).

Not expected (below the default --min-confidence): DAT001 on the training loader. Its
dataset is tokenized once with `.map`, and a transformers data collator batches it: each
batch is a take and a pad of token ids from Arrow memory, about a millisecond in the
training process, which workers and pinned memory barely change.
Expected: DAT001 on the loader of caption_pairs, whose own collator also opens and
resizes the images, in the training process.
"""

import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from PIL import Image
from transformers import DataCollatorWithPadding


def finetune(model, tokenizer, optimizer):
    device = torch.device("cuda")
    raw = load_dataset("glue", "mrpc")
    train_set = raw["train"].map(lambda ex: tokenizer(ex["sentence1"], ex["sentence2"], truncation=True), batched=True)
    data_collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    loader = DataLoader(train_set, shuffle=True, collate_fn=data_collator, batch_size=32)  # hint: DAT001
    model.to(device)
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


class CaptionCollator:
    def __init__(self, tokenizer, processor):
        self.tokenizer, self.processor = tokenizer, processor

    def __call__(self, rows):
        images = [self.processor(Image.open(r["path"]).convert("RGB")) for r in rows]
        return torch.stack(images), self.tokenizer([r["caption"] for r in rows], padding=True, return_tensors="pt")


def caption_pairs(model, tokenizer, processor, optimizer):
    device = torch.device("cuda")
    rows = load_dataset("json", data_files="captions.jsonl")["train"]
    loader = DataLoader(rows, shuffle=True, collate_fn=CaptionCollator(tokenizer, processor), batch_size=64)  # expect: DAT001
    for images, text in loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(images.to(device), **text.to(device)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
