"""``dpbandits account mab|linear|rlhf``: fit a KL policy to a logged CSV and print its guarantees.

CSV formats (header line first; see :mod:`dpbandits.envs.offline`):

* ``mab``: ``action,reward``, with the public action space stated: ``--n-arms K`` (arms 0..K-1) or
  ``--arm-ids 3,7,12`` (the listed arm ids, in that order). It is never inferred from the data: a
  neighbour holding a record of an arm the data lacks would otherwise change the action set;
* ``linear``: ``x0,...,x{d-1},reward``, plus ``--actions`` with ``x0,...,x{d-1}`` (candidates at one context);
* ``rlhf``: ``z0,...,z{d-1},label`` (z = φ(x, a¹) − φ(x, a²)), plus ``--actions``.

The pure guarantee (``epsilon0``) is always printed; the approximate one (``epsilon``, ``delta``)
when ``--n0``/``--k`` (mab) or ``--lambda0`` (linear, rlhf) is given, else it repeats the pure one
with δ = 0. ``--scope instance`` (default) gives per-instance guarantees: they depend on the data,
are not worst-case DP guarantees, and publishing them leaks. ``--scope domain`` gives ordinary DP
over a declared public domain (pure only): ``--min-count`` (mab), ``--min-eigenvalue`` and
``--max-records`` (linear), ``--min-eigenvalue`` (rlhf with ``--neighbouring add_remove``; label DP
needs nothing more, the comparisons being public); data outside the domain is refused.
"""

from __future__ import annotations

import json
import math
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

import dpbandits.audit.kl  # noqa: F401  (registers the auditors of the kl-* studies with audit = true)
from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning

__all__ = ["register"]


class Setting(StrEnum):
    """The three offline settings."""

    mab = "mab"
    linear = "linear"
    rlhf = "rlhf"


def _arm_space(n_arms: int | None, arm_ids: str | None) -> tuple[int, list[int] | None]:
    """The public action space: K, and the arm ids when given as a list (never inferred from data)."""
    if (n_arms is None) == (arm_ids is None):
        raise InvalidParameterError(
            "mab needs the public action space as exactly one of --n-arms K or --arm-ids ID,ID,...; it is never "
            f"inferred from the data; got --n-arms {n_arms!r} and --arm-ids {arm_ids!r}"
        )
    if n_arms is not None:
        if n_arms < 1:
            raise InvalidParameterError(f"--n-arms must be an int >= 1; got {n_arms}")
        return n_arms, None
    try:
        ids = [int(part) for part in str(arm_ids).split(",")]
    except ValueError:
        raise InvalidParameterError(
            f"--arm-ids must be a comma-separated list of distinct integers >= 0; got {arm_ids!r}") from None
    if len(set(ids)) != len(ids) or min(ids) < 0:
        raise InvalidParameterError(
            f"--arm-ids must be a comma-separated list of distinct integers >= 0; got {arm_ids!r}")
    return max(ids) + 1, ids


def _to_arm_indices(logged: Any, ids: list[int], path: Path) -> Any:
    """Map the listed arm ids to indices 0..K-1; a record of any other id is an error naming its line."""
    from dpbandits.envs.offline import LoggedBanditData

    position = np.full(max(ids) + 1, -1, dtype=np.int64)
    position[ids] = np.arange(len(ids))
    mapped = position[logged.actions]
    unknown = np.flatnonzero(mapped < 0)
    if unknown.size:
        record = int(unknown[0])
        raise InvalidParameterError(
            f"{path}: line {record + 2}, column 'action': must be one of --arm-ids {ids}; "
            f"got {int(logged.actions[record])}"
        )
    return LoggedBanditData(mapped, logged.rewards, len(ids), logged.reward_bound)


def _account(
    setting: Setting, data: Path, actions: Path | None, eta: float, beta0: float, reward_bound: float,
    ridge: float, norm_bound: float, variant: str, n0: float | None, k: float | None,
    lambda0: float | None, neighbouring: str, n_arms: int | None = None, arm_ids: str | None = None,
    scope: str = "instance", min_count: int | None = None, min_eigenvalue: float | None = None,
    max_records: int | None = None,
) -> tuple[dict[str, Any], list[str]]:
    from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
    from dpbandits.envs.offline import (
        read_action_features_csv,
        read_logged_bandit_csv,
        read_logged_contextual_csv,
        read_preferences_csv,
    )

    if scope == "domain" and (n0 is not None or k is not None or lambda0 is not None):
        raise InvalidParameterError(
            "--scope domain gives pure guarantees only; drop --n0/--k/--lambda0 "
            f"(got --n0 {n0!r}, --k {k!r}, --lambda0 {lambda0!r})"
        )
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PaperVariantWarning)
        if setting is Setting.mab:
            n_space, ids = _arm_space(n_arms, arm_ids)
            logged = read_logged_bandit_csv(data, reward_bound=reward_bound, n_arms=n_space)
            if ids is not None:
                logged = _to_arm_indices(logged, ids, data)
            mab = KLMABPolicy(logged.n_arms, eta=eta, beta0=beta0, reward_bound=reward_bound,
                              min_count=min_count).fit(logged)
            probabilities = mab.probabilities()
            pure = mab.guarantee(kind="pure", variant=variant, scope=scope)
            approx = (mab.guarantee(kind="approx", variant="corrected" if variant == "tight" else variant, n0=n0, k=k)
                      if (n0 is not None or k is not None) else None)
        else:
            if actions is None:
                raise InvalidParameterError(f"--actions FILE.csv is required for {setting.value}; got none")
            features = read_action_features_csv(actions)
            if setting is Setting.linear:
                policy: Any = KLLinearPolicy(eta=eta, beta0=beta0, ridge=ridge, reward_bound=reward_bound,
                                             min_eigenvalue=min_eigenvalue, max_records=max_records)
                policy.fit(read_logged_contextual_csv(data, reward_bound=reward_bound))
                extra: dict[str, Any] = {}
            else:
                policy = KLRLHFPolicy(eta=eta, beta0=beta0, ridge=ridge, norm_bound=norm_bound,
                                      min_eigenvalue=min_eigenvalue)
                policy.fit(read_preferences_csv(data))
                extra = {"neighbouring": neighbouring}
            probabilities = policy.probabilities(features)
            pure = policy.guarantee(features, kind="pure", variant=variant, scope=scope, **extra)
            approx = (policy.guarantee(features, kind="approx", variant="corrected" if variant == "tight" else variant,
                                     lambda0=lambda0, **extra) if lambda0 is not None else None)
    notes.extend(str(w.message) for w in caught if issubclass(w.category, PaperVariantWarning))
    chosen = approx if approx is not None else pure
    result = {
        "setting": setting.value,
        "variant": variant,
        "scope": scope,
        "unit": pure.unit,
        "neighbouring": pure.neighbouring.value,
        "per_instance": pure.per_instance,
        "epsilon0": pure.epsilon,
        "epsilon": chosen.epsilon,
        "delta": chosen.delta,
        "reference_pure": pure.reference,
        "reference": chosen.reference,
        "reason": "; ".join(r for r in dict.fromkeys([pure.reason, chosen.reason]) if r),
        "guarantee": str(pure),
        "probabilities": [float(p) for p in probabilities],
        "warnings": notes,
    }
    return result, notes


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf"
    return value


def register(app: typer.Typer) -> None:
    """Add the ``account`` command to the ``dpbandits`` application."""

    @app.command("account")
    def account_command(
        setting: Annotated[Setting, typer.Argument(help="Offline setting: mab, linear or rlhf.")],
        data: Annotated[Path, typer.Option("--data", help="Logged data CSV (formats above).")],
        actions: Annotated[Path | None, typer.Option("--actions", help="Candidate features CSV (linear, rlhf).")] = None,
        eta: Annotated[float, typer.Option("--eta", help="KL strength eta > 0.")] = 1.0,
        beta0: Annotated[float, typer.Option("--beta0", help="Pessimism beta0 >= 0.")] = 1.0,
        reward_bound: Annotated[float, typer.Option("--reward-bound", help="Reward bound R (mab, linear).")] = 1.0,
        ridge: Annotated[float, typer.Option("--lambda", help="Ridge lambda (linear, rlhf).")] = 2.0,
        norm_bound: Annotated[float, typer.Option("--norm-bound", help="MLE radius B (rlhf).")] = 1.0,
        variant: Annotated[str, typer.Option("--variant", help="corrected, paper or tight.")] = "corrected",
        n0: Annotated[float | None, typer.Option("--n0", help="MAB approximate DP: threshold N0.")] = None,
        k: Annotated[float | None, typer.Option("--k", help="MAB approximate DP: N0 = floor(N_max/k).")] = None,
        lambda0: Annotated[float | None, typer.Option("--lambda0", help="Linear/RLHF approximate DP threshold.")] = None,
        neighbouring: Annotated[str, typer.Option("--neighbouring", help="rlhf: label or add_remove.")] = "label",
        n_arms: Annotated[int | None, typer.Option(
            "--n-arms", help="mab: the public number of arms K (arms 0..K-1); this or --arm-ids is required.")] = None,
        arm_ids: Annotated[str | None, typer.Option(
            "--arm-ids", help="mab: the public arm ids, comma-separated (e.g. 3,7,12); this or --n-arms.")] = None,
        scope: Annotated[str, typer.Option("--scope", help="instance (per-instance) or domain (DP over public bounds).")] = "instance",
        min_count: Annotated[int | None, typer.Option(
            "--min-count", help="mab, --scope domain: public per-arm count floor m (data below it is refused).")] = None,
        min_eigenvalue: Annotated[float | None, typer.Option(
            "--min-eigenvalue", help="linear / rlhf add_remove, --scope domain: public floor on lambda_min(Sigma_D).")] = None,
        max_records: Annotated[int | None, typer.Option(
            "--max-records", help="linear, --scope domain: public bound n_max on the number of records.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Fit a KL-regularised offline policy to logged data and print its guarantees.

        CSV formats (a header line, then one record per line; trailing blank lines are ignored): mab: action,reward
        with the public action space as --n-arms K or --arm-ids ID,ID,... (required, never inferred from the data);
        linear:
        x0,...,x{d-1},reward with --actions x0,...,x{d-1} (the candidates at one context); rlhf:
        z0,...,z{d-1},label (z = phi(x, a1) - phi(x, a2), label 1 if a1 is preferred) with --actions.
        --scope instance (default) prints per-instance guarantees (they depend on the data and are not worst-case
        DP guarantees); --scope domain prints ordinary DP over the declared public domain (--min-count;
        --min-eigenvalue, --max-records).
        """
        from dpbandits._core.validation import check_one_of

        check_one_of(variant, "variant", ("corrected", "paper", "tight"))
        check_one_of(neighbouring, "neighbouring", ("label", "add_remove"))
        check_one_of(scope, "scope", ("instance", "domain"))
        result, notes = _account(setting, data, actions, eta, beta0, reward_bound, ridge, norm_bound, variant,
                                 n0, k, lambda0, neighbouring, n_arms, arm_ids, scope, min_count, min_eigenvalue,
                                 max_records)
        if as_json:
            typer.echo(json.dumps({key: _json_number(v) for key, v in result.items()}))
            return
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        console = Console()
        table = Table(title=f"dpbandits account {setting.value} ({variant})")
        table.add_column("quantity")
        table.add_column("value")
        for key in ("unit", "neighbouring", "epsilon0", "epsilon", "delta", "reference", "reason"):
            table.add_row(key, f"{result[key]:.6g}" if isinstance(result[key], float) else escape(str(result[key])))
        console.print(table)
        console.print("probabilities: " + ", ".join(f"{p:.6g}" for p in result["probabilities"]))
        if result["per_instance"]:
            console.print("note: per-instance guarantee: it holds for this dataset and its neighbours only, is NOT a "
                          "worst-case DP guarantee, and publishing it leaks information about the data")
        else:
            console.print(f"note: {escape(result['guarantee'])}")
        for note in notes:
            console.print(f"[yellow]warning:[/yellow] {escape(note)}")
