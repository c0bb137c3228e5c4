"""The crash-safe results store: one run directory per study run.

Layout of a run directory::

    RUN_DIR/
      study.toml        copy of the study file as given (when the study came from a file)
      study.json        the effective study (after --trials/--seed overrides), canonical JSON
      manifest.json     versions the run was created with, root seed, study digest, sessions (start,
                        end, backend, versions), status of every cell and the session that computed it
      cells/p0000-a00.npz   raw per-trial values of one (grid point, algorithm) cell, one array per metric
      summary.csv       one row per (algorithm, grid point): swept parameters, algorithm, n_trials,
                        and per metric its estimate, <metric>_stderr, _ci_low, _ci_high; the
                        estimate is <metric>_rate for a 0/1 metric (Wilson interval), else
                        <metric>_mean (see :func:`estimate_column`)
      plots/            written by :mod:`dpbandits.experiments.plots`

Crash safety. Every file is written to a temporary file in the same directory, flushed and
``fsync``-ed, then renamed over its target with ``os.replace`` (atomic on POSIX), and the directory
is ``fsync``-ed. A cell's file is written the moment its last chunk finishes, so a run killed with
SIGKILL loses only the cells in flight. The cell files are the source of truth: on ``resume`` a cell
counts as finished if and only if its file exists and holds ``n_trials`` finite values of every
metric; ``manifest.json`` is rewritten (atomically, at most once a second while running) from them.
Leftover temporary files of a killed run are removed when the directory is opened again.

A run resumed with another version of Python or of a package that can change a result (see
:mod:`dpbandits._core.versions`) is refused unless ``allow_version_change``: then every session
records its versions and every cell the session that computed it, so a mixed run says which cell
came from which version.

A run directory that holds a different study (another digest) is refused, never overwritten, and
one that another process is writing (it holds an ``flock`` on ``RUN_DIR/.lock``, which the OS
releases when that process dies, even by SIGKILL) is refused too.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from dpbandits._core.atomic import atomic_write_many as write_atomically
from dpbandits._core.errors import StudyError, UnsafeTargetError
from dpbandits._core.typing import FloatArray
from dpbandits._core.versions import RESULT_PACKAGES, dependency_versions
from dpbandits.algorithms.registry import is_builtin_algorithm
from dpbandits.algorithms.user_imports import USER_CODE_PREFIX, user_code_version
from dpbandits.algorithms.user_records import describe_user_algorithm, recorded_algorithm_spec
from dpbandits.experiments.config import Cell, Study
from dpbandits.experiments.summary import MetricSummary, summarize_metric

__all__ = [
    "MANIFEST_NAME",
    "SUMMARY_NAME",
    "RunStore",
    "atomic_write_bytes",
    "atomic_write_files",
    "atomic_write_text",
    "describe_os_error",
    "is_in_use",
    "load_trials",
    "read_manifest",
    "read_summary",
]

MANIFEST_NAME = "manifest.json"
SUMMARY_NAME = "summary.csv"
LOCK_NAME = ".lock"
STUDY_COPY_NAME = "study.toml"
STUDY_JSON_NAME = "study.json"
CELLS_DIR = "cells"
RUN_FORMAT = 2
_IDENTITY_KEY = "__identity__"  # in every cell file: the cell key, study digest and seed
_TMP_MARK = ".tmp-"
_MANIFEST_INTERVAL_SECONDS = 1.0


# ------------------------------------------------------------------------------ atomic files
def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same directory, fsync, rename.

    Raises
    ------
    StudyError
        If the file cannot be written (disk full, read-only file system, no permission...);
        the temporary file is removed and ``path`` is left as it was.
    """
    atomic_write_files([(Path(path), data)])


def atomic_write_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write several files atomically, as one group commit (one directory fsync for the group).

    When this returns every file is durable; a crash before leaves each target either as it was
    or complete (see :func:`dpbandits._core.atomic.atomic_write_many`).

    Raises
    ------
    StudyError
        If a file cannot be written (disk full, read-only file system, no permission...); the
        temporary files not yet renamed are removed.
    """
    try:
        write_atomically(files, temporary_prefix=_TMP_MARK)
    except UnsafeTargetError as exc:  # its message names the path and the reason (a symbolic link...)
        raise StudyError(str(exc)) from None
    except OSError as exc:
        where = str(exc.filename) if exc.filename is not None else ", ".join(str(p) for p, _ in files)
        raise StudyError(f"cannot write {where!r}: {describe_os_error(exc)}") from None


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def describe_os_error(exc: OSError) -> str:
    """The reason of an OS error in words (``No space left on device``), without the path."""
    return exc.strerror or str(exc) or type(exc).__name__


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


def estimate_column(metric: str, proportion: bool) -> str:
    """The ``summary.csv`` column of a metric's estimate: ``<metric>_rate`` for a 0/1 metric, else ``_mean``.

    Examples
    --------
    >>> estimate_column("success", proportion=True), estimate_column("regret", proportion=False)
    ('success_rate', 'regret_mean')
    """
    return f"{metric}_rate" if proportion else f"{metric}_mean"


def summary_metrics(header: Sequence[str]) -> dict[str, str]:
    """Map each metric of a ``summary.csv`` header to the column of its estimate, in header order.

    A metric is recognised by its ``<metric>_stderr`` column; its estimate is ``<metric>_rate`` or
    ``<metric>_mean``, whichever the header has (see :func:`estimate_column`).
    """
    columns = set(header)
    metrics = {}
    for name in header:
        if name.endswith("_stderr"):
            metric = name.removesuffix("_stderr")
            rate = estimate_column(metric, proportion=True)
            metrics[metric] = rate if rate in columns else estimate_column(metric, proportion=False)
    return metrics


def read_summary(run_dir: str | Path) -> list[dict[str, str]]:
    """Rows of ``summary.csv`` as dicts of strings, checked to be a summary written by dpbandits.

    Raises
    ------
    StudyError
        If the run directory has no summary (the run has not finished a cell yet), or the file is
        unreadable, not UTF-8 CSV, lacks the ``algorithm`` column, has ragged rows or a statistic
        column that is not a number.
    """
    path = Path(run_dir) / SUMMARY_NAME
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise StudyError(f"{str(run_dir)!r} has no {SUMMARY_NAME}; run the study first") from None
    except OSError as exc:
        raise StudyError(f"{str(path)!r} cannot be read: {describe_os_error(exc)}") from None
    except UnicodeDecodeError as exc:
        raise StudyError(f"{str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); it was not "
                         "written by dpbandits: rewrite it with `dpbandits run ... --resume`") from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = list(reader.fieldnames or [])
        rows = list(reader)
    except csv.Error as exc:
        raise StudyError(f"{str(path)!r} is not a CSV file: {exc}") from None
    for needed in ("algorithm", "n_trials"):
        if needed not in header:
            raise StudyError(f"{str(path)!r} has no {needed!r} column; it was not written by dpbandits")
    numeric = [name for metric in summary_metrics(header) for name in
               (summary_metrics(header)[metric], f"{metric}_stderr", f"{metric}_ci_low", f"{metric}_ci_high")
               if name in header]
    for line, row in enumerate(rows, start=2):
        if None in row or any(value is None for value in row.values()):
            raise StudyError(f"{str(path)!r} line {line}: must have {len(header)} fields like its header")
        for name in numeric:
            if row[name] != "" and not _is_number(row[name]):
                raise StudyError(f"{str(path)!r} line {line}: {name} must be a number, got {row[name]!r}")
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_trials(run_dir: str | Path) -> list[tuple[Cell, dict[str, FloatArray]]]:
    """The raw per-trial values of every finished cell of a run directory, in cell order.

    Parameters
    ----------
    run_dir : str or Path

    Returns
    -------
    list of (Cell, dict of str to ndarray of shape (n_trials,))
        Each finished cell (its grid point, algorithm label and parameters) with its metrics.

    Raises
    ------
    StudyError
        If the directory is not a run directory.
    """
    store = RunStore.read_only(run_dir)
    found = []
    for cell in store.study.cells():
        values = store.read_cell(cell)
        if values is not None:
            found.append((cell, values))
    return found


def _format_number(value: float) -> str:
    # repr gives the shortest string that round-trips: exact, and identical across backends.
    return repr(float(value))


def _format_parameter(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


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


# ------------------------------------------------------------------------------ the store
class RunStore:
    """The run directory of one study (see the module docstring for layout and guarantees).

    Use :meth:`open`; it creates a new run directory or reopens one of the same study.
    """

    def __init__(self, run_dir: Path, study: Study, manifest: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.study = study
        self.manifest = manifest
        self.cells_dir = run_dir / CELLS_DIR
        self._cells = {cell.key: cell for cell in study.cells()}
        self._metrics = {index: study.metrics_of(index) for index in range(len(study.algorithms))}
        self._last_manifest_write = 0.0
        self._lock: IO[str] | None = None
        # cell key -> (signature of its file, its summaries) for cell files this store wrote, or read and
        # found complete and valid: such a file is read again only if its signature changed since
        self._verified: dict[str, tuple[tuple[int, int, int], dict[str, MetricSummary]]] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        run_dir: str | Path,
        study: Study,
        *,
        source_text: str | None = None,
        resume: bool = False,
        session: Mapping[str, Any] | None = None,
        allow_version_change: bool = False,
    ) -> RunStore:
        """Create a run directory for ``study`` or reopen one that holds the same study.

        Parameters
        ----------
        run_dir : str or Path
        study : Study
            The effective study (overrides applied).
        source_text : str, optional
            The study file's text, copied to ``study.toml``.
        resume : bool, default False
            Continue a run that has finished cells. Without it, such a directory is refused.
        session : mapping, optional
            Facts about this session (backend, workers) recorded in the manifest.
        allow_version_change : bool, default False
            Resume a run whose finished cells were computed with other versions of Python or of a
            package that can change a result (:func:`version_change`). Without it such a run is
            refused. Either way every session records its versions, every cell the session that
            computed it, and the run's ``versions`` (those it was created with) are never replaced.

        Raises
        ------
        StudyError
            If the directory holds another study, holds finished cells and ``resume`` is false,
            holds cells computed with other versions and ``allow_version_change`` is false, or is a
            non-empty directory that is not a run directory.
        """
        path = Path(run_dir)
        if path.exists() and not path.is_dir():
            raise StudyError(f"run directory {str(path)!r} is a file, not a directory")
        manifest_path = path / MANIFEST_NAME
        try:
            foreign = (not manifest_path.exists() and path.exists()
                       and any(p.name != LOCK_NAME for p in path.iterdir()))
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StudyError(f"cannot create run directory {str(path)!r}: {describe_os_error(exc)}") from None
        if foreign:
            raise StudyError(
                f"run directory {str(path)!r} is not empty and holds no dpbandits run "
                f"(no {MANIFEST_NAME}); refusing to write into it: choose another --out"
            )
        lock = _acquire_lock(path)
        try:
            versions = {**dependency_versions(), **_user_code_versions(study)}
            store = cls._open_locked(path, study, source_text=source_text, resume=resume)
            store._check_versions(versions, allow_version_change)
        except BaseException:
            _release_lock(lock)
            raise
        store._lock = lock
        store.manifest.setdefault("versions", versions)  # the versions the run was created with, kept
        store.manifest["status"] = "running"
        store.manifest["started"] = _now()
        store.manifest["ended"] = None
        store.manifest["sessions"].append({"started": store.manifest["started"], "ended": None,
                                           "status": "running", **dict(session or {}), "versions": versions})
        store.write_manifest(force=True)
        return store

    @classmethod
    def _open_locked(cls, path: Path, study: Study, *, source_text: str | None, resume: bool) -> RunStore:
        if (path / MANIFEST_NAME).exists():
            manifest = read_manifest(path)
            if manifest["format"] != RUN_FORMAT:
                raise StudyError(
                    f"run directory {str(path)!r} was written by another version of dpbandits (run format "
                    f"{manifest['format']}, this version reads format {RUN_FORMAT}); choose another --out"
                )
            if manifest.get("study_digest") != study.digest():
                raise StudyError(
                    f"run directory {str(path)!r} holds another study ({manifest.get('study')!r}, digest "
                    f"{str(manifest.get('study_digest'))[:12]}), not this one ({study.name!r}, digest "
                    f"{study.digest()[:12]}; a changed --trials or --seed also changes it); refusing to "
                    "overwrite it: choose another --out"
                )
            # what reading the run back needs of users' algorithms (reading imports none of them),
            # described again by this session's code
            manifest["user_algorithms"] = _describe_user_algorithms(study)
            store = cls(path, study, manifest)
            store._check_cells_dir()
            store._remove_temporary_files()
            if store.finished_cells() and not resume:
                raise StudyError(
                    f"run directory {str(path)!r} already holds results of this study; pass --resume to "
                    "continue it (finished cells are kept), or choose another --out"
                )
        else:
            manifest = {
                "format": RUN_FORMAT,
                "study": study.name,
                "study_digest": study.digest(),
                "seed": study.seed,
                "trials": study.trials,
                "chunk_size": study.chunk_size,
                "created": _now(),
                "sessions": [],
                "user_algorithms": _describe_user_algorithms(study),  # reading the run imports none of them
            }
            store = cls(path, study, manifest)
            store._check_cells_dir()
            store._remove_temporary_files()
            # the manifest first: a directory with a manifest is recognised as this study's run
            store.write_manifest(force=True)
        # (re)write the study copies if a run was killed before writing them
        if source_text is not None and not (path / STUDY_COPY_NAME).exists():
            atomic_write_text(path / STUDY_COPY_NAME, source_text)
        if not (path / STUDY_JSON_NAME).exists():
            atomic_write_text(path / STUDY_JSON_NAME, json.dumps(study.model_dump(), indent=2, allow_nan=True))
        try:
            store.cells_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise StudyError(f"cannot create {str(store.cells_dir)!r}: {describe_os_error(exc)}") from None
        return store

    def _check_versions(self, versions: Mapping[str, str], allow_change: bool) -> None:
        """Refuse (or, allowed, log) a resume whose finished cells were computed with other versions."""
        if not self.finished_cells():
            return
        if not self.manifest["sessions"]:  # no session recorded the versions of the finished cells
            raise StudyError(f"run directory {str(self.run_dir)!r} holds cells but its manifest lists no session "
                             "(so not the versions that computed them): refused rather than mixed with this one")
        change = version_change(_recorded_versions(self.manifest), versions)
        if change is None:
            return
        if not allow_change:
            raise StudyError(
                f"run directory {str(self.run_dir)!r} holds cells computed with other versions ({change}); "
                "resuming would mix their results silently: resume with those versions, choose another --out, "
                "or pass --allow-version-change (each cell then records the session, and so the versions, "
                "that computed it)"
            )
        _LOG.warning("resuming with other versions than the run's last session (%s): each cell records the "
                     "session that computed it in %s", change, MANIFEST_NAME)

    @classmethod
    def read_only(cls, run_dir: str | Path) -> RunStore:
        """The store of an existing run directory, to read (no lock; works on a read-only medium).

        Reading imports no user's algorithm: the study's users' algorithms are rebuilt from what the
        manifest recorded of them (:mod:`dpbandits.algorithms.user_records`), never imported by the
        names the directory's files give.

        Raises
        ------
        StudyError
            If the directory is not a run directory of this format, or its study copy is damaged.
        """
        path = Path(run_dir)
        manifest = read_manifest(path)
        if manifest["format"] != RUN_FORMAT:
            raise StudyError(f"run directory {str(path)!r} was written by another version of dpbandits (run "
                             f"format {manifest['format']}, this version reads format {RUN_FORMAT})")
        study_path = path / STUDY_JSON_NAME
        try:
            data = json.loads(study_path.read_bytes().decode("utf-8"))
        except OSError as exc:
            raise StudyError(f"{str(study_path)!r} cannot be read: {describe_os_error(exc)}") from None
        except ValueError as exc:
            raise StudyError(f"{str(study_path)!r} is not UTF-8 JSON: {exc}") from None
        try:
            recorded = {name: recorded_algorithm_spec(name, record)
                        for name, record in manifest.get("user_algorithms", {}).items()}
        except StudyError as exc:
            raise StudyError(f"{str(path / MANIFEST_NAME)!r} is damaged: {exc}") from None
        study = Study.from_mapping(data, source=str(study_path), recorded=recorded)
        if study.digest() != manifest["study_digest"]:
            raise StudyError(f"{str(study_path)!r} does not hold the study of {MANIFEST_NAME} (digest "
                             f"{study.digest()[:12]}, manifest {manifest['study_digest'][:12]})")
        store = cls(path, study, manifest)
        store._check_cells_dir()
        return store

    def _check_cells_dir(self) -> None:
        if self.cells_dir.exists() and not self.cells_dir.is_dir():
            raise StudyError(f"{str(self.cells_dir)!r} must be the directory of cell files, but it is a file; "
                             "the run directory is damaged")

    def close(self) -> None:
        """Release the run directory's lock (another process may then open it)."""
        _release_lock(self._lock)
        self._lock = None

    def _remove_temporary_files(self) -> None:
        for directory in (self.run_dir, self.cells_dir):
            if directory.is_dir():
                for leftover in directory.glob(f"{_TMP_MARK}*"):
                    leftover.unlink(missing_ok=True)

    # ------------------------------------------------------------------ cells
    def cell_path(self, cell: Cell) -> Path:
        """The file of ``cell``'s raw per-trial values."""
        return self.cells_dir / f"{cell.key}.npz"

    def identity(self, cell: Cell) -> dict[str, str]:
        """What a cell file records about itself: its cell key, the study digest and the root seed."""
        return {"cell": cell.key, "study_digest": self.study.digest(), "seed": str(self.study.seed)}

    def read_cell(self, cell: Cell) -> dict[str, FloatArray] | None:
        """The per-trial values of a finished cell, or None if it has no complete valid file.

        Raises
        ------
        StudyError
            If the file is complete but belongs to another cell, study or seed (copied or moved
            there): it is refused, never summarised, never overwritten.
        """
        path = self.cell_path(cell)
        try:
            # open the file ourselves: np.load leaks its handle when the zip is damaged
            with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
                values = {metric: np.asarray(data[metric], dtype=np.float64)
                          for metric in self._metrics[cell.algorithm_index]}
                identity = str(data[_IDENTITY_KEY]) if _IDENTITY_KEY in data.files else None
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):  # missing or damaged
            return None
        if any(arr.shape != (self.study.trials,) or not np.all(np.isfinite(arr)) for arr in values.values()):
            return None
        expected = self.identity(cell)
        try:
            found = json.loads(identity) if identity is not None else {}
        except ValueError:
            found = {}
        if found != expected:
            described = (f"cell {found.get('cell')!r} of study digest {str(found.get('study_digest'))[:12]}, "
                         f"seed {found.get('seed')}") if isinstance(found, dict) and found else "no identity"
            raise StudyError(
                f"cell file {str(path)!r} holds {described}, not cell {cell.key!r} of this run (digest "
                f"{expected['study_digest'][:12]}, seed {expected['seed']}): it was copied or moved there; "
                "delete it to recompute the cell"
            )
        return values

    @staticmethod
    def _signature(path: Path) -> tuple[int, int, int] | None:
        """(inode, size, modification time in ns) of a file, or None if it cannot be seen."""
        try:
            status = os.stat(path)
        except OSError:
            return None
        return status.st_ino, status.st_size, status.st_mtime_ns

    def _summarize(self, values: Mapping[str, FloatArray]) -> dict[str, MetricSummary]:
        proportions = self.study.proportion_metrics()
        return {metric: summarize_metric(arr, proportion=metric in proportions, name=metric)
                for metric, arr in values.items()}

    def cell_summaries(self, cell: Cell) -> dict[str, MetricSummary] | None:
        """Each metric's summary of a finished cell, or None if it has no complete valid file.

        A file this store wrote, or already read and checked, is not read again while its signature
        (inode, size, modification time) is unchanged: the end of a run (states, manifest, summary)
        reads each cell file at most once.

        Raises
        ------
        StudyError
            If the file belongs to another cell, study or seed (see :meth:`read_cell`).
        """
        signature = self._signature(self.cell_path(cell))
        if signature is None:  # no file
            self._verified.pop(cell.key, None)
            return None
        cached = self._verified.get(cell.key)
        if cached is not None and cached[0] == signature:
            return cached[1]
        values = self.read_cell(cell)
        if values is None:
            self._verified.pop(cell.key, None)
            return None
        summaries = self._summarize(values)
        self._verified[cell.key] = (signature, summaries)
        return summaries

    def cell_states(self) -> dict[str, str]:
        """Every cell's state from its file: ``done``, ``missing`` or ``damaged`` (incomplete, unreadable).

        Raises
        ------
        StudyError
            If a cell file belongs to another cell, study or seed (see :meth:`read_cell`).
        """
        states = {}
        for key, cell in self._cells.items():
            if self.cell_summaries(cell) is not None:
                states[key] = "done"
            else:
                states[key] = "damaged" if self.cell_path(cell).exists() else "missing"
        return states

    def finished_cells(self) -> set[str]:
        """Keys of the cells whose result files are complete and valid."""
        return {key for key, state in self.cell_states().items() if state == "done"}

    def write_cell(self, cell: Cell, values: Mapping[str, FloatArray], *, seconds: float) -> None:
        """Store the per-trial values of a finished cell atomically and record it in the manifest."""
        self.write_cells([(cell, values, seconds)])

    def write_cells(self, finished: Sequence[tuple[Cell, Mapping[str, FloatArray], float]]) -> None:
        """Store finished cells ``(cell, values, seconds of compute)`` in one group commit, then record them.

        Every cell file is written atomically and is durable (fsync-ed, its directory too) before any
        of the cells is recorded as done in the manifest.
        """
        files, arrays_of = [], []
        for cell, values, _ in finished:
            buffer = io.BytesIO()
            arrays: dict[str, Any] = {metric: np.asarray(values[metric], dtype=np.float64)
                                      for metric in self._metrics[cell.algorithm_index]}
            arrays[_IDENTITY_KEY] = np.array(json.dumps(self.identity(cell), sort_keys=True))
            np.savez(buffer, **arrays)
            files.append((self.cell_path(cell), buffer.getvalue()))
            arrays_of.append(arrays)
        atomic_write_files(files)
        for (cell, _, seconds), arrays in zip(finished, arrays_of, strict=True):
            signature = self._signature(self.cell_path(cell))
            if signature is not None:  # the values are in memory: summarise them now, never read them back
                metrics = self._metrics[cell.algorithm_index]
                self._verified[cell.key] = (signature, self._summarize({m: arrays[m] for m in metrics}))
            self.manifest.setdefault("cells", {})[cell.key] = {
                "point_index": cell.point_index,
                "point": cell.point,
                "algorithm": cell.label,
                "status": "done",
                "n_trials": self.study.trials,
                "seconds": round(seconds, 6),
                "finished": _now(),
                "session": len(self.manifest["sessions"]),  # its versions: sessions[session - 1]["versions"]
            }
        self.write_manifest()

    # ------------------------------------------------------------------ manifest and summary
    def _cell_statuses(self) -> dict[str, Any]:
        recorded = self.manifest.get("cells", {})
        finished = self.finished_cells()
        statuses: dict[str, Any] = {}
        for key, cell in self._cells.items():
            entry = dict(recorded.get(key, {}))
            entry.update({"point_index": cell.point_index, "point": cell.point, "algorithm": cell.label,
                          "status": "done" if key in finished else "pending"})
            statuses[key] = entry
        return statuses

    def write_manifest(self, *, force: bool = False) -> None:
        """Rewrite ``manifest.json`` atomically (at most once a second unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._last_manifest_write < _MANIFEST_INTERVAL_SECONDS:
            return
        if force:
            self.manifest["cells"] = self._cell_statuses()
        atomic_write_text(self.run_dir / MANIFEST_NAME, json.dumps(self.manifest, indent=2, allow_nan=True))
        self._last_manifest_write = now

    def finish(self, status: str) -> None:
        """Record the end of this session (``complete``, ``interrupted`` or ``failed``)."""
        statuses = self._cell_statuses()
        if status == "complete" and any(entry["status"] != "done" for entry in statuses.values()):
            status = "incomplete"
        self.manifest["cells"] = statuses
        self.manifest["status"] = status
        self.manifest["ended"] = _now()
        self.manifest["sessions"][-1].update({"ended": self.manifest["ended"], "status": status})
        self.write_manifest(force=True)

    def summary_rows(self) -> tuple[list[str], list[dict[str, str]]]:
        """Header and rows of ``summary.csv`` over the finished cells, in cell order."""
        swept = list(self.study.swept_parameters)
        metrics = list(self.study.all_metrics())
        proportions = self.study.proportion_metrics()
        header = [*swept, "algorithm", "n_trials"]
        estimates = {metric: estimate_column(metric, metric in proportions) for metric in metrics}
        for metric in metrics:
            header += [estimates[metric], f"{metric}_stderr", f"{metric}_ci_low", f"{metric}_ci_high"]
        rows = []
        for cell in self._cells.values():
            summaries = self.cell_summaries(cell)
            if summaries is None:
                continue
            row = {name: _format_parameter(cell.point[name]) for name in swept}
            row["algorithm"] = cell.label
            row["n_trials"] = str(self.study.trials)
            for metric in metrics:
                if metric not in summaries:
                    for column in (estimates[metric], f"{metric}_stderr", f"{metric}_ci_low", f"{metric}_ci_high"):
                        row[column] = ""
                    continue
                stats = summaries[metric]
                row[estimates[metric]] = _format_number(stats.mean)
                row[f"{metric}_stderr"] = _format_number(stats.stderr)
                row[f"{metric}_ci_low"] = _format_number(stats.ci_low)
                row[f"{metric}_ci_high"] = _format_number(stats.ci_high)
            rows.append(row)
        return header, rows

    def write_summary(self) -> Path:
        """Write ``summary.csv`` atomically and return its path."""
        header, rows = self.summary_rows()
        path = self.run_dir / SUMMARY_NAME
        atomic_write_text(path, _csv_text(header, rows))
        return path


def _csv_text(header: list[str], rows: Iterable[Mapping[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
