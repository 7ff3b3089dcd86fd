"""Fine-tuning on a tokenized Hugging Face dataset (the layout of transformers' run_glue.py).

Not expected (below the default --min-confidence): DAT001 on the training loader. Its
dataset is tokenized once with `.map`, and a transformers data collator batches it: each
batch is a take and a pad of token ids from Arrow memory, about a millisecond in the
training process, which workers and pinned memory barely change. A loader of raw files
with no workers is still reported (data_loader_gpu.py).
"""

import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import DataCollatorWithPadding


def finetune(model, tokenizer, optimizer):
    device = torch.device("cuda")
    raw = load_dataset("glue", "mrpc")
    train_set = raw["train"].map(lambda ex: tokenizer(ex["sentence1"], ex["sentence2"], truncation=True), batched=True)
    collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    loader = DataLoader(train_set, shuffle=True, collate_fn=collator, batch_size=32)  # hint: DAT001
    model.to(device)
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
