"""Projection heads applied once per sequence, beside MLPs applied to every token.

CLIP/CLAP-style models project the pooled text or audio embedding into a shared space
with a small MLP module (Linear -> activation -> Linear). It runs once per sequence,
on one vector, so the activation between its GEMMs is not worth fusing: mlsem looks at
every call of the module class in the file and, when each passes a pooled vector
(`pooler_output`, `hidden_states[:, 0]`, a mean over positions), demotes the class's
findings as cold (`ok` marks).

Expected findings:
- FUS002 (a hint, below the default threshold) in TokenMLP, the per-token MLP of every layer.
- FUS002 (a hint, below the default threshold) in SharedMLP: one call passes a pooled vector, the other every token.
- FUS002 (a hint, below the default threshold) in MultiModalProjector: its input is the vision tower's `pooler_output`, which
  here holds every merged patch (a mean over the frames of each patch), as in
  transformers' vision-language models: the name alone does not make it cold.
- FUS002 (a hint, below the default threshold) in DownsampleBlock: a stride-2 max pool keeps a feature map per sample.
Not expected: FUS002 in SqueezeExcite (its input is adaptive-pooled to 1x1 per
sample), in ProjectionLayer (each call passes a pooled vector, directly
or through a variable) nor in LabelScorer (called on `hidden_states[:, 0]` and on a mean
over positions).
"""
import torch
import torch.nn as nn

from transformers.activations import ACT2FN


class ProjectionLayer(nn.Module):
    def __init__(self, hidden_size, projection_dim, act):
        super().__init__()
        self.linear1 = nn.Linear(hidden_size, projection_dim)
        self.activation = ACT2FN[act]
        self.linear2 = nn.Linear(projection_dim, projection_dim)

    def forward(self, hidden_states):
        hidden_states = self.linear1(hidden_states)
        hidden_states = self.activation(hidden_states)  # ok: FUS002
        hidden_states = self.linear2(hidden_states)
        return hidden_states


class LabelScorer(nn.Module):
    def __init__(self, hidden_size, num_labels):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, num_labels)

    def forward(self, x):
        return self.out(torch.relu(self.dense(x)))  # ok: FUS002


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, channels // reduction, 1)
        self.expand = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        scale = self.avg_pool(x)
        scale = self.expand(torch.relu(self.reduce(scale)))  # ok: FUS002
        return x * torch.sigmoid(scale)


class DownsampleBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(self.pool(x))))  # hint: FUS002


class MultiModalProjector(nn.Module):
    def __init__(self, vision_size, text_size):
        super().__init__()
        self.linear_1 = nn.Linear(vision_size, text_size)
        self.linear_2 = nn.Linear(text_size, text_size)

    def forward(self, image_features):
        return self.linear_2(nn.functional.gelu(self.linear_1(image_features)))  # hint: FUS002


class VisionTower(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.patch_embed = nn.Linear(3 * 14 * 14, hidden_size)

    def forward(self, patches, merge_index):
        hidden_states = self.patch_embed(patches)
        merged = hidden_states[merge_index].mean(dim=1)
        return dict(last_hidden_state=hidden_states, pooler_output=merged)


class VisionLanguageModel(nn.Module):
    def __init__(self, hidden_size, text_size):
        super().__init__()
        self.vision_tower = VisionTower(hidden_size)
        self.multi_modal_projector = MultiModalProjector(hidden_size, text_size)

    def get_image_features(self, patches, merge_index):
        vision_outputs = self.vision_tower(patches, merge_index)
        return self.multi_modal_projector(vision_outputs.pooler_output)


class TokenMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, intermediate_size)
        self.fc2 = nn.Linear(intermediate_size, hidden_size)

    def forward(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = nn.functional.gelu(hidden_states)  # hint: FUS002
        return self.fc2(hidden_states)


class SharedMLP(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.fc1 = nn.Linear(hidden_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        return self.fc2(torch.tanh(self.fc1(hidden_states)))  # hint: FUS002


class Encoder(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.embed = nn.Embedding(1000, hidden_size)
        self.mlp = TokenMLP(hidden_size, 4 * hidden_size)
        self.shared = SharedMLP(hidden_size)

    def forward(self, input_ids):
        hidden_states = self.embed(input_ids)
        hidden_states = hidden_states + self.mlp(hidden_states)
        return hidden_states + self.shared(hidden_states)


class DualEncoderModel(nn.Module):
    def __init__(self, hidden_size, projection_dim, num_labels):
        super().__init__()
        self.text_model = Encoder(hidden_size)
        self.audio_model = Encoder(hidden_size)
        self.text_projection = ProjectionLayer(hidden_size, projection_dim, "relu")
        self.audio_projection = ProjectionLayer(hidden_size, projection_dim, "relu")
        self.classifier = LabelScorer(hidden_size, num_labels)
        self.summary = SharedMLP(hidden_size)

    def get_text_features(self, input_ids):
        text_outputs = self.text_model(input_ids)
        return self.text_projection(text_outputs[:, 0])

    def forward(self, input_ids, audio_ids):
        text_hidden = self.text_model(input_ids)
        audio_hidden = self.audio_model(audio_ids)
        pooled_output = text_hidden.mean(dim=1)
        text_embeds = self.text_projection(pooled_output)
        audio_embeds = audio_hidden[:, 0, :]
        audio_embeds = self.audio_projection(audio_embeds)
        logits = self.classifier(text_hidden[:, 0])
        logits = logits + self.classifier(audio_hidden.mean(1))
        summary = self.summary(text_hidden[:, -1])
        return text_embeds @ audio_embeds.T, logits, summary
