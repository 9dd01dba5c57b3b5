"""One basis per quantity: each kind of figure the pages compare comes from one function.

``gpulab.estimate.basis`` holds one function per kind (a model's size in a format, the bytes a
decoding step reads, a decode bound, a full fine-tune's memory, a CPU's peak); each returns a
``Quantity`` that carries its kind, function and arguments. This check reads every chapter's
figures and the course's code and reports:

- a figure whose name says a kind (``_bound_tok_s``, ``_read_gb``, ``<model>_<format>_gb``,
  ``_full_finetune_gb``, ``cpu_<clocks>_tflops``) and whose value did not come from that kind's
  function: the kind computed by a second function;
- a figure whose name spells out its case (model, format, card, context) and whose value is not
  what the kind's function gives for that case: the name and the number disagree;
- two names whose values come from the same function with the same arguments: one quantity
  named twice;
- a module of ``gpulab.course`` (the chapters' figures and the fact-check's derivations) that
  calls the functions under the basis directly (``perf.decode_tokens_per_s``,
  ``perf.decode_bytes_per_step``, ``memory.weight_bytes``, ``CPUSpec.peak_fp32_flops``)
  instead of ``basis``.

    python tools/checks/one_basis.py   # what it finds; exit 1 when it finds anything
"""

from __future__ import annotations

import ast
import importlib
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tools.checks.figure_names` when this file runs as a script
from tools.checks import figure_names  # noqa: E402

# The spellings of figure names (tools/checks/figure_names.py) -> the tables' names.
MODELS, DEVICES = figure_names.MODELS, figure_names.CARDS
FORMATS = {
    "fp32": "fp32",
    "fp16": "fp16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
    "nf4": "nf4",
    "q80": "q8_0",
    "q40": "q4_0",
    "q4km": "q4_k_m",
}
CLOCKS = {"base": "base", "allcore": "all-core", "maxturbo": "turbo"}

_ALT = {k: "|".join(sorted(v, key=len, reverse=True)) for k, v in [("m", MODELS), ("f", FORMATS)]}
_DEVICE = "|".join(sorted(DEVICES, key=len, reverse=True))
_CASE = (
    rf"(?P<model>{_ALT['m']})_(?P<fmt>{_ALT['f']})"
    rf"(?:_(?P<device>{_DEVICE}))?(?:_(?P<ctx>\d+)k)?"
)

# (pattern of a name, the kind it says; the named groups, where present, give the arguments)
KIND_NAMES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(rf"^(?:{_CASE}_)?\w*bound_(?:tok_s|lo|hi)$"), "decode bound"),
    (re.compile(rf"^(?:{_CASE}_)?\w*read(?:_per_token)?_gb$"), "bytes read per token"),
    (re.compile(rf"^(?:{_CASE}_)?\w*offload_tok_s$"), "offloaded decode bound"),
    (re.compile(rf"^(?P<model>{_ALT['m']})_(?P<fmt>{_ALT['f']})_gb$"), "model size"),
    (re.compile(rf"^(?:(?P<model>{_ALT['m']})_)?\w*full_finetune_gb$"), "full fine-tune memory"),
    (re.compile(r"^cpu_(?P<clocks>base|allcore|maxturbo)_tflops$"), "CPU peak"),
)
# The functions under the basis, by the name a call uses: the course calls basis instead.
UNDER_THE_BASIS = {
    "decode_tokens_per_s": "decode bound",
    "decode_bytes_per_step": "bytes read per token",
    "weight_bytes": "model size",
    "peak_fp32_flops": "CPU peak",
}


def kind_of(name: str) -> tuple[str, dict[str, str]] | None:
    """The kind a figure's name says, and the case its name spells out (may be empty)."""
    for pattern, kind in KIND_NAMES:
        m = pattern.match(figure_names.canonical(name))
        if m:
            return kind, {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def _named_case(kind: str, case: dict[str, str]) -> dict[str, object] | None:
    """The arguments a fully spelt name gives its kind's function; None when it spells less.
    A context the name does not state is the function's default (an empty cache for a bound
    and a read, 4K for an offloaded bound)."""
    if kind == "CPU peak":
        return {"cpu": "Core i9-13900K", "clocks": CLOCKS[case["clocks"]]}
    if "model" not in case:
        return None
    args: dict[str, object] = {"model": MODELS[case["model"]]}
    if kind == "full fine-tune memory":
        return args
    args["fmt"] = FORMATS[case["fmt"]]
    if "device" in case and kind == "decode bound":
        args["device"] = DEVICES[case["device"]]
    elif "device" in case and kind == "offloaded decode bound":
        args["gpu"] = DEVICES[case["device"]]
    elif kind == "decode bound":
        return None
    if "ctx" in case:
        args["context"] = int(case["ctx"]) * 1024
    return args


def _differs(a: float, b: float) -> bool:
    return not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def figure_problems(by_chapter: dict[str, dict]) -> list[str]:
    """What the figures of each chapter (chapter -> name -> value) break of one basis."""
    from gpulab.estimate import basis

    problems: list[str] = []
    calls: dict[tuple, set[str]] = defaultdict(set)
    for chapter, figures in by_chapter.items():
        for name, value in figures.items():
            said = kind_of(name)
            quantity = value if isinstance(value, basis.Quantity) else None
            if quantity is not None:
                calls[(quantity.function, quantity.args)].add(name)
            if said is None:
                continue
            kind, case = said
            if quantity is None:
                problems.append(
                    f"{chapter}: {name} = {value!r} is a {kind}, computed outside "
                    f"{basis.KINDS[kind]}: a second function for one kind"
                )
            elif quantity.kind != kind:
                problems.append(
                    f"{chapter}: {name} names a {kind} and holds a {quantity.kind} "
                    f"({quantity.call})"
                )
            named = _named_case(kind, case)
            if named is None:
                continue
            function = getattr(basis, basis.KINDS[kind].rsplit(".", 1)[-1])
            meant = function(**named)
            if _differs(float(value), float(meant)):
                problems.append(
                    f"{chapter}: {name} is {float(value):.6g}, but its name says "
                    f"{meant.call} = {float(meant):.6g}"
                )
            elif quantity is not None and any(
                dict(quantity.args).get(k) != v for k, v in named.items()
            ):
                problems.append(
                    f"{chapter}: {name} is computed as {quantity.call}, not as its name says, "
                    f"{meant.call}"
                )
    for (function, args), names in sorted(calls.items(), key=lambda kv: sorted(kv[1])):
        if len(names) > 1:
            shown = ", ".join(f"{k}={v!r}" for k, v in args)
            problems.append(
                f"one quantity, {len(names)} names: {', '.join(sorted(names))} are all "
                f"{function.rsplit('.', 1)[-1]}({shown})"
            )
    return problems


def code_problems(package: Path) -> list[str]:
    """Calls, in the modules of `package`, to the functions under the basis."""
    problems = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            if name in UNDER_THE_BASIS:
                problems.append(
                    f"{path.relative_to(ROOT)}:{node.lineno}: a {UNDER_THE_BASIS[name]} "
                    f"computed by {name}, not by gpulab.estimate.basis"
                )
    return problems


def chapters() -> dict[str, dict]:
    """Each chapter's figures, by its figures module's short name."""
    from gpulab.course.figures import CHAPTER_NOTEBOOKS

    return {
        module.rsplit(".", 1)[-1]: importlib.import_module(module).figures()
        for module in CHAPTER_NOTEBOOKS.values()
    }


def main() -> int:
    """Print what breaks one basis; 1 when anything does."""
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    found = figure_problems(chapters()) + code_problems(ROOT / "src" / "gpulab" / "course")
    for line in found:
        print(line)
    print(f"{len(found)} problems of one basis per quantity")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
