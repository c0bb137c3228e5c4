"""The memory this process may use, and the one rule that refuses what cannot fit in it.

:func:`check_fits` is the rule every size check applies — an algorithm's constructor (a K×K table
of counts, a queue of a round's pulls) and the study cost model
(:mod:`dpbandits.experiments.costs`) alike: a size whose memory is **certainly** above
:func:`memory_limit` is refused with one :class:`~dpbandits._core.errors.InvalidParameterError`
line naming the parameter, its value, the estimate and the limit, before anything is allocated
(instead of a bare ``MemoryError`` deep in NumPy, or a machine that swaps until it is killed).
Estimates are lower bounds, so nothing that fits is refused.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path
from typing import Any

from dpbandits._core.errors import InvalidParameterError

__all__ = ["check_fits", "format_bytes", "memory_limit", "squared"]


def _cgroup_memory_limit() -> float:
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return math.inf
    return float(text) if text.isdigit() else math.inf


def memory_limit() -> float:
    """Bytes this process may use: physical memory, lowered by a finite RLIMIT_AS or cgroup limit."""
    limit = math.inf
    with contextlib.suppress(AttributeError, ValueError, OSError):  # not POSIX: no figure
        limit = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            limit = min(limit, float(soft))
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        pass
    return min(limit, _cgroup_memory_limit())


def format_bytes(value: float) -> str:
    """``value`` bytes in words: ``8 TB``, ``3.2 GB``, ``512 B``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def squared(value: Any) -> float:
    """``float(value)²`` for a size, ``inf`` when it overflows a float (a size check then refuses it)."""
    try:
        number = float(value)
    except OverflowError:
        return math.inf
    return number * number


def check_fits(parameter: str, value: Any, nbytes: float, *, what: str, limit: float | None = None,
               advice: str = "lower") -> None:
    """Refuse ``parameter = value`` when ``what`` needs ``nbytes`` (a lower bound) and that cannot fit.

    Parameters
    ----------
    parameter : str
        The size parameter named in the refusal (``"n_arms"``, ``"budget"``).
    value : object
        Its value.
    nbytes : float
        Lower bound of the memory it needs (``inf`` if it does not even fit a float).
    what : str
        What holds that memory, e.g. ``"double-thompson-sampling's K×K win counts"``.
    limit : float, optional
        Bytes available (default: :func:`memory_limit`).
    advice : str, default "lower"
        What to do with ``parameter`` to need less (``"raise"`` for a resolution or a spacing).

    Raises
    ------
    InvalidParameterError
        One line: ``n_arms = 1000000000000: <what> needs at least 8e+24 B, more than the 16 GB of
        memory available here; lower n_arms``.
    """
    available = memory_limit() if limit is None else float(limit)
    if nbytes > available:
        needed = format_bytes(nbytes) if math.isfinite(nbytes) else "more bytes than a float can count"
        raise InvalidParameterError(
            f"{parameter} = {value}: {what} needs at least {needed}, more than the {format_bytes(available)} of "
            f"memory available here; {advice} {parameter}"
        )
