"""Annotations compiled into checkers: the rules ``@checked`` applies, one value at a time.

A checker takes a parameter's name and a value, raises ``GpulabConfigError`` on a bad value
and returns the value to hand on, normalised (``gpulab.core.validate`` says how). Each kind of
annotation has its own: scalars, classes, sequences, iterables, unions, ``Annotated`` with
its rules.
The size limits apply at the public boundary only: ``DEPTH`` counts how deep the current call
is in ``@checked`` functions.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import math
import numbers
import operator
import re
import types
import typing
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from collections.abc import Callable as CallableABC
from typing import Annotated, Any

from gpulab.core.constraints import MAX_MAGNITUDE, MIN_MAGNITUDE, Rule, _Bounds, show
from gpulab.core.errors import GpulabConfigError

__all__ = ["DEPTH", "Checker", "boundary", "check_value", "resolve"]

_NONE_TYPE = type(None)

# A checker raises on a bad value and returns the value to hand on (normalised, see above).
Checker = Callable[[str, Any], Any]


def _check_bool(name: str, value: Any) -> bool:
    # numpy's bool_ comes out of comparisons on arrays; it is as strict as bool
    if value is True or value is False:
        return value
    kind = type(value)  # NumPy 1 names it bool_, NumPy 2 bool; the standard library has no numpy
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):
        return bool(value)
    raise GpulabConfigError(f"{name}={show(value)} must be True or False", name)


# How deep the current call is in @checked functions. The size limits guard the public
# boundary: a reader's 10**400 is refused there, while a value the library derived itself (an
# exabyte of activations for a 10**6-token batch) may pass between its own functions; the
# result is still checked to be finite by the property tests.
DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("gpulab_checked_depth", default=0)


def _at_boundary() -> bool:
    return DEPTH.get() == 0


@contextlib.contextmanager
def boundary() -> Iterator[None]:
    """Check calls made inside the block as if the reader made them (size limits included).

    For a function that hands its caller's arguments on unchecked (``**kwargs`` passed to an
    estimator, the text of a calculator's form read into numbers): the hand-off is the
    boundary, so the limits apply there.
    """
    token = DEPTH.set(0)
    try:
        yield
    finally:
        DEPTH.reset(token)


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


def _iterable_checker(item: Checker | None) -> Checker:
    """Iterable[X]: anything iterable but text, each element checked. A one-shot iterator (a
    generator) is read once to check it and handed on as a list; a collection as it came."""

    def check(name: str, value: Any) -> Any:
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise GpulabConfigError(
                f"{name}={show(value)} must be an iterable (a list, a tuple, dict values ...), "
                f"not {type(value).__name__}",
                name,
            )
        if item is None:
            return value
        elements = [item(f"{name}[{i}]", element) for i, element in enumerate(value)]
        return value if isinstance(value, Collection) else elements

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
    if origin in (Iterable, typing.Iterable) and typing.get_args(annotation):
        return _iterable_checker(_compile(typing.get_args(annotation)[0]))
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


def resolve(annotation: Any, namespace: dict[str, Any]) -> Checker | None:
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
    checker = resolve(annotation, {}) if isinstance(annotation, str) else _compile(annotation)
    if checker is not None:
        checker(name, value)
