"""One public API: the main classes importable from ``dpbandits`` itself (issue 14)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpbandits
from dpbandits.algorithms.bai.dp_bai import DPBAI


def test_the_main_classes_are_importable_from_the_package_and_load_lazily() -> None:
    for name in dpbandits.__all__:
        assert getattr(dpbandits, name) is not None, name
    assert dpbandits.DPBAI is DPBAI
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = dpbandits.Nope  # type: ignore[attr-defined]
    # importing the package imports no algorithm, no SciPy, no OpenDP
    code = "import sys, dpbandits; print(sorted(m for m in sys.modules if m.startswith(('scipy', 'opendp', 'dpbandits.'))))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
