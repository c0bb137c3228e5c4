"""The ``dpbandits`` command line: thin — parse, build a config, call the library.

Commands: ``list``, ``run``, ``reproduce``, ``plot``, ``status``, ``version``. User errors (any
:class:`~dpbandits._core.errors.DPBanditsError`: an invalid study, a run directory of another study,
a bad option value) print one ``Error: ...`` message on stderr and exit with status 1, without a
traceback.

Adding a command from another module
------------------------------------
Create ``src/dpbandits/cli_<name>.py`` defining ``register(app: typer.Typer) -> None``, which adds
its commands (``@app.command("account")`` or ``app.add_typer(sub_app, name="account")``). Every
``dpbandits.cli_*`` module is imported and registered when this module loads; nothing here needs
editing. Such commands get the same user-error handling.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

import dpbandits
from dpbandits import __version__
from dpbandits._core.errors import DPBanditsError

__all__ = ["app", "main", "register_extensions"]


class _UserErrorGroup(TyperGroup):
    """Turn library errors raised by any command into one clean message and a non-zero exit."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except DPBanditsError as exc:
            typer.echo(f"Error: {exc}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    name="dpbandits",
    cls=_UserErrorGroup,
    help="Differentially private bandit algorithms: studies, privacy accounting and audits.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dpbandits {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Differentially private bandit algorithms: studies, privacy accounting and audits."""


@app.command("version")
def version_command() -> None:
    """Print the version of dpbandits and of its main dependencies."""
    import numpy
    import scipy

    typer.echo(f"dpbandits {__version__} (numpy {numpy.__version__}, scipy {scipy.__version__})")


@app.command("list")
def list_command() -> None:
    """List registered environments, algorithms (with the privacy each gives) and bundled studies."""
    from rich.console import Console
    from rich.table import Table

    from dpbandits.algorithms.registry import list_algorithms
    from dpbandits.envs.registry import list_environments
    from dpbandits.experiments.bundled import list_bundled_studies

    console = Console()
    environments = Table(title="Environments", title_justify="left")
    for column in ("name", "kind", "description"):
        environments.add_column(column)
    for env in list_environments():
        environments.add_row(env.name, env.kind, env.description)
    algorithms = Table(title="Algorithms", title_justify="left")
    for column in ("name", "family", "privacy", "metrics"):
        algorithms.add_column(column)
    for spec in list_algorithms():
        algorithms.add_row(spec.name, spec.family, spec.privacy, ", ".join(spec.metrics))
    studies = Table(title="Bundled studies (dpbandits reproduce NAME)", title_justify="left")
    for column in ("name", "description"):
        studies.add_column(column)
    for study in list_bundled_studies():
        studies.add_row(study.name, study.description)
    for table in (environments, algorithms, studies):
        console.print(table)


# Options shared by `run` and `reproduce`.
_OUT = typer.Option(None, "--out", "-o", help="Run directory (default: runs/<study name>).")
_BACKEND = typer.Option("serial", "--backend", "-b", help="serial, process or dask.")
_WORKERS = typer.Option(None, "--workers", "-w", min=1, help="Workers of the process pool or local dask cluster (default: all cores).")
_SCHEDULER = typer.Option(None, "--scheduler", help="Dask scheduler address (default: start a local cluster).")
_RESUME = typer.Option(False, "--resume", help="Continue an interrupted run; finished cells are kept.")
_TRIALS = typer.Option(None, "--trials", "-n", min=1, help="Override the study's number of trials.")
_SEED = typer.Option(None, "--seed", min=0, help="Override the study's root seed.")
_PROGRESS = typer.Option("auto", "--progress", help="auto (bar on a terminal, log lines otherwise), rich, log, none.")
_PLOT = typer.Option(True, "--plot/--no-plot", help="Draw the plots at the end.")


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
    plot: bool,
) -> None:
    from dpbandits._core.validation import check_one_of
    from dpbandits.experiments.plots import plot_run
    from dpbandits.experiments.runner import run_study

    check_one_of(progress, "--progress", ("auto", "rich", "log", "none"))
    check_one_of(backend, "--backend", ("serial", "process", "dask"))
    if trials is not None or seed is not None:
        study = study.with_overrides(trials=trials, seed=seed)
    run_dir = out if out is not None else Path("runs") / study.name
    try:
        result = run_study(study, run_dir, backend=backend, workers=workers, scheduler=scheduler,
                           resume=resume, progress=progress, source_text=source_text)
    except KeyboardInterrupt:
        typer.echo(f"interrupted; finished cells are saved in {run_dir} — continue with --resume", err=True)
        raise typer.Exit(130) from None
    typer.echo(f"{result.status}: {result.cells_run} cells run, {result.cells_skipped} already done, "
               f"{result.seconds:.1f} s ({result.backend.get('backend')})")
    _print_summary(result.run_dir)
    typer.echo(f"run directory: {result.run_dir}")
    typer.echo(f"summary:       {result.summary_path}")
    if study.analyses:
        for path in sorted((result.run_dir / "analyses").glob("*.json")):
            typer.echo(f"analysis:      {path}")
    if plot:
        written = plot_run(result.run_dir)
        if written:
            typer.echo(f"plots:         {written[0].parent} ({len(written)} files)")


_MAX_TABLE_ROWS = 40


def _print_summary(run_dir: Path) -> None:
    """Print summary.csv as a table: each metric's mean and 95% interval per (grid point, algorithm)."""
    from rich.console import Console
    from rich.table import Table

    from dpbandits.experiments.store import read_summary, summary_metrics

    rows = read_summary(run_dir)
    if not rows or len(rows) > _MAX_TABLE_ROWS:
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
    Console(width=max(100, Console().width)).print(table)


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
) -> None:
    """Run a study file: results, summary.csv and plots go to the run directory."""
    from dpbandits._core.errors import StudyError
    from dpbandits.experiments.config import parse_study_text

    try:
        text = study_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise StudyError(f"study file {str(study_file)!r} cannot be read: {exc.strerror or exc}") from None
    study = parse_study_text(text, source=str(study_file))
    _run(study, text, out=out, backend=backend, workers=workers, scheduler=scheduler, resume=resume,
         trials=trials, seed=seed, progress=progress, plot=plot)


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
) -> None:
    """Run a bundled study by name."""
    from dpbandits.experiments.bundled import bundled_study_text
    from dpbandits.experiments.config import parse_study_text

    text = bundled_study_text(name)
    study = parse_study_text(text, source=f"bundled study {name!r}")
    _run(study, text, out=out, backend=backend, workers=workers, scheduler=scheduler, resume=resume,
         trials=trials, seed=seed, progress=progress, plot=plot)


@app.command("status")
def status_command(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Show a run directory's study, status, sessions and how many cells are done."""
    from dpbandits.experiments.store import read_manifest

    manifest = read_manifest(run_dir)
    cells = manifest.get("cells", {})
    done = sum(entry.get("status") == "done" for entry in cells.values())
    typer.echo(f"study:    {manifest.get('study')} (digest {str(manifest.get('study_digest'))[:12]}, "
               f"seed {manifest.get('seed')}, {manifest.get('trials')} trials per cell)")
    typer.echo(f"status:   {manifest.get('status')} — {done}/{len(cells)} cells done")
    for number, session in enumerate(manifest.get("sessions", []), start=1):
        typer.echo(f"session {number}: {session.get('started')} → {session.get('ended') or '(no end recorded)'} "
                   f"{session.get('status')} ({session.get('backend')})")
    if done < len(cells):
        typer.echo("continue with: dpbandits run STUDY.toml --out RUN_DIR --resume (same --trials/--seed)")


@app.command("plot")
def plot_command(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Draw each metric against each swept parameter (PNG and PDF in RUN_DIR/plots)."""
    from dpbandits.experiments.plots import plot_run

    written = plot_run(run_dir)
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
