"""What ``simulate`` returns for every algorithm: per-trial metric arrays, by name and by attribute.

``algorithm.simulate(env, n_trials, rng)`` returns a :class:`SimulationResult` for every algorithm
of every family, so that one loop compares them (the README's quickstart pair, DP-BAI and Sequential
Halving, on the same environment)::

    for algorithm in (DPBAI(features, budget, 1.0), SequentialHalving(n_arms, budget)):
        print(algorithm.simulate(env, 100, rng=0)["success"].mean())

It is a ``dict`` of metric name to an array of shape ``(n_trials,)`` (as the registered simulation
entry points return, and as scikit-learn's ``Bunch``) whose keys are also attributes
(``result.success``). :data:`FAMILY_METRICS` lists the metrics every algorithm of a family returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["FAMILY_METRICS", "SimulationResult"]

FAMILY_METRICS: Mapping[str, tuple[str, ...]] = {
    "bai": ("success", "simple_regret"),
    "dueling": ("reward_regret", "reward_regret_avg", "preference_regret", "weak_regret", "strong_regret",
                "identified_best"),
    "kernel": ("error", "sampled_regret"),
}
"""The metrics that ``simulate`` returns for every algorithm of a family (some return more)."""


class SimulationResult(dict[str, np.ndarray]):
    """Per-trial metrics of a vectorised simulation: ``result["success"]`` or ``result.success``.

    Parameters
    ----------
    metrics : mapping of str to array_like of shape (n_trials,)

    Examples
    --------
    >>> import numpy as np
    >>> from dpbandits.algorithms.results import SimulationResult
    >>> result = SimulationResult({"success": np.array([1.0, 0.0])})
    >>> result["success"].mean(), result.success.mean()
    (np.float64(0.5), np.float64(0.5))
    """

    def __init__(self, metrics: Mapping[str, Any] = (), /) -> None:  # type: ignore[assignment]
        super().__init__({str(name): np.asarray(values) for name, values in dict(metrics).items()})

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no metric {name!r}; it has {', '.join(self)}") from None

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self})

    def __repr__(self) -> str:
        n = len(next(iter(self.values()))) if self else 0
        means = ", ".join(f"{name}={float(np.mean(values)):.4g}" for name, values in self.items()
                          if np.size(values) and np.issubdtype(np.asarray(values).dtype, np.number))
        return f"{type(self).__name__}(n_trials={n}; means: {means})"
