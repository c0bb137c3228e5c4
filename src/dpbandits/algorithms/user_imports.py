"""Your own algorithm beside the built-ins: find it by import path or entry point.

A study names a built-in algorithm by its registry name (``name = "dp-bai"``). It names the user's
own algorithm by an **import path**, ``"package.module:Object"``, or by the name of an **entry
point** that an installed package registers in the group ``dpbandits.algorithms``::

    # pyproject.toml of the user's package
    [project.entry-points."dpbandits.algorithms"]
    private-ucb = "my_package.my_module:PrivateUCB"

The object is one of:

* an **agent class** written against the public agent protocol — ``ask()``, ``tell(...)``, ``done``,
  ``recommendation`` and ``privacy`` (see :mod:`dpbandits.algorithms.user_simulation` for the
  multi-armed and dueling forms). The runner constructs one agent per trial with the environment's
  public description (``n_arms``, ``features`` where the environment has them) and the grid's
  parameters (``budget``, ``horizon``, ``epsilon``, ...) as keyword arguments — each only if the
  constructor accepts it — and drives it itself across the trials;
* a **vectorised simulation function** with the built-ins' signature
  ``simulate(env, *, n_trials, rng, **params) -> {metric: array of shape (n_trials,)}``; it either
  registers itself with :func:`~dpbandits.algorithms.registry.register_algorithm` when its module is
  imported, or carries a ``metrics`` attribute (a tuple of the metric names it returns) and,
  optionally, ``privacy`` (a string or a guarantee) and ``proportion_metrics``.

Safety
------
A user's algorithm is ordinary Python code: it runs in the user's own process (and, on the process
and Dask backends, in the worker processes), with the user's rights, exactly as ``import`` would
run it. dpbandits neither sandboxes it nor checks what it does; it only reports its failures as the
user's (:class:`~dpbandits._core.errors.UserAlgorithmError`, one line naming the algorithm and the
step), never as an internal error of dpbandits.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
from importlib.metadata import entry_points
from typing import Any

from dpbandits._core.errors import UserAlgorithmError

__all__ = ["ENTRY_POINT_GROUP", "USER_CODE_PREFIX", "entry_point_target", "is_import_path", "load_user_object",
           "user_code_version"]

ENTRY_POINT_GROUP = "dpbandits.algorithms"
"""The entry-point group where installed packages register their algorithms."""

USER_CODE_PREFIX = "code of "
"""How a run's recorded versions name a user's algorithm's code (``"code of my_module:MyAgent"``)."""

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def is_import_path(name: str) -> bool:
    """Whether ``name`` has the form ``package.module:Object`` (an import path, not a registry name)."""
    return bool(_IMPORT_PATH.match(name))


def entry_point_target(name: str) -> str | None:
    """The ``module:Object`` an installed package registered as ``name``, if any."""
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            return str(entry.value)
    return None


def load_user_object(target: str) -> Any:
    """Import ``package.module:Object`` (or an entry point's target) and return the object.

    The current working directory is searched after every installed location (as ``python -m``
    would search it first), so a module beside the study file can be named when the command runs
    from its directory.

    Raises
    ------
    UserAlgorithmError
        One line: the module cannot be imported (with the exception it raised) or has no such object.
    """
    if not is_import_path(target):
        resolved = entry_point_target(target)
        if resolved is None:
            raise UserAlgorithmError(
                f"{target!r} is neither a registered algorithm, nor an import path 'package.module:Object', "
                f"nor an entry point of group {ENTRY_POINT_GROUP!r}"
            )
        target = resolved
    module_name, _, qualname = target.partition(":")
    if "" not in sys.path and "." not in sys.path:
        sys.path.append("")  # the working directory, after every installed location (no shadowing)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UserAlgorithmError(
            f"cannot import {module_name!r} for algorithm {target!r}: {exc} "
            "(is its directory the working directory or on PYTHONPATH?)"
        ) from exc
    except Exception as exc:
        raise UserAlgorithmError(
            f"importing {module_name!r} for algorithm {target!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    found: Any = module
    for part in qualname.split("."):
        if not hasattr(found, part):
            raise UserAlgorithmError(f"module {module_name!r} has no {qualname!r} (algorithm {target!r})")
        found = getattr(found, part)
    return found


def user_code_version(name: str) -> str:
    """A version of the code of a user's algorithm: the SHA-256 of the file of the module defining it.

    A run records it beside the library versions, so that resuming after the file was edited is
    refused (or recorded, with ``--allow-version-change``) rather than mixing results silently.
    Only that module's file is read: an edit to another module it imports goes unseen.

    Raises
    ------
    UserAlgorithmError
        As :func:`load_user_object`.
    """
    found = load_user_object(name)
    module = sys.modules.get(getattr(found, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    if not path:
        return "no source file"
    try:
        with open(path, "rb") as source:
            return "sha256:" + hashlib.file_digest(source, "sha256").hexdigest()[:16]
    except OSError as exc:
        return f"unreadable ({exc.strerror or type(exc).__name__})"
