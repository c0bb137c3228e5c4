"""Every ``Examples`` section in the package's docstrings runs and prints what it says."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import dpbandits
from dpbandits._core.errors import PaperVariantWarning

MODULES = sorted(info.name for info in pkgutil.walk_packages(dpbandits.__path__, "dpbandits."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    with warnings.catch_warnings():
        # the examples of the paper's (invalid) formulas warn by design; every other warning stays an error
        warnings.simplefilter("ignore", PaperVariantWarning)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                                 verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed"
