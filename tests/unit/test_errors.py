"""Tests for gpulab.errors."""

import pytest

from gpulab.core.errors import GpulabConfigError


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError, match="bad device"):
        raise GpulabConfigError("bad device")


def test_render_traceback_is_one_line():
    err = GpulabConfigError("device='tpu' is not a known device; use one of 'auto', 'cpu'.")
    lines = err._render_traceback_()
    assert lines == [
        "GpulabConfigError: device='tpu' is not a known device; use one of 'auto', 'cpu'."
    ]


def test_render_traceback_names_a_subclass():
    class MyError(GpulabConfigError):
        pass

    assert MyError("x")._render_traceback_() == ["MyError: x"]
