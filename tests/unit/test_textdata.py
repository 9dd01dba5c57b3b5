"""gpulab.textdata: the shipped corpus, the character tokenizer, batches, a tiny LM that learns."""

from __future__ import annotations

from importlib import resources

import pytest
import torch

from gpulab import textdata
from gpulab.core.errors import GpulabConfigError

TINY = dict(
    model_type="llama",
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    tie_word_embeddings=False,
)


def test_corpus_is_the_book_and_is_packaged():
    """A checkout reads book/*.md; the package carries a copy for installs without one."""
    text = textdata.load_corpus()
    assert len(text) > 20_000 and "GPU" in text
    assert textdata.load_corpus(max_chars=100) == text[:100]
    packaged = resources.files("gpulab").joinpath("data/corpus.txt").read_text(encoding="utf-8")
    assert len(packaged) > 20_000 and "GPU" in packaged


def test_packaged_copy_is_used_without_a_checkout(monkeypatch):
    """Without book/, load_corpus falls back to data/corpus.txt."""
    monkeypatch.setattr(textdata, "_book_dir", lambda: None)
    assert (
        textdata.load_corpus(max_chars=50)
        == resources.files("gpulab").joinpath("data/corpus.txt").read_text(encoding="utf-8")[:50]
    )
    assert "packaged" in textdata.corpus_source()


def test_bad_max_chars_is_refused():
    """max_chars must be a positive integer."""
    with pytest.raises(GpulabConfigError, match="max_chars=0"):
        textdata.load_corpus(max_chars=0)


def test_tokenizer_round_trip():
    """decode(encode(text)) is the text; the vocabulary is the text's distinct characters."""
    text = textdata.load_corpus(max_chars=5000)
    tok = textdata.CharTokenizer(text)
    ids = tok.encode(text)
    assert ids.dtype == torch.long and ids.shape == (5000,)
    assert tok.decode(ids) == text and tok.decode(ids.tolist()) == text
    assert tok.vocab_size == len(set(text)) and int(ids.max()) < tok.vocab_size
    with pytest.raises(GpulabConfigError, match="not in the tokenizer"):
        textdata.CharTokenizer("abc").encode("abd")


def test_batches_are_shifted_windows():
    """x and y are (batch, seq_len) windows of the ids, y one position ahead; seeded."""
    ids = torch.arange(1000)
    x, y = textdata.batches(ids, 4, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16)
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y - x, torch.ones_like(x))
    x2, _ = textdata.batches(ids, 4, 16, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    with pytest.raises(GpulabConfigError, match="seq_len=16"):
        textdata.batches(torch.arange(10), 1, 16)


def test_split_keeps_the_last_tenth():
    """The held-out part is the end of the text."""
    train, val = textdata.split_ids(torch.arange(100))
    assert torch.equal(train, torch.arange(90)) and torch.equal(val, torch.arange(90, 100))


def test_training_lowers_the_loss_and_is_deterministic():
    """30 steps of a tiny model lower the training and held-out loss; same seed, same losses."""
    text = textdata.load_corpus(max_chars=20_000)
    tok = textdata.CharTokenizer(text)
    _, val = textdata.split_ids(tok.encode(text))
    model, losses = textdata.train_tiny_lm(TINY, text, steps=30, batch=8, seq_len=32, lr=1e-2)
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < losses[0] - 0.5
    untrained, _ = textdata.train_tiny_lm(TINY, text, steps=1, batch=8, seq_len=32, lr=1e-9)
    assert (
        textdata.eval_loss(model, val, 8, 32, 4)
        < textdata.eval_loss(untrained, val, 8, 32, 4) - 0.5
    )
    _, again = textdata.train_tiny_lm(TINY, text, steps=30, batch=8, seq_len=32, lr=1e-2)
    assert again == losses


def test_bad_training_input_is_refused():
    """A config without model_type, or a non-positive step count, names the field."""
    with pytest.raises(GpulabConfigError, match="model_type"):
        textdata.train_tiny_lm({"hidden_size": 8}, "abc" * 100, steps=1)
    with pytest.raises(GpulabConfigError, match="steps=0"):
        textdata.train_tiny_lm(TINY, "abc" * 100, steps=0)
