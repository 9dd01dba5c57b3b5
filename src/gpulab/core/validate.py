"""The validation layer: one set of rules for every public function and configuration.

A public function states what it accepts in its annotations, and ``@checked`` enforces them
before the body runs; a dataclass decorated with ``@checked`` checks its fields the same way
after ``__init__``. A bad value raises ``GpulabConfigError`` (a ``ValueError``) whose
``field`` is the parameter's name and whose message says what is allowed:

    @checked
    def largest_batch(spec: ModelSpec, budget_bytes: PositiveFloat,
                      mode: Annotated[str, OneOf(("inference", "training"))] = "inference"): ...

The rules, the same everywhere:

- ``bool`` is strict: only ``True`` or ``False`` (the string ``"False"`` is not false);
- ``int`` is an integer that is not a bool; ``float`` is any real number that is finite;
  both are at most ``MAX_MAGNITUDE`` in size (no size in this course comes near it, and
  ``10**400`` would otherwise overflow deep inside), and a nonzero float is at least
  ``MIN_MAGNITUDE`` (``5e-324`` would turn a division into an infinity);
- ``Annotated[..., Positive]``, ``AtLeast(x)``, ``AtMost(x)``, ``Between(a, b)`` bound it;
- ``Annotated[str, OneOf(choices)]`` is a known choice, with a "did you mean" for near misses;
- a class (``ModelSpec``, ``GPUSpec``, ...) is an instance of it, else the message names both
  types and, where the class has a ``__validation_hint__``, how to get one;
- ``X | None`` also allows None; ``list[X]`` and ``tuple[X, ...]`` check every element;
- ``Iterable[X]`` is any iterable but text (dict values, a generator: read once and handed on
  as a list), every element checked;
- ``Callable`` is anything callable;
- anything else (``Any``, an annotation that cannot be resolved) is not checked.

A value that passes the check works: the function receives it as a plain Python number. An
``int`` parameter given a NumPy integer gets ``operator.index`` of it; a ``float`` parameter
given a NumPy float or a ``fractions.Fraction`` gets ``float`` of it (and a NumPy integer, a
plain int); a NumPy bool becomes a bool; each element of a ``list`` or ``tuple`` is handed on
the same way, and a dataclass stores its fields so. Builtin ints and floats are passed as
they are: an int given to a float parameter stays an int, so a label prints ``850``, not
``850.0``. (torch's ``manual_seed`` refuses ``np.int64``, and ``Fraction`` has no ``:g``
format: without this a value would pass the check and fail deep inside.)

The rules themselves live in ``gpulab.constraints`` and the checkers that annotations compile
to in ``gpulab.checkers``; this module is the layer's public face and exports them with the
decorator, so a module needs one import line.

Defaults are trusted: only the arguments a caller passes are checked. The layer is plain
standard library, so it also runs in Pyodide. (pydantic's ``validate_call`` was tried first:
it failed on annotations imported under ``TYPE_CHECKING``, lets a str through a dataclass
field and prints four lines ending in a URL.)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from gpulab.core.checkers import DEPTH, Checker, boundary, check_value, resolve
from gpulab.core.constraints import (
    MAX_MAGNITUDE,
    MIN_MAGNITUDE,
    AtLeast,
    AtMost,
    Between,
    Fraction,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    Positive,
    PositiveFloat,
    PositiveInt,
    did_you_mean,
)
from gpulab.core.errors import GpulabConfigError

__all__ = [
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "AtLeast",
    "AtMost",
    "Between",
    "Fraction",
    "NonEmpty",
    "NonNegativeFloat",
    "NonNegativeInt",
    "OneOf",
    "Positive",
    "PositiveFloat",
    "PositiveInt",
    "boundary",
    "checked",
    "check_value",
    "did_you_mean",
    "lenient",
    "require_positive_ints",
    "validate_fields",
]

# --------------------------------------------------------------------------- functions


def _function_checkers(
    fn: Callable,
) -> tuple[list[tuple[str, Checker | None]], dict[str, Checker | None]]:
    """(positional parameters in order, every parameter by name) with their checkers."""
    namespace = getattr(inspect.unwrap(fn), "__globals__", {})
    positional, by_name = [], {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        checker = resolve(param.annotation, namespace)
        by_name[param.name] = checker
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional.append((param.name, checker))
    return positional, by_name


def checked(obj: Any) -> Any:
    """Decorator: check a function's arguments (or a dataclass's fields) against its annotations.

    The annotations are resolved at the first call, when the module that defines them has
    finished importing.
    """
    if isinstance(obj, type):
        return _checked_class(obj)
    fn = obj
    compiled: list[Any] = []

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not compiled:
            compiled.append(_function_checkers(fn))
        positional, by_name = compiled[0]
        # the body gets the checked values as normalised (np.int64 -> int, Fraction -> float)
        args = (
            tuple(
                value if check is None else check(name, value)
                for (name, check), value in zip(positional, args, strict=False)
            )
            + args[len(positional) :]
        )
        for name, value in kwargs.items():
            check = by_name.get(name)
            if check is not None:
                kwargs[name] = check(name, value)
        token = DEPTH.set(DEPTH.get() + 1)
        try:
            return fn(*args, **kwargs)
        finally:
            DEPTH.reset(token)

    wrapper.__gpulab_checked__ = True  # type: ignore[attr-defined]
    return wrapper


def _field_checkers(cls: type) -> list[tuple[str, Checker]]:
    namespace = vars(sys.modules[cls.__module__])
    out = []
    for f in dataclasses.fields(cls):
        checker = resolve(f.type, namespace)
        if checker is not None:
            out.append((f.name, checker))
    return out


def validate_fields(obj: Any) -> None:
    """Check every field of a dataclass instance against its annotation, storing it normalised."""
    cls = type(obj)
    cache = cls.__dict__.get("_gpulab_field_checkers")
    if cache is None:
        cache = _field_checkers(cls)
        type.__setattr__(cls, "_gpulab_field_checkers", cache)
    for name, check in cache:
        value = getattr(obj, name)
        plain = check(name, value)
        if plain is not value:
            object.__setattr__(obj, name, plain)  # a frozen dataclass too: it is still being made


def _checked_class(cls: type) -> type:
    """Make a dataclass check its fields as soon as they are set.

    With a ``__post_init__`` of its own, the check runs first, so that method only sees
    values of the right kind; without one, the check runs at the end of ``__init__``
    (a dataclass's ``__init__`` calls ``__post_init__`` only if it existed when the class
    was made).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"@checked on a class needs a dataclass, not {cls.__name__}")
    original = cls.__dict__.get("__post_init__")
    if original is not None:

        @functools.wraps(original)
        def __post_init__(self: Any, *args: Any) -> None:
            validate_fields(self)
            original(self, *args)

        cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
    else:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            if type(self) is cls:  # a subclass checks its own fields at the end of its init
                validate_fields(self)

        cls.__init__ = __init__  # type: ignore[method-assign]
    cls.__gpulab_checked__ = True  # type: ignore[attr-defined]
    return cls


def lenient(reason: str) -> Callable[[Callable], Callable]:
    """Decorator: mark a public function that reads odd values on purpose, with the reason.

    For the few functions whose job is to take whatever comes (a version string a driver
    reports, any number a form shows): the boundary test (tests/unit/test_boundary.py) exempts
    them and lists their reasons. Every other public function is ``@checked``.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise GpulabConfigError(
            "reason: say why the function reads odd values on purpose", "reason"
        )

    def mark(fn: Callable) -> Callable:
        fn.__gpulab_lenient__ = reason  # type: ignore[attr-defined]
        return fn

    return mark


# --------------------------------------------------------------------------- imperative forms


def require_positive_ints(**values: object) -> None:
    """Raise GpulabConfigError naming the first value that is not a positive integer."""
    for name, value in values.items():
        check_value(name, value, PositiveInt)
