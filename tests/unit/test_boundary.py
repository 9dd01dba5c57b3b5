"""Every public function checks what it is given (issue 30): the boundary test.

``boundary_probe`` enumerates every public function of every layer (each module's
``__all__``) and calls it with the values no argument of each parameter's annotation can be,
one parameter at a time. Each call must be refused before any work, with a
``GpulabConfigError`` naming the parameter. A new public function without ``@checked`` (or
``@lenient`` with its reason) fails here.

The probe runs in a child process with an address-space limit of 2 GiB and a time limit, so a
function that lets a value through and then loops or allocates cannot take the run with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.unit import boundary_probe as probe

ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 2 * 1024**3
TIMEOUT_S = 300


def _run_probe(*args: str) -> dict:
    limit = textwrap.dedent(
        f"""
        import resource, runpy, sys
        resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))
        sys.argv = ["boundary_probe", *{list(args)!r}]
        runpy.run_module("tests.unit.boundary_probe", run_name="__main__")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", limit],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def result() -> dict:
    """The probe's result over every layer."""
    return _run_probe()


def test_every_public_function_refuses_hostile_values_naming_the_parameter(result):
    """No public function takes a wrong type, NaN, an infinity, 10**400 or an unknown object
    past its boundary, and each refusal names the parameter."""
    assert result["problems"] == []


def test_the_probe_covers_every_layer(result):
    """The probe really ran: every layer has public functions, and those with parameters are
    all checked or lenient for a stated reason."""
    layers = result["layers"]
    assert set(layers) == set(probe.LAYERS)
    for layer, counts in layers.items():
        assert counts["public"] > 0, layer
        assert counts["checked"] + counts["lenient"] == counts["with_parameters"], (layer, counts)


@pytest.mark.parametrize(
    "annotation, value, expected",
    [
        (int, True, False),
        (int, 3, True),
        (float, float("nan"), False),
        (float, 10**400, False),
        (float, 3, True),
        ("int | None", None, True),
        ("torch.device | str", "x", True),
        ("torch.device", "x", False),
        (list[int], "abc", False),
        (list[int], [probe.Stranger()], False),
        (tuple[str, ...], ("x", "y"), True),
        (Iterable[int], "abc", False),
        (Iterable[int], 3, False),
        (Iterable[int], [1, 2], True),
        (Iterable[int], [1, "2"], False),
        (Iterable[int], {1: 2}.values(), probe.UNSURE),
    ],
)
def test_the_probe_reads_annotations_independently_of_the_checkers(annotation, value, expected):
    """Which values are hostile comes from the annotation's types, by hand."""
    assert probe.allowed(annotation, value) is expected


def test_the_probe_finds_a_function_that_lets_a_value_through():
    """An unchecked function, one checked with a loose annotation, and a refusal that names
    another parameter are each reported; a lenient function is exempt."""
    from gpulab.core.errors import GpulabConfigError
    from gpulab.core.validate import checked, lenient

    def unchecked(n: int) -> int:
        return n

    @checked
    def loose(n: object, m: int = 1) -> int:
        return m

    @lenient("shows any value")
    def shows(n: object) -> str:
        return str(n)

    def misnamed(n: int) -> None:
        raise GpulabConfigError("wrong field", "other")

    for fn in (unchecked, loose, shows):
        fn.__module__ = "demo"
    assert probe.probe(unchecked) == ("not checked", ["demo.unchecked: not checked"])
    assert probe.probe(loose) == (
        "checked",
        ["demo.loose(n): its annotation object refuses nothing the probe knows to be wrong"],
    )
    assert probe.probe(shows) == ("lenient", [])
    assert probe.call(misnamed, "n", "x") == "refused, but naming 'other': wrong field"
    assert probe.call(unchecked, "n", "x") == "accepted it"
    assert probe.call(lambda n: n + 1, "n", "x").startswith("TypeError")
