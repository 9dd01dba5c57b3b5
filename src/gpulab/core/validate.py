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

The rules themselves live in ``gpulab.constraints``; this module is the layer's public face
and exports them with the decorator, so a module needs one import line.

Defaults are trusted: only the arguments a caller passes are checked. The layer is plain
standard library, so it also runs in Pyodide. (pydantic's ``validate_call`` was tried first:
it failed on annotations imported under ``TYPE_CHECKING``, lets a str through a dataclass
field and prints four lines ending in a URL.)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import math
import numbers
import operator
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Callable as CallableABC
from typing import Annotated, Any

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
    Rule,
    _Bounds,
    did_you_mean,
    show,
)
from gpulab.core.errors import GpulabConfigError

_NONE_TYPE = type(None)

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
    "require_positive_ints",
    "validate_fields",
]

# --------------------------------------------------------------------------- checkers

# A checker raises on a bad value and returns the value to hand on (normalised, see above).
Checker = Callable[[str, Any], Any]


def _check_bool(name: str, value: Any) -> bool:
    # numpy's bool_ comes out of comparisons on arrays; it is as strict as bool
    if value is True or value is False:
        return value
    if type(value).__name__ == "bool_":
        return bool(value)
    raise GpulabConfigError(f"{name}={show(value)} must be True or False", name)


# How deep the current call is in @checked functions. The size limits guard the public
# boundary: a reader's 10**400 is refused there, while a value the library derived itself (an
# exabyte of activations for a 10**6-token batch) may pass between its own functions; the
# result is still checked to be finite by the property tests.
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("gpulab_checked_depth", default=0)


def _at_boundary() -> bool:
    return _DEPTH.get() == 0


@contextlib.contextmanager
def boundary() -> Iterator[None]:
    """Check calls made inside the block as if the reader made them (size limits included).

    For a function that hands its caller's arguments on unchecked (``**kwargs`` passed to an
    estimator, the text of a calculator's form read into numbers): the hand-off is the
    boundary, so the limits apply there.
    """
    token = _DEPTH.set(0)
    try:
        yield
    finally:
        _DEPTH.reset(token)


def _plain_int(value: numbers.Integral) -> int:
    """A builtin int (or int subclass) as it is; any other integer as a builtin int."""
    return value if isinstance(value, int) else operator.index(value)


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GpulabConfigError(
            f"{name}={show(value)} must be an integer, not {type(value).__name__}", name
        )
    if abs(int(value)) > MAX_MAGNITUDE and _at_boundary():
        raise GpulabConfigError(
            f"{name}={show(value)} is too large (at most {MAX_MAGNITUDE:g})", name
        )
    return _plain_int(value)


def _check_float(name: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise GpulabConfigError(
            f"{name}={show(value)} must be a number, not {type(value).__name__}", name
        )
    try:
        number = float(value)
    except (OverflowError, ValueError):
        number = math.inf
    if math.isnan(number):
        raise GpulabConfigError(f"{name}={show(value)} must be a finite number, not NaN", name)
    if math.isinf(number) or (abs(number) > MAX_MAGNITUDE and _at_boundary()):
        raise GpulabConfigError(
            f"{name}={show(value)} must be a finite number of at most {MAX_MAGNITUDE:g}", name
        )
    if number != 0 and abs(number) < MIN_MAGNITUDE and _at_boundary():
        raise GpulabConfigError(
            f"{name}={show(value)} is too small to mean anything here: a nonzero number must be "
            f"at least {MIN_MAGNITUDE:g} in size",
            name,
        )
    if isinstance(value, numbers.Integral):
        return _plain_int(value)  # an integer stays one, as a builtin int given here does
    # np.float64 is a float subclass, but its repr ("np.float64(0.5)") would reach messages
    return value if type(value) is float else number


def _check_callable(name: str, value: Any) -> Any:
    if not callable(value):
        raise GpulabConfigError(
            f"{name}={show(value)} is not callable: pass the function "
            f"itself, not a {type(value).__name__} it returned",
            name,
        )
    return value


def _check_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise GpulabConfigError(
            f"{name}={show(value)} must be a string, not {type(value).__name__}", name
        )
    return value


_SCALARS: dict[Any, Checker] = {
    bool: _check_bool,
    int: _check_int,
    float: _check_float,
    str: _check_str,
}
_KIND = {bool: "True or False", int: "an integer", float: "a number", str: "a string"}


def _class_checker(cls: type) -> Checker:
    def check(name: str, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        hint = getattr(cls, "__validation_hint__", "")
        raise GpulabConfigError(
            f"{name} must be a {cls.__name__}, not {type(value).__name__} {show(value)}"
            + (f"; {hint}" if hint else ""),
            name,
        )

    return check


def _named_class_checker(names: set[str], optional: bool) -> Checker:
    """For annotations that name a class imported only for type checking: compare by name."""

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return value
        if names & {c.__name__ for c in type(value).__mro__}:
            return value
        raise GpulabConfigError(
            f"{name} must be a {' or '.join(sorted(names))}, not "
            f"{type(value).__name__} {show(value)}",
            name,
        )

    return check


def _with_rules(base: Checker, rules: list[Rule], noun: str) -> Checker:
    def check(name: str, value: Any) -> Any:
        value = base(name, value)
        for rule in rules:
            if isinstance(rule, _Bounds):
                rule.check(name, value, noun)
            else:
                rule.check(name, value)
        return value

    return check


def _sequence_checker(item: Checker | None, kinds: tuple[type, ...], label: str) -> Checker:
    def check(name: str, value: Any) -> Any:
        if isinstance(value, (str, bytes)) or not isinstance(value, kinds):
            raise GpulabConfigError(
                f"{name}={show(value)} must be {label}, not {type(value).__name__}", name
            )
        if item is None:
            return value
        elements = [item(f"{name}[{i}]", element) for i, element in enumerate(value)]
        # a plain list or tuple is rebuilt when an element changed; any other sequence (a
        # named tuple, an array) is handed on as it came, its elements already checked
        if type(value) in (list, tuple) and any(
            a is not b for a, b in zip(elements, value, strict=True)
        ):
            return type(value)(elements)
        return value

    return check


def _union_checker(arms: list[tuple[Any, Checker | None]], optional: bool) -> Checker | None:
    if any(check is None for _, check in arms):
        return None  # one arm accepts anything

    def check(name: str, value: Any) -> Any:
        if value is None and optional:
            return value
        errors = []
        for _, arm in arms:
            try:
                return arm(name, value)
            except GpulabConfigError as err:
                errors.append(err)
        # report the arm of the value's own kind ("x=nan must be finite"), else list the kinds
        for (kind, _), err in zip(arms, errors, strict=True):
            if isinstance(kind, type) and isinstance(value, kind) and not isinstance(value, bool):
                raise err
        kinds = [_KIND.get(k, getattr(k, "__name__", str(k))) for k, _ in arms]
        if optional:
            kinds.append("None")
        raise GpulabConfigError(f"{name}={show(value)} must be {' or '.join(kinds)}", name)

    return check


def _compile(annotation: Any) -> Checker | None:
    """A checker for a resolved annotation; None when nothing is checked."""
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object:
        return None
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *extras = typing.get_args(annotation)
        rules = [e for e in extras if isinstance(e, Rule)]
        checker = _compile(base)
        if checker is None:
            return None
        noun = "integer" if _base_type(base) is int else "number"
        return _with_rules(checker, rules, noun) if rules else checker
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        optional = _NONE_TYPE in args
        arms = [(_base_type(a), _compile(a)) for a in args if a is not _NONE_TYPE]
        if len(arms) == 1:
            single = arms[0][1]
            if single is None:
                return None
            return (
                (lambda name, value: None if value is None else single(name, value))
                if optional
                else single
            )
        return _union_checker(arms, optional)
    if origin in (list, tuple, Sequence, typing.Sequence):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        item = _compile(args[0]) if len(args) == 1 or (origin is tuple and len(args) == 1) else None
        kinds = (list, tuple) if origin in (list, tuple) else (Sequence,)
        label = (
            "a list" if origin is list else "a tuple or list" if origin is tuple else "a sequence"
        )
        return _sequence_checker(item, kinds, label)
    if origin in (dict, Mapping, typing.Mapping):
        return _sequence_checker_for_mapping()
    if origin is CallableABC or annotation is CallableABC:
        return _check_callable
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if isinstance(annotation, type):
        return _class_checker(annotation)
    return None


def _sequence_checker_for_mapping() -> Checker:
    def check(name: str, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise GpulabConfigError(
                f"{name} must be a mapping (a dict), not {type(value).__name__}", name
            )
        return value

    return check


def _base_type(annotation: Any) -> Any:
    """int for Annotated[int, ...], list for list[float], the class itself otherwise."""
    if typing.get_origin(annotation) is Annotated:
        return _base_type(typing.get_args(annotation)[0])
    return typing.get_origin(annotation) or annotation


_IDENTIFIERS = re.compile(r"^[A-Za-z_][\w.]*(\s*\|\s*[A-Za-z_][\w.]*)*$")


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Checker | None:
    """Evaluate a (possibly string) annotation in its module and compile it.

    A string that names classes imported only under TYPE_CHECKING cannot be evaluated; if it
    is a plain ``A | B | None``, the value is checked by its class names instead.
    """
    if not isinstance(annotation, str):
        return _compile(annotation)
    try:
        resolved = eval(annotation, namespace, {})  # noqa: S307 - annotations of our own modules
    except Exception:
        if not _IDENTIFIERS.match(annotation.strip()):
            return None
        names = {part.strip().rsplit(".", 1)[-1] for part in annotation.split("|")}
        optional = "None" in names
        names.discard("None")
        return _named_class_checker(names, optional) if names else None
    return _compile(resolved)


def check_value(name: str, value: Any, annotation: Any) -> None:
    """Check one value against an annotation, as ``@checked`` does for an argument."""
    checker = _resolve(annotation, {}) if isinstance(annotation, str) else _compile(annotation)
    if checker is not None:
        checker(name, value)


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
        checker = _resolve(param.annotation, namespace)
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
        token = _DEPTH.set(_DEPTH.get() + 1)
        try:
            return fn(*args, **kwargs)
        finally:
            _DEPTH.reset(token)

    wrapper.__gpulab_checked__ = True  # type: ignore[attr-defined]
    return wrapper


def _field_checkers(cls: type) -> list[tuple[str, Checker]]:
    namespace = vars(sys.modules[cls.__module__])
    out = []
    for f in dataclasses.fields(cls):
        checker = _resolve(f.type, namespace)
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


# --------------------------------------------------------------------------- imperative forms


def require_positive_ints(**values: object) -> None:
    """Raise GpulabConfigError naming the first value that is not a positive integer."""
    for name, value in values.items():
        check_value(name, value, PositiveInt)
