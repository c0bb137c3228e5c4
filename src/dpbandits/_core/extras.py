"""How to install an optional extra, said the same way in every error that needs one.

A released dpbandits installs from an index with ``pip install "dpbandits[ml]"``; a clone of the
repository (how the README installs it) with ``pip install ".[ml]"`` from its root. An error
message says both, so that whichever way the user installed it, the advice works as printed.
"""

from __future__ import annotations

__all__ = ["install_advice"]


def install_advice(extra: str) -> str:
    """``pip install "dpbandits[EXTRA]"`` (and, from a clone, ``pip install ".[EXTRA]"``).

    Examples
    --------
    >>> from dpbandits._core.extras import install_advice
    >>> print(install_advice("ml"))
    pip install "dpbandits[ml]" (from a clone of the repository: pip install ".[ml]")
    """
    return f'pip install "dpbandits[{extra}]" (from a clone of the repository: pip install ".[{extra}]")'
