"""``dpbandits account mab|linear|rlhf``: fit a KL policy to logged data and print its guarantees.

Logged data is a CSV or Parquet file (see :mod:`dpbandits.envs.readers`); columns are named with
``--action-col``/``--reward-col`` (mab), ``--feature-cols``/``--reward-col`` (linear) and
``--feature-cols``/``--label-col`` (rlhf); other columns are ignored:

* ``mab``: ``action,reward``; ``--n-arms K`` states the public number of arms (required: K is never
  read off the data);
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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Reading:
    """How ``account`` reads its files: the column mapping and the file format."""

    action_col: str = "action"
    reward_col: str = "reward"
    label_col: str = "label"
    feature_cols: str | None = None  # "x*" (linear) or "z*" (rlhf) when not given
    candidate_cols: str = "x*"
    file_format: str | None = None  # from each file's suffix when not given

    @staticmethod
    def columns(option: str) -> str | list[str]:
        """``"a,b,c"`` -> a list of names; ``"x*"`` (a pattern) or one name stays as it is."""
        return [name.strip() for name in option.split(",")] if "," in option else option.strip()


def _check_options(setting: Setting, *, eta: float, beta0: float, reward_bound: float, ridge: float,
                   norm_bound: float, n0: float | None, k: float | None, lambda0: float | None,
                   n_arms: int | None, actions: Path | None, file_format: str | None) -> None:
    """Validate the options up front, each error naming the option as typed (never an internal name)."""
    from dpbandits._core.validation import check_in_interval, check_one_of, check_positive_float
    from dpbandits.envs.logged import check_n_arms

    check_positive_float(eta, "--eta")
    check_in_interval(beta0, "--beta0", 0.0, math.inf, closed="left")
    check_positive_float(reward_bound, "--reward-bound")
    check_positive_float(ridge, "--lambda")
    check_positive_float(norm_bound, "--norm-bound")
    for value, option in ((n0, "--n0"), (k, "--k"), (lambda0, "--lambda0")):
        if value is not None:
            check_positive_float(value, option)
    if n0 is not None and k is not None:
        raise InvalidParameterError(f"give one of --n0 and --k, not both; got --n0 {n0!r} and --k {k!r}")
    if n_arms is not None:
        check_n_arms(n_arms, "--n-arms")
    if file_format is not None:
        check_one_of(file_format, "--format", ("csv", "parquet"))
    contextual = (Setting.linear, Setting.rlhf)
    setting_options: tuple[tuple[str, object, tuple[Setting, ...]], ...] = (
        ("--n0", n0, (Setting.mab,)), ("--k", k, (Setting.mab,)), ("--n-arms", n_arms, (Setting.mab,)),
        ("--lambda0", lambda0, contextual), ("--actions", actions, contextual),
    )
    for option, given, settings in setting_options:
        if given is not None and setting not in settings:  # an option silently ignored would mislead
            raise InvalidParameterError(f"{option} does not apply to {setting.value}; got {option} {given}")


def _account(
    setting: Setting, data: Path, actions: Path | None, eta: float, beta0: float, reward_bound: float,
    ridge: float, norm_bound: float, variant: str, n0: float | None, k: float | None,
    lambda0: float | None, neighbouring: str, n_arms: int | None = None, reading: Reading | None = None,
) -> tuple[dict[str, Any], list[str]]:
    from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
    from dpbandits.envs.readers import (
        read_action_features,
        read_bandit_statistics,
        read_logged_contextual,
        read_preferences,
    )

    reading = reading or Reading()

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PaperVariantWarning)
        if setting is Setting.mab:
            if n_arms is None:
                raise InvalidParameterError("--n-arms K is required for mab: the number of arms is public input, "
                                            "never read off the data; got none")
            stats = read_bandit_statistics(data, n_arms=n_arms, reward_bound=reward_bound,
                                           action_column=reading.action_col, reward_column=reading.reward_col,
                                           file_format=reading.file_format)
            if stats.n_records == 0:
                raise InvalidParameterError(f"--data {data} holds no records (a header only): no arm has data")
            mab = KLMABPolicy(stats.n_arms, eta=eta, beta0=beta0, reward_bound=reward_bound)
            mab.fit_statistics(stats.counts, stats.reward_sums)
            probabilities = mab.probabilities()
            pure = mab.privacy(kind="pure", variant=variant)
            approx = (mab.privacy(kind="approx", variant=variant, n0=n0, k=k)
                      if (n0 is not None or k is not None) else None)
        else:
            if actions is None:
                raise InvalidParameterError(f"--actions FILE is required for {setting.value}; got none")
            features = read_action_features(actions, feature_columns=reading.columns(reading.candidate_cols),
                                            file_format=reading.file_format)
            if setting is Setting.linear:
                policy: Any = KLLinearPolicy(eta=eta, beta0=beta0, ridge=ridge, reward_bound=reward_bound)
                policy.fit(read_logged_contextual(data, reward_bound=reward_bound,
                                                  feature_columns=reading.columns(reading.feature_cols or "x*"),
                                                  reward_column=reading.reward_col, file_format=reading.file_format))
                extra: dict[str, Any] = {}
            else:
                policy = KLRLHFPolicy(eta=eta, beta0=beta0, ridge=ridge, norm_bound=norm_bound)
                policy.fit(read_preferences(data, feature_columns=reading.columns(reading.feature_cols or "z*"),
                                            label_column=reading.label_col, file_format=reading.file_format))
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
        n_arms: Annotated[int | None, typer.Option("--n-arms", help="mab: public number of arms K (required).")] = None,
        action_col: Annotated[str, typer.Option("--action-col", help="mab: column of the arm ids.")] = "action",
        reward_col: Annotated[str, typer.Option("--reward-col", help="mab, linear: column of the rewards.")] = "reward",
        label_col: Annotated[str, typer.Option("--label-col", help="rlhf: column of the 0/1 labels.")] = "label",
        feature_cols: Annotated[str | None, typer.Option("--feature-cols", help="linear, rlhf: feature columns of --data, 'x*' (x0..x{d-1}) or a,b,c (default x* / z*).")] = None,
        candidate_cols: Annotated[str, typer.Option("--candidate-cols", help="linear, rlhf: feature columns of --actions.")] = "x*",
        file_format: Annotated[str | None, typer.Option("--format", help="csv or parquet (default: from each file's suffix).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Fit a KL-regularised offline policy to logged data and print its per-instance guarantees.

        Data: a CSV (UTF-8, header line first) or Parquet file; columns other than those named are
        ignored. mab: action,reward (--action-col, --reward-col) with --n-arms K, the public number of
        arms (required); linear: x0,...,x{d-1},reward (--feature-cols, --reward-col) with --actions
        x0,...,x{d-1} (the candidates at one context; --candidate-cols); rlhf: z0,...,z{d-1},label
        (z = phi(x, a1) - phi(x, a2), label 1 if a1 is preferred; --feature-cols, --label-col) with --actions.
        """
        from dpbandits._core.validation import check_one_of

        check_one_of(variant, "--variant", ("corrected", "paper", "tight"))
        check_one_of(neighbouring, "--neighbouring", ("label", "add_remove"))
        _check_options(setting, eta=eta, beta0=beta0, reward_bound=reward_bound, ridge=ridge, norm_bound=norm_bound,
                       n0=n0, k=k, lambda0=lambda0, n_arms=n_arms, actions=actions, file_format=file_format)
        reading = Reading(action_col, reward_col, label_col, feature_cols, candidate_cols, file_format)
        result, notes = _account(setting, data, actions, eta, beta0, reward_bound, ridge, norm_bound, variant,
                                 n0, k, lambda0, neighbouring, n_arms, reading)
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
