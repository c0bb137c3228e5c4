"""Local-DP baseline: EBS-Elimination on randomised-response reports (errata DUEL-30; not a paper algorithm).

Each user randomises its own preference bit before sending it (randomised response, Warner 1965):
the reported bit is the true outcome with probability 1 − q and its opposite with probability
q = 1/(1 + e^ε), which is ε-DP for that user *locally* (the learner never sees the true bit). The
learner runs EBS-Elimination with exact counters (B = 0) on the reports, debiases the estimates,
b̂ = (w̃/n − q)/(1 − 2q), and widens the Hoeffding radius by the range of the debiased reports,
(e^ε + 1)/(e^ε − 1). Expected regret grows as Σ_i log T/(Δ_i·ε²) for small ε, against the
K·polylog(T)/ε privacy term of the central-model DP-EBS-Elimination: the central model's advantage.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_epsilon, check_int
from dpbandits.algorithms.dueling._common import (
    check_dueling_env,
    check_elimination_horizon,
    elimination_horizon_precheck,
)
from dpbandits.algorithms.dueling._ebs_rules import _check_options
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.dueling.dp_ebs_elimination import (
    SIMULATION_METRICS,
    DPEBSElimination,
    ebs_constants,
    run_trial,
)
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.envs.dueling import UtilityDuelingEnvironment
from dpbandits.privacy.counters import TreeNoiseTable
from dpbandits.privacy.guarantees import Neighbouring, PureDP
from dpbandits.privacy.noise import privacy_noise

__all__ = ["LDPEBSElimination", "flip_probability", "ldp_guarantee", "randomised_response", "simulate_ldp_ebs"]

REFERENCE = "Warner (1965) randomised response; Saha & Asi (2024), Remark 3 (local model, sketched only)"


def flip_probability(epsilon: float) -> float:
    """The probability q = 1/(1 + e^ε) that a user reports the opposite bit."""
    eps = check_epsilon(epsilon)
    return 1.0 / (1.0 + math.exp(min(eps, _EXP_LIMIT)))  # e^ε overflows past ~709; q < 1e-304 there


def randomised_response(first_wins: int, epsilon: float, rng: RNGLike = None, *,
                        insecure_seeded_noise: bool = False) -> int:
    """What a user sends: ``first_wins`` kept with probability 1 − q, flipped with probability q.

    Parameters
    ----------
    first_wins : int
        The user's true bit (0 or 1).
    epsilon : float
        The local ε > 0.
    rng : int, SeedSequence, Generator or None
        Seed of the flip; only with ``insecure_seeded_noise=True``.
    insecure_seeded_noise : bool, default False
        Seeded NumPy coin instead of OpenDP's exact randomised response (simulation only; warns).

    Privacy
    -------
    ε-DP for the user's bit on its own (local model): P(report | 1)/P(report | 0) <= (1 − q)/q = e^ε.
    The default coin is OpenDP's ``make_randomized_response_bool`` over the OS CSPRNG.

    References
    ----------
    S. L. Warner, "Randomized response", JASA 60(309), 1965.
    """
    noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise)
    return int(noise.randomized_response(np.array([int(first_wins)]), 1.0 - flip_probability(epsilon))[0])


def ldp_guarantee(epsilon: float) -> PureDP:
    """ε-DP for one preference label, in the local model (each report is ε-DP on its own)."""
    eps = check_epsilon(epsilon)
    return PureDP(
        epsilon=eps,
        unit="one preference label (local model: each user's randomised report)",
        neighbouring=Neighbouring.LABEL_ONLY,
        reference=REFERENCE,
        reason="randomised response with flip probability 1/(1+e^ε); the learner only post-processes reports",
    )


_EXP_LIMIT = 700.0  # e^700 ≈ 1e304: past it (e^ε ± 1) is e^ε in floating point


def _report_range(epsilon: float) -> float:
    """(e^ε + 1)/(e^ε − 1) = 1 + 2/(e^ε − 1), the range of the debiased report, stable for every ε > 0.

    Raises
    ------
    InvalidParameterError
        If ε is so small that the range is not a finite number (the reports carry no information).
    """
    value = 1.0 + 2.0 / math.expm1(min(epsilon, _EXP_LIMIT)) if epsilon > 0 else math.inf
    if not math.isfinite(value):
        raise InvalidParameterError(f"epsilon must be large enough for the debiased reports' range "
                                    f"(e^ε + 1)/(e^ε − 1) to be finite; got epsilon={epsilon!r}")
    return value


@register_algorithm_class("ldp-ebs-elimination")
class LDPEBSElimination(DPEBSElimination):
    """Ask/tell learner of the local-DP baseline: ``tell`` receives the user's randomised report.

    Parameters
    ----------
    n_arms, horizon : int
    epsilon : float
        The users' local ε > 0 (sets q = 1/(1 + e^ε)).
    conf_scale : float, default 1.0
        Extra multiplier of the (already widened) Hoeffding radius; audits only.
    rng : int, SeedSequence, Generator or None
        The trial's seed (the algorithm stream draws the opponents).
    **options
        ``failure_probability``, ``opponent``, ``union_bound`` as in :class:`DPEBSElimination`.

    Privacy
    -------
    Local ε-DP: the reports are randomised by the users (see :func:`randomised_response`); the
    learner's counters are exact because the data they see are already private.

    References
    ----------
    Warner (1965).
    """

    def __init__(self, n_arms: int, horizon: int, epsilon: float, *, conf_scale: float = 1.0,
                 rng: RNGLike = None, **options: object) -> None:
        self.local_epsilon = check_epsilon(epsilon)
        super().__init__(n_arms, horizon, math.inf, conf_scale=conf_scale * _report_range(self.local_epsilon),
                         rng=rng, **options)  # type: ignore[arg-type]
        self._flip_probability = flip_probability(self.local_epsilon)

    @property
    def privacy(self) -> PureDP:
        """The local guarantee (see :func:`ldp_guarantee`)."""
        return ldp_guarantee(self.local_epsilon)


@register_algorithm(
    "ldp-ebs-elimination",
    precheck=functools.partial(elimination_horizon_precheck, algorithm="ldp-ebs-elimination"),
    family="dueling",
    privacy="ε-LDP for one preference label (local randomised response)",
    metrics=SIMULATION_METRICS,
    proportion_metrics=("identified_best", "committed"),
    environments=("dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility", "dueling-unit-ball"),
)
def simulate_ldp_ebs(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    epsilon: float,
    failure_probability: float | None = None,
    opponent: str = "with_self",
    union_bound: str = "paper",
    conf_scale: float = 1.0,
    block: int = 16384,
) -> Mapping[str, FloatArray]:
    """Local-DP EBS-Elimination baseline, simulated by blocks (users' coins from the privacy stream).

    User t of trial k flips its bit iff ``counter_uniforms(key, t) < q``, with ``key`` the first word
    of the trial's privacy-noise seed sequence (last in the order environment, algorithm, noise).
    Returns the metrics of :func:`~dpbandits.algorithms.dueling.dp_ebs_elimination.
    simulate_dp_ebs_elimination`.

    Privacy
    -------
    Local ε-DP for one preference label (see :func:`ldp_guarantee`).

    References
    ----------
    Warner (1965)
    """
    check_dueling_env(env)
    check_elimination_horizon(horizon, env.n_arms, "ldp-ebs-elimination")
    eps = check_epsilon(epsilon)
    n = check_int(n_trials, "n_trials", minimum=1)
    constants = ebs_constants(env.n_arms, horizon, math.inf, failure_probability, union_bound=union_bound)
    opponent, conf_scale, _ = _check_options(opponent, conf_scale)
    size = check_int(block, "block", minimum=1)
    q = flip_probability(eps)
    pair_counts = np.zeros((n, env.n_arms, env.n_arms))
    identified, committed, last = np.zeros(n), np.zeros(n), np.zeros(n)
    for trial, seq in enumerate(trial_seed_sequences(rng, n)):
        parts = trial_streams(seq)
        flip_key = np.uint64(parts.noise.generate_state(1, dtype=np.uint64)[0])
        unused = [np.random.default_rng(child) for child in parts.noise.spawn(env.n_arms)]  # ε = ∞: no draws
        table = TreeNoiseTable(constants.horizon, math.inf, unused, chunk=size)
        result = run_trial(env.streams(parts.environment, 1), 0, constants, parts.algorithm_key, table,
                           opponent=opponent, conf_scale=conf_scale * _report_range(eps), block=size,
                           first_block=min(256, size), flip_key=flip_key, flip_probability=q)
        pair_counts[trial] = result.pair_counts
        committed[trial] = float(result.active.size == 1)
        identified[trial] = float(result.active.size == 1 and result.active[0] == env.best_arm)
        gone = result.elimination_rounds[result.elimination_rounds <= constants.horizon]
        last[trial] = float(gone.max()) if gone.size else 0.0
    return {**env.regret_from_pair_counts(pair_counts), "identified_best": identified, "committed": committed,
            "last_elimination_round": last}
