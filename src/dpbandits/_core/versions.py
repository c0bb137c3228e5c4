"""The versions a result depends on: Python and the packages that draw noise, account, compute or store.

:func:`dependency_versions` is what ``dpbandits version`` prints and what a run directory's manifest
records per session; :data:`RESULT_PACKAGES` are the ones that can change a result or a guarantee
(a resumed run refuses to mix them silently, see :mod:`dpbandits.experiments.store`).

Reads package metadata only (no package is imported).
"""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

__all__ = ["OTHER_PACKAGES", "RESULT_PACKAGES", "dependency_versions", "result_versions"]

RESULT_PACKAGES = ("dpbandits", "opendp", "dp-accounting", "numpy", "scipy", "pandas", "pyarrow", "pydantic")
"""Packages whose version can change a result or a guarantee: the library itself, the secure noise
(OpenDP), the accountant (dp-accounting), the numerics (NumPy, SciPy), the readers of logged data
(pandas, pyarrow) and the study parser (pydantic)."""

OTHER_PACKAGES = ("matplotlib", "typer", "rich", "scikit-learn", "dask", "distributed", "fastapi", "sqlalchemy")
"""Packages that draw, print, distribute or serve, but do not change a number (listed when installed)."""


def _installed(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def result_versions() -> dict[str, str]:
    """Python's version and those of the installed :data:`RESULT_PACKAGES` (``{"python": "3.11.7", ...}``)."""
    found = {"python": platform.python_version()}
    for package in RESULT_PACKAGES:
        if (installed := _installed(package)) is not None:
            found[package] = installed
    return found


def dependency_versions() -> dict[str, str]:
    """:func:`result_versions`, then the installed :data:`OTHER_PACKAGES` and the platform."""
    found = result_versions()
    for package in OTHER_PACKAGES:
        if (installed := _installed(package)) is not None:
            found[package] = installed
    found["platform"] = platform.platform()
    return found
