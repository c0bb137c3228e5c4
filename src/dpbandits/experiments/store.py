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
import os
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from dpbandits._core.errors import StudyError
from dpbandits._core.typing import FloatArray
from dpbandits._core.versions import dependency_versions
from dpbandits.algorithms.user_records import recorded_algorithm_spec
from dpbandits.experiments._run_files import (
    _IDENTITY_KEY,
    _LOG,
    _MANIFEST_INTERVAL_SECONDS,
    CELLS_DIR,
    LOCK_NAME,
    MANIFEST_NAME,
    RUN_FORMAT,
    STUDY_COPY_NAME,
    STUDY_JSON_NAME,
    _acquire_lock,
    _describe_user_algorithms,
    _now,
    _recorded_versions,
    _release_lock,
    _user_code_versions,
    is_in_use,
    read_manifest,
    version_change,
)
from dpbandits.experiments._summary_file import (
    _TMP_MARK,
    SUMMARY_NAME,
    atomic_write_bytes,
    atomic_write_files,
    atomic_write_text,
    describe_os_error,
    estimate_column,
    read_summary,
)
from dpbandits.experiments._summary_file import summary_metrics as summary_metrics
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
