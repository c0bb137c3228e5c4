"""``dpbandits account mab|linear|rlhf``: fit a KL policy to logged data and print its guarantees.

Importing this module is light (the command is registered on every ``dpbandits`` start-up, even
``--help``): NumPy, the readers and the KL policies are imported when the command runs.

Logged data is a CSV or Parquet file (see :mod:`dpbandits.envs.readers`); columns are named with
``--action-col``/``--reward-col`` (mab), ``--feature-cols``/``--reward-col`` (linear) and
``--feature-cols``/``--label-col`` (rlhf); other columns are ignored:

* ``mab``: ``action,reward``, with the public action space stated: ``--n-arms K`` (arms 0..K-1) or
  ``--arm-ids 3,7,12`` (the listed arm ids, in that order). It is never inferred from the data: a
  neighbour holding a record of an arm the data lacks would otherwise change the action set;
* ``linear``: ``x0,...,x{d-1},reward``, plus ``--actions`` with ``x0,...,x{d-1}`` (candidates at one context);
* ``rlhf``: ``z0,...,z{d-1},label`` (z = φ(x, a¹) − φ(x, a²)), plus ``--actions``.

The pure guarantee (``epsilon0``) is always printed; the approximate one (``epsilon``, ``delta``)
when ``--n0``/``--k`` (mab) or ``--lambda0`` (linear, rlhf) is given, else it repeats the pure one
with δ = 0. ``--scope instance`` (default) gives per-instance guarantees: they depend on the data,
are not worst-case DP guarantees, and publishing them leaks; ``--scope domain`` gives ordinary DP over
a declared public domain (``--min-count``; ``--min-eigenvalue``, ``--max-records``).
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

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


@dataclass(frozen=True)
class Options:
    """The accounting options of ``account`` (validated by :func:`_check_options`)."""

    eta: float = 1.0
    beta0: float = 1.0
    reward_bound: float = 1.0
    ridge: float = 2.0
    norm_bound: float = 1.0
    variant: str = "corrected"
    n0: float | None = None
    k: float | None = None
    lambda0: float | None = None
    neighbouring: str = "label"
    n_arms: int | None = None
    arm_ids: str | None = None
    scope: str = "instance"
    min_count: int | None = None
    min_eigenvalue: float | None = None
    max_records: int | None = None


def _check_options(setting: Setting, options: Options, actions: Path | None, file_format: str | None) -> None:
    """Validate the options up front, each error naming the option as typed (never an internal name)."""
    from dpbandits._core.validation import check_in_interval, check_one_of, check_positive_float
    from dpbandits.envs.logged import check_n_arms

    o = options
    check_one_of(o.variant, "--variant", ("corrected", "paper", "refined", "tight"))
    check_one_of(o.neighbouring, "--neighbouring", ("label", "add_remove"))
    check_one_of(o.scope, "--scope", ("instance", "domain"))
    check_positive_float(o.eta, "--eta")
    check_in_interval(o.beta0, "--beta0", 0.0, math.inf, closed="left")
    check_positive_float(o.reward_bound, "--reward-bound")
    check_positive_float(o.ridge, "--lambda")
    check_positive_float(o.norm_bound, "--norm-bound")
    for value, option in ((o.n0, "--n0"), (o.k, "--k"), (o.lambda0, "--lambda0"), (o.min_eigenvalue, "--min-eigenvalue")):
        if value is not None:
            check_positive_float(value, option)
    for count, option in ((o.min_count, "--min-count"), (o.max_records, "--max-records")):
        if count is not None and count < 1:
            raise InvalidParameterError(f"{option} must be an int >= 1; got {count}")
    if o.n0 is not None and o.k is not None:
        raise InvalidParameterError(f"give one of --n0 and --k, not both; got --n0 {o.n0!r} and --k {o.k!r}")
    if o.scope == "domain" and (o.n0 is not None or o.k is not None or o.lambda0 is not None):
        raise InvalidParameterError(
            "--scope domain gives pure guarantees only; drop --n0/--k/--lambda0 "
            f"(got --n0 {o.n0!r}, --k {o.k!r}, --lambda0 {o.lambda0!r})"
        )
    if o.n_arms is not None:
        check_n_arms(o.n_arms, "--n-arms")
    if file_format is not None:
        check_one_of(file_format, "--format", ("csv", "parquet"))
    contextual = (Setting.linear, Setting.rlhf)
    setting_options: tuple[tuple[str, object, tuple[Setting, ...]], ...] = (
        ("--n0", o.n0, (Setting.mab,)), ("--k", o.k, (Setting.mab,)), ("--n-arms", o.n_arms, (Setting.mab,)),
        ("--arm-ids", o.arm_ids, (Setting.mab,)), ("--min-count", o.min_count, (Setting.mab,)),
        ("--lambda0", o.lambda0, contextual), ("--actions", actions, contextual),
        ("--min-eigenvalue", o.min_eigenvalue, contextual), ("--max-records", o.max_records, (Setting.linear,)),
    )
    for option, given, settings in setting_options:
        if given is not None and setting not in settings:  # an option silently ignored would mislead
            raise InvalidParameterError(f"{option} does not apply to {setting.value}; got {option} {given}")


def _arm_space(n_arms: int | None, arm_ids: str | None) -> tuple[int, list[int] | None]:
    """The public action space: K, and the arm ids when given as a list (never inferred from data)."""
    from dpbandits.envs.logged import check_n_arms

    if (n_arms is None) == (arm_ids is None):
        raise InvalidParameterError(
            "mab needs the public action space as exactly one of --n-arms K or --arm-ids ID,ID,...; it is never "
            f"inferred from the data; got --n-arms {n_arms!r} and --arm-ids {arm_ids!r}"
        )
    if n_arms is not None:
        return n_arms, None
    try:
        ids = [int(part) for part in str(arm_ids).split(",")]
    except ValueError:
        raise InvalidParameterError(
            f"--arm-ids must be a comma-separated list of distinct integers >= 0; got {arm_ids!r}") from None
    if len(set(ids)) != len(ids) or min(ids) < 0:
        raise InvalidParameterError(
            f"--arm-ids must be a comma-separated list of distinct integers >= 0; got {arm_ids!r}")
    check_n_arms(max(ids) + 1, "--arm-ids (largest id + 1)")
    return max(ids) + 1, ids


def _mab(data: Path, options: Options, reading: Reading) -> tuple[Any, Any, Any]:
    """Fit the MAB policy from streamed per-arm statistics; (probabilities, pure, approx)."""
    import numpy as np

    from dpbandits.algorithms.offline import KLMABPolicy
    from dpbandits.envs.readers import read_bandit_statistics

    o = options
    n_space, ids = _arm_space(o.n_arms, o.arm_ids)
    stats = read_bandit_statistics(data, n_arms=n_space, reward_bound=o.reward_bound,
                                   action_column=reading.action_col, reward_column=reading.reward_col,
                                   file_format=reading.file_format)
    counts, sums = stats.counts, stats.reward_sums
    if ids is not None:  # map the listed ids to 0..K-1; a record of any other id is refused
        unlisted = np.ones(n_space, dtype=bool)
        unlisted[ids] = False
        stray = np.flatnonzero(unlisted & (counts > 0))
        if stray.size:
            raise InvalidParameterError(
                f"--data {data}: column {reading.action_col!r} holds arm id {int(stray[0])}, which is not one of "
                f"--arm-ids {ids}"
            )
        counts, sums = counts[ids], sums[ids]
    if int(counts.sum()) == 0:
        raise InvalidParameterError(f"--data {data} holds no records (a header only): no arm has data")
    mab = KLMABPolicy(len(counts), eta=o.eta, beta0=o.beta0, reward_bound=o.reward_bound, min_count=o.min_count)
    mab.fit_statistics(counts, sums)
    pure = mab.guarantee(kind="pure", variant=o.variant, scope=o.scope)
    approx = (mab.guarantee(kind="approx", variant="corrected" if o.variant == "tight" else o.variant, n0=o.n0, k=o.k)
              if (o.n0 is not None or o.k is not None) else None)
    return mab.probabilities(), pure, approx


def _contextual(setting: Setting, data: Path, actions: Path | None, options: Options,
                reading: Reading) -> tuple[Any, Any, Any]:
    """Fit the linear or RLHF policy and account at the candidates of --actions."""
    from dpbandits.algorithms.offline import KLLinearPolicy, KLRLHFPolicy
    from dpbandits.envs.readers import read_action_features, read_logged_contextual, read_preferences

    o = options
    if actions is None:
        raise InvalidParameterError(f"--actions FILE is required for {setting.value}; got none")
    features = read_action_features(actions, feature_columns=reading.columns(reading.candidate_cols),
                                    file_format=reading.file_format)
    extra: dict[str, Any] = {}
    if setting is Setting.linear:
        policy: Any = KLLinearPolicy(eta=o.eta, beta0=o.beta0, ridge=o.ridge, reward_bound=o.reward_bound,
                                     min_eigenvalue=o.min_eigenvalue, max_records=o.max_records)
        policy.fit(read_logged_contextual(data, reward_bound=o.reward_bound,
                                          feature_columns=reading.columns(reading.feature_cols or "x*"),
                                          reward_column=reading.reward_col, file_format=reading.file_format))
    else:
        policy = KLRLHFPolicy(eta=o.eta, beta0=o.beta0, ridge=o.ridge, norm_bound=o.norm_bound,
                              min_eigenvalue=o.min_eigenvalue)
        preferences = read_preferences(data, feature_columns=reading.columns(reading.feature_cols or "z*"),
                                       label_column=reading.label_col, file_format=reading.file_format)
        _fit_rlhf(policy, preferences, data)
        extra = {"neighbouring": o.neighbouring}
    pure = policy.guarantee(features, kind="pure", variant=o.variant, scope=o.scope, **extra)
    approx = (policy.guarantee(features, kind="approx",
                               variant="corrected" if o.variant in ("refined", "tight") else o.variant,
                               lambda0=o.lambda0, **extra) if o.lambda0 is not None else None)
    return policy.probabilities(features), pure, approx


def _fit_rlhf(policy: Any, preferences: Any, data: Path) -> None:
    """Fit the RLHF policy; an MLE that cannot be certified names the CLI option to change (--norm-bound).

    The policy's public solver tolerance is not a CLI option: when the certified solver error
    exceeds it (the curvature bound 1/κ_B, κ_B = 2 + e^{2B} + e^{−2B}, vanishes for a large MLE radius
    B, or the comparisons do not span every direction), the refusal says so in CLI terms.
    """
    try:
        policy.fit(preferences)
    except InvalidParameterError:
        error = getattr(policy, "solver_error_", None)
        if error is None or error <= policy.solver_tolerance:
            raise
        bound = policy.norm_bound
        kappa = "overflows a float" if not 2.0 * bound < math.log(sys.float_info.max) else f"= {2.0 + math.exp(2.0 * bound) + math.exp(-2.0 * bound):.3g}"
        raise InvalidParameterError(
            f"--norm-bound {bound:g}: the MLE on --data {data} cannot be certified to within the solver tolerance "
            f"{policy.solver_tolerance:g} the guarantee needs (certified error {error:.3g}; kappa_B = 2 + e^(2B) + "
            f"e^(-2B) {kappa}); {'lower' if bound > 1.0 else 'raise'} --norm-bound (e.g. 1-5), or check that the "
            "comparisons span every direction (sum of z z^T singular)"
        ) from None


def _account(setting: Setting, data: Path, actions: Path | None, options: Options,
             reading: Reading | None = None) -> tuple[dict[str, Any], list[str]]:
    reading = reading or Reading()
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PaperVariantWarning)
        if setting is Setting.mab:
            probabilities, pure, approx = _mab(data, options, reading)
        else:
            probabilities, pure, approx = _contextual(setting, data, actions, options, reading)
    notes.extend(str(w.message) for w in caught if issubclass(w.category, PaperVariantWarning))
    chosen = approx if approx is not None else pure
    result = {
        "setting": setting.value,
        "variant": options.variant,
        "scope": options.scope,
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


def _explained_rows(result: dict[str, Any], options: Options) -> list[tuple[str, str]]:
    """The table's rows (quantity, what it means); a row without a value (an empty reason) is left out."""
    approximate = options.n0 is not None or options.k is not None or options.lambda0 is not None
    rows = [
        ("unit", "what one record is: the unit the guarantee protects"),
        ("neighbouring", "which datasets count as neighbours (one record changed, added or removed)"),
        ("epsilon0", "pure DP: epsilon of one sampled action with delta = 0"),
        ("epsilon", "(epsilon, delta)-DP from " + ("--n0/--k" if result["setting"] == "mab" else "--lambda0")
         if approximate else "the pure epsilon0 again (no --n0/--k/--lambda0: no approximate guarantee asked)"),
        ("delta", "the probability the epsilon bound may fail" if approximate else "0: a pure guarantee"),
        ("reference", "the result the numbers come from"),
        ("reason", "why a guarantee is infinite or restricted"),
    ]
    return [(key, meaning) for key, meaning in rows if result[key] not in ("", None)]


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf"
    return value


def register(app: typer.Typer) -> None:
    """Add the ``account`` command to the ``dpbandits`` application."""

    @app.command("account")
    def account_command(
        setting: Annotated[Setting, typer.Argument(help="Offline setting: mab, linear or rlhf.")],
        data: Annotated[Path, typer.Option("--data", help="Logged data, CSV or Parquet (formats above).")],
        actions: Annotated[Path | None, typer.Option("--actions", help="Candidate features file (linear, rlhf).")] = None,
        eta: Annotated[float, typer.Option("--eta", help="KL strength eta > 0.")] = 1.0,
        beta0: Annotated[float, typer.Option("--beta0", help="Pessimism beta0 >= 0.")] = 1.0,
        reward_bound: Annotated[float, typer.Option("--reward-bound", help="Reward bound R (mab, linear).")] = 1.0,
        ridge: Annotated[float, typer.Option("--lambda", help="Ridge lambda (linear, rlhf).")] = 2.0,
        norm_bound: Annotated[float, typer.Option("--norm-bound", help="MLE radius B (rlhf).")] = 1.0,
        variant: Annotated[str, typer.Option(
            "--variant", help="corrected, paper, refined (linear, rlhf) or tight (within a printed factor of the exact "
            "loss).")] = "corrected",
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
        action_col: Annotated[str, typer.Option("--action-col", help="mab: column of the arm ids.")] = "action",
        reward_col: Annotated[str, typer.Option("--reward-col", help="mab, linear: column of the rewards.")] = "reward",
        label_col: Annotated[str, typer.Option("--label-col", help="rlhf: column of the 0/1 labels.")] = "label",
        feature_cols: Annotated[str | None, typer.Option("--feature-cols", help="linear, rlhf: feature columns of --data, 'x*' (x0..x{d-1}) or a,b,c (default x* / z*).")] = None,
        candidate_cols: Annotated[str, typer.Option("--candidate-cols", help="linear, rlhf: feature columns of --actions.")] = "x*",
        file_format: Annotated[str | None, typer.Option("--format", help="csv or parquet (default: from each file's suffix).")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Fit a KL-regularised offline policy to logged data and print its guarantees.

        Data: a CSV (UTF-8, header line first) or Parquet file; columns other than those named are
        ignored. mab: action,reward (--action-col, --reward-col) with the public action space as
        --n-arms K or --arm-ids ID,ID,... (required, never inferred from the data); linear:
        x0,...,x{d-1},reward (--feature-cols, --reward-col) with --actions x0,...,x{d-1} (the
        candidates at one context; --candidate-cols); rlhf: z0,...,z{d-1},label (z = phi(x, a1) -
        phi(x, a2), label 1 if a1 is preferred; --feature-cols, --label-col) with --actions.
        --scope instance (default) prints per-instance guarantees (they depend on the data and are not
        worst-case DP guarantees); --scope domain prints ordinary DP over the declared public domain
        (--min-count; --min-eigenvalue, --max-records).
        """
        options = Options(eta, beta0, reward_bound, ridge, norm_bound, variant, n0, k, lambda0, neighbouring,
                          n_arms, arm_ids, scope, min_count, min_eigenvalue, max_records)
        _check_options(setting, options, actions, file_format)
        reading = Reading(action_col, reward_col, label_col, feature_cols, candidate_cols, file_format)
        result, notes = _account(setting, data, actions, options, reading)
        if as_json:
            typer.echo(json.dumps({key: _json_number(v) for key, v in result.items()}))
            return
        from rich.markup import escape
        from rich.table import Table

        from dpbandits._cli_group import make_console

        console = make_console()
        table = Table(title=f"dpbandits account {setting.value} ({variant})")
        table.add_column("quantity")
        table.add_column("value")
        table.add_column("meaning")
        for key, meaning in _explained_rows(result, options):
            value = result[key]
            table.add_row(key, f"{value:.6g}" if isinstance(value, float) else escape(str(value)), escape(meaning))
        console.print(table)
        console.print("probabilities: " + ", ".join(f"{p:.6g}" for p in result["probabilities"]))
        if result["per_instance"]:
            console.print("note: per-instance guarantee: it holds for this dataset and its neighbours only, is NOT a "
                          "worst-case DP guarantee, and publishing it leaks information about the data")
        else:
            console.print(f"note: {escape(result['guarantee'])}")
        for note in notes:
            console.print(f"[yellow]warning:[/yellow] {escape(note)}")
