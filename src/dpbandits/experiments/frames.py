"""Runs as pandas DataFrames, and a run exported to Parquet.

:func:`load_run` reads a run directory (finished or not) into two DataFrames: the summary (one row
per algorithm and grid cell, as ``summary.csv``, numbers as numbers) and the per-trial values (one
row per trial, with the cell's label, swept parameters and every metric). :func:`export_run` writes
both as Parquet files next to each other, for pandas, Polars, DuckDB or Spark.

Examples
--------
>>> from dpbandits.experiments.frames import load_run
>>> run = load_run("runs/bai-smoke")                         # doctest: +SKIP
>>> run.summary.groupby("algorithm")["success_rate"].max()   # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits._core.errors import StudyError
from dpbandits.experiments.store import atomic_write_bytes, describe_os_error, load_trials, read_summary

__all__ = ["RunFrames", "export_run", "load_run"]

SUMMARY_PARQUET = "summary.parquet"
TRIALS_PARQUET = "trials.parquet"


@dataclass(frozen=True)
class RunFrames:
    """A run directory as DataFrames.

    Attributes
    ----------
    summary : pandas.DataFrame
        One row per (algorithm, grid cell): the columns of ``summary.csv``, numeric ones as floats.
    trials : pandas.DataFrame
        One row per trial: ``algorithm`` (the label), ``point_index``, ``trial``, the swept parameters
        of the cell, and one column per metric.
    """

    summary: Any
    trials: Any


def _numeric(frame: Any) -> Any:
    """Columns that hold numbers become floats (``summary.csv`` stores every value as text)."""
    import pandas as pd

    for column in frame.columns:
        converted = pd.to_numeric(frame[column], errors="coerce")
        if converted.notna().sum() == frame[column].replace("", np.nan).notna().sum():
            frame[column] = converted
    return frame


def load_run(run_dir: str | Path) -> RunFrames:
    """Read a run directory into pandas DataFrames (see :class:`RunFrames`).

    Parameters
    ----------
    run_dir : str or Path
        A run directory written by ``dpbandits run`` / :func:`~dpbandits.experiments.run_study`;
        cells that have not finished are left out of ``trials``.

    Returns
    -------
    RunFrames

    Raises
    ------
    StudyError
        If the directory is not a run directory or has no summary.
    """
    import pandas as pd

    summary = _numeric(pd.DataFrame(read_summary(run_dir)))
    rows: list[dict[str, Any]] = []
    for cell, values in load_trials(run_dir):
        n_trials = len(next(iter(values.values()))) if values else 0
        base = {"algorithm": cell.label, "point_index": cell.point_index, **cell.point}
        for trial in range(n_trials):
            rows.append({**base, "trial": trial, **{metric: float(v[trial]) for metric, v in values.items()}})
    return RunFrames(summary=summary, trials=pd.DataFrame(rows))


def export_run(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write a run's summary and per-trial values as Parquet (``summary.parquet``, ``trials.parquet``).

    Parameters
    ----------
    run_dir : str or Path
    out_dir : str or Path, optional
        Where to write (default: the run directory itself). Each file is written atomically.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    StudyError
        If the run cannot be read or the files cannot be written (one line).
    """
    import io

    frames = load_run(run_dir)
    target = Path(run_dir) if out_dir is None else Path(out_dir)
    written = []
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, frame in ((SUMMARY_PARQUET, frames.summary), (TRIALS_PARQUET, frames.trials)):
            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            atomic_write_bytes(target / name, buffer.getvalue())
            written.append(target / name)
    except OSError as exc:
        raise StudyError(f"cannot write Parquet files to {str(target)!r}: {describe_os_error(exc)}") from None
    return written
