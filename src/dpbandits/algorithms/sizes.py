"""What one trial of a dueling algorithm holds and costs as K grows: its K×K state and its rounds.

The round-by-round dueling algorithms keep K×K tables per trial (win counts, bounds, beaters,
Beta samples) and touch them every round, so their memory and time grow with K², not with the
horizon. :data:`PAIRWISE_COSTS` records, per registered algorithm, lower bounds of both, measured
on this code base (``tracemalloc`` peaks and timers of ``simulate`` over 4 trials at K = 50, 200,
400 and T = 300 on a shared 2-core machine; the smallest per-K² figure, rounded down):

* double-thompson-sampling: 192 B per K² per trial, 5e-7 s per K² and round (measured 199-203 B,
  1.0e-6 s);
* copeland-confidence-bound: 72 B, 1e-7 s per K² and round (measured 74-76 B, 1.7e-7 s at K >= 200);
* rmed1: 72 B, 1e-7 s per K² and round (measured 75-77 B, 2.2e-7 s);
* rucb: 64 B, 1e-7 s per K² and round (measured 65-67 B, 1.8e-7 s);
* beat-the-mean: 40 B, 2e-8 s per K² and round (measured 42-48 B, 4.0e-8 s);
* maxinp, colstim: 48 B, 1e-5 s per arm and round (measured 52-69 B, 9.4e-3 and 1.1e-2 s per round at
  K = 400);
* interleaved-filter: 16 B (its (n, K, K) pair counts), 1e-8 s per round (measured 20-24 B).

Both the agents' constructors (one trial) and the simulations (``n_trials`` at once) call
:func:`check_pairwise_state`, and the study cost model (:mod:`dpbandits.experiments.costs`)
reads the same table: one rule, :func:`~dpbandits._core.resources.check_fits`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpbandits._core.resources import check_fits, squared
from dpbandits._core.validation import check_int

__all__ = ["PAIRWISE_COSTS", "PairwiseCost", "check_pairwise_state"]


@dataclass(frozen=True)
class PairwiseCost:
    """Lower bounds of one trial's memory and time as functions of K (arms) and T (rounds).

    Attributes
    ----------
    bytes_per_pair : float
        Bytes per arm pair (× K²) held by one trial.
    seconds_per_pair_round : float
        Seconds per arm pair (× K²) and round.
    seconds_per_arm_round : float
        Seconds per arm (× K) and round.
    seconds_per_round : float
        Seconds per round, whatever K.
    """

    bytes_per_pair: float
    seconds_per_pair_round: float = 0.0
    seconds_per_arm_round: float = 0.0
    seconds_per_round: float = 0.0

    def trial_bytes(self, n_arms: float) -> float:
        """Bytes one trial holds with K = ``n_arms``."""
        return self.bytes_per_pair * squared(n_arms)

    def trial_seconds(self, n_arms: float, horizon: float) -> float:
        """Seconds one trial of ``horizon`` rounds takes with K = ``n_arms``."""
        k = float(n_arms)
        per_round = self.seconds_per_pair_round * k * k + self.seconds_per_arm_round * k + self.seconds_per_round
        return per_round * float(horizon)


PAIRWISE_COSTS: dict[str, PairwiseCost] = {
    "double-thompson-sampling": PairwiseCost(192.0, seconds_per_pair_round=5e-7),
    "copeland-confidence-bound": PairwiseCost(72.0, seconds_per_pair_round=1e-7),
    "rmed1": PairwiseCost(72.0, seconds_per_pair_round=1e-7),
    "rucb": PairwiseCost(64.0, seconds_per_pair_round=1e-7),
    "beat-the-mean": PairwiseCost(40.0, seconds_per_pair_round=2e-8),
    "maxinp": PairwiseCost(48.0, seconds_per_arm_round=1e-5),
    "colstim": PairwiseCost(48.0, seconds_per_arm_round=1e-5),
    "interleaved-filter": PairwiseCost(16.0, seconds_per_round=1e-8),
}
"""Lower bounds per registered dueling algorithm with K×K state (see the module docstring)."""


def check_pairwise_state(algorithm: str, n_arms: int, n_trials: int = 1) -> None:
    """Refuse K = ``n_arms`` when ``n_trials`` trials of ``algorithm`` cannot hold their K×K state here.

    Raises
    ------
    InvalidParameterError
        One line naming ``n_arms``, the estimate and the memory available.
    """
    cost = PAIRWISE_COSTS[algorithm]
    n_trials = check_int(n_trials, "n_trials", minimum=1)
    trials = f" for {n_trials} trials at once" if n_trials > 1 else ""
    check_fits("n_arms", n_arms, n_trials * cost.trial_bytes(n_arms),
               what=f"{algorithm}'s K×K state ({cost.bytes_per_pair:g} bytes per arm pair{trials})")
