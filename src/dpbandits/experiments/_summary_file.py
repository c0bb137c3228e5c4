"""A run's summary table and atomic files: what reading or drawing a finished run needs, and nothing more.

The results store (:mod:`dpbandits.experiments.store`) re-exports every public name here. This
module imports no study model and no algorithm, so that a process that only reads a run's summary
(the command line's drawing process, forked before the run's modules are imported) starts light.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from dpbandits._core.atomic import atomic_write_many as write_atomically
from dpbandits._core.errors import StudyError, UnsafeTargetError

__all__ = [
    "SUMMARY_NAME",
    "atomic_write_bytes",
    "atomic_write_files",
    "atomic_write_text",
    "describe_os_error",
    "estimate_column",
    "read_summary",
    "summary_metrics",
]

SUMMARY_NAME = "summary.csv"
_TMP_MARK = ".tmp-"


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
