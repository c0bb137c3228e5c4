"""The files of a run directory: their names, atomic writes, the writer's lock, and the readers of a finished run.

What the results store (:mod:`dpbandits.experiments.store`, which re-exports every public name here)
writes, and what reads a run directory without opening a store: the manifest (validated as untrusted
input). The summary table and the atomic writes are in :mod:`dpbandits.experiments._summary_file`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from dpbandits._core.errors import StudyError
from dpbandits._core.versions import RESULT_PACKAGES
from dpbandits.algorithms.registry import is_builtin_algorithm
from dpbandits.algorithms.user_imports import USER_CODE_PREFIX, user_code_version
from dpbandits.algorithms.user_records import describe_user_algorithm
from dpbandits.experiments._summary_file import describe_os_error
from dpbandits.experiments.config import Study

__all__ = [
    "MANIFEST_NAME",
    "is_in_use",
    "read_manifest",
    "version_change",
]

MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".lock"
STUDY_COPY_NAME = "study.toml"
STUDY_JSON_NAME = "study.json"
CELLS_DIR = "cells"
RUN_FORMAT = 2
_IDENTITY_KEY = "__identity__"  # in every cell file: the cell key, study digest and seed
_MANIFEST_INTERVAL_SECONDS = 1.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_LOG = logging.getLogger("dpbandits.run")
_RESULT_NAMES = frozenset(("python", *RESULT_PACKAGES))


def _recorded_versions(manifest: Mapping[str, Any]) -> Any:
    """The versions of the run's last session (older manifests: the run's ``versions``)."""
    sessions = [session for session in manifest["sessions"] if "versions" in session]
    return sessions[-1]["versions"] if sessions else manifest.get("versions")


def version_change(recorded: Any, current: Mapping[str, str]) -> str | None:
    """How ``current`` differs from ``recorded`` in the versions that can change a result, or None.

    Compared: Python, :data:`~dpbandits._core.versions.RESULT_PACKAGES` and the code of users'
    algorithms (not the platform, nor packages that only draw or print).
    """
    if not isinstance(recorded, dict):
        return "the run records no versions"
    names = sorted(name for name in {*recorded, *current}
                   if name in _RESULT_NAMES or str(name).startswith(USER_CODE_PREFIX))
    changed = [f"{name} {recorded.get(name, 'absent')} -> {current.get(name, 'absent')}"
               for name in names if recorded.get(name) != current.get(name)]
    return ", ".join(changed) or None


_MANIFEST_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (int,), "study": (str,), "study_digest": (str,), "seed": (int,), "trials": (int,),
    "chunk_size": (int,), "sessions": (list,),
}
_MANIFEST_OPTIONAL_FIELDS: dict[str, tuple[type, ...]] = {
    "cells": (dict,), "status": (str,), "versions": (dict,), "created": (str,), "started": (str,),
    "ended": (str, type(None)), "user_algorithms": (dict,),
}


def _user_code_versions(study: Study) -> dict[str, str]:
    """The version of each user's algorithm's code (:func:`~dpbandits.algorithms.user_imports.user_code_version`)."""
    return {USER_CODE_PREFIX + algorithm.name: user_code_version(algorithm.name)
            for algorithm in study.algorithms if not is_builtin_algorithm(algorithm.name)}


def _describe_user_algorithms(study: Study) -> dict[str, Any]:
    """The record of each user's algorithm of ``study`` (see :mod:`dpbandits.algorithms.user_records`)."""
    return {algorithm.name: describe_user_algorithm(study.algorithm_spec(index))
            for index, algorithm in enumerate(study.algorithms) if not is_builtin_algorithm(algorithm.name)}


def _manifest_problem(manifest: Any) -> str | None:
    """What is wrong with the shape of a parsed manifest, or None."""
    if not isinstance(manifest, dict):
        return f"must be a JSON object, got {type(manifest).__name__}"
    for fields, required in ((_MANIFEST_FIELDS, True), (_MANIFEST_OPTIONAL_FIELDS, False)):
        for key, types in fields.items():
            if key not in manifest:
                if required:
                    return f"must have the key {key!r}"
                continue
            value = manifest[key]
            if isinstance(value, bool) or not isinstance(value, types):
                return f"{key!r} must be {' or '.join(t.__name__ for t in types)}, got {json.dumps(value)[:40]}"
    if not all(isinstance(session, dict) for session in manifest["sessions"]):
        return "'sessions' must be a list of objects"
    if not all(isinstance(entry, dict) for entry in manifest.get("cells", {}).values()):
        return "'cells' must map cell keys to objects"
    if manifest.get("cells") and not manifest["sessions"]:
        return "'sessions' must not be empty: the run has cells, and each was computed by a session"
    return None


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """Read and check ``manifest.json`` of a run directory.

    Raises
    ------
    StudyError
        If the directory holds no manifest, or one that is unreadable, not JSON or of the wrong shape.
    """
    path = Path(run_dir) / MANIFEST_NAME
    if Path(run_dir).is_file():
        raise StudyError(f"{str(run_dir)!r} is a file, not a dpbandits run directory")
    try:
        manifest = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise StudyError(f"{str(run_dir)!r} is not a dpbandits run directory (no {MANIFEST_NAME})") from None
    except OSError as exc:
        raise StudyError(f"{str(path)!r} cannot be read: {describe_os_error(exc)}") from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise StudyError(f"{str(path)!r} is not a dpbandits manifest (not UTF-8 JSON: {exc})") from None
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise StudyError(f"{str(path)!r} is not a dpbandits manifest: {problem}")
    return dict(manifest)


def _acquire_lock(directory: Path) -> IO[str] | None:
    """Hold an exclusive ``flock`` on ``RUN_DIR/.lock`` (released by the OS if the process dies).

    Returns None where ``fcntl`` does not exist (Windows): the directory is then not guarded.

    Raises
    ------
    StudyError
        If another process holds the lock, or the directory is not writable.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    try:
        handle = open(directory / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole run
    except OSError as exc:
        raise StudyError(
            f"run directory {str(directory)!r} is not writable ({describe_os_error(exc)}); a finished run can "
            "still be read there (status, summary, plot --out DIR), but not run or resumed"
        ) from None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StudyError(
            f"run directory {str(directory)!r} is in use by another running dpbandits study; wait for it "
            "to finish or choose another --out"
        ) from None
    return handle


def _release_lock(handle: IO[str] | None) -> None:
    if handle is not None:
        handle.close()  # closing the file releases the flock


def is_in_use(run_dir: str | Path) -> bool | None:
    """Whether a live process holds the run directory's lock (None where this cannot be known).

    Works on a read-only run directory: the lock file is opened for reading only, and a run
    directory without one has never been opened for writing by a live process.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    try:
        handle = open(Path(run_dir) / LOCK_NAME, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return False
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False
