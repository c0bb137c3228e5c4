"""``dpbandits ledger backup|check``: safe copies of a SQLite privacy ledger, and its complete check.

``backup SOURCE DESTINATION`` copies a ledger file with SQLite's online backup (safe while other
processes spend; ``cp`` of a live file is not), checks every ledger of the copy and prints each
one's anchor; ``check PATH`` opens every ledger of a file, verifies its hash chain, and prints the
same lines. ``--anchor LEDGER=ANCHOR`` (repeatable) also checks that a ledger still holds an anchor
recorded earlier — what detects a whole file rolled back to an older copy.

Importing this module imports typer and the standard library only (see :mod:`dpbandits.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["register"]


def _lines(summaries: list[Any]) -> list[str]:
    lines = []
    for summary in summaries:
        budget = "none" if summary.epsilon_budget is None else f"{summary.epsilon_budget:g}"
        lines.append(f"{summary.ledger_id}\tspent {summary.spent:.6g} of {budget}\t{summary.anchor.entries} entries"
                     f"\tanchor {summary.anchor}")
    return lines


def _check_anchors(path: Path, anchors: list[str]) -> None:
    from dpbandits._core.errors import InvalidParameterError
    from dpbandits.privacy.ledger_store import DurableAccountant

    for item in anchors:
        ledger_id, sep, anchor = item.rpartition("=")
        if not sep or not ledger_id:
            raise InvalidParameterError(f"--anchor must be LEDGER=ANCHOR; got {item!r}")
        ledger = DurableAccountant(path, ledger_id)
        try:
            ledger.check_anchor(anchor)
        finally:
            ledger.close()


def register(app: typer.Typer) -> None:
    """Add the ``ledger`` commands to the ``dpbandits`` application."""
    ledger = typer.Typer(help="Back up and check durable privacy ledgers (SQLite files).", no_args_is_help=True)

    @ledger.command("backup")
    def backup_command(
        source: Annotated[Path, typer.Argument(help="The ledger file (processes may be spending on it).")],
        destination: Annotated[Path, typer.Argument(help="A new file for the copy (never overwritten).")],
    ) -> None:
        """Copy a ledger file safely (SQLite online backup), check the copy, print each ledger's anchor."""
        from dpbandits.privacy.ledger_backup import backup_ledger

        for line in _lines(backup_ledger(source, destination)):
            typer.echo(line)

    @ledger.command("check")
    def check_command(
        path: Annotated[Path, typer.Argument(help="The ledger file.")],
        anchor: Annotated[list[str] | None, typer.Option(
            "--anchor", help="LEDGER=ANCHOR printed earlier: the ledger must still hold it (repeatable).")] = None,
    ) -> None:
        """Check every ledger of a file completely (hash chains, anchors); print each ledger's anchor."""
        from dpbandits.privacy.ledger_backup import check_ledger_file

        summaries = check_ledger_file(path)
        _check_anchors(path, anchor or [])
        for line in _lines(summaries):
            typer.echo(line)

    app.add_typer(ledger, name="ledger")
