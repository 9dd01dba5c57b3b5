"""``gpulab fit`` and ``gpulab speed``: a newcomer's two questions on the command line.

    gpulab fit Llama-3-8B --gpu "RTX 4060" --format q4_k_m --context 8k
    gpulab fit path/to/config.json --memory 12GiB --users 4
    gpulab speed Qwen2.5-7B --gpu "RTX 4090" --format q4_k_m --json

The answers are gpulab.estimate.answers' (``fit`` and ``speed``); this module reads the
arguments and lays the answers out as text or JSON. A value the library refuses is reported
as one line naming the option (``gpulab fit: error: --gpu='RTX 9999' is not a GPU ...``) and
the command exits 2, as argparse does for a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from gpulab.core.constraints import MAX_MAGNITUDE
from gpulab.core.errors import GpulabConfigError
from gpulab.core.units import GIB, MIB
from gpulab.core.validate import checked
from gpulab.estimate import answers
from gpulab.estimate.calculator import display_number
from gpulab.reference import formats, hf_config, models
from gpulab.reference.modelspec import ModelSpec

__all__ = [
    "FLAGS",
    "MEMORY_UNITS",
    "add_commands",
    "model_spec",
    "parse_count",
    "parse_memory",
    "render_fit",
    "render_speed",
    "run_fit",
    "run_speed",
]

# Units --memory takes, case-insensitive. GB and GiB mean what they say; the one-letter forms
# are binary, as Docker's --memory and `free -g` read them.
MEMORY_UNITS = {
    "b": 1,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "kib": 1024,
    "mib": MIB,
    "gib": GIB,
    "tib": 1024 * GIB,
    "k": 1024,
    "m": MIB,
    "g": GIB,
    "t": 1024 * GIB,
}
# The library's parameter -> the option (or argument) of the command line that sets it.
FLAGS = {
    "model": "MODEL",
    "MODEL": "MODEL",
    "spec": "MODEL",
    "name": "--gpu",
    "gpu": "--gpu",
    "memory_bytes": "--memory",
    "--memory": "--memory",
    "weights": "--format",
    "fmt": "--format",
    "kv_cache": "--kv-cache",
    "context": "--context",
    "seq_len": "--context",
    "users": "--users",
    "batch": "--users",
}
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)(?:e([+-]?\d+))?\s*([a-z]*)\s*$", re.IGNORECASE)
_MODEL_EPILOG = (
    "MODEL is a catalogue name (" + ", ".join(models.names()) + ") or the path "
    "of a Hugging Face config.json."
)

# --------------------------------------------------------------------------- reading arguments


@checked
def parse_memory(text: str) -> int:
    """Bytes of a --memory value: '8GB' (10^9 bytes), '8 GiB' or '8g' (2^30), '8188MiB', '8e9B'."""
    match = _NUMBER.match(text or "")
    units = "B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB or K, M, G, T (powers of 1024)"
    if not match:
        raise GpulabConfigError(
            f"--memory={text!r} is not a size: write a number and a unit, 8GB or 8GiB ({units})",
            "--memory",
        )
    digits, exponent, unit = match.groups()
    if not unit:
        raise GpulabConfigError(
            f"--memory={text!r} needs a unit: 8GB is 8 x 10^9 bytes, 8GiB "
            "(or 8g) 8 x 2^30; a card sold as '8 GB' reports about 8 GiB, "
            "and --gpu names it exactly",
            "--memory",
        )
    scale = MEMORY_UNITS.get(unit.lower())
    if scale is None:
        raise GpulabConfigError(
            f"--memory={text!r}: {unit!r} is not a unit; use {units}", "--memory"
        )
    try:
        size = float(digits) * 10.0 ** int(exponent or 0) * scale
    except OverflowError:
        size = math.inf
    if size < 1:
        raise GpulabConfigError(f"--memory={text!r} must be at least one byte", "--memory")
    if size > MAX_MAGNITUDE:
        raise GpulabConfigError(
            f"--memory={text!r} is more than any memory (at most {MAX_MAGNITUDE:g} bytes)",
            "--memory",
        )
    return int(size)


@checked
def parse_count(flag: str, text: str) -> int:
    """A --context or --users value as an int: '8192', '8k' (x 1024) or '32K'."""
    match = re.fullmatch(r"\s*(\d{1,19})\s*([kK]?)\s*", text or "")
    if not match:
        example = "8192, or 8k for 8 x 1024" if flag == "--context" else "1, 4, 30"
        raise GpulabConfigError(f"{flag}={text!r} must be a whole number ({example})", flag)
    return int(match.group(1)) * (1024 if match.group(2) else 1)


@checked
def model_spec(text: str) -> ModelSpec:
    """MODEL as a ModelSpec: a catalogue name, or the path of a Hugging Face config.json."""
    path = Path(text)
    if not (text.lower().endswith(".json") or path.is_file()):
        return models.get(text)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise GpulabConfigError(f"MODEL={text!r} cannot be read: {why}", "MODEL") from None
    cfg = hf_config.parse_config_text(raw, "MODEL")
    name = cfg.get("_name_or_path") if isinstance(cfg.get("_name_or_path"), str) else None
    try:
        return ModelSpec.from_hf_config(cfg, name or str(path))
    except GpulabConfigError as err:  # the file is the argument at fault
        raise GpulabConfigError(f"MODEL={text!r}: {err}", "MODEL") from None


def _in_the_options_words(err: GpulabConfigError) -> str:
    """The library's message with its parameter's name replaced by the option that sets it."""
    message = str(err)
    flag = FLAGS.get(err.field or "")
    if flag is None or message.startswith(flag):
        return message
    for sep in ("=", ":"):
        if message.startswith(f"{err.field}{sep}"):
            return f"{flag}{sep}{message[len(err.field) + 1 :]}"
    return f"{flag}: {message}"


def _workload(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments the answers take, read from the command line's text."""
    return {
        "spec": model_spec(args.model),
        "weights": args.format,
        "kv_cache": args.kv_cache,
        "context": parse_count("--context", args.context),
        "users": parse_count("--users", args.users),
    }


# --------------------------------------------------------------------------- rendering


def _gb(nbytes: float) -> str:
    return f"{display_number(nbytes / 1e9)} GB"


def _tokens(n: int) -> str:
    return f"{n:,} token{'s' if n != 1 else ''}"


def _users(n: int) -> str:
    return f"{n:,} user{'s' if n != 1 else ''}"


def _heading(a: answers.FitAnswer) -> str:
    return (
        f"{a.model}: {a.weights} weights, {a.kv_cache} KV cache, {_users(a.users)} x "
        f"{_tokens(a.context)}"
    )


def _memory_lines(a: answers.FitAnswer) -> list[str]:
    if a.gpu:
        first = (
            f"memory: {a.gpu}, {a.memory_bytes // MIB:,} MiB ({_gb(a.memory_bytes)}) as its "
            "driver reports it"
        )
    else:
        first = f"memory: {a.memory_bytes / GIB:.4g} GiB ({_gb(a.memory_bytes)}), as given"
    return [
        first,
        f"        {_gb(a.capacity_bytes)} of it for tensors, after the runtime's "
        "context and the allocator's slack",
    ]


def _verdict(a: answers.FitAnswer) -> str:
    if a.fits:
        return f"fits, with {_gb(a.headroom_bytes)} to spare"
    return f"does not fit: {_gb(-a.headroom_bytes)} short"


@checked
def render_fit(a: answers.FitAnswer) -> str:
    """The fit answer as text: the breakdown, the verdict, the largest context and batch."""
    parts = {"weights": "weights", "kv_cache": "KV cache", "activations": "activations"}
    lines = [_heading(a), *_memory_lines(a), ""]
    lines += [
        f"  {label:<13}{_gb(getattr(a.breakdown, part)):>10}" for part, label in parts.items()
    ]
    lines += [f"  {'total':<13}{_gb(a.breakdown.total):>10}", "", _verdict(a)]
    longest = a.max_position_embeddings
    if a.context_beyond_model:
        lines.append(
            f"note: {a.model} is configured for at most {_tokens(longest)}; "
            f"{_tokens(a.context)} is beyond it"
        )
    if a.largest_context == 0:
        lines.append(
            f"largest context for {_users(a.users)}: none fits"
            + (
                f" (the weights alone need {_gb(a.breakdown.weights)})"
                if a.breakdown.weights > a.capacity_bytes
                else ""
            )
        )
    elif longest and a.largest_context >= longest:
        lines.append(
            f"largest context for {_users(a.users)}: the model's full {_tokens(longest)} fit"
        )
    else:
        configured = f" (the model is configured for up to {longest:,})" if longest else ""
        lines.append(
            f"largest context for {_users(a.users)}: {_tokens(a.largest_context)}{configured}"
        )
    lines.append(
        f"most users at {_tokens(a.context)} each: "
        + (f"{a.largest_users:,}" if a.largest_users else "none")
    )
    return "\n".join(lines)


def _percent(share: float) -> str:
    return f"{share:.0%}"


def _published_line(c) -> str:
    m = c.measurement
    what = "generation" if c.kind == "decode" else "prompt"
    model = m.model.split(" (")[0]  # "CodeLlama-7B Q4_0 (models/...gguf)": the file is noise
    if m.quantization and m.quantization.lower() not in model.lower():
        model = f"{model} {m.quantization}"
    head = f"  {model}, {m.test} ({what}): {display_number(m.figure)} tokens/s"
    if c.ratio is None:
        return f"{head}; no bound: {c.excluded}"
    return f"{head}, {_percent(c.ratio)} of its bound of {display_number(c.bound)}"


@checked
def render_speed(s: answers.SpeedAnswer) -> str:
    """The speed answer as text: the fit, the bound, the typical range, the card's runs."""
    a = s.fit
    lines = [_heading(a), *_memory_lines(a), _verdict(a), ""]
    if s.bound_total is None:
        lines.append(f"decode: {answers.NO_SPEED}")
    else:
        per_step = f"{display_number(s.bandwidth_gbs)} GB/s / {_gb(s.bytes_per_step)} read per step"
        if a.users == 1:
            lines.append(f"decode bound: {per_step} = {display_number(s.bound_total)} tokens/s")
        else:
            lines.append(
                f"decode bound: {per_step} x {a.users} tokens per step = "
                f"{display_number(s.bound_total)} tokens/s in total, "
                f"{display_number(s.bound_per_user)} per user"
            )
        lines.append(
            "  an upper bound: each step reads the weights and the KV cache once, and "
            "nothing else takes time"
        )
        share = s.share
        if s.typical_per_user is None:
            lines.append(f"typical: none ({s.no_typical})")
        else:
            low, median, high = (display_number(x) for x in s.typical_per_user)
            lines.append(f"typical: {low} to {high} tokens/s, median {median}")
        lines.append(
            f"  this bound x the share of their own bound that {share.runs} published "
            f"{share.tool} runs on {share.devices} devices reached:"
        )
        lines.append(
            f"  lowest {_percent(share.low)}, median {_percent(share.median)}, "
            f"highest {_percent(share.high)}"
        )
    card = a.gpu
    if s.published:
        lines.append(f"published runs on the {card}:")
        lines += [_published_line(c) for c in s.published]
    else:
        lines.append(f"published runs on the {card}: none in the course's data")
    return "\n".join(lines)


# --------------------------------------------------------------------------- commands


def _fail(args: argparse.Namespace, err: GpulabConfigError) -> int:
    """Report a value the library refused, in one line naming the option; exit status 2."""
    print(f"{args.command_parser.prog}: error: {_in_the_options_words(err)}", file=sys.stderr)
    return 2


def _print_json(data: dict[str, Any]) -> None:
    print(json.dumps(data, indent=2, allow_nan=False))


@checked
def run_fit(args: argparse.Namespace) -> int:
    """``gpulab fit``: print the fit answer; 0 when answered, 2 for a value refused."""
    try:
        work = _workload(args)
        if args.gpu is not None and args.memory is not None:
            raise GpulabConfigError("--gpu and --memory: give one of them, not both", "--gpu")
        where = (
            {"gpu": args.gpu}
            if args.gpu is not None
            else {"memory_bytes": parse_memory(args.memory)}
        )
        answer = answers.fit(**work, **where)
    except GpulabConfigError as err:
        return _fail(args, err)
    if args.json:
        _print_json({"command": "fit"} | answer.as_dict())
    else:
        print(render_fit(answer))
    return 0


@checked
def run_speed(args: argparse.Namespace) -> int:
    """``gpulab speed``: print the speed answer; 0 when answered, 2 for a value refused."""
    try:
        answer = answers.speed(gpu=args.gpu, **_workload(args))
    except GpulabConfigError as err:
        return _fail(args, err)
    if args.json:
        _print_json({"command": "speed"} | answer.as_dict())
    else:
        print(render_speed(answer))
    return 0


def _workload_arguments(parser: argparse.ArgumentParser) -> None:
    """MODEL and the options both commands share."""
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="a catalogue model (Llama-3-8B, Qwen2.5-7B, ...) or the path of a "
        "Hugging Face config.json",
    )
    parser.add_argument(
        "--format",
        default="q4_k_m",
        metavar="FORMAT",
        help="weight format, one of "
        + ", ".join(formats.WEIGHT_FORMATS)
        + " (default: q4_k_m, llama.cpp's usual 4-bit GGUF)",
    )
    parser.add_argument(
        "--kv-cache",
        default="bf16",
        metavar="FORMAT",
        help="KV-cache format, one of "
        + ", ".join(formats.KV_FORMATS)
        + " (default: bf16; fp16 takes the same bytes)",
    )
    parser.add_argument(
        "--context",
        default="8192",
        metavar="TOKENS",
        help="tokens per user, prompt and answer together: 8192 or 8k (default: 8192)",
    )
    parser.add_argument(
        "--users",
        default="1",
        metavar="N",
        help="users served at once, each with a full context (default: 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")


@checked
def add_commands(commands: argparse._SubParsersAction, prog: str) -> None:
    """Add ``fit`` and ``speed`` to the ``gpulab`` command line's subcommands."""
    fit = commands.add_parser(
        "fit",
        help="will a model fit a GPU or a memory size, and how much context fits",
        description="Will MODEL fit on a GPU (or in a memory size) for USERS x CONTEXT tokens? "
        "Prints the memory breakdown (weights, KV cache, activations), the verdict against what "
        "the memory leaves for tensors, and the largest context and number of users that fit.",
        epilog=_MODEL_EPILOG + " --memory is the memory as its driver reports it: 8GB means "
        "8 x 10^9 bytes, 8GiB or 8g 8 x 2^30 bytes (a card sold as '8 GB' has about 8 GiB); "
        "MiB, TB, a number of bytes as 8e9B work too. Exit status 0 when answered (fitting or "
        "not), 2 for an argument gpulab refuses.",
        prog=f"{prog} fit",
    )
    _workload_arguments(fit)
    where = fit.add_argument_group("the memory (one of)")
    where.add_argument(
        "--gpu",
        metavar="NAME",
        help="a GPU of the spec table ('RTX 4060', 'RTX 3060 12GB', 'H100 SXM') "
        "or the name nvidia-smi shows; an unknown name lists the table",
    )
    where.add_argument(
        "--memory",
        metavar="SIZE",
        help="your GPU's memory as its driver reports it: 8GB, 8GiB, 12g, 8188MiB",
    )
    fit.set_defaults(func=_require_memory(fit), command_parser=fit)
    speed = commands.add_parser(
        "speed",
        help="decode tokens/s of a model on a GPU: the bound and the typical range",
        description="How many tokens/s can MODEL generate on GPU? Prints the decode bound "
        "(bandwidth / bytes read per token), the typical range that published llama.cpp runs "
        "make of such a bound (the lowest, median and highest share of their own bounds they "
        "reached), and the card's published runs. No speed is given for a model that does not "
        "fit the card.",
        epilog=_MODEL_EPILOG + " Exit status 0 when answered, 2 for an argument gpulab refuses.",
        prog=f"{prog} speed",
    )
    _workload_arguments(speed)
    speed.add_argument(
        "--gpu",
        metavar="NAME",
        required=True,
        help="a GPU of the spec table ('RTX 4090') or the name nvidia-smi shows; "
        "an unknown name lists the table",
    )
    speed.set_defaults(func=run_speed, command_parser=speed)


def _require_memory(parser: argparse.ArgumentParser):
    """run_fit, after argparse's own check that --gpu or --memory was given."""

    def run(args: argparse.Namespace) -> int:
        if args.gpu is None and args.memory is None:
            parser.error("one of --gpu NAME or --memory SIZE is required")
        return run_fit(args)

    return run
