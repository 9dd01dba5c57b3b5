"""The boundary probe: every public function of every layer, called with hostile values.

Run as a script (``python -m tests.unit.boundary_probe``) by ``test_boundary.py``, in a child
process with an address-space limit, so that a function which lets a value through and then
loops or allocates without bound cannot take the test run (or the machine) with it. It prints
one JSON object: the public functions per layer, which are checked, and the problems.

A public function is a function in its module's ``__all__``, defined in that module. For each
of its parameters the probe takes the values no argument of the parameter's annotation can be
(a string where a number goes, NaN, infinity, 10**400, a bool where an int goes, None where
None is not allowed, an object of no class it names...) and calls the function with that one
argument, by keyword. ``@checked`` checks the arguments given before the body runs, so a
refusal names the parameter (``GpulabConfigError.field``) and nothing else happens; any other
outcome is a problem: a result, another exception, or a refusal that names something else.
Which values are hostile is read from the annotation here, independently of the checkers.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import math
import os
import signal
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any

import gpulab
from gpulab.core.errors import GpulabConfigError

# The layers whose public functions must check what they are given, bottom to top.
LAYERS = ("core", "reference", "machine", "estimate", "bench", "ui", "course")
SECONDS_PER_CALL = 10
# The validation layer itself: its functions are the checks (and build them), so they take
# annotations, rules and values of any kind on purpose.
VALIDATION_MODULES = ("gpulab.core.constraints", "gpulab.core.checkers", "gpulab.core.validate")


class Stranger:
    """An object of no class any parameter names, and not callable."""

    def __repr__(self) -> str:
        return "Stranger()"


NAN, INF = float("nan"), float("inf")
# Candidates, each refused by some annotations; `hostile` picks those an annotation refuses.
CANDIDATES: tuple[Any, ...] = (
    None,
    "x",
    b"x",
    True,
    3,
    1.5,
    NAN,
    INF,
    -INF,
    10**400,
    [Stranger()],
    ("x", 1),
    Stranger(),
)
UNSURE = object()  # the annotation's allowed values are not known here: never called hostile


def public_functions(layers: Sequence[str] = LAYERS) -> dict[str, list[Callable]]:
    """Each layer's public functions (its modules' ``__all__``, defined there), by layer."""
    found: dict[str, list[Callable]] = {}
    for layer in layers:
        found[layer] = []
        for name in gpulab.LAYERS[layer]:
            module = importlib.import_module(f"gpulab.{layer}.{name}")
            for attr in getattr(module, "__all__", ()):
                obj = getattr(module, attr, None)
                if (
                    inspect.isfunction(obj)
                    and obj.__module__ == module.__name__
                    and module.__name__ not in VALIDATION_MODULES
                ):
                    found[layer].append(obj)
    return found


def qualname(fn: Callable) -> str:
    """module.function."""
    return f"{fn.__module__}.{fn.__name__}"


def parameters(fn: Callable) -> list[inspect.Parameter]:
    """The parameters a caller names (not *args, **kwargs)."""
    return [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def annotation_of(fn: Callable, param: inspect.Parameter) -> Any:
    """The parameter's annotation, evaluated in the function's module where possible."""
    ann = param.annotation
    if not isinstance(ann, str):
        return ann
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    try:
        return eval(ann, namespace, {})  # noqa: S307 - annotations of the library's own modules
    except Exception:
        return ann  # a name imported only for type checking: judged by its text


def _allowed_by_names(text: str, value: Any) -> Any:
    names = {part.strip().rsplit(".", 1)[-1] for part in text.split("|")}
    if not all(n.isidentifier() for n in names):
        return UNSURE
    if value is None:
        return "None" in names
    classes = {c.__name__ for c in type(value).__mro__}
    return bool(classes & names)


def allowed(annotation: Any, value: Any) -> Any:
    """True if some valid argument of `annotation` could be `value`, False if none can, UNSURE
    when this probe cannot tell (it then never uses the value as hostile)."""
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object:
        return UNSURE
    if isinstance(annotation, str):
        return _allowed_by_names(annotation, value)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return allowed(args[0], value)
    if origin in (typing.Union, types.UnionType):
        verdicts = [allowed(a, value) for a in args]
        if True in verdicts:
            return True
        return UNSURE if UNSURE in verdicts else False
    if origin is typing.Literal:
        return value in args and type(value) in {type(a) for a in args}
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return value is True or value is False
    if annotation is int:
        return type(value) is int and abs(value) < 10**300
    if annotation is float:
        return type(value) in (int, float) and abs(value) < 10**300 and math.isfinite(value)
    if annotation is str:
        return isinstance(value, str)
    if annotation is bytes:
        return isinstance(value, bytes)
    if origin in (list, tuple, Sequence, typing.Sequence) or annotation in (list, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            return False
        items = [a for a in args if a is not Ellipsis]
        return _elements_allowed(items[0], value) if len(items) == 1 else UNSURE
    if origin in (Iterable, typing.Iterable):  # any iterable but text, each element checked
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            return False
        if not isinstance(value, (list, tuple)) or len(args) != 1:
            return UNSURE
        return _elements_allowed(args[0], value)
    if origin in (dict, Mapping, typing.Mapping) or annotation in (dict, Mapping):
        return isinstance(value, Mapping)
    if origin is Callable or annotation is Callable:
        return callable(value)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return UNSURE


def _elements_allowed(item: Any, values: Sequence[Any]) -> Any:
    """False if any element cannot be an `item`, UNSURE if the probe cannot tell, else True."""
    verdicts = [allowed(item, v) for v in values]
    return False if False in verdicts else UNSURE if UNSURE in verdicts else True


def hostile(annotation: Any) -> list[Any]:
    """The candidates no valid argument of `annotation` can be."""
    return [v for v in CANDIDATES if allowed(annotation, v) is False]


def show(value: Any) -> str:
    """A short, stable rendering of a value for a problem line."""
    return "10**400" if value == 10**400 and type(value) is int else repr(value)[:40]


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def call(fn: Callable, name: str, value: Any) -> str | None:
    """Call fn(name=value): None when it is refused naming `name`, else what happened."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SECONDS_PER_CALL)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            fn(**{name: value})
    except GpulabConfigError as err:
        field = getattr(err, "field", None) or ""
        if field == name or field.startswith((f"{name}[", f"{name}.")):
            return None
        return f"refused, but naming {field or 'nothing'!r}: {str(err)[:80]}"
    except _Timeout:
        return f"ran for {SECONDS_PER_CALL} s without refusing"
    except MemoryError:
        return "ran out of memory without refusing"
    except BaseException as err:  # noqa: BLE001 - every escape is a finding
        return f"{type(err).__name__}: {str(err).splitlines()[0][:80] if str(err) else ''}"
    finally:
        signal.alarm(0)
    return "accepted it"


def probe(fn: Callable) -> tuple[str, list[str]]:
    """How fn is guarded ("checked", "lenient", "not checked", "no parameters") and the
    problems found."""
    params = parameters(fn)
    if not params:
        return "no parameters", []
    if getattr(fn, "__gpulab_lenient__", None):
        return "lenient", []
    if not getattr(fn, "__gpulab_checked__", False):
        return "not checked", [f"{qualname(fn)}: not checked"]
    problems = []
    for param in params:
        if param.kind is param.POSITIONAL_ONLY:
            problems.append(f"{qualname(fn)}({param.name}): positional-only, cannot be named")
            continue
        values = hostile(annotation_of(fn, param))
        if not values:
            problems.append(
                f"{qualname(fn)}({param.name}): its annotation "
                f"{getattr(param.annotation, '__name__', param.annotation)!s} refuses nothing "
                "the probe knows to be wrong"
            )
            continue
        for value in values:
            outcome = call(fn, param.name, value)
            if outcome is not None:
                problems.append(f"{qualname(fn)}({param.name}={show(value)}): {outcome}")
    return "checked", problems


def undeclared(layers: Sequence[str] = LAYERS) -> list[str]:
    """Modules of the layers that declare no ``__all__``: their public API cannot be read."""
    return [
        f"gpulab.{layer}.{name}: no __all__ (a module names its public API)"
        for layer in layers
        for name in gpulab.LAYERS[layer]
        if not hasattr(importlib.import_module(f"gpulab.{layer}.{name}"), "__all__")
    ]


def main() -> None:
    """Probe the layers named on the command line (default: all) and print JSON."""
    layers = sys.argv[1:] or list(LAYERS)
    os.chdir(tempfile.mkdtemp(prefix="gpulab-boundary-"))  # a stray write lands here
    result: dict[str, Any] = {"layers": {}, "problems": undeclared(layers), "lenient": {}}
    for layer, functions in public_functions(layers).items():
        counts = {"public": len(functions), "with_parameters": 0, "checked": 0, "lenient": 0}
        for fn in functions:
            kind, problems = probe(fn)
            counts["with_parameters"] += kind != "no parameters"
            counts["checked"] += kind == "checked"
            counts["lenient"] += kind == "lenient"
            if kind == "lenient":
                result["lenient"][qualname(fn)] = fn.__gpulab_lenient__
            result["problems"].extend(problems)
        result["layers"][layer] = counts
    print(json.dumps(result))


if __name__ == "__main__":
    main()
