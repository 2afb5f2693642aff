"""The micro ViT of `pln vit` in plain PyTorch, with the original module's
composed PLN at every norm site: the reference side of bench_vit.py. Same
layers, shapes and step as the C++ runner (patch conv, CLS token, learned
positions, pre-norm blocks with qkv-bias attention and a GELU MLP of ratio 4,
final norm on the CLS token, linear head; AdamW without decay on biases, norms
and embeddings; gradient clipping)."""

import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
from original import OriginalParallelLN  # noqa: E402


class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        n, t, c = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        weights = torch.matmul(q * (c // self.heads) ** -0.5, k.transpose(-2, -1)).softmax(-1)
        return self.proj(torch.matmul(weights, v).transpose(1, 2).reshape(n, t, c))


class Block(nn.Module):
    def __init__(self, width, heads, group):
        super().__init__()
        self.norm_attn = OriginalParallelLN(width, group, dim=3)
        self.attention = SelfAttention(width, heads)
        self.norm_mlp = OriginalParallelLN(width, group, dim=3)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attention(self.norm_attn(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm_mlp(x))))


class VisionTransformer(nn.Module):
    def __init__(self, width=128, blocks=4, heads=4, group=8, patch=7, image=28, channels=1, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(channels, width, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, width) * 0.02)
        self.blocks = nn.Sequential(*[Block(width, heads, group) for _ in range(blocks)])
        self.norm = OriginalParallelLN(width, group, dim=3)
        self.head = nn.Linear(width, classes)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        x = self.blocks(x)
        return self.head(self.norm(x[:, :1]).squeeze(1))


def optimizer(net, lr=1e-3, weight_decay=0.05):
    decay = [p for name, p in net.named_parameters() if p.dim() >= 2 and name not in ("cls_token", "pos_embed")]
    rest = [p for name, p in net.named_parameters() if not (p.dim() >= 2 and name not in ("cls_token", "pos_embed"))]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": rest, "weight_decay": 0.0}], lr=lr)
