"""Study entry points of the offline KL policies and their baselines (studies kl-e1 to kl-e6).

Each entry point runs ``n_trials`` independent datasets of one grid cell and returns per-trial
metrics. Streams are spawned from ``rng`` in a fixed order: the **environment stream** (one child per
trial: the logged dataset, θ*, the query context) first, then the **algorithm stream** (informative
reference policies, Monte-Carlo regret draws, audit search directions), then the **privacy-noise
stream** (Laplace statistics). All algorithms of a grid point therefore see the same datasets.

Per-instance guarantees are computed by the accountants; the audited ε̂ by :mod:`dpbandits.audit.kl`
is *not* computed here (the audit layer sits above algorithms) — the audit-ratio studies use the
``kl-*`` entry points with ``audit=True``, which call the exact closed forms of the MAB audit through
a callback registered by :mod:`dpbandits.audit.kl` (see :data:`AUDITORS`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning
from dpbandits._core.rng import RNGLike, spawn_seed_sequences
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_int, check_one_of, check_positive_float
from dpbandits.algorithms.offline import accountants as acc
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    PessimisticGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.algorithms.offline.kl_linear import KLLinearPolicy
from dpbandits.algorithms.offline.kl_mab import KLMABPolicy
from dpbandits.algorithms.offline.kl_rlhf import KLRLHFPolicy
from dpbandits.algorithms.registry import register_algorithm
from dpbandits.envs.datasets import action_features
from dpbandits.privacy.guarantees import Neighbouring, PureDP
from dpbandits.privacy.noise import NumpyNoise

__all__ = ["AUDITORS", "calibrated_eta", "design_min_count"]

AUDITORS: dict[str, Callable[..., float]] = {}
"""Audit callbacks ``setting -> fn(policy, data, ...) -> audited ε̂``, filled by :mod:`dpbandits.audit.kl`
when it is imported (the study runner imports it); missing entries make ``audit=True`` an error."""


def _streams(rng: RNGLike, n_trials: int) -> tuple[list[np.random.SeedSequence], np.random.Generator,
                                                   np.random.Generator]:
    env_ss, algo_ss, noise_ss = spawn_seed_sequences(rng, 3)
    return (env_ss.spawn(n_trials), np.random.default_rng(algo_ss), np.random.default_rng(noise_ss))


def _audit(setting: str) -> Callable[..., float]:
    try:
        return AUDITORS[setting]
    except KeyError:
        raise InvalidParameterError(
            f"audit=True needs dpbandits.audit.kl to be imported (setting {setting!r}); got no auditor"
        ) from None


def calibrated_eta(epsilon: float, min_count: int, *, reward_bound: float, beta0: float,
                   calibration: str = "theorem") -> float:
    """η such that the KL MAB policy is ε-DP over the public domain N(a) >= m (study kl-e5-privacy-utility).

    ``"theorem"``: Theorem 1 at N_min = m, η = (4R/(m − 1) + β0/(m − 1)^{3/2})/ε (needs m >= 2).
    ``"domain"``: the exact domain sensitivity, η = Δ(m)/ε with Δ(m) = R/(m + 1) + β0(1/√m − 1/√(m + 1))
    (:func:`accountants.mab_domain_sensitivity`), about four times smaller: what tight accounting buys.
    m must be public (fixed by the logging design), never read off the data.
    """
    eps = check_positive_float(epsilon, "epsilon")
    check_one_of(calibration, "calibration", ("theorem", "domain"))
    if calibration == "domain":
        return acc.mab_domain_sensitivity(min_count, reward_bound=reward_bound, beta0=beta0) / eps
    return acc.theorem1_pure_epsilon(min_count, reward_bound=reward_bound, beta0=beta0, eta=1.0) / eps


def design_min_count(env: Any) -> int:
    """The public per-arm count floor of an offline-bandit environment's logging design.

    Balanced logging pulls every arm exactly ⌊n/K⌋ times (by design, not by chance); otherwise the
    only guaranteed pulls are the forced ``min_pulls``. Both are fixed before any data is drawn.
    """
    k = len(env.means)
    if isinstance(env.logging, str) and env.logging == "balanced":
        return max(int(env.n_records) // k, int(env.min_pulls))
    return int(env.min_pulls)


def _public_floor(env: Any, min_count: int | None) -> int:
    floor = design_min_count(env) if min_count is None else check_int(min_count, "min_count", minimum=1)
    if floor < 1:
        raise InvalidParameterError(
            "min_count must be a public per-arm floor >= 1 to calibrate at a target epsilon; the environment's "
            f"logging design guarantees {floor} pulls per arm: pass min_count or use min_pulls >= 1"
        )
    return floor


def _reference(kind: str, means: FloatArray, gen: np.random.Generator) -> FloatArray | None:
    check_one_of(kind, "reference", ("uniform", "informative"))
    if kind == "uniform":
        return None
    # informative π0 ∝ exp(μ̃/0.1), μ̃ = μ + N(0, 0.1²)
    logits = (means + 0.1 * gen.standard_normal(means.size)) / 0.1
    w = np.exp(logits - logits.max())
    return np.asarray(w / w.sum(), dtype=np.float64)


def _regret(means: FloatArray, probabilities: FloatArray) -> float:
    # expected regret max_a μ(a) − Σ_a π(a)μ(a)
    return float(means.max() - probabilities @ means)


def _audit_calibrated_eta(data: Any, epsilon: float, eta_theorem: float, beta0: float,
                          reference: FloatArray | None) -> float:
    """Bisection on log η so that the exact audited per-instance loss ε̂(η; D) equals ε.

    η then depends on D: a per-instance diagnostic of how much tight accounting could buy, not a
    calibration a deployment could use (the choice of η would leak D).
    """
    audit = _audit("mab")
    k = int(data.n_arms)

    def loss(eta: float) -> float:
        return audit(KLMABPolicy(k, eta=eta, beta0=beta0, reference=reference).fit(data), data)

    low, high = eta_theorem * 1e-6, eta_theorem  # ε̂(η_theorem) <= ε/2 < ε
    if not math.isfinite(eta_theorem) or loss(low) <= epsilon:
        return eta_theorem
    for _ in range(_BISECTION_STEPS):
        mid = math.sqrt(low * high)
        if loss(mid) > epsilon:
            low = mid
        else:
            high = mid
    return high  # ε̂(high) <= ε


_BISECTION_STEPS = 40

MAB_METRICS = ("regret", "eta", "epsilon0", "epsilon_tight", "epsilon_domain", "epsilon_hat", "audit_ratio",
               "epsilon_k", "delta_paper", "delta_paper_verbatim", "delta_corrected", "delta_audit", "epsilon_pld")


@register_algorithm(
    "kl-mab",
    family="offline",
    privacy="per-instance eps0-DP of one sampled arm, add/remove of one logged record (Theorem 1)",
    metrics=MAB_METRICS,
    environments=("offline-bandit",),
    description="KL-regularised pessimistic MAB policy (eq. 8): accounting, exact audit and regret",
)
def simulate_kl_mab(
    env: Any,
    *,
    n_trials: int,
    rng: RNGLike,
    beta0: float = 1.0,
    eta: float | None = None,
    epsilon: float | None = None,
    reference: str = "uniform",
    calibration: str = "theorem",
    min_count: int | None = None,
    k: float | None = None,
    audit: bool = False,
    pld_samples: int | None = None,
    pld_delta: float = 1e-6,
) -> dict[str, FloatArray]:
    """Fit eq. (8) on ``n_trials`` datasets; report Theorem 1 (and 1′ / Corollary 1 with ``k``).

    Parameters
    ----------
    env : OfflineBanditEnvironment
    n_trials : int
    rng : int, SeedSequence, Generator or None
    beta0 : float, default 1
    eta : float, optional
        Fixed η; alternatively ``epsilon`` calibrates η so that the policy is ε-DP over the public
        domain N(a) >= ``min_count`` (E5).
    epsilon : float, optional
    reference : {"uniform", "informative"}, default "uniform"
    calibration : {"theorem", "domain", "audit"}, default "theorem"
        With ``epsilon``: η from Theorem 1 at the public floor (E5 (a)); from the exact domain
        sensitivity Δ(m) (:func:`calibrated_eta`, what tight accounting buys, still a DP
        calibration); or, as a per-instance diagnostic only, by bisection so that the exact audited
        ε̂(D) equals ε (η then depends on the data: not a matched DP comparison).
    min_count : int, optional
        The public per-arm floor m of the ``epsilon`` calibrations; default
        :func:`design_min_count` (⌊n/K⌋ for balanced logging, else ``min_pulls``). The policy is
        built with it, so data below the floor is refused.
    k : float, optional
        Also report the approximate guarantees at N0 = ⌊N_max/k⌋ (E4): paper δ (fixed and verbatim),
        corrected δ, and (with ``audit``) the audited δ at that ε.
    audit : bool, default False
        Compute the exact audited ε̂ (and δ̂ with ``k``).
    pld_samples : int, optional
        With ``audit``: also ``epsilon_pld``, the ε(``pld_delta``) of that many samples by exact PLD
        composition over the extreme neighbours (E6).
    pld_delta : float, default 1e-6

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``regret`` (exact), ``eta``, ``epsilon0`` (Theorem 1 per instance), ``epsilon_tight`` (the
        exact per-instance loss, closed form); with ``epsilon``: ``epsilon_domain`` (the DP guarantee
        over the public floor); with ``audit``: ``epsilon_hat``, ``audit_ratio``; with ``k``:
        ``epsilon_k``, ``delta_paper``, ``delta_paper_verbatim``, ``delta_corrected`` and (with
        ``audit``) ``delta_audit``.
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    check_one_of(calibration, "calibration", ("theorem", "domain", "audit"))
    if (eta is None) == (epsilon is None):
        raise InvalidParameterError(f"exactly one of eta and epsilon must be given; got eta={eta!r}, epsilon={epsilon!r}")
    floor = _public_floor(env, min_count) if epsilon is not None else None
    env_streams, algo, _ = _streams(rng, n)
    means = np.asarray(env.means, dtype=np.float64)
    out: dict[str, list[float]] = {"regret": [], "eta": [], "epsilon0": [], "epsilon_tight": []}
    for trial in range(n):
        data = env.draw(env_streams[trial])
        pi0 = _reference(reference, means, algo)
        if epsilon is None:
            this_eta = float(eta)  # type: ignore[arg-type]
        else:
            this_eta = calibrated_eta(float(epsilon), floor, reward_bound=1.0, beta0=beta0,  # type: ignore[arg-type]
                                      calibration="domain" if calibration == "domain" else "theorem")
            if calibration == "audit":
                this_eta = _audit_calibrated_eta(data, float(epsilon), this_eta, beta0, pi0)
        policy = KLMABPolicy(means.size, eta=this_eta, beta0=beta0, reference=pi0, min_count=floor).fit(data)
        guarantee = policy.guarantee()
        out["regret"].append(_regret(means, policy.probabilities()))
        out["eta"].append(this_eta)
        out["epsilon0"].append(guarantee.epsilon)
        out["epsilon_tight"].append(policy.guarantee(variant="tight").epsilon)
        if epsilon is not None:
            out.setdefault("epsilon_domain", []).append(
                policy.guarantee(scope="domain", variant="tight" if calibration == "domain" else "corrected").epsilon)
        if audit:
            eps_hat = _audit("mab")(policy, data)
            out.setdefault("epsilon_hat", []).append(eps_hat)
            out.setdefault("audit_ratio", []).append(eps_hat / guarantee.epsilon)
            if pld_samples is not None:
                out.setdefault("epsilon_pld", []).append(_audit("mab-pld")(policy, data, pld_samples, pld_delta))
        if k is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PaperVariantWarning)
                paper = policy.guarantee(kind="approx", variant="paper", k=k)
                verbatim = policy.guarantee(kind="approx", variant="paper", k=k, verbatim=True)
            corrected = policy.guarantee(kind="approx", k=k)
            out.setdefault("epsilon_k", []).append(corrected.epsilon)
            out.setdefault("delta_paper", []).append(paper.delta)
            out.setdefault("delta_paper_verbatim", []).append(verbatim.delta)
            out.setdefault("delta_corrected", []).append(corrected.delta)
            if audit:
                delta_hat = _audit("mab-delta")(policy, data, corrected.epsilon)
                out.setdefault("delta_audit", []).append(delta_hat)
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}


def _simulate_baseline(cls: type, env: Any, n_trials: int, rng: RNGLike, epsilon: float, beta0: float,
                       mc_samples: int, min_count: int | None) -> dict[str, FloatArray]:
    """Per-trial regret of a baseline on the shared datasets.

    Simulation noise: seeded NumPy floats (:class:`NumpyNoise` built here from the privacy-noise and
    algorithm streams, its verbs called with the baseline's public noise scale), not a deployment
    release. EM's regret is exact; report-noisy-max's is a Monte-Carlo estimate over ``mc_samples``
    noisy argmaxes; Laplace statistics + greedy releases ũ once per trial.
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    env_streams, algo, noise = _streams(rng, n)
    algo_noise, release_noise = NumpyNoise(algo), NumpyNoise(noise)
    means = np.asarray(env.means, dtype=np.float64)
    floor = None if cls is PessimisticGreedyMAB else _public_floor(env, min_count)
    regret, eps = [], []
    for trial in range(n):
        data = env.draw(env_streams[trial])
        baseline: Any = (PessimisticGreedyMAB(means.size, beta0=beta0) if cls is PessimisticGreedyMAB
                         else cls(means.size, epsilon=epsilon, beta0=beta0, min_count=floor)).fit(data)
        if isinstance(baseline, ReportNoisyMaxMAB):
            u = np.broadcast_to(baseline.utilities_, (mc_samples, means.size))
            draws = np.argmax(algo_noise.add_laplace(u, baseline.noise_scale), axis=1)
            probs = np.bincount(draws, minlength=means.size) / mc_samples
        elif isinstance(baseline, LaplaceStatisticsGreedyMAB):
            noisy = release_noise.add_laplace(baseline.utilities_, baseline.noise_scale)
            probs = np.bincount([int(np.argmax(noisy))], minlength=means.size).astype(float)
        else:
            probs = baseline.probabilities()
        regret.append(_regret(means, probs))
        eps.append(baseline.guarantee().epsilon)
    return {"regret": np.asarray(regret), "epsilon": np.asarray(eps)}


@dataclass(frozen=True)
class _BaselineSimulation:
    """The simulation entry point of one baseline class (a module-level callable, so it pickles)."""

    baseline: type

    def __call__(self, env: Any, *, n_trials: int, rng: RNGLike, epsilon: float = 1.0, beta0: float = 0.0,
                 mc_samples: int = 2000, min_count: int | None = None) -> dict[str, FloatArray]:
        """Per-trial exact (or Monte-Carlo) regret of the baseline and its ε.

        Parameters
        ----------
        env : OfflineBanditEnvironment
        n_trials : int
        rng : int, SeedSequence, Generator or None
        epsilon : float
            Target ε, DP over the public domain N(a) >= ``min_count``.
        beta0 : float, default 0
        mc_samples : int, default 2000
            Samples for report-noisy-max's output distribution.
        min_count : int, optional
            The public per-arm floor; default the environment's logging design
            (:func:`design_min_count`).

        Notes
        -----
        Simulation noise: seeded NumPy floats, not a deployment release.
        """
        return _simulate_baseline(self.baseline, env, n_trials, rng, epsilon, beta0, mc_samples, min_count)


def _register_baseline(name: str, cls: type, privacy: str, description: str) -> None:
    register_algorithm(name, family="offline", privacy=privacy, metrics=("regret", "epsilon"),
                       environments=("offline-bandit",), description=description)(_BaselineSimulation(cls))


_register_baseline("em-mab", ExponentialMechanismMAB,
                   "eps-DP over the public count floor min_count (exponential mechanism)",
                   "Exponential mechanism on the (pessimistic) empirical means, uniform base measure")
_register_baseline("rnm-mab", ReportNoisyMaxMAB, "eps-DP over the public count floor min_count (report-noisy-max)",
                   "Report-noisy-max with Laplace noise on the (pessimistic) empirical means")
_register_baseline("laplace-greedy-mab", LaplaceStatisticsGreedyMAB,
                   "eps-DP policy release over the public count floor min_count (Laplace statistics; samples are free)",
                   "Laplace-noised utilities released once, then greedy")
_register_baseline("greedy-mab", PessimisticGreedyMAB, "none (non-private)",
                   "Non-private pessimistic greedy arm")


@register_algorithm(
    "kl-mab-repeated",
    family="offline",
    privacy="T samples of a per-sample eps1-DP KL policy: basic and advanced composition",
    metrics=("regret", "epsilon_basic", "epsilon_advanced", "delta_advanced", "epsilon_pld"),
    environments=("offline-bandit",),
    description="Repeated sampling from the KL MAB policy calibrated to a per-sample epsilon (E6)",
)
def simulate_kl_mab_repeated(
    env: Any, *, n_trials: int, rng: RNGLike, epsilon: float = 0.1, n_samples: int = 1, beta0: float = 1.0,
    delta_prime: float = 1e-6, audit: bool = False, min_count: int | None = None, calibration: str = "theorem",
) -> dict[str, FloatArray]:
    """Per-sample ε1 = ``epsilon``, ``n_samples`` = T samples (E6).

    η is calibrated at the public floor ``min_count`` (default: the logging design's) by Theorem 1
    (``calibration="theorem"``) or by the exact domain sensitivity (``"domain"``); see
    :func:`simulate_kl_mab`.

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``regret`` (expected, per sample), ``epsilon_basic`` (T·ε1), ``epsilon_advanced`` and
        ``delta_advanced`` (Dwork–Rothblum–Vadhan with δ'); with ``audit``: ``epsilon_pld``, the exact
        PLD composition at δ' over the extreme neighbours (not a guarantee; see
        :func:`dpbandits.audit.kl.repeated_sampling_epsilon_mab`).
    """
    t = check_int(n_samples, "n_samples", minimum=1)
    base = simulate_kl_mab(env, n_trials=n_trials, rng=rng, beta0=beta0, epsilon=epsilon, audit=audit,
                           pld_samples=t if audit else None, pld_delta=delta_prime, min_count=min_count,
                           calibration=check_one_of(calibration, "calibration", ("theorem", "domain")))
    per_sample = PureDP(epsilon=float(epsilon), unit=acc.UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE)
    basic = acc.repeated_sampling(per_sample, t)
    advanced = acc.repeated_sampling(per_sample, t, method="advanced", delta_prime=delta_prime)
    ones = np.ones(n_trials)
    out = {"regret": base["regret"], "epsilon_basic": basic.epsilon * ones,
           "epsilon_advanced": advanced.epsilon * ones, "delta_advanced": advanced.delta * ones}
    if audit:
        out["epsilon_pld"] = base["epsilon_pld"]
    return out


@register_algorithm(
    "kl-linear",
    family="offline",
    privacy="per-instance eps0-DP of one sampled action at one context, add/remove (Theorem 2)",
    metrics=("regret", "epsilon0", "epsilon0_tight", "epsilon_hat", "audit_ratio", "k1"),
    environments=("offline-linear",),
    description="KL-regularised pessimistic linear contextual policy (eq. 10): accounting and audit",
)
def simulate_kl_linear(
    env: Any, *, n_trials: int, rng: RNGLike, eta: float = 0.1, beta0: float = 1.0, ridge: float = 2.0,
    audit: bool = False,
) -> dict[str, FloatArray]:
    """Fit eq. (10) on ``n_trials`` datasets and report Theorem 2 (E2).

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``regret`` at the query context, ``epsilon0``, ``epsilon0_tight`` (the ``"refined"`` variant
        C2·γ_max/η; the metric keeps the name of stored runs), ``k1`` = n/(d(λ_min − 1));
        with ``audit``: ``epsilon_hat`` (adversarial search) and ``audit_ratio``.
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    env_streams, algo, _ = _streams(rng, n)
    out: dict[str, list[float]] = {"regret": [], "epsilon0": [], "epsilon0_tight": [], "k1": []}
    for trial in range(n):
        data, theta, actions = env.draw(env_streams[trial])
        policy = KLLinearPolicy(eta=eta, beta0=beta0, ridge=ridge).fit(data)
        pure = policy.guarantee(actions)
        out["regret"].append(_regret(actions @ theta, policy.probabilities(actions)))
        out["epsilon0"].append(pure.epsilon)
        out["epsilon0_tight"].append(policy.guarantee(actions, variant="refined").epsilon)
        out["k1"].append(data.n_records / (data.dimension * (policy.lambda_min_ - 1.0))
                         if policy.lambda_min_ > 1 else math.inf)
        if audit:
            eps_hat = _audit("linear")(policy, data, actions, algo)
            out.setdefault("epsilon_hat", []).append(eps_hat)
            out.setdefault("audit_ratio", []).append(eps_hat / pure.epsilon)
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}


@register_algorithm(
    "kl-rlhf",
    family="offline",
    privacy="per-instance eps-label-DP of one sampled response at one prompt (Theorem 3', corrected)",
    metrics=("regret", "epsilon0_paper", "epsilon0_corrected", "epsilon0_tight", "epsilon_hat",
             "paper_violated", "on_boundary"),
    proportion_metrics=("paper_violated", "on_boundary"),
    environments=("offline-preferences",),
    description="KL-regularised pessimistic RLHF policy (eq. 11, constrained BT MLE): label-DP accounting",
)
def simulate_kl_rlhf(
    env: Any, *, n_trials: int, rng: RNGLike, eta: float = 1.0, beta0: float = 1.0, ridge: float = 1.0,
    norm_bound: float = 0.1, audit: bool = False,
) -> dict[str, FloatArray]:
    """Fit eq. (11) on ``n_trials`` datasets and compare Theorem 3 with Theorem 3′ (E3).

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``regret``, ``epsilon0_paper``, ``epsilon0_corrected``, ``epsilon0_tight`` (the ``"refined"``
        range refinement; the metric keeps the name of stored runs), ``on_boundary``;
        with ``audit``: ``epsilon_hat`` over every label flip and ``paper_violated`` (0/1).
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    env_streams, _, _ = _streams(rng, n)
    out: dict[str, list[float]] = {"regret": [], "epsilon0_paper": [], "epsilon0_corrected": [],
                                   "epsilon0_tight": [], "on_boundary": []}
    for trial in range(n):
        data, theta, actions = env.draw(env_streams[trial])
        policy = KLRLHFPolicy(eta=eta, beta0=beta0, ridge=ridge, norm_bound=norm_bound).fit(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PaperVariantWarning)
            paper = policy.guarantee(actions, variant="paper").epsilon
        out["regret"].append(_regret(actions @ theta, policy.probabilities(actions)))
        out["epsilon0_paper"].append(paper)
        out["epsilon0_corrected"].append(policy.guarantee(actions).epsilon)
        out["epsilon0_tight"].append(policy.guarantee(actions, variant="refined").epsilon)
        out["on_boundary"].append(float(policy.fit_.on_boundary))
        if audit:
            eps_hat = _audit("rlhf")(policy, data, actions)
            out.setdefault("epsilon_hat", []).append(eps_hat)
            out.setdefault("paper_violated", []).append(float(eps_hat > paper * (1 + 1e-9)))
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}


def _greedy_probabilities(policy: KLLinearPolicy, features: FloatArray) -> FloatArray:
    """Non-private reference: uniform over the arg-max actions of the pessimistic utility, per context."""
    m, k, _ = features.shape
    u = policy.utilities(features.reshape(m * k, -1)).reshape(m, k)
    best = u == u.max(axis=1, keepdims=True)
    return np.asarray(best / best.sum(axis=1, keepdims=True), dtype=np.float64)


@register_algorithm(
    "kl-linear-classification",
    family="offline",
    privacy="per-instance eps0-DP per public context, add/remove of one logged record (Theorem 2)",
    metrics=("accuracy", "greedy_accuracy", "epsilon0", "epsilon0_tight_max", "epsilon0_tight_median"),
    environments=("sklearn-classification",),
    description="KL linear policy on a scikit-learn classification set turned into logged bandit data",
)
def simulate_kl_linear_classification(
    env: Any, *, n_trials: int, rng: RNGLike, eta: float = 0.05, beta0: float = 0.1, ridge: float = 2.0,
) -> dict[str, FloatArray]:
    """Fit eq. (10) on the logged split; evaluate on the public split.

    Returns
    -------
    dict of str to ndarray of shape (n_trials,)
        ``accuracy``: mean over public contexts of π̃(true class | x); ``greedy_accuracy``: the same
        for the non-private arg-max of the pessimistic utility; ``epsilon0``: Theorem 2's ε0 (the same
        at every context); ``epsilon0_tight_max`` / ``_median``: the refined C2·γ_max(x)/η over the public
        contexts. Each context queried is a separate release (T contexts compose to T·ε0 at most).
    """
    n = check_int(n_trials, "n_trials", minimum=1)
    env_streams, _, _ = _streams(rng, n)
    out: dict[str, list[float]] = {"accuracy": [], "greedy_accuracy": [], "epsilon0": [],
                                   "epsilon0_tight_max": [], "epsilon0_tight_median": []}
    for trial in range(n):
        data = env.draw(env_streams[trial])
        policy = KLLinearPolicy(eta=eta, beta0=beta0, ridge=ridge).fit(data.logged)

        out["accuracy"].append(data.expected_accuracy(policy.batch_probabilities))
        out["greedy_accuracy"].append(data.expected_accuracy(partial(_greedy_probabilities, policy)))
        # Theorem 2's ε0 = C2/(η√λ_min) is the same at every context; the refined C2·γ_max(x)/η is not
        c2 = acc.theorem2_bracket(policy.lambda_min_, n_records=policy.n_records_,
                                  dimension=policy.n_features_in_, reward_bound=1.0, beta0=beta0)
        features = action_features(data.public_contexts, data.n_actions)
        gamma_max = policy.penalties(features.reshape(-1, features.shape[-1])).reshape(features.shape[:2]).max(axis=1)
        out["epsilon0"].append(c2 / (eta * math.sqrt(policy.lambda_min_)))
        out["epsilon0_tight_max"].append(float(c2 * gamma_max.max() / eta))
        out["epsilon0_tight_median"].append(float(c2 * np.median(gamma_max) / eta))
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}
