"""Model configurations of ``flow.models``, used by the nn.Module
definitions (mlp.py, gpt.py, vgg.py), plus their layer-size helpers. Frozen
dataclasses; thread-safe.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple, Union


@dataclass(frozen=True)
class MLPConfig:
    in_features: int = 32
    hidden: Tuple[int, ...] = (64, 64)  # one Linear + ReLU per entry
    num_classes: int = 10
    dropout: float = 0.0                # after every hidden ReLU, train mode only
    dropout_seed: int = 1000            # first dropout op's seed; the next get +1, +2, ...


def layer_sizes(config: MLPConfig) -> list:
    """(in, out) of every Linear, the logits layer last."""
    dims = [config.in_features, *config.hidden, config.num_classes]
    return list(zip(dims[:-1], dims[1:]))


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 65
    seq_len: int = 64        # T: the context length, also the size of wpe
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64         # D; must be a multiple of n_head
    dropout: float = 0.0     # embeddings, attention probabilities, residual branches
    dropout_seed: int = 1000  # first dropout op's seed; the next get +1, +2, ...
    layer_norm_epsilon: float = 1e-5

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"GPTConfig: n_embd={self.n_embd} is not a multiple of "
                             f"n_head={self.n_head}")


VGG16_FEATURES = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
                  512, 512, 512, "M", 512, 512, 512, "M")
VGG19_FEATURES = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
                  512, 512, 512, 512, "M", 512, 512, 512, 512, "M")


@dataclass(frozen=True)
class VGGConfig:
    features: Tuple[Union[int, str], ...] = (8, "M", 16, "M")
    in_channels: int = 3
    image_size: int = 16           # square H = W; divisible by 2 ** (number of "M")
    fc: Tuple[int, ...] = (64,)    # hidden Linear + ReLU widths after flatten
    num_classes: int = 10
    dropout: float = 0.0           # after every hidden FC ReLU, train mode only
    dropout_seed: int = 1000       # first dropout op's seed; the next get +1, +2, ...

    def __post_init__(self) -> None:
        for item in self.features:
            if item != "M" and not (isinstance(item, int) and item > 0):
                raise ValueError(f"VGGConfig: features entry {item!r} is neither a positive "
                                 f"channel count nor 'M'")
        pools = sum(1 for item in self.features if item == "M")
        if self.image_size % (2 ** pools) != 0:
            raise ValueError(f"VGGConfig: image_size={self.image_size} is not divisible by "
                             f"2**{pools} (one halving per 'M')")


def vgg16_config(image_size: int = 224, num_classes: int = 1000) -> VGGConfig:
    """torchvision's VGG16 (configuration "D") without its adaptive pooling:
    at image_size 224 the flatten has 512*7*7 features, as in the paper."""
    return VGGConfig(features=VGG16_FEATURES, in_channels=3, image_size=image_size,
                     fc=(4096, 4096), num_classes=num_classes)


def vgg19_config(image_size: int = 224, num_classes: int = 1000) -> VGGConfig:
    """torchvision's VGG19 (configuration "E"): 16 convs, FC 4096-4096."""
    return VGGConfig(features=VGG19_FEATURES, in_channels=3, image_size=image_size,
                     fc=(4096, 4096), num_classes=num_classes)


def conv_channels(config: VGGConfig) -> list:
    """(in, out) channels of every conv, in order."""
    out, channels = [], config.in_channels
    for item in config.features:
        if item != "M":
            out.append((channels, item))
            channels = item
    return out


def flat_features(config: VGGConfig) -> int:
    pools = sum(1 for item in config.features if item == "M")
    side = config.image_size // (2 ** pools)
    channels = conv_channels(config)[-1][1] if conv_channels(config) else config.in_channels
    return channels * side * side


def fc_sizes(config: VGGConfig) -> list:
    """(in, out) of every Linear, the logits layer last."""
    dims = [flat_features(config), *config.fc, config.num_classes]
    return list(zip(dims[:-1], dims[1:]))


