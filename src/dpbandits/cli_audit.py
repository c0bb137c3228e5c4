"""The ``audit`` command: run the privacy contract on a user's own algorithm.

``dpbandits audit package.module:Class --epsilon 1 --n-arms 3 --param budget=24`` searches the
neighbouring inputs of the unit the algorithm protects for the most revealing pairs and events,
certifies the best on fresh runs, and prints the verdict (REFUTED or NOT REFUTED), the noise path
audited, what was searched, the certified bounds with each event's power, and what was not tested
(:func:`dpbandits.audit.user.audit_algorithm`). On a terminal a progress bar runs on stderr. Exit
status: 0 when the claim is not refuted, 3 when the audit refutes it, 1 on an error (one ``Error:``
line), for example a run budget that cannot finish within ``--max-minutes``.

Importing this module is light (it is registered on every ``dpbandits`` start-up): the auditor is
imported in the command's body.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tomllib
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer

__all__ = ["parse_param", "register"]

REFUTED_EXIT = 3
"""Exit status when the audit refutes the claim (an answer, not an error)."""


def parse_param(text: str) -> tuple[str, Any]:
    """``name=value`` with a TOML value (``24``, ``0.5``, ``true``, ``"text"``); bare words are strings."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise typer.BadParameter(f"--param must be name=value with a Python name; got {text!r}")
    try:
        parsed = tomllib.loads(f"value = {value.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return name.strip(), parsed


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""

    @app.command("audit")
    def audit(
        algorithm: Annotated[str, typer.Argument(help="Your algorithm: package.module:Class, or an entry point name")],
        epsilon: Annotated[float | None, typer.Option(help="The claimed epsilon (default: the algorithm's privacy.epsilon); "
                                                      "also given to the constructor as epsilon")] = None,
        delta: Annotated[float, typer.Option(help="The claimed delta")] = 0.0,
        unit: Annotated[str | None, typer.Option(help="What one neighbour changes: reward, label or record "
                                                 "(default: inferred from the algorithm)")] = None,
        n_arms: Annotated[int, typer.Option(help="K, the public action space of the audit's inputs")] = 3,
        param: Annotated[list[str] | None, typer.Option(help="A constructor argument, name=value (repeatable), "
                                                        "e.g. --param budget=24")] = None,
        runs: Annotated[int, typer.Option(help="Fresh runs per input of each certified pair (more runs, more "
                                                "power)")] = 2000,
        search_runs: Annotated[int, typer.Option(help="Runs per input of each pair the search scores")] = 100,
        climb: Annotated[int, typer.Option(help="Steps of the hill-climb after the structured search")] = 16,
        certify_pairs: Annotated[int, typer.Option(help="How many of the best pairs found are certified")] = 3,
        max_minutes: Annotated[float, typer.Option(help="Refuse up front a run budget estimated to take "
                                                   "longer")] = 60.0,
        confidence: Annotated[float, typer.Option(help="Joint confidence of the statistical bounds")] = 0.95,
        reward_bound: Annotated[float, typer.Option(help="Rewards of the inputs lie in [0, reward-bound]")] = 1.0,
        distribution: Annotated[str | None, typer.Option(help="package.module:function giving your algorithm's "
                                                         "exact output distribution on an input: adds the exact "
                                                         "audit")] = None,
        seeded_noise: Annotated[bool, typer.Option("--seeded-noise", help="Audit the seeded simulation path "
                                                   "(faster) instead of the deployment noise; the float attack "
                                                   "is then not run")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    ) -> None:
        """Audit your own algorithm's privacy claim: search for the violation, then certify it on fresh runs.

        It runs in this process, as any import of your code would. Exit status 0: NOT REFUTED (evidence
        up to the stated power, not a proof); 3: REFUTED; 1: an error.
        """
        from dpbandits.algorithms.user_imports import is_import_path, load_user_object  # lazy: light start-up
        from dpbandits.audit.user import audit_algorithm

        if not max_minutes > 0:
            raise typer.BadParameter(f"--max-minutes must be > 0; got {max_minutes}")
        params = dict(parse_param(item) for item in param or [])
        law = None
        if distribution is not None:
            if not is_import_path(distribution):
                raise typer.BadParameter(f"--distribution must be package.module:function; got {distribution!r}")
            law = load_user_object(distribution)
            if not callable(law):
                raise typer.BadParameter(f"--distribution {distribution!r} is not a function")
        options: dict[str, Any] = {
            "epsilon": epsilon, "delta": delta, "unit": unit, "n_arms": n_arms, "params": params, "runs": runs,
            "search_runs": search_runs, "climb": climb, "certify_pairs": certify_pairs, "confidence": confidence,
            "reward_bound": reward_bound, "distribution": law, "seeded_noise": seeded_noise,
            "max_seconds": 60.0 * max_minutes,
        }
        with _progress_bar() as progress:
            report = audit_algorithm(algorithm, progress=progress, **options)
        typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else str(report))
        if report.refuted:
            raise typer.Exit(REFUTED_EXIT)


@contextlib.contextmanager
def _progress_bar() -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar of the audit's runs on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("audit runs"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("runs", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
