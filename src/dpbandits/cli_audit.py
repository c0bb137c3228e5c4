"""The ``audit`` command: run the privacy contract on a user's own algorithm.

``dpbandits audit package.module:Class --epsilon 1 --n-arms 3 --param budget=24`` builds adversarial
neighbouring inputs for the unit the algorithm protects, runs it many times on each, and prints the
empirical ε lower bound against the claim, the audit's power and what was and was not tested
(:func:`dpbandits.audit.user.audit_algorithm`). Exit status: 0 when the claim survives, 3 when the
audit refutes it, 1 on an error (one ``Error:`` line).

Importing this module is light (it is registered on every ``dpbandits`` start-up): the auditor is
imported in the command's body.
"""

from __future__ import annotations

import json
import tomllib
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
        runs: Annotated[int, typer.Option(help="Runs per input of each pair (more runs, more power)")] = 2000,
        pairs: Annotated[int | None, typer.Option(help="Audit only the first N neighbouring pairs")] = None,
        confidence: Annotated[float, typer.Option(help="Joint confidence of the statistical bounds")] = 0.95,
        reward_bound: Annotated[float, typer.Option(help="Rewards of the inputs lie in [0, reward-bound]")] = 1.0,
        distribution: Annotated[str | None, typer.Option(help="package.module:function giving your algorithm's "
                                                         "exact output distribution on an input: adds the exact "
                                                         "audit")] = None,
        seeded_noise: Annotated[bool, typer.Option("--seeded-noise", help="Audit the seeded simulation path "
                                                   "(faster) instead of the deployment noise")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
    ) -> None:
        """Audit your own algorithm's privacy claim: adversarial neighbours, many runs, an empirical epsilon.

        It runs in this process, as any import of your code would. Exit status 0: the claim survived
        (up to the stated power); 3: the audit refuted it; 1: an error.
        """
        from dpbandits.algorithms.user_imports import is_import_path, load_user_object  # lazy: light start-up
        from dpbandits.audit.user import audit_algorithm

        params = dict(parse_param(item) for item in param or [])
        law = None
        if distribution is not None:
            if not is_import_path(distribution):
                raise typer.BadParameter(f"--distribution must be package.module:function; got {distribution!r}")
            law = load_user_object(distribution)
            if not callable(law):
                raise typer.BadParameter(f"--distribution {distribution!r} is not a function")
        report = audit_algorithm(algorithm, epsilon=epsilon, delta=delta, unit=unit, n_arms=n_arms, params=params,
                                 runs=runs, pairs=pairs, confidence=confidence, reward_bound=reward_bound,
                                 distribution=law, seeded_noise=seeded_noise)
        typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else str(report))
        if not report.passed:
            raise typer.Exit(REFUTED_EXIT)
