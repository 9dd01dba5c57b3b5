"""A text corpus the course ships, a character tokenizer, and a tiny language model to train.

Quantization's cost in quality only shows on a model that has learned something: random
weights have nothing to lose. Chapter 2's lab trains a small `transformers` causal LM on the
course's own text (the Markdown chapters in ``book/``, or the copy shipped inside the package
when it is installed without the repository), one character per token, for a few hundred
steps on any device; then it compares the held-out loss before and after quantization.

    text = load_corpus()
    tok = CharTokenizer(text)
    train_ids, val_ids = split_ids(tok.encode(text))
    model, losses = train_tiny_lm(config, text, steps=200)
    eval_loss(model, val_ids)
"""

from __future__ import annotations

import numbers
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from gpulab.core.errors import GpulabConfigError
from gpulab.core.validate import Between, NonEmpty, PositiveFloat, PositiveInt, checked

if TYPE_CHECKING:
    import torch

# The share of the text kept for evaluation: more than none, less than all of it.
HeldOut = Annotated[float, Between(0, 1, low_open=True, high_open=True)]

__all__ = [
    "HELD_OUT",
    "CharTokenizer",
    "batches",
    "corpus_source",
    "eval_loss",
    "load_corpus",
    "split_ids",
    "train_tiny_lm",
]

HELD_OUT = 0.1  # the last 10% of the text is kept for eval_loss, never trained on
_PACKAGED = "data/corpus.txt"  # book/*.md concatenated, for installs without the repository


def _book_dir() -> Path | None:
    """The checkout's book/ folder, when gpulab runs from the repository (src layout)."""
    import gpulab

    root = Path(gpulab.__file__).resolve().parents[2]
    book = root / "book"
    if (root / "_toc.yml").exists() and any(book.glob("*.md")):
        return book
    return None


def corpus_source() -> str:
    """Where load_corpus reads from: the checkout's book/*.md, or the packaged copy."""
    book = _book_dir()
    return f"{book}/*.md" if book else f"gpulab/{_PACKAGED} (the book's text, packaged)"


@checked
def load_corpus(max_chars: PositiveInt | None = None) -> str:
    """The course's own Markdown text: book/*.md in a checkout, else the packaged copy."""
    book = _book_dir()
    if book is not None:
        text = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(book.glob("*.md")))
    else:
        text = resources.files("gpulab").joinpath(_PACKAGED).read_text(encoding="utf-8")
    return text if max_chars is None else text[:max_chars]


class CharTokenizer:
    """One token per character; the vocabulary is the sorted set of the text's characters."""

    def __init__(self, text: str):
        """Build the vocabulary from `text`."""
        if not isinstance(text, str) or not text:
            raise GpulabConfigError("text must be a non-empty string to build a vocabulary from")
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters."""
        return len(self.chars)

    def encode(self, text: str):
        """A 1-D int64 tensor of token ids; a character outside the vocabulary is refused."""
        import torch

        try:
            return torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        except KeyError as exc:
            raise GpulabConfigError(
                f"character {exc.args[0]!r} is not in the tokenizer's "
                f"vocabulary of {self.vocab_size} characters"
            ) from None

    def decode(self, ids: Any) -> str:
        """The text of a sequence (list or 1-D tensor) of token ids."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return "".join(self.chars[i] for i in ids)


@checked
def split_ids(ids: torch.Tensor | list | tuple, held_out: HeldOut = HELD_OUT) -> tuple[Any, Any]:
    """(train, held-out): the first (1 - held_out) of the ids and the rest."""
    cut = int(len(ids) * (1 - held_out))
    return ids[:cut], ids[cut:]


@checked
def batches(
    ids: torch.Tensor,
    batch: PositiveInt,
    seq_len: PositiveInt,
    generator: torch.Generator | None = None,
) -> tuple[Any, Any]:
    """Random windows: inputs x (batch, seq_len) and targets y, the same windows shifted by one."""
    import torch

    if len(ids) < seq_len + 1:
        raise GpulabConfigError(
            f"seq_len={seq_len} needs at least {seq_len + 1} tokens; the text has {len(ids)}",
            "seq_len",
        )
    starts = torch.randint(0, len(ids) - seq_len, (batch,), generator=generator)
    offsets = torch.arange(seq_len + 1)
    windows = ids[starts[:, None] + offsets]  # (batch, seq_len + 1)
    return windows[:, :-1], windows[:, 1:]


def _loss(model, x, y):
    import torch.nn.functional as F

    logits = model(input_ids=x).logits  # (batch, seq_len, vocab)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))


@checked
def train_tiny_lm(
    config: dict,
    text: Annotated[str, NonEmpty],
    steps: PositiveInt = 200,
    batch: PositiveInt = 16,
    seq_len: PositiveInt = 64,
    lr: PositiveFloat = 3e-3,
    device: torch.device | str = "cpu",
    seed: int = 0,
) -> tuple[Any, list[float]]:
    """Train a causal LM built from `config` on the first 90% of `text`; return (model, losses).

    One token per character (`CharTokenizer(text)`, whose vocabulary size replaces the config's
    vocab_size); AdamW at learning rate `lr` with a linear warm-up over the first 10% of the
    steps; the same seed gives the same weights and losses on the same device.
    """
    import torch

    from gpulab.bench.torch_models import build_model

    if "model_type" not in config:
        raise GpulabConfigError("config must be a config.json dict with a 'model_type'", "config")
    tok = CharTokenizer(text)
    train_ids, _ = split_ids(tok.encode(text))
    cfg = dict(config, vocab_size=tok.vocab_size)
    cfg.setdefault("max_position_embeddings", max(seq_len, 256))
    device = torch.device(device)
    model = build_model(cfg, device=device, seed=seed).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
    gen = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        x, y = batches(train_ids, batch, seq_len, gen)
        loss = _loss(model, x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return model.eval(), losses


@checked
def eval_loss(
    model: torch.nn.Module,
    ids: torch.Tensor | list | tuple,
    batch: PositiveInt = 16,
    seq_len: PositiveInt = 64,
    n_batches: PositiveInt = 8,
    seed: int = 1,
) -> float:
    """Mean cross-entropy (nats/token) on `n_batches` random windows of `ids`, fixed by `seed`."""
    import torch

    if not torch.is_tensor(ids):
        if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in ids):
            raise GpulabConfigError("ids must be token ids: integers, or a tensor of them", "ids")
        ids = torch.tensor(list(ids), dtype=torch.long)
    device = next(model.parameters()).device
    gen = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    total = 0.0
    with torch.inference_mode():
        for _ in range(n_batches):
            x, y = batches(ids, batch, seq_len, gen)
            total += float(_loss(model, x.to(device), y.to(device)))
    model.train(was_training)
    return total / n_batches
