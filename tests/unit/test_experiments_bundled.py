"""Bundled studies: every TOML file in experiments/studies validates and is named after its file."""

from __future__ import annotations

import pytest

from dpbandits._core.errors import StudyError
from dpbandits.experiments.bundled import bundled_study_text, list_bundled_studies, load_bundled_study

NAMES = [study.name for study in list_bundled_studies()]


def test_bai_smoke_is_bundled() -> None:
    assert "bai-smoke" in NAMES
    assert "Sequential Halving" in {s.name: s.description for s in list_bundled_studies()}["bai-smoke"]


@pytest.mark.parametrize("name", NAMES)
def test_every_bundled_study_validates(name: str) -> None:
    study = load_bundled_study(name)
    assert study.name == name, "a bundled study's name must be its file name (dpbandits reproduce NAME)"
    assert study.description, "a bundled study needs a description for `dpbandits list`"
    assert study.cells()


def test_unknown_bundled_study_lists_the_available_ones() -> None:
    with pytest.raises(StudyError, match=r"bundled study must be one of \[.*'bai-smoke'.*\]; got 'nope'"):
        bundled_study_text("nope")
