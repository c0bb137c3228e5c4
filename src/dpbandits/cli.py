"""The ``dpbandits`` command line: thin — parse, build a config, call the library."""

from __future__ import annotations

import typer

from dpbandits import __version__

app = typer.Typer(
    name="dpbandits",
    help="Differentially private bandit algorithms: studies, privacy accounting and audits.",
    no_args_is_help=True,
    add_completion=False,
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


def main() -> None:
    """Entry point of the ``dpbandits`` console script."""
    app()
