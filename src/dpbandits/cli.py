"""The ``dpbandits`` command line: thin — parse, build a config, call the library.

Commands: ``run``, ``reproduce``, ``status``, ``summary``, ``plot``, ``version`` here; ``list``,
``show``, ``init-study`` (:mod:`dpbandits.cli_catalog`), ``account`` and ``serve`` in their modules. Every
error prints one ``Error: ...`` line on stderr and exits non-zero, never a traceback: user errors
(any :class:`~dpbandits._core.errors.DPBanditsError`: an invalid study, a run directory of another
study, a study too large for the machine), file-system errors and exhausted memory exit with status
1, usage errors (an option value that is not a number) with status 2; with ``--json`` the error is a
JSON object on stdout instead. An interrupted run exits with 130 (Ctrl-C) or 143 (SIGTERM) after
saving its finished cells. The group that does this, and takes ``-q``/``-v`` anywhere on the line,
is :class:`dpbandits._cli_group.CommandGroup`.

Start-up
--------
Importing this module (every ``dpbandits`` invocation, ``--help`` included) imports typer and the
standard library only: each command imports what it uses (NumPy, SciPy, the runner, matplotlib, the
KL policies) in its body, and so must every ``cli_*`` module below, at its top level.

Adding a command from another module
------------------------------------
Create ``src/dpbandits/cli_<name>.py`` defining ``register(app: typer.Typer) -> None``, which adds
its commands (``@app.command("account")`` or ``app.add_typer(sub_app, name="account")``). Every
``dpbandits.cli_*`` module is imported and registered when this module loads; nothing here needs
editing. Such commands get the same user-error handling.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import pkgutil
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

import dpbandits
from dpbandits._cli_group import CommandGroup, configure_logging, fail, make_console

__all__ = ["app", "configure_logging", "main", "privacy_entries", "privacy_lines", "register_extensions", "run_status",
           "summary_data"]


def _fail(message: str, code: int = 1) -> NoReturn:
    fail(message, code)


app = typer.Typer(
    name="dpbandits",
    cls=CommandGroup,
    help="Differentially private bandit algorithms: studies, privacy accounting and audits.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dpbandits {dpbandits.__version__}")  # read from the package metadata only when asked
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress or notes on stderr (errors and results only)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug log lines on stderr (per-cell timings, backend choices)."),
    as_json: bool = typer.Option(False, "--json", hidden=True, help="JSON output and errors (list, show, status, summary, run, reproduce, account)."),
) -> None:
    """Differentially private bandit algorithms: studies, privacy accounting and audits.

    -q/--quiet and -v/--verbose may also follow the command (``dpbandits run study.toml -q``).
    """
    del quiet, verbose, as_json  # applied as they are parsed, wherever on the line (see dpbandits._cli_group)


@app.command("version")
def version_command(as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts).")) -> None:
    """Print the versions of dpbandits, Python and every dependency that can change a result or a guarantee.

    First the ones that can change a number (OpenDP's noise, dp-accounting, NumPy, SciPy, ...), then
    those that only draw, print or distribute, then the platform; a run directory's manifest
    records the same list for every session.
    """
    import json

    from dpbandits._core.versions import dependency_versions

    found = dependency_versions()
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    width = max(map(len, found))
    for name, number in found.items():
        typer.echo(f"{name:<{width}}  {number}")


# Options shared by `run` and `reproduce`.
_OUT = typer.Option(None, "--out", "-o", help="Run directory (default: runs/<study name>).")
_BACKEND = typer.Option("serial", "--backend", "-b", help="serial, process or dask.")
_WORKERS = typer.Option(None, "--workers", "-w", min=1, help="Workers of the process pool or local dask cluster (default: all cores).")
_SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address (default: start a local cluster).")
_RESUME = typer.Option(False, "--resume", help="Continue an interrupted run; finished cells are kept.")
_VERSION_CHANGE = typer.Option(
    False, "--allow-version-change",
    help="With --resume: continue a run computed with other versions of Python, NumPy, dpbandits, ... "
         "(refused otherwise); each cell records the session, and so the versions, that computed it.")
_TRIALS = typer.Option(None, "--trials", "-n", min=1, help="Override the study's number of trials.")
_SEED = typer.Option(None, "--seed", min=0, help="Override the study's root seed.")
_PROGRESS = typer.Option("auto", "--progress", help="auto (bar on a terminal, log lines otherwise), rich, log, none.")
_PLOT = typer.Option(True, "--plot/--no-plot",
                     help="Draw the plots at the end, as PNG (`dpbandits plot` redraws them, PDF too).")
_RUN_PLOT_FORMATS = ("png",)
"""What a run draws: the quick look. PDF (for papers) is ``dpbandits plot``'s; drawing it too at the
end of every run cost about as much again as the PNGs."""
_RESULT_JSON = typer.Option(
    False, "--json", help="Print the result as one JSON object (status, summary rows, privacy, files) instead of text.")


def _run(
    study: Any,
    source_text: str | None,
    *,
    out: Path | None,
    backend: str,
    workers: int | None,
    scheduler: str | None,
    resume: bool,
    trials: int | None,
    seed: int | None,
    progress: str,
    plotter: Any,
    allow_version_change: bool = False,
    as_json: bool = False,
) -> None:
    from dpbandits._core.validation import check_one_of

    check_one_of(progress, "--progress", ("auto", "rich", "log", "none"))
    check_one_of(backend, "--backend", ("serial", "process", "dask"))
    if progress == "auto" and not logging.getLogger("dpbandits").isEnabledFor(logging.INFO):
        progress = "none"  # --quiet
    if trials is not None or seed is not None:
        study = study.with_overrides(trials=trials, seed=seed)
    run_dir = out if out is not None else Path("runs") / study.name
    _run_and_report(study, source_text, run_dir, plotter, backend=backend, workers=workers,
                    scheduler=scheduler, resume=resume, progress=progress,
                    allow_version_change=allow_version_change, as_json=as_json)


def _plot_process(plot: bool) -> contextlib.AbstractContextManager[Any]:
    """The process that draws a run's plots (``None`` with ``--no-plot``), started before the study is read.

    It imports matplotlib at a low priority while this process reads the study and runs it (a
    process, not a thread: a thread competed for the GIL the run's dispatch needs and slowed the run
    by more than the import costs); it draws the figures while the summary is printed, and is killed
    on every way out of the block.
    """
    if not plot:
        return contextlib.nullcontext()
    import numpy  # noqa: F401  (the run needs it too: imported once, here, both processes have it)

    from dpbandits.experiments.plot_process import PlotProcess

    return PlotProcess(_RUN_PLOT_FORMATS)


def _run_and_report(study: Any, source_text: str | None, run_dir: Path, plotter: Any, *, backend: str,
                    workers: int | None, scheduler: str | None, resume: bool, progress: str,
                    allow_version_change: bool, as_json: bool = False) -> None:
    from dpbandits.experiments.runner import RunTerminated, run_study

    try:
        result = run_study(study, run_dir, backend=backend, workers=workers, scheduler=scheduler,
                           resume=resume, progress=progress, source_text=source_text,
                           allow_version_change=allow_version_change)
    except KeyboardInterrupt as exc:
        signal_name, code = ("SIGTERM", 143) if isinstance(exc, RunTerminated) else ("interrupt", 130)
        typer.echo(f"Error: stopped by {signal_name}; finished cells are saved in {run_dir} — continue with "
                   "--resume", err=True)
        raise typer.Exit(code) from None
    plots = (plotter.start(result.run_dir)
             if plotter is not None and result.cells_run + result.cells_skipped > 0 else None)
    if as_json:
        import json

        found = {"status": result.status, "cells_run": result.cells_run, "cells_skipped": result.cells_skipped,
                 "seconds": result.seconds, "backend": result.backend.get("backend"),
                 **summary_data(result.run_dir), "privacy": privacy_entries(study),
                 "analyses": [str(path) for path in sorted((result.run_dir / "analyses").glob("*.json"))]
                 if study.analyses else [],
                 "plots": [str(path) for path in plots.result()] if plots is not None else []}
        typer.echo(json.dumps(found, indent=2, ensure_ascii=False, allow_nan=False))
        return
    typer.echo(f"{result.status}: {result.cells_run} cells run, {result.cells_skipped} already done, "
               f"{result.seconds:.1f} s ({result.backend.get('backend')})")
    _print_summary(result.run_dir, max_rows=_MAX_TABLE_ROWS)
    for line in privacy_lines(study):
        typer.echo(line)
    typer.echo(f"run directory: {result.run_dir}")
    typer.echo(f"summary:       {result.summary_path}")
    if study.analyses:
        for path in sorted((result.run_dir / "analyses").glob("*.json")):
            typer.echo(f"analysis:      {path}")
    if plots is not None:
        written = plots.result()
        typer.echo(f"plots:         {written[0].parent} ({len(written)} files)")


_MAX_TABLE_ROWS = 40


def _values(values: set[Any]) -> str:
    ordered = sorted(values, key=lambda value: (isinstance(value, str), value))
    return str(ordered[0]) if len(ordered) == 1 else "{" + ", ".join(map(str, ordered)) + "}"


def privacy_entries(study: Any) -> list[dict[str, Any]]:
    """One entry per algorithm of ``study``: its label, privacy statement and the ε (δ) values it ran at.

    The statement is the registry's (the unit protected, the neighbouring notion), or a user's agent's
    own; the privacy parameters are read from the study's cells (the algorithm's parameters or the
    grid), so a swept ε is the list of values run. A non-private algorithm has ``private`` false and
    no values.
    """
    from dpbandits.algorithms.registry import get_algorithm

    entries = []
    all_cells = study.cells()
    for index, entry in enumerate(study.algorithms):
        spec = get_algorithm(entry.name)
        cells = [cell for cell in all_cells if cell.algorithm_index == index]
        statement = (_agent_statement(spec, cells[0]) if cells else None) or spec.privacy
        private = not statement.startswith("none")
        at = {key: sorted(found, key=lambda value: (isinstance(value, str), value))
              for key in ("epsilon", "delta")
              if private and (found := {cell.algorithm_params[key] for cell in cells if key in cell.algorithm_params})}
        entries.append({"label": cells[0].label if cells else entry.name, "algorithm": entry.name,
                        "privacy": statement, "private": private, "at": at})
    return entries


def privacy_lines(study: Any) -> list[str]:
    """The run's privacy lines: per algorithm its guarantee and the ε (δ) it ran at (see :func:`privacy_entries`)."""
    lines = ["privacy:"]
    for entry in privacy_entries(study):
        at = [f"{symbol} = {_values(set(entry['at'][key]))}" for key, symbol in (("epsilon", "ε"), ("delta", "δ"))
              if key in entry["at"]]
        lines.append(f"  {entry['label']}: {entry['privacy']}" + (f", at {', '.join(at)}" if at else ""))
    return lines


def _agent_statement(spec: Any, cell: Any) -> str | None:
    """A user's agent class's own privacy statement, read from one agent built for ``cell`` (None if none).

    An agent class usually sets ``self.privacy`` in ``__init__``: only an instance has it. The run has
    already built such agents (and imported their code); this builds one more, for its first cell.
    """
    from dpbandits.algorithms.user_simulation import AgentSimulation
    from dpbandits.envs.registry import get_environment

    if not isinstance(spec.simulate, AgentSimulation):
        return None
    env = get_environment(cell.environment).factory(**cell.environment_params)
    return spec.simulate.privacy_statement(env, cell.algorithm_params)


def _print_summary(run_dir: Path, *, max_rows: int | None = None) -> None:
    """Print summary.csv as a table: each metric's mean and 95% interval per (grid point, algorithm).

    With more than ``max_rows`` rows, say so and where the full table is instead.
    """
    from rich.table import Table

    from dpbandits.experiments.store import SUMMARY_NAME, read_summary, summary_metrics

    rows = read_summary(run_dir)
    if not rows:
        typer.echo("summary: no cell has finished yet")
        return
    if max_rows is not None and len(rows) > max_rows:
        typer.echo(f"summary: {len(rows)} rows, more than {max_rows}: not printed here; see "
                   f"{run_dir / SUMMARY_NAME} or `dpbandits summary {run_dir}`")
        return
    header = list(rows[0])
    swept = header[: header.index("algorithm")]
    metrics = summary_metrics(header)
    table = Table(title="mean or rate [95% CI]", title_justify="left")
    for column in (*swept, "algorithm", "n_trials", *metrics):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    for row in rows:
        cells = [
            f"{float(row[estimate]):.4g} [{float(row[m + '_ci_low']):.4g}, {float(row[m + '_ci_high']):.4g}]"
            if row[estimate] else "" for m, estimate in metrics.items()
        ]
        table.add_row(*(row[name] for name in swept), row["algorithm"], row["n_trials"], *cells)
    make_console(min_width=100).print(table)


@app.command("run")
def run_command(
    study_file: Annotated[Path, typer.Argument(help="A study TOML file.")],
    out: Path | None = _OUT,
    backend: str = _BACKEND,
    workers: int | None = _WORKERS,
    scheduler: str | None = _SCHEDULER,
    resume: bool = _RESUME,
    trials: int | None = _TRIALS,
    seed: int | None = _SEED,
    progress: str = _PROGRESS,
    plot: bool = _PLOT,
    allow_version_change: bool = _VERSION_CHANGE,
    as_json: bool = _RESULT_JSON,
) -> None:
    """Run a study file: results, summary.csv and plots go to the run directory."""
    with _plot_process(plot) as plotter:  # first: matplotlib's import overlaps reading the study too
        from dpbandits.experiments.config import parse_study_text, read_study_text

        text = read_study_text(study_file)
        study = parse_study_text(text, source=str(study_file))
        _run(study, text, out=out, backend=backend, workers=workers, scheduler=scheduler, resume=resume,
             trials=trials, seed=seed, progress=progress, plotter=plotter, allow_version_change=allow_version_change,
             as_json=as_json)


@app.command("reproduce")
def reproduce_command(
    name: Annotated[str, typer.Argument(help="A bundled study (see `dpbandits list`).")],
    out: Path | None = _OUT,
    backend: str = _BACKEND,
    workers: int | None = _WORKERS,
    scheduler: str | None = _SCHEDULER,
    resume: bool = _RESUME,
    trials: int | None = _TRIALS,
    seed: int | None = _SEED,
    progress: str = _PROGRESS,
    plot: bool = _PLOT,
    allow_version_change: bool = _VERSION_CHANGE,
    as_json: bool = _RESULT_JSON,
) -> None:
    """Run a bundled study by name."""
    with _plot_process(plot) as plotter:  # first: matplotlib's import overlaps reading the study too
        from dpbandits.experiments.bundled import bundled_study_text
        from dpbandits.experiments.config import parse_study_text

        text = bundled_study_text(name)
        study = parse_study_text(text, source=f"bundled study {name!r}")
        _run(study, text, out=out, backend=backend, workers=workers, scheduler=scheduler, resume=resume,
             trials=trials, seed=seed, progress=progress, plotter=plotter, allow_version_change=allow_version_change,
             as_json=as_json)


def run_status(run_dir: Path) -> dict[str, Any]:
    """A run directory's state, checked on disk: what ``dpbandits status`` prints (``--json``: this).

    ``state`` is one of ``complete``, ``failed``, ``running`` (a live process holds the run),
    ``interrupted`` (the last session ended without recording its end) or ``incomplete`` (recorded
    complete, but cell files are missing or damaged); ``status`` says it in words.
    """
    from dpbandits.experiments.store import RunStore, is_in_use

    store = RunStore.read_only(run_dir)
    manifest = store.manifest
    states = store.cell_states()
    done = sum(state == "done" for state in states.values())
    damaged = sum(state == "damaged" for state in states.values())
    state = manifest.get("status", "running")
    in_use = is_in_use(run_dir)
    if state == "running" and in_use is False:
        state, status = "interrupted", "interrupted (its last session ended without recording its end: killed?)"
    elif state == "running" and in_use:
        status = "running (a live process holds the run)"
    elif state == "complete" and done < len(states):
        state, status = "incomplete", (f"incomplete (the manifest says complete, but {len(states) - done} cell "
                                       "file(s) are missing or damaged)")
    else:
        status = state
    return {
        "run_dir": str(run_dir), "study": manifest["study"], "study_digest": manifest["study_digest"],
        "seed": manifest["seed"], "trials": manifest["trials"], "state": state, "status": status,
        "cells_total": len(states), "cells_done": done, "cells_damaged": damaged,
        "sessions": [{key: session.get(key) for key in ("started", "ended", "status", "backend", "versions")}
                     for session in manifest["sessions"]],
    }


@app.command("status")
def status_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts) instead of text."),
) -> None:
    """Show a run directory's study, status, sessions and how many cells are done (checked on disk).

    Every cell file is read and checked (complete, and holding its own cell of this study and
    seed); whether a session is running is asked of the run's lock, not of the manifest, so a
    killed session shows as interrupted. Works on a read-only run directory.
    """
    import json

    found = run_status(run_dir)
    if as_json:
        typer.echo(json.dumps(found, indent=2, ensure_ascii=False))
        return
    done, total, damaged = found["cells_done"], found["cells_total"], found["cells_damaged"]
    typer.echo(f"study:    {found['study']} (digest {found['study_digest'][:12]}, "
               f"seed {found['seed']}, {found['trials']} trials per cell)")
    typer.echo(f"status:   {found['status']} — {done}/{total} cells done"
               + (f", {damaged} damaged (recomputed on --resume)" if damaged else ""))
    from dpbandits.experiments.store import version_change

    for number, session in enumerate(found["sessions"], start=1):
        typer.echo(f"session {number}: {session['started']} → {session['ended'] or '(no end recorded)'} "
                   f"{session['status']} ({session['backend']})")
        previous = found["sessions"][number - 2].get("versions") if number > 1 else None
        if previous and session.get("versions") and (change := version_change(previous, session["versions"])):
            typer.echo(f"  with other versions than session {number - 1}: {change}")
    if done < total:
        typer.echo("continue with: dpbandits run STUDY.toml --out RUN_DIR --resume (same --trials/--seed)")


def _json_value(text: str) -> Any:
    """A summary.csv cell as JSON: an int or a float where it is one (NaN as null), else the text."""
    import math

    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return None if isinstance(value, float) and not math.isfinite(value) else value
    return text


def summary_data(run_dir: Path) -> dict[str, Any]:
    """A run's summary.csv as plain data: ``{"run_dir", "summary_path", "metrics", "rows"}`` (``summary --json``).

    ``metrics`` maps each metric to its estimate's column (``success_rate``, ``simple_regret_mean``);
    each row maps every column to a number where it is one (an undefined interval is null).
    """
    from dpbandits.experiments.store import SUMMARY_NAME, read_summary, summary_metrics

    rows = read_summary(run_dir)
    return {"run_dir": str(run_dir), "summary_path": str(run_dir / SUMMARY_NAME),
            "metrics": summary_metrics(list(rows[0])) if rows else {},
            "rows": [{key: value if key == "algorithm" else _json_value(value) for key, value in row.items()}
                     for row in rows]}


@app.command("summary")
def summary_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    as_json: bool = typer.Option(False, "--json", help="Print JSON (for scripts) instead of a table."),
) -> None:
    """Print a run's summary.csv as a table (every row; works on a read-only run directory)."""
    from dpbandits.experiments.store import SUMMARY_NAME, read_manifest

    read_manifest(run_dir)
    if as_json:
        import json

        typer.echo(json.dumps(summary_data(run_dir), indent=2, ensure_ascii=False, allow_nan=False))
        return
    _print_summary(run_dir)
    typer.echo(f"summary: {run_dir / SUMMARY_NAME}")


_PLOT_OUT = typer.Option(None, "--out", "-o", help="Directory of the plots (default: RUN_DIR/plots).")
_PLOT_FORMATS = ("png", "pdf", "svg")
_PLOT_FORMAT = typer.Option(None, "--format", "-f",
                            help="A file format to write: png, pdf or svg; repeat for several (default: png and pdf).")


@app.command("plot")
def plot_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    out: Path | None = _PLOT_OUT,
    formats: list[str] | None = _PLOT_FORMAT,
) -> None:
    """Draw each metric against each swept parameter (PNG and PDF in RUN_DIR/plots or --out)."""
    from dpbandits._core.validation import check_one_of
    from dpbandits.experiments.plots import plot_run

    chosen = tuple(dict.fromkeys(formats or ("png", "pdf")))
    for fmt in chosen:
        check_one_of(fmt, "--format", _PLOT_FORMATS)
    written = plot_run(run_dir, out_dir=out, formats=chosen)
    for path in written:
        typer.echo(str(path))


def register_extensions(target: typer.Typer) -> list[str]:
    """Import every ``dpbandits.cli_*`` module and let it add its commands to ``target``.

    Returns the names of the modules registered (see the module docstring for the protocol).
    """
    registered = []
    for module in sorted(pkgutil.iter_modules(dpbandits.__path__), key=lambda m: m.name):
        if module.name.startswith("cli_"):
            extension = importlib.import_module(f"dpbandits.{module.name}")
            register = getattr(extension, "register", None)
            if callable(register):
                register(target)
                registered.append(extension.__name__)
    return registered


register_extensions(app)


def main() -> None:
    """Entry point of the ``dpbandits`` console script."""
    app()
