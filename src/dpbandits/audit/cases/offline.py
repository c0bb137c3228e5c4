"""Privacy cases of the offline family: the KL-regularised policies and the MAB baselines.

Units: one logged record, add/remove (MAB, linear, RLHF add/remove), or one preference label (RLHF
label DP, comparisons public). Every release here has a finite output set whose exact law is
computable — the sampled action of a Gibbs policy, report-noisy-max's argmax (by quadrature) — so
the cases are exact audits, except the Laplace-statistics release (a real vector: the supremum of
its log-density ratio is ‖δu‖₁/b in closed form, plus a statistical and a floating-point audit of
the secure release) and one statistical audit of the deployed secure sampler.

Neighbours are adversarial by construction: the extremes of each arm (its smallest and largest
reward removed, a reward 0 or R added, also to an arm without data), the record of the least-covered
arm removed, datasets at the declared count floor whose moving arm is rare under the policy (where
the domain bound is approached), every record of a linear or RLHF dataset removed, additions along
the structured directions of the KL auditor (±eigenvectors of Σ, ±φ_a, ±(φ_a − φ_b)) with
rewards at their bounds, and every label flipped.

Negative controls (``broken=True``): noise sized from N_min(D) (report-noisy-max, EM, Laplace
statistics: the old default), η calibrated on the data to hit ε per instance (the old study
calibration), Laplace noise added in NumPy floats, seeded sampling with a known seed, a double-counted
preference label, and composition ignored for repeated samples.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import brentq

from dpbandits._core.errors import InsecureNoiseWarning
from dpbandits.algorithms.offline import KLLinearPolicy, KLMABPolicy, KLRLHFPolicy
from dpbandits.algorithms.offline import accountants as acc
from dpbandits.algorithms.offline.baselines import (
    ExponentialMechanismMAB,
    LaplaceStatisticsGreedyMAB,
    ReportNoisyMaxMAB,
)
from dpbandits.algorithms.offline.kl_mab import kl_log_policy, log_reference_policy
from dpbandits.algorithms.offline.kl_rlhf import bradley_terry_mle
from dpbandits.algorithms.offline.simulate import calibrated_eta
from dpbandits.audit.contract import NeighbourPair, PrivacyCase, register_privacy_cases, with_power
from dpbandits.audit.kl import mab_neighbour_datasets
from dpbandits.envs.datasets import action_features
from dpbandits.envs.offline import LoggedBanditData, LoggedContextualData, PreferenceData
from dpbandits.privacy.guarantees import Guarantee, Neighbouring, PureDP
from dpbandits.privacy.noise import NumpyNoise, privacy_noise

__all__ = [
    "DataScaledEM",
    "DataScaledLaplace",
    "DataScaledRNM",
    "offline_baseline_cases",
    "offline_kl_mab_cases",
    "offline_linear_cases",
    "offline_rlhf_cases",
]

EPSILON = 1.0


def _memo(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Cache ``function`` per input object: a case evaluates its base dataset once per pair otherwise."""
    cache: dict[int, tuple[Any, Any]] = {}

    def cached(data: Any) -> Any:
        hit = cache.get(id(data))
        if hit is None or hit[0] is not data:
            hit = (data, function(data))
            cache[id(data)] = hit
        return hit[1]

    return cached


# ------------------------------------------------------------------------------ broken variants
class _DataScaled:
    """Broken: Δ sized from the data, App. B's 2R/(N_min − 1) + β0/(2(N_min − 1)^{3/2}) (the old default)."""

    counts_: np.ndarray
    reward_bound: float
    beta0: float
    sensitivity: float

    def _fit_utilities(self, data: LoggedBanditData) -> None:
        super()._fit_utilities(data)  # type: ignore[misc]
        m = int(self.counts_.min()) - 1
        self.sensitivity = 2 * self.reward_bound / m + self.beta0 / (2 * m**1.5) if m >= 1 else math.inf


class DataScaledRNM(_DataScaled, ReportNoisyMaxMAB):
    """Negative control: report-noisy-max with noise sized from N_min(D)."""


class DataScaledLaplace(_DataScaled, LaplaceStatisticsGreedyMAB):
    """Negative control: Laplace statistics with noise sized from N_min(D)."""


class DataScaledEM(_DataScaled, ExponentialMechanismMAB):
    """Negative control: the exponential mechanism with Δ from N_min(D)."""


# ------------------------------------------------------------------------------------ MAB data
def _mab(counts: Sequence[int], rewards: Sequence[Any]) -> LoggedBanditData:
    """Arm a has ``counts[a]`` records; ``rewards[a]`` is a list (cycled) or one value."""
    actions, values = [], []
    for arm, (n, r) in enumerate(zip(counts, rewards, strict=True)):
        pattern = list(r) if isinstance(r, Sequence) else [float(r)]
        actions += [arm] * n
        values += [pattern[i % len(pattern)] for i in range(n)]
    return LoggedBanditData(actions, values, len(counts))


LEAST_COVERED = _mab([2, 5, 40], [[0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])
ISSUE_INSTANCE = _mab([3, 1000], [0.0, 1.0])  # issue 12: eps = 2, beta0 = 50
TWO_SPARSE_ARMS = _mab([6, 1000, 6], [0.0, 1.0, 0.0])  # exposes a data-scaled EM (beta0 = 200)


def _floor_instance(m: int) -> tuple[LoggedBanditData, np.ndarray]:
    """At the floor m: arm 0 has m rewards 0 (adding R moves u(0) by the full Δ(m)) and a tiny π0(0)."""
    data = _mab([m, m, m + 1], [0.0, 1.0, [1.0, 0.0]])
    return data, np.array([1e-9, 0.5, 0.5 - 1e-9])


def _mab_pairs(data: LoggedBanditData, min_count: int | None = None) -> list[NeighbourPair]:
    return [NeighbourPair(label, data, neighbour)
            for label, neighbour in mab_neighbour_datasets(data, min_count=min_count)]


def _kl_mab_law(**params: Any) -> Callable[[LoggedBanditData], np.ndarray]:
    return _memo(lambda data: KLMABPolicy(**params).fit(data).log_probabilities_)


def _deployed_kl_sampler(base: dict[str, Any], removal: list[NeighbourPair],
                         sample: Callable[[Any, int, np.random.Generator], np.ndarray]) -> list[PrivacyCase]:
    """The deployed secure sampler, audited statistically at 2000 draws and (slow) 40000, with its power."""
    case = PrivacyCase("kl-mab", "deployed sampler (OpenDP exact Gumbel noisy-max)", _kl_mab_claim("tight", **base),
                       removal, sample=sample)
    mode = float(np.exp(np.max(_kl_mab_law(**base)(removal[0].data))))
    return [with_power(case, mode, "the most likely arm", n_events=base["n_arms"], n_samples=n, heavy=n > 2000)
            for n in (2000, 40_000)]


def _kl_mab_claim(variant: str = "corrected", **params: Any) -> Callable[[LoggedBanditData], Guarantee]:
    return _memo(lambda data: KLMABPolicy(**params).fit(data).guarantee(variant=variant))


def _seeded_sampler(params: dict[str, Any], seed: int) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
    """Negative control: every draw uses the same known noise seed (an attacker knows it)."""

    def sample(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        policy = KLMABPolicy(**params).fit(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            return np.array([int(policy.sample(rng=seed, insecure_seeded_noise=True)) for _ in range(n)])

    return sample


def _revealing_seed(params: dict[str, Any], pair: NeighbourPair) -> int:
    """A seed under which the neighbours' sampled arms differ."""
    first, second = KLMABPolicy(**params).fit(pair.data), KLMABPolicy(**params).fit(pair.neighbour)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)
        for seed in range(1000):
            if int(first.sample(rng=seed, insecure_seeded_noise=True)) != int(
                    second.sample(rng=seed, insecure_seeded_noise=True)):
                return seed
    raise AssertionError("no revealing seed among the first 1000")  # pragma: no cover


def _eta_for_instance_loss(data: LoggedBanditData, n_arms: int, beta0: float, epsilon: float) -> float:
    """The η whose exact per-instance loss at ``data`` is ε: a calibration that reads the data."""

    def excess(log_eta: float) -> float:
        return KLMABPolicy(n_arms, eta=math.exp(log_eta), beta0=beta0).fit(data).guarantee(variant="tight").epsilon - epsilon

    return math.exp(brentq(excess, -12.0, 12.0, xtol=1e-10))


def _ordered_pairs_law(params: dict[str, Any], n_samples: int) -> Callable[[LoggedBanditData], np.ndarray]:
    """Log-law of ``n_samples`` i.i.d. draws (ordered tuples, K^T outcomes)."""

    def law(data: LoggedBanditData) -> np.ndarray:
        log_p = KLMABPolicy(**params).fit(data).log_probabilities_
        total = log_p
        for _ in range(n_samples - 1):
            total = np.add.outer(total, log_p).ravel()
        return np.asarray(total)

    return law


@register_privacy_cases("kl-mab", "kl-mab-repeated")
def offline_kl_mab_cases() -> list[PrivacyCase]:
    """KL MAB: Theorem 1 and the exact loss per instance, the domain bound, the secure sampler, controls."""
    base: dict[str, Any] = {"n_arms": 3, "eta": 0.3, "beta0": 1.0}
    pairs = _mab_pairs(LEAST_COVERED)
    outside: dict[str, Any] = {"n_arms": 3, "eta": 0.3, "beta0": 1.0, "reference": [0.0, 0.5, 0.5]}
    unseen = _mab([0, 4, 6], [0.0, [1.0, 0.0], 1.0])
    m = 3
    floor_data, floor_reference = _floor_instance(m)
    domain: dict[str, Any] = {"n_arms": 3, "eta": 0.2, "beta0": 2.0, "reference": floor_reference, "min_count": m}
    domain_claim = KLMABPolicy(**domain).fit(floor_data).guarantee(scope="domain", variant="tight")
    domain_pairs = _mab_pairs(floor_data, min_count=m)
    removal = [p for p in pairs if p.label.startswith("remove (arm 0")][:1]
    seed = _revealing_seed(base, removal[0])
    scaled_data = _mab([100, 3, 3], [1.0, 0.0, 0.0])

    def scaled_law(data: LoggedBanditData) -> np.ndarray:
        eta = _eta_for_instance_loss(data, 3, 5.0, EPSILON)
        return KLMABPolicy(3, eta=eta, beta0=5.0).fit(data).log_probabilities_

    def secure_sample(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(KLMABPolicy(**base).fit(data).sample(size=n))

    repeated: dict[str, Any] = {"n_arms": 3, "eta": calibrated_eta(0.5, m, reward_bound=1.0, beta0=2.0, calibration="domain"),
                "beta0": 2.0, "reference": floor_reference, "min_count": m}
    per_sample = KLMABPolicy(**repeated).fit(floor_data).guarantee(scope="domain", variant="tight")
    return [
        PrivacyCase("kl-mab", "Theorem 1 per instance; least-covered arm has 2 records", _kl_mab_claim(**base), pairs,
                    distribution=_kl_mab_law(**base)),
        PrivacyCase("kl-mab", "exact per-instance loss (variant='tight')", _kl_mab_claim("tight", **base), pairs,
                    distribution=_kl_mab_law(**base)),
        PrivacyCase("kl-mab", "a record of an arm without data and outside pi0's support is added",
                    _kl_mab_claim(**outside), _mab_pairs(unseen), distribution=_kl_mab_law(**outside)),
        PrivacyCase("kl-mab", f"domain N(a) >= {m} (tight), moving arm rare under the policy", domain_claim,
                    domain_pairs, distribution=_kl_mab_law(**domain)),
        *_deployed_kl_sampler(base, removal, secure_sample),
        # negative controls
        PrivacyCase("kl-mab", f"sampling with the known seed {seed}", _kl_mab_claim("tight", **base), removal,
                    sample=_seeded_sampler(base, seed), n_samples=400, broken=True, notes={"control": "seeded noise"}),
        PrivacyCase("kl-mab", "eta calibrated on the data so that the per-instance loss is epsilon",
                    PureDP(epsilon=EPSILON, unit=acc.UNIT_MAB, neighbouring=Neighbouring.ADD_REMOVE),
                    _mab_pairs(scaled_data, min_count=2), distribution=scaled_law, broken=True,
                    notes={"control": "data-dependent scale"}),
        PrivacyCase("kl-mab-repeated", "2 samples, eta from the domain sensitivity, basic composition",
                    acc.repeated_sampling(per_sample, 2), domain_pairs, distribution=_ordered_pairs_law(repeated, 2)),
        PrivacyCase("kl-mab-repeated", "2 samples claimed at the one-sample epsilon", per_sample, domain_pairs,
                    distribution=_ordered_pairs_law(repeated, 2), broken=True,
                    notes={"control": "composition ignored"}),
    ]


# ------------------------------------------------------------------------------- MAB baselines
def _laplace_transcript(cls: type[LaplaceStatisticsGreedyMAB], **params: Any) -> Callable[..., np.ndarray]:
    """sup_v |log f_D(v) − log f_D'(v)| of the released vector u + Lap(b)^K: ‖δu‖₁/b, ∞ if the scales differ."""

    def loss(data: Any, neighbour: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        first, second = cls(**params), cls(**params)
        first._fit_utilities(data)
        second._fit_utilities(neighbour)
        if first.noise_scale != second.noise_scale:
            return np.array([math.inf])  # Laplace densities of different scales: unbounded ratio in the tails
        return np.array([float(np.abs(first.utilities_ - second.utilities_).sum() / first.noise_scale)])

    return loss


@register_privacy_cases("em-mab", "rnm-mab", "laplace-greedy-mab")
def offline_baseline_cases() -> list[PrivacyCase]:
    """Baselines calibrated by the public floor, and the same mechanisms with noise sized from the data."""
    issue: dict[str, Any] = {"n_arms": 2, "epsilon": 2.0, "beta0": 50.0, "min_count": 2}
    issue_pairs = _mab_pairs(ISSUE_INSTANCE, min_count=2)
    sparse: dict[str, Any] = {"n_arms": 3, "epsilon": EPSILON, "beta0": 200.0, "min_count": 2}
    sparse_pairs = _mab_pairs(TWO_SPARSE_ARMS, min_count=2)
    laplace: dict[str, Any] = {"n_arms": 2, "epsilon": EPSILON, "beta0": 0.0, "min_count": 2}
    zero_mean = _mab([2, 2], [0.0, [0.0, 1.0]])  # u(0) = 0: a textbook float sum 0 + noise is just noise
    laplace_pairs = _mab_pairs(zero_mean, min_count=2)
    release = LaplaceStatisticsGreedyMAB(**laplace)

    def law(cls: type, **params: Any) -> Callable[[Any], np.ndarray]:
        return lambda data: np.log(cls(**params).fit(data).probabilities())

    def secure_release(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        """Return n releases of ``fit``'s default path, batched: ``privacy_noise().add_laplace(u, b)`` (OpenDP)."""
        fitted = LaplaceStatisticsGreedyMAB(**laplace).fit(data)
        return privacy_noise().add_laplace(np.broadcast_to(fitted.utilities_, (n, 2)), fitted.noise_scale)

    def float_release(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        fitted = LaplaceStatisticsGreedyMAB(**laplace)
        fitted._fit_utilities(data)
        return fitted.utilities_ + NumpyNoise(rng).laplace(fitted.noise_scale, size=(n, 2))  # textbook float sum

    def changed_arm(outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs)[:, 0]

    return [
        PrivacyCase("rnm-mab", "issue 12 instance (eps 2, beta0 50), floor 2: the 3-record arm's removal",
                    ReportNoisyMaxMAB(**issue).guarantee(), issue_pairs, distribution=law(ReportNoisyMaxMAB, **issue)),
        PrivacyCase("rnm-mab", "noise sized from N_min(D)", ReportNoisyMaxMAB(**issue).guarantee(), issue_pairs,
                    distribution=law(DataScaledRNM, **issue), broken=True, notes={"control": "data-dependent scale"}),
        PrivacyCase("em-mab", "issue 12 instance, floor 2", ExponentialMechanismMAB(**issue).guarantee(), issue_pairs,
                    distribution=law(ExponentialMechanismMAB, **issue)),
        PrivacyCase("em-mab", "two sparse arms, beta0 200", ExponentialMechanismMAB(**sparse).guarantee(), sparse_pairs,
                    distribution=law(ExponentialMechanismMAB, **sparse)),
        PrivacyCase("em-mab", "two sparse arms, Delta from N_min(D)", ExponentialMechanismMAB(**sparse).guarantee(),
                    sparse_pairs, distribution=law(DataScaledEM, **sparse), broken=True,
                    notes={"control": "data-dependent scale"}),
        PrivacyCase("laplace-greedy-mab", "issue 12 instance: exact sup of the released vector's density ratio",
                    LaplaceStatisticsGreedyMAB(**issue).guarantee(), issue_pairs,
                    transcript_loss=_laplace_transcript(LaplaceStatisticsGreedyMAB, **issue)),
        *(with_power(PrivacyCase("laplace-greedy-mab", "secure release (OpenDP adds the noise): statistics and "
                                 "low-order bits", release.guarantee(), laplace_pairs[:2], sample=secure_release,
                                 statistic=changed_arm, n_samples=2000, float_attack=True),
                     0.5, "a threshold event at the median of the changed arm's release", n_events=12,
                     n_samples=n, heavy=n > 2000) for n in (2000, 20_000)),
        PrivacyCase("laplace-greedy-mab", "noise sized from N_min(D)", LaplaceStatisticsGreedyMAB(**issue).guarantee(),
                    issue_pairs,
                    transcript_loss=_laplace_transcript(DataScaledLaplace, **issue), broken=True,
                    notes={"control": "data-dependent scale"}),
        PrivacyCase("laplace-greedy-mab", "textbook Laplace noise added in NumPy floats", release.guarantee(),
                    laplace_pairs[:2], sample=float_release, statistic=changed_arm, n_samples=2000,
                    float_attack=True, broken=True, notes={"control": "float addition"}),
    ]


# -------------------------------------------------------------------------------------- linear
def _unit_rows(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1)
    keep = norms > 1e-12
    return np.asarray(rows[keep] / norms[keep, None])


def _directions(covariance: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """± eigenvectors of Σ, ± φ_a and ± (φ_a − φ_b), normalised (the auditor's structured candidates)."""
    _, vectors = np.linalg.eigh(covariance)
    i, j = np.triu_indices(actions.shape[0], 1)
    rows = _unit_rows(np.concatenate([vectors.T, actions, actions[i] - actions[j]]))
    return np.concatenate([rows, -rows])


def _linear_pairs(data: LoggedContextualData, actions: np.ndarray, ridge: float,
                  keep: Callable[[LoggedContextualData], bool] = lambda _: True) -> list[NeighbourPair]:
    pairs = []
    for i in range(data.n_records):
        mask = np.arange(data.n_records) != i
        neighbour = LoggedContextualData(data.features[mask], data.rewards[mask], data.reward_bound)
        if keep(neighbour):
            pairs.append(NeighbourPair(f"remove record {i}", data, neighbour))
    covariance = ridge * np.eye(data.dimension) + data.features.T @ data.features
    for phi0 in _directions(covariance, actions):
        for r0 in (0.0, data.reward_bound):
            neighbour = LoggedContextualData(np.vstack([data.features, phi0]), np.append(data.rewards, r0),
                                             data.reward_bound)
            if keep(neighbour):
                pairs.append(NeighbourPair(f"add (phi0={np.round(phi0, 3).tolist()}, r0={r0:g})", data, neighbour))
    return pairs


def _linear_case(name: str, description: str, data: LoggedContextualData, actions: np.ndarray,
                 variant: str = "corrected", scope: str = "instance", **params: Any) -> PrivacyCase:
    ridge = float(params.get("ridge", 2.0))

    def law(d: LoggedContextualData) -> np.ndarray:
        return KLLinearPolicy(**params).fit(d).log_probabilities(actions)

    def claim(d: LoggedContextualData) -> Guarantee:
        return KLLinearPolicy(**params).fit(d).guarantee(actions, variant=variant, scope=scope)

    floor, n_max = params.get("min_eigenvalue"), params.get("max_records")

    def in_domain(d: LoggedContextualData) -> bool:
        if floor is None:
            return True
        lam = float(np.linalg.eigvalsh(ridge * np.eye(d.dimension) + d.features.T @ d.features)[0])
        return lam >= floor and (n_max is None or d.n_records <= n_max)

    return PrivacyCase(name, description, _memo(claim), _linear_pairs(data, actions, ridge, in_domain),
                       distribution=_memo(law))


def _logged_contextual(n: int, seed: int) -> LoggedContextualData:
    gen = np.random.default_rng(seed)
    features = _unit_rows(gen.standard_normal((n, 2)))
    return LoggedContextualData(features, (gen.random(n) < 0.5 + 0.4 * features[:, 0]).astype(float))


@register_privacy_cases("kl-linear", "kl-linear-classification")
def offline_linear_cases() -> list[PrivacyCase]:
    """Linear KL policy at one public context: removals and structured additions at reward bounds."""
    data = _logged_contextual(12, 20261122)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8]])
    base: dict[str, Any] = {"eta": 0.5, "beta0": 0.5, "ridge": 2.0}
    lam_min = float(np.linalg.eigvalsh(2.0 * np.eye(2) + data.features.T @ data.features)[0])
    domain: dict[str, Any] = {**base, "min_eigenvalue": math.floor(lam_min - 1.0), "max_records": 13}
    # classification: one-hot action blocks φ(x, a) = e_a ⊗ x̃ (three classes, two scaled features)
    gen = np.random.default_rng(20261123)
    contexts = _unit_rows(gen.standard_normal((15, 2))) * 0.9
    labels = gen.integers(0, 3, 15)
    logged_actions = gen.integers(0, 3, 15)
    blocks = action_features(contexts, 3)
    logged = LoggedContextualData(blocks[np.arange(15), logged_actions], (logged_actions == labels).astype(float))
    query = action_features(contexts[:1], 3)[0]
    return [
        _linear_case("kl-linear", "Theorem 2 per instance", data, actions, **base),
        _linear_case("kl-linear", "refined per-context bound C2*gamma_max/eta", data, actions, variant="refined", **base),
        _linear_case("kl-linear", "certified per-instance loss (tight)", data, actions, variant="tight", **base),
        _linear_case("kl-linear", "domain lambda_min >= floor, n <= 13", data, actions, scope="domain", **domain),
        _linear_case("kl-linear-classification", "one-hot action blocks, Theorem 2 per instance", logged, query,
                     eta=0.5, beta0=0.1, ridge=2.0),
    ]


# ---------------------------------------------------------------------------------------- RLHF
def _preferences(n: int, seed: int) -> PreferenceData:
    gen = np.random.default_rng(seed)
    first, second = _unit_rows(gen.standard_normal((n, 2))), _unit_rows(gen.standard_normal((n, 2)))
    labels = (gen.random(n) < 0.5).astype(float)
    return PreferenceData.from_pairs(first, second, labels)


def _rlhf_label_pairs(data: PreferenceData) -> list[NeighbourPair]:
    pairs = []
    for i in range(data.n_records):
        flipped = data.labels.copy()
        flipped[i] = 1.0 - flipped[i]
        pairs.append(NeighbourPair(f"flip label {i}", data, PreferenceData(data.feature_differences, flipped)))
    return pairs


def _rlhf_add_remove_pairs(data: PreferenceData, actions: np.ndarray, ridge: float) -> list[NeighbourPair]:
    z, y = data.feature_differences, data.labels
    pairs = [NeighbourPair(f"remove record {i}", data, PreferenceData(np.delete(z, i, axis=0), np.delete(y, i)))
             for i in range(data.n_records)]
    covariance = ridge * np.eye(z.shape[1]) + z.T @ z
    for direction in _directions(covariance, actions):
        for label in (0.0, 1.0):
            pairs.append(NeighbourPair(f"add (z0={np.round(2 * direction, 3).tolist()}, y0={label:g})", data,
                                       PreferenceData(np.vstack([z, 2 * direction]), np.append(y, label))))
    return pairs


def _rlhf_case(description: str, data: PreferenceData, pairs: list[NeighbourPair], actions: np.ndarray, *,
               variant: str = "corrected", neighbouring: str = "label", scope: str = "instance",
               **params: Any) -> PrivacyCase:
    def law(d: PreferenceData) -> np.ndarray:
        return KLRLHFPolicy(**params).fit(d).log_probabilities(actions)

    def claim(d: PreferenceData) -> Guarantee:
        return KLRLHFPolicy(**params).fit(d).guarantee(actions, variant=variant, neighbouring=neighbouring, scope=scope)

    return PrivacyCase("kl-rlhf", description, _memo(claim), pairs, distribution=_memo(law))


@register_privacy_cases("kl-rlhf")
def offline_rlhf_cases() -> list[PrivacyCase]:
    """RLHF: every label flip (label DP), removals and additions at ‖z0‖ = 2 (add/remove), a double-counted label."""
    data = _preferences(10, 20261124)
    actions = np.array([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8]])
    base: dict[str, Any] = {"eta": 0.2, "beta0": 1.0, "ridge": 1.0, "norm_bound": 0.5}
    labels = _rlhf_label_pairs(data)
    # the control: 400 comparisons z = 2, 210 preferred; label 0 is counted twice by the broken fit
    skewed = PreferenceData(np.full((400, 1), 2.0), np.r_[np.ones(210), np.zeros(190)])
    two = np.array([[1.0], [-1.0]])
    control: dict[str, Any] = {"eta": 0.01, "beta0": 0.0, "ridge": 1.0, "norm_bound": 0.5}
    control_pairs = [p for p in _rlhf_label_pairs(skewed) if p.label in ("flip label 0", "flip label 399")]

    def double_counted(d: PreferenceData) -> np.ndarray:
        z, y = d.feature_differences, d.labels
        fit = bradley_terry_mle(np.vstack([z, z[:1]]), np.append(y, y[0]), control["norm_bound"])
        policy = KLRLHFPolicy(**control).fit(d)
        u = two @ fit.theta - control["beta0"] * policy.penalties(two)
        return kl_log_policy(log_reference_policy(None, 2), u, control["eta"])

    return [
        _rlhf_case("label DP, Theorem 3' per instance, every flip", data, labels, actions, **base),
        _rlhf_case("label DP, range refinement (refined), every flip", data, labels, actions, variant="refined",
                   **base),
        _rlhf_case("label DP, certified per-instance loss (tight), every flip", data, labels, actions,
                   variant="tight", **base),
        _rlhf_case("label DP over every labelling of the public comparisons", data, labels, actions, scope="domain",
                   variant="refined", **base),
        _rlhf_case("add/remove, Theorem 4' per instance, removals and additions at norm 2", data,
                   _rlhf_add_remove_pairs(data, actions, 1.0), actions, neighbouring="add_remove", **base),
        PrivacyCase("kl-rlhf", "one preference label counted twice in the likelihood",
                    lambda d: KLRLHFPolicy(**control).fit(d).guarantee(two, variant="refined"), control_pairs,
                    distribution=double_counted, broken=True, notes={"control": "double-counted label"}),
    ]
