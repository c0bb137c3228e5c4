"""dpbandits: differentially private bandit algorithms, with audits and a study runner.

Layers (imports go downward only): ``_core`` → ``privacy`` → ``envs`` → ``algorithms`` →
``audit`` → ``experiments`` → ``cli``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpbandits")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
