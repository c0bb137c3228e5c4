"""Human names and units of the metrics and swept parameters, and readable numbers, for the plots.

:data:`METRIC_NAMES` maps every metric an algorithm of the registry records to its (name, unit);
:data:`PARAMETER_NAMES` does the same for the parameters the bundled studies sweep. A name not in
a table is shown with its underscores as spaces. :func:`format_number` writes large and small
numbers as 10⁶ or 3·10⁶ rather than 1000000 or 3000000.

Examples
--------
>>> metric_label("reward_regret")
'reward regret (cumulative, rounds)'
>>> parameter_label("horizon")
'horizon T (rounds)'
>>> [format_number(v) for v in (1000, 3e6, 1e6, 0.25, 2.5e-5, 12)]
['1000', '3·10⁶', '10⁶', '0.25', '2.5·10⁻⁵', '12']
"""

from __future__ import annotations

import math

__all__ = ["METRIC_NAMES", "PARAMETER_NAMES", "format_number", "metric_label", "metric_name", "parameter_label"]

METRIC_NAMES: dict[str, tuple[str, str]] = {
    "accuracy": ("accuracy", "fraction correct"),
    "approx_size": ("approximating set size M", "points"),
    "audit_ratio": ("audited loss / bound", "ratio"),
    "committed": ("committed to one arm", "fraction of trials"),
    "delta_advanced": ("δ, advanced composition", "probability"),
    "delta_audit": ("δ, audited", "probability"),
    "delta_corrected": ("δ, corrected bound", "probability"),
    "delta_paper": ("δ, paper's bound", "probability"),
    "delta_paper_verbatim": ("δ, paper's bound as printed", "probability"),
    "epsilon": ("ε", "privacy loss"),
    "epsilon0": ("ε₀ (pure DP)", "privacy loss"),
    "epsilon0_corrected": ("ε₀, corrected bound", "privacy loss"),
    "epsilon0_paper": ("ε₀, paper's bound", "privacy loss"),
    "epsilon0_tight": ("ε₀, refined variant", "privacy loss"),
    "epsilon0_tight_max": ("ε₀, refined variant (max over contexts)", "privacy loss"),
    "epsilon0_tight_median": ("ε₀, refined variant (median over contexts)", "privacy loss"),
    "epsilon_advanced": ("total ε, advanced composition", "privacy loss"),
    "epsilon_basic": ("total ε, basic composition", "privacy loss"),
    "epsilon_domain": ("ε over the declared domain", "privacy loss"),
    "epsilon_hat": ("audited ε", "privacy loss"),
    "epsilon_k": ("ε at k", "privacy loss"),
    "epsilon_pld": ("total ε, exact PLD composition", "privacy loss"),
    "epsilon_tight": ("ε, tight variant", "privacy loss"),
    "error": ("error rate ER", "reward"),
    "eta": ("temperature η", "reward"),
    "gamma": ("information gain γ̂", "nats"),
    "greedy_accuracy": ("greedy accuracy", "fraction correct"),
    "identified_best": ("best arm identified", "fraction of trials"),
    "k1": ("coverage constant k₁", "ratio"),
    "last_elimination_round": ("last elimination", "round"),
    "on_boundary": ("MLE on the constraint's boundary", "fraction of datasets"),
    "paper_violated": ("paper's bound violated", "fraction of datasets"),
    "phases": ("phases", "count"),
    "preference_regret": ("preference regret", "cumulative, rounds"),
    "pulls_used": ("pulls used", "pulls"),
    "regret": ("regret", "reward"),
    "reward_regret": ("reward regret", "cumulative, rounds"),
    "reward_regret_avg": ("reward regret per round", "reward"),
    "sampled_regret": ("regret of the sampled prediction", "reward"),
    "sensitivity": ("sensitivity Δ", "reward"),
    "simple_regret": ("simple regret", "reward"),
    "strong_regret": ("strong regret", "cumulative, rounds"),
    "success": ("success rate", "probability"),
    "sup_error": ("sup error of the mean", "reward"),
    "sup_variance": ("sup of the surrogate variance", "variance"),
    "uniform_error": ("error of a uniform action", "reward"),
    "weak_regret": ("weak regret", "cumulative, rounds"),
}
"""metric → (human name, unit) of every metric recorded by a registered algorithm."""

PARAMETER_NAMES: dict[str, tuple[str, str]] = {
    "budget": ("budget T", "pulls"),
    "dataset": ("data set", ""),
    "dimension": ("dimension d", ""),
    "epsilon": ("privacy ε", ""),
    "eta": ("temperature η", ""),
    "horizon": ("horizon T", "rounds"),
    "k": ("k", ""),
    "logging": ("logging policy", ""),
    "mode": ("mode", ""),
    "n_arms": ("arms K", ""),
    "n_records": ("records n", ""),
    "n_samples": ("samples T", ""),
    "norm_bound": ("norm bound B", ""),
    "tau": ("regulariser τ", ""),
    "theta_norm": ("‖θ*‖", ""),
    "variant": ("variant", ""),
    "y": ("ratio y", ""),
}
"""swept parameter → (human name, unit) of the parameters the bundled studies sweep."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def metric_name(metric: str) -> str:
    """The human name of ``metric`` (its underscores as spaces when it has no entry)."""
    return METRIC_NAMES.get(metric, (metric.replace("_", " "), ""))[0]


def metric_label(metric: str) -> str:
    """``name (unit)`` of ``metric``, the y-axis label of its plots."""
    name, unit = METRIC_NAMES.get(metric, (metric.replace("_", " "), ""))
    return f"{name} ({unit})" if unit else name


def parameter_label(parameter: str) -> str:
    """``name (unit)`` of a swept parameter, the x-axis label of its plots."""
    name, unit = PARAMETER_NAMES.get(parameter, (parameter.replace("_", " "), ""))
    return f"{name} ({unit})" if unit else name


def format_number(value: float) -> str:
    """``value`` as written on an axis: 10⁶ and 3·10⁶ for large or tiny values, else as short as exact."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e4:
        return f"{value:.4g}"
    exponent = math.floor(math.log10(magnitude))
    mantissa = value / 10.0**exponent
    if abs(mantissa) >= 9.995:  # 9.9996e5 rounds to 10·10⁵: write 10⁶
        exponent, mantissa = exponent + 1, mantissa / 10.0
    power = "10" + str(exponent).translate(_SUPERSCRIPTS)
    text = f"{mantissa:.3g}"
    if text == "1":
        return power
    if text == "-1":
        return "−" + power
    return f"{text}·{power}"
