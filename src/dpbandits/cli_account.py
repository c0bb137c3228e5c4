"""``dpbandits account mab|linear|rlhf``: fit a KL policy to a logged CSV and print its guarantees.

CSV formats (header line first; see :mod:`dpbandits.envs.offline`):

* ``mab``: ``action,reward`` (``--n-arms K`` states the public number of arms; by default
  ``max(action) + 1``, which lets the data decide K);
* ``linear``: ``x0,...,x{d-1},reward``, plus ``--actions`` with ``x0,...,x{d-1}`` (candidates at one context);
* ``rlhf``: ``z0,...,z{d-1},label`` (z = φ(x, a¹) − φ(x, a²)), plus ``--actions``.

The pure guarantee (``epsilon0``) is always printed; the approximate one (``epsilon``, ``delta``)
when ``--n0``/``--k`` (mab) or ``--lambda0`` (linear, rlhf) is given, else it repeats the pure one
with δ = 0. Every guarantee is per-instance: it depends on the data, and publishing it leaks.
"""

from __future__ import annotations

import json
import math
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

import dpbandits.audit.kl  # noqa: F401  (registers the auditors of the kl-* studies with audit = true)
from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning

__all__ = ["register"]


class Setting(StrEnum):
    """The three offline settings."""

    mab = "mab"
    linear = "linear"
    rlhf = "rlhf"


def _account(
    setting: Setting, data: Path, actions: Path | None, eta: float, beta0: float, reward_bound: float,
    ridge: float, norm_bound: float, variant: str, n0: float | None, k: float | None,
    lambda0: float | None, neighbouring: str, n_arms: int | None = None,
) -> tuple[dict[str, Any], list[str]]:
    from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
    from dpbandits.envs.offline import (
        read_action_features_csv,
        read_logged_bandit_csv,
        read_logged_contextual_csv,
        read_preferences_csv,
    )

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PaperVariantWarning)
        if setting is Setting.mab:
            logged = read_logged_bandit_csv(data, reward_bound=reward_bound, n_arms=n_arms)
            mab = KLMABPolicy(logged.n_arms, eta=eta, beta0=beta0, reward_bound=reward_bound).fit(logged)
            probabilities = mab.probabilities()
            pure = mab.privacy(kind="pure", variant=variant)
            approx = (mab.privacy(kind="approx", variant=variant, n0=n0, k=k)
                      if (n0 is not None or k is not None) else None)
        else:
            if actions is None:
                raise InvalidParameterError(f"--actions FILE.csv is required for {setting.value}; got none")
            features = read_action_features_csv(actions)
            if setting is Setting.linear:
                policy: Any = KLLinearPolicy(eta=eta, beta0=beta0, ridge=ridge, reward_bound=reward_bound)
                policy.fit(read_logged_contextual_csv(data, reward_bound=reward_bound))
                extra: dict[str, Any] = {}
            else:
                policy = KLRLHFPolicy(eta=eta, beta0=beta0, ridge=ridge, norm_bound=norm_bound)
                policy.fit(read_preferences_csv(data))
                extra = {"neighbouring": neighbouring}
            probabilities = policy.probabilities(features)
            pure = policy.privacy(features, kind="pure", variant=variant, **extra)
            approx = (policy.privacy(features, kind="approx", variant="corrected" if variant == "tight" else variant,
                                     lambda0=lambda0, **extra) if lambda0 is not None else None)
    notes.extend(str(w.message) for w in caught if issubclass(w.category, PaperVariantWarning))
    chosen = approx if approx is not None else pure
    result = {
        "setting": setting.value,
        "variant": variant,
        "unit": pure.unit,
        "neighbouring": pure.neighbouring.value,
        "per_instance": True,
        "epsilon0": pure.epsilon,
        "epsilon": chosen.epsilon,
        "delta": chosen.delta,
        "reference_pure": pure.reference,
        "reference": chosen.reference,
        "reason": "; ".join(r for r in dict.fromkeys([pure.reason, chosen.reason]) if r),
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
        n_arms: Annotated[int | None, typer.Option("--n-arms", help="mab: public number of arms K (default: max action + 1).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Fit a KL-regularised offline policy to logged data and print its per-instance guarantees.

        CSV formats (a header line, then one record per line; trailing blank lines are ignored): mab: action,reward
        (--n-arms K: the public number of arms, default max(action) + 1); linear:
        x0,...,x{d-1},reward with --actions x0,...,x{d-1} (the candidates at one context); rlhf:
        z0,...,z{d-1},label (z = phi(x, a1) - phi(x, a2), label 1 if a1 is preferred) with --actions.
        """
        from dpbandits._core.validation import check_one_of

        check_one_of(variant, "variant", ("corrected", "paper", "tight"))
        check_one_of(neighbouring, "neighbouring", ("label", "add_remove"))
        result, notes = _account(setting, data, actions, eta, beta0, reward_bound, ridge, norm_bound, variant,
                                 n0, k, lambda0, neighbouring, n_arms)
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
        console.print("note: per-instance guarantee (depends on the data; publishing it leaks information)")
        for note in notes:
            console.print(f"[yellow]warning:[/yellow] {escape(note)}")
