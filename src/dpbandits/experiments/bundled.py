"""Bundled studies: the TOML files shipped in ``dpbandits/experiments/studies/``.

A study named ``NAME`` is the file ``studies/NAME.toml``; adding a file there is all it takes to
bundle a study (``dpbandits list`` shows it, ``dpbandits reproduce NAME`` runs it). The files are
package data (``pyproject.toml``: ``experiments/studies/*.toml``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable

from dpbandits._core.errors import StudyError
from dpbandits.experiments.config import Study, parse_study_text

__all__ = ["BundledStudy", "bundled_study_text", "list_bundled_studies", "load_bundled_study"]


@dataclass(frozen=True)
class BundledStudy:
    """A bundled study file: its name (file stem) and the description it declares."""

    name: str
    description: str


def _studies_dir() -> Traversable:
    return files("dpbandits.experiments").joinpath("studies")


def _files() -> dict[str, Traversable]:
    directory = _studies_dir()
    if not directory.is_dir():
        return {}
    return {
        entry.name.removesuffix(".toml"): entry
        for entry in directory.iterdir()
        if entry.is_file() and entry.name.endswith(".toml")
    }


def list_bundled_studies() -> list[BundledStudy]:
    """Every bundled study, sorted by name (the files are parsed, not validated)."""
    found = []
    for name, entry in sorted(_files().items()):
        try:
            description = str(tomllib.loads(entry.read_text(encoding="utf-8")).get("description", ""))
        except tomllib.TOMLDecodeError as exc:
            description = f"(unreadable: {exc})"
        found.append(BundledStudy(name, description))
    return found


def bundled_study_text(name: str) -> str:
    """The TOML text of the bundled study ``name``.

    Raises
    ------
    StudyError
        If there is no such bundled study; the message lists the bundled ones.
    """
    available = _files()
    if name not in available:
        raise StudyError(f"bundled study must be one of {sorted(available)}; got {name!r}")
    return available[name].read_text(encoding="utf-8")


def load_bundled_study(name: str) -> Study:
    """Load and validate the bundled study ``name``.

    Raises
    ------
    StudyError
        If there is no such bundled study or it is invalid.
    """
    return parse_study_text(bundled_study_text(name), source=f"bundled study {name!r}")
