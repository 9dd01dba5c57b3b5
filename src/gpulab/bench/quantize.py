"""Weight quantization by hand: int8 per channel, int4 per group (chapter 2's lab).

Symmetric quantization stores each weight as a small integer code and a float scale shared by a
row (per channel) or by a group of consecutive weights along the input dimension (per group):

    scale = max |w| over the row or group / (2**(bits-1) - 1)
    code  = round(w / scale), clamped to [-(2**(bits-1) - 1), 2**(bits-1) - 1]
    w'    = code * scale        # |w - w'| <= scale / 2 for every element

The codes are kept unpacked in an int8 tensor here (easy to read and check); the bytes a real
format stores, with two 4-bit codes per byte, are given by :func:`stored_bytes`, and agree with
`gpulab.memory.bits_per_weight` (int4, group 128, fp16 scales: 4.125 bits per weight).
:func:`quantize_linear_weights_` applies this to a model's decoder matrices and puts the
dequantized values back (simulated quantization: the model still runs in float), so that the
quality cost can be measured as a change of loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import Between, PositiveInt, checked

if TYPE_CHECKING:  # imported lazily so `import gpulab` stays light
    import torch

__all__ = [
    "QuantizedTensor",
    "dequantize",
    "quantize_linear_weights_",
    "quantize_per_channel",
    "quantize_per_group",
    "stored_bytes",
]

MIN_BITS, MAX_BITS = 2, 8  # 1 bit leaves no code but 0 in a symmetric format; int8 holds 8
# bits per code: symmetric codes in an int8 tensor
Bits = Annotated[int, Between(MIN_BITS, MAX_BITS)]


@dataclass(frozen=True)
class QuantizedTensor:
    """A weight matrix as integer codes and scales (symmetric, no zero point)."""

    q: Any  # int8 tensor of codes, shape (out, in), values in [-qmax, qmax]
    scale: Any  # float32 scales: (out, 1) per channel, (out, in // group_size) per group
    bits: int  # bits per code: 8 for int8, 4 for int4
    group_size: int | None  # weights per scale along the input dim; None: one scale per row
    shape: tuple[int, ...]  # shape of the original weight

    @property
    def qmax(self) -> int:
        """The largest code: 2**(bits-1) - 1 (127 for int8, 7 for int4)."""
        return _qmax(self.bits)


def _qmax(bits: int) -> int:
    return 2 ** (bits - 1) - 1


def _check_matrix(w: Any):
    import torch

    if not torch.is_tensor(w) or w.ndim != 2 or not w.is_floating_point():
        what = f"a tensor of shape {tuple(w.shape)}" if torch.is_tensor(w) else type(w).__name__
        raise GpulabConfigError(f"w must be a 2-D floating-point tensor (out, in); got {what}", "w")
    return w.detach().float()


def _codes(w, scale, qmax: int):
    """Codes round(w / scale) clamped to [-qmax, qmax]; a zero scale (all-zero weights) -> 1."""
    import torch

    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    return torch.round(w / safe).clamp_(-qmax, qmax).to(torch.int8), safe


@checked
def quantize_per_channel(w: torch.Tensor, bits: Bits = 8) -> QuantizedTensor:
    """Symmetric quantization with one scale per output row: absmax / (2**(bits-1) - 1)."""
    wf = _check_matrix(w)
    qmax = _qmax(bits)
    scale = wf.abs().amax(dim=1, keepdim=True) / qmax  # (out, 1)
    q, scale = _codes(wf, scale, qmax)
    return QuantizedTensor(q=q, scale=scale, bits=bits, group_size=None, shape=tuple(w.shape))


@checked
def quantize_per_group(
    w: torch.Tensor, bits: Bits = 4, group_size: PositiveInt = 128
) -> QuantizedTensor:
    """Symmetric quantization with one scale per group of `group_size` weights along a row."""
    wf = _check_matrix(w)
    out, inp = wf.shape
    if inp % group_size:
        raise GpulabConfigError(
            f"group_size={group_size} does not divide the input dimension {inp} of a weight of "
            f"shape {tuple(w.shape)}; use a divisor of {inp} (for example "
            f"{math.gcd(inp, group_size)}) or group_size=None for one scale per row",
            "group_size",
        )
    qmax = _qmax(bits)
    groups = wf.view(out, inp // group_size, group_size)  # (out, groups, group_size)
    scale = groups.abs().amax(dim=2, keepdim=True) / qmax  # (out, groups, 1)
    q, scale = _codes(groups, scale, qmax)
    return QuantizedTensor(
        q=q.view(out, inp),
        scale=scale.squeeze(2),
        bits=bits,
        group_size=group_size,
        shape=tuple(w.shape),
    )


@checked
def dequantize(qt: QuantizedTensor, dtype: torch.dtype | None = None):
    """The float weights a quantized tensor stands for: code x scale (float32 unless `dtype`)."""
    import torch

    out, inp = qt.q.shape
    if qt.group_size is None:
        w = qt.q.float() * qt.scale
    else:
        groups = qt.q.float().view(out, inp // qt.group_size, qt.group_size)
        w = (groups * qt.scale.unsqueeze(2)).view(out, inp)
    return w.reshape(qt.shape).to(dtype or torch.float32)


@checked
def stored_bytes(qt: QuantizedTensor, scale_bits: PositiveInt = 16) -> int:
    """Bytes a packed format stores: every code at `bits` bits plus one scale per row or group."""
    n_values = math.prod(qt.shape)
    n_scales = qt.scale.numel()
    return math.ceil(n_values * qt.bits / 8) + math.ceil(n_scales * scale_bits / 8)


def _quantize(w, bits: int, group_size: int | None) -> QuantizedTensor:
    if group_size is None:
        return quantize_per_channel(w, bits)
    return quantize_per_group(w, bits, group_size)


@checked
def quantize_linear_weights_(
    model: torch.nn.Module,
    bits: Bits,
    group_size: PositiveInt | None = None,
    scale_bits: PositiveInt = 16,
) -> dict:
    """Quantize every decoder weight matrix in place (simulated); return bytes before, after, error.

    As in `gpulab.memory`, the embedding, the output head and the norms stay as they are;
    every other matrix (the nn.Linear weights of attention and MLP, a router, and fused expert
    tensors of shape (experts, out, in), quantized row by row) is replaced by its dequantized
    copy, so the model still runs in float and its loss shows the quantization error.
    "bytes_before" counts the matrices at 2 bytes per weight (fp16/bf16 storage);
    "bytes_after" is their `stored_bytes` at `bits` per code plus `scale_bits` per scale.
    """
    import torch

    skip = set()
    for getter in ("get_input_embeddings", "get_output_embeddings"):
        module = getattr(model, getter, lambda: None)()
        if module is not None and getattr(module, "weight", None) is not None:
            skip.add(id(module.weight))
    matrices = [(n, p) for n, p in model.named_parameters() if p.ndim >= 2 and id(p) not in skip]
    if not matrices:
        raise GpulabConfigError(
            "model has no weight matrices besides its embeddings to quantize", "model"
        )
    before = after = params = 0
    max_error = 0.0
    with torch.no_grad():
        for _name, p in matrices:
            w = p.detach().reshape(-1, p.shape[-1])  # (experts * out, in) for fused experts
            qt = _quantize(w, bits, group_size)
            new = dequantize(qt).to(p.dtype)
            max_error = max(max_error, float((new.float() - w.float()).abs().max()))
            p.copy_(new.view(p.shape))
            params += p.numel()
            before += p.numel() * 2
            after += stored_bytes(qt, scale_bits)
    return {
        "matrices": len(matrices),
        "params": params,
        "bytes_before": before,
        "bytes_after": after,
        "max_abs_error": max_error,
    }
