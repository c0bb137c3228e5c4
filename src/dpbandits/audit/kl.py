"""Exact and adversarial auditors of the KL-regularised offline policies.

For a fitted policy and its dataset D, each auditor builds neighbouring datasets D', recomputes the
policy π̃(·; D') exactly, and reports the largest pure privacy loss max_a |log π̃(a; D) − log π̃(a; D')|
and, at a given ε, the largest hockey-stick δ(ε) (:func:`dpbandits.audit.exact.privacy_loss` and
:func:`dpbandits.audit.exact.delta_for_epsilon`).

* :func:`audit_mab` — add/remove neighbours of the multi-armed bandit. For pure DP the enumeration
  is **exact**: a neighbour changes one arm's utility, and every log-probability is monotone in the
  removed or added reward, so removing each arm's min- and max-reward record and adding a reward
  0 or R at each arm attains the worst case. δ(ε) also scans a reward grid (lower bound).
* :func:`audit_linear` — removals of every record (exact, by Sherman–Morrison) and an adversarial
  search over added records (φ0, r0) (lower bound).
* :func:`audit_rlhf` — label flips of every record (exact, the constrained MLE re-solved warm-started)
  or add/remove (removals exact, additions searched: lower bound).

A violation (audited loss > claimed ε, or audited δ(ε) > claimed δ) is a real counterexample;
agreement is evidence, and proof only where the enumeration is exact.

Importing this module also registers the auditors used by the ``kl-*`` study entry points with
``audit=True`` (:data:`dpbandits.algorithms.offline.simulate.AUDITORS`; the algorithms layer cannot
import the audit layer, so the audit layer plugs itself in).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import DependencyNotInstalledError, EmptySupportError, InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_in_interval, check_int, check_one_of
from dpbandits.algorithms.offline.kl_linear import KLLinearPolicy
from dpbandits.algorithms.offline.kl_mab import KLMABPolicy, kl_log_policy, log_reference_policy
from dpbandits.algorithms.offline.kl_rlhf import KLRLHFPolicy, bradley_terry_mle
from dpbandits.algorithms.offline.simulate import AUDITORS as STUDY_AUDITORS
from dpbandits.audit.exact import delta_for_epsilon, privacy_loss
from dpbandits.envs.offline import LoggedBanditData, LoggedContextualData, PreferenceData
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["KLAuditReport", "audit_linear", "audit_mab", "audit_rlhf", "mab_neighbour_datasets",
           "repeated_sampling_epsilon_mab"]


@dataclass(frozen=True)
class KLAuditReport:
    """Largest privacy loss (and δ at a given ε) over the neighbours explored.

    Attributes
    ----------
    epsilon_hat : float
        max over neighbours of max_a |log π̃(a; D) − log π̃(a; D')| (``inf`` if some action's
        probability is 0 on one side only).
    worst_neighbour : str
        Description of the neighbour attaining ``epsilon_hat`` (for reproducibility).
    epsilon : float or None
        The ε at which δ was audited.
    delta_hat : float or None
        max over neighbours of max(H_ε(p‖q), H_ε(q‖p)).
    worst_delta_neighbour : str or None
    n_neighbours : int
        Number of neighbouring datasets evaluated.
    exact_pure : bool
        Whether the neighbours explored provably contain the pure-DP worst case.
    """

    epsilon_hat: float
    worst_neighbour: str
    epsilon: float | None
    delta_hat: float | None
    worst_delta_neighbour: str | None
    n_neighbours: int
    exact_pure: bool

    def violates(self, guarantee: Guarantee, *, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
        """Whether the audit contradicts ``guarantee``.

        A pure guarantee is violated when ε̂ > ε(1 + rtol) + atol. An approximate one is violated when
        the audited δ at the guarantee's ε exceeds δ + atol (the audit must have been run at that ε).
        """
        if guarantee.delta == 0.0:
            return self.epsilon_hat > guarantee.epsilon * (1.0 + rtol) + atol
        if self.epsilon is None or self.delta_hat is None or not math.isclose(
            self.epsilon, guarantee.epsilon, rel_tol=1e-12, abs_tol=0.0
        ):
            if not math.isfinite(guarantee.epsilon):
                return False
            raise InvalidParameterError(
                f"audit epsilon must equal the guarantee's epsilon {guarantee.epsilon!r}; got {self.epsilon!r}"
            )
        return self.delta_hat > guarantee.delta + atol


class _Tracker:
    """Keeps the worst loss and the worst δ(ε) over neighbours."""

    def __init__(self, log_p: FloatArray, epsilon: float | None) -> None:
        self.log_p = log_p
        self.epsilon = epsilon
        self.loss, self.loss_at = 0.0, "none"
        self.delta, self.delta_at = 0.0, "none"
        self.count = 0

    def add(self, log_q: FloatArray | None, label: str) -> None:
        self.count += 1
        if log_q is None:  # the mechanism is undefined on D' (no arm has data): fully distinguishable
            loss, delta = math.inf, 1.0
        else:
            loss = privacy_loss(self.log_p, log_q, log=True)
            delta = 0.0
            if self.epsilon is not None and loss > self.epsilon:  # δ(ε) = 0 exactly when ε >= loss
                delta = delta_for_epsilon(self.log_p, log_q, self.epsilon, log=True)
        if loss > self.loss:
            self.loss, self.loss_at = loss, label
        if delta > self.delta:
            self.delta, self.delta_at = delta, label

    def report(self, exact_pure: bool) -> KLAuditReport:
        with_delta = self.epsilon is not None
        return KLAuditReport(
            epsilon_hat=self.loss, worst_neighbour=self.loss_at, epsilon=self.epsilon,
            delta_hat=self.delta if with_delta else None,
            worst_delta_neighbour=self.delta_at if with_delta else None,
            n_neighbours=self.count, exact_pure=exact_pure,
        )


def _check_epsilon(epsilon: float | None) -> float | None:
    if epsilon is None:
        return None
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float) or math.isnan(epsilon) or epsilon < 0:
        raise InvalidParameterError(f"epsilon must be a float >= 0 or None; got {epsilon!r}")
    return float(epsilon) if math.isfinite(epsilon) else None


# -------------------------------------------------------------------------------------- MAB
def _check_fitted_on(policy: KLMABPolicy, data: LoggedBanditData) -> tuple[IntArray, FloatArray]:
    counts, sums = data.counts(), data.reward_sums()
    if not (np.array_equal(counts, policy.counts_) and np.allclose(sums, policy.reward_sums_)):
        raise InvalidParameterError("data must be the dataset the policy was fitted on (counts differ)")
    return counts, sums


def _mab_neighbours(policy: KLMABPolicy, data: LoggedBanditData,
                    grid: int) -> Iterator[tuple[str, FloatArray | None]]:
    """Add/remove neighbours of a MAB dataset and their log-policies (None: the policy is undefined).

    With ``grid == 2`` only the extremes (each arm's min- and max-reward record removed, a reward 0 or
    R added), which attain the pure worst case; otherwise also ``grid`` reward quantiles removed and a
    uniform grid of ``grid`` added rewards.
    """
    counts, sums = _check_fitted_on(policy, data)
    order = np.argsort(data.actions, kind="stable")
    bounds = np.searchsorted(data.actions[order], np.arange(policy.n_arms + 1))
    add_rewards = np.linspace(0.0, data.reward_bound, grid)
    for arm in range(policy.n_arms):
        if not np.isfinite(policy.log_reference[arm]):
            continue  # π0(a) = 0: the arm's data never affects π̃
        arm_rewards = data.rewards[order[bounds[arm]:bounds[arm + 1]]]
        changes: list[tuple[int, float, str]] = [(+1, float(r0), f"add (arm {arm}, r={r0:.6g})")
                                                 for r0 in add_rewards]
        if arm_rewards.size:
            removed = np.unique(np.quantile(arm_rewards, np.linspace(0.0, 1.0, grid), method="nearest")).tolist()
            changes += [(-1, r, f"remove (arm {arm}, r={r:.6g})") for r in removed]
        for sign, reward, label in changes:
            new_counts = counts.copy()
            new_sums = sums.copy()
            new_counts[arm] += sign
            new_sums[arm] += sign * reward
            yield label, _mab_log_policy(policy, new_counts, new_sums)


def mab_neighbour_datasets(data: LoggedBanditData, *, min_count: int | None = None,
                           arms: ArrayLike | None = None) -> Iterator[tuple[str, LoggedBanditData]]:
    """The extreme add/remove neighbours of a MAB dataset, as datasets (for any MAB mechanism).

    For every arm (or the given ``arms``): add a record of reward 0 and one of reward R (also to an
    arm without data: "a new arm id" of the public action space), and remove the arm's smallest and
    largest reward. For mechanisms whose output depends on one arm's utility monotonically in the
    changed reward (the KL policy, EM, report-noisy-max, Laplace statistics) these attain the pure
    worst case. With ``min_count`` = m, only neighbours inside the declared domain N(a) >= m for
    every arm are produced (the domain guarantees cover pairs inside it).
    """
    counts = data.counts()
    floor = 0 if min_count is None else check_int(min_count, "min_count", minimum=0)
    chosen = range(data.n_arms) if arms is None else [int(a) for a in np.atleast_1d(arms)]
    for arm in chosen:
        for reward in (0.0, data.reward_bound):
            yield (f"add (arm {arm}, r={reward:.6g})",
                   LoggedBanditData(np.append(data.actions, arm), np.append(data.rewards, reward), data.n_arms,
                                    data.reward_bound))
        if counts[arm] == 0 or counts[arm] - 1 < floor:
            continue
        where = np.flatnonzero(data.actions == arm)
        rewards = data.rewards[where]
        for index in sorted({int(where[np.argmin(rewards)]), int(where[np.argmax(rewards)])}):
            keep = np.ones(data.n_records, dtype=bool)
            keep[index] = False
            yield (f"remove (arm {arm}, r={data.rewards[index]:.6g})",
                   LoggedBanditData(data.actions[keep], data.rewards[keep], data.n_arms, data.reward_bound))


def _mab_log_policy(policy: KLMABPolicy, counts: IntArray, sums: FloatArray) -> FloatArray | None:
    u = policy.utilities_from_statistics(counts, sums)
    try:
        return kl_log_policy(policy.log_reference, u, policy.eta)
    except EmptySupportError:
        return None


def _mab_replacements(policy: KLMABPolicy, data: LoggedBanditData) -> Iterator[tuple[str, FloatArray | None]]:
    """Replace-one neighbours: a record (arm a, its min or max reward) replaced by (a', 0) or (a', R).

    Every log-probability is monotone in the removed and in the added reward separately, so these
    corners attain the pure worst case over all replacements.
    """
    counts, sums = _check_fitted_on(policy, data)
    order = np.argsort(data.actions, kind="stable")
    bounds = np.searchsorted(data.actions[order], np.arange(policy.n_arms + 1))
    for arm in range(policy.n_arms):
        arm_rewards = data.rewards[order[bounds[arm]:bounds[arm + 1]]]
        if arm_rewards.size == 0:
            continue
        for removed in sorted({float(arm_rewards.min()), float(arm_rewards.max())}):
            for target in range(policy.n_arms):
                for added in (0.0, data.reward_bound):
                    new_counts, new_sums = counts.copy(), sums.copy()
                    new_counts[arm] -= 1
                    new_sums[arm] -= removed
                    new_counts[target] += 1
                    new_sums[target] += added
                    label = f"replace (arm {arm}, r={removed:.6g}) by (arm {target}, r={added:.6g})"
                    yield label, _mab_log_policy(policy, new_counts, new_sums)


def repeated_sampling_epsilon_mab(
    policy: KLMABPolicy,
    data: LoggedBanditData,
    n_samples: int,
    delta: float,
    *,
    discretization: float = 1e-4,
) -> tuple[float, str]:
    """ε(δ) of ``n_samples`` independent samples from π̃(·; D), by exact PLD composition (study kl-e6-repeated).

    For each extreme add/remove neighbour D' (those that attain the pure worst case, see
    :func:`audit_mab`), the privacy-loss distribution of the pair (π̃(·; D), π̃(·; D')) is built in both
    orders with ``dp_accounting`` (pessimistic discretisation, so an upper estimate *for that pair*),
    composed ``n_samples`` times, and ε(δ) read off; the maximum over neighbours is returned. Other
    neighbours are not explored, so this is not a guarantee: it shows how far below basic and
    advanced composition the true cost of repeated sampling lies.

    Returns
    -------
    (float, str)
        ε and the neighbour attaining it.
    """
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError as exc:  # pragma: no cover - the "accounting" extra is installed in development
        raise DependencyNotInstalledError("dp-accounting is needed; install dpbandits[accounting]") from exc
    t = check_int(n_samples, "n_samples", minimum=1)
    dlt = check_in_interval(delta, "delta", 0.0, 1.0, closed="neither")
    log_p = policy.log_probabilities_
    support = {a: float(v) for a, v in enumerate(log_p) if np.isfinite(v)}
    worst, worst_at = 0.0, "none"
    for label, log_q in _mab_neighbours(policy, data, 2):
        if log_q is None:
            return math.inf, label
        other = {a: float(v) for a, v in enumerate(log_q) if np.isfinite(v)}
        if set(other) != set(support):
            return math.inf, label  # an action possible on one side only: infinite loss
        for lower, upper in ((support, other), (other, support)):
            dist = pld.from_two_probability_mass_functions(
                lower, upper, pessimistic_estimate=True, value_discretization_interval=discretization)
            eps = float(dist.self_compose(t).get_epsilon_for_delta(dlt)) if t > 1 else float(
                dist.get_epsilon_for_delta(dlt))
            if eps > worst:
                worst, worst_at = eps, label
    return worst, worst_at


def audit_mab(
    policy: KLMABPolicy,
    data: LoggedBanditData,
    *,
    epsilon: float | None = None,
    reward_grid: int = 21,
    neighbouring: str = "add_remove",
) -> KLAuditReport:
    """Audit a fitted :class:`KLMABPolicy` over add/remove (or replace-one) neighbours of its dataset.

    Parameters
    ----------
    policy : KLMABPolicy
        Fitted on ``data``.
    data : LoggedBanditData
        The dataset D.
    epsilon : float, optional
        Also audit δ(ε) at this ε (``inf`` or None: skip).
    reward_grid : int, default 21
        For δ: rewards removed (arm quantiles) and added (uniform grid on [0, R]) besides the extremes.
    neighbouring : {"add_remove", "replace_one"}, default "add_remove"
        ``"replace_one"``: a record replaced by (any arm, reward 0 or R), the extreme corners only
        (exact for pure DP; δ is then a lower bound from the same corners).

    Returns
    -------
    KLAuditReport
        ``exact_pure=True``: ε̂ is the exact per-instance pure loss.
    """
    policy._check_fitted()
    eps = _check_epsilon(epsilon)
    grid = check_int(reward_grid, "reward_grid", minimum=2) if eps is not None else 2
    check_one_of(neighbouring, "neighbouring", ("add_remove", "replace_one"))
    tracker = _Tracker(policy.log_probabilities_, eps)
    neighbours = (_mab_neighbours(policy, data, grid) if neighbouring == "add_remove"
                  else _mab_replacements(policy, data))
    for label, log_q in neighbours:
        tracker.add(log_q, label)
    return tracker.report(exact_pure=True)


# ----------------------------------------------------------------------------------- linear
def _screening_delta(log_p: FloatArray, log_q: FloatArray, epsilon: float) -> FloatArray:
    """Batched max(H_ε(p‖q), H_ε(q‖p)) over the last axis, only to rank many candidate neighbours.

    The reported δ of the best-ranked candidates is recomputed with
    :func:`dpbandits.audit.exact.delta_for_epsilon`.
    """

    def one_way(a: FloatArray, b: FloatArray) -> FloatArray:
        with np.errstate(invalid="ignore"):
            # Σ_o a·(1 − e^{ε + log b − log a})⁺, terms with a = 0 dropped
            x = np.clip(epsilon + b - a, -700.0, 700.0)
            terms = np.where(np.isfinite(a), np.exp(a) * np.maximum(-np.expm1(x), 0.0), 0.0)
        return np.asarray(np.nan_to_num(terms).sum(axis=-1), dtype=np.float64)

    p = np.broadcast_to(log_p, log_q.shape)
    return np.maximum(one_way(p, log_q), one_way(log_q, p))


def _candidate_directions(
    covariance: FloatArray, action_features: FloatArray, extra: FloatArray, gen: np.random.Generator,
    n_random: int,
) -> FloatArray:
    """Unit vectors: ± eigenvectors of Σ, ± φ_a, ± Σ⁻¹φ_a, ± (φ_a − φ_b), ± extra rows, random."""
    d = covariance.shape[0]
    _, vecs = np.linalg.eigh(covariance)
    rows = [vecs.T, action_features, np.linalg.solve(covariance, action_features.T).T, extra]
    k = action_features.shape[0]
    if k > 1:
        i, j = np.triu_indices(k, 1)
        rows.append(action_features[i] - action_features[j])
    rows.append(gen.standard_normal((n_random, d)))
    cand = np.concatenate(rows, axis=0)
    norms = np.linalg.norm(cand, axis=1)
    cand = cand[norms > 1e-12] / norms[norms > 1e-12, None]
    return np.asarray(np.concatenate([cand, -cand], axis=0), dtype=np.float64)


def audit_linear(
    policy: KLLinearPolicy,
    data: LoggedContextualData,
    action_features: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    epsilon: float | None = None,
    n_random: int = 200,
    reward_grid: int = 21,
    radii: tuple[float, ...] = (0.25, 0.5, 1.0),
    rng: RNGLike = None,
) -> KLAuditReport:
    """Audit a fitted :class:`KLLinearPolicy` at one context over add/remove neighbours.

    Removals of every record are exact (Sherman–Morrison downdates). Additions (φ0, r0) are searched
    over candidate directions × ``radii`` × a reward grid on [0, R] containing 0 and R,
    then refined by random local perturbations of the best candidates: a lower bound.

    Parameters
    ----------
    policy : KLLinearPolicy
        Fitted on ``data``.
    data : LoggedContextualData
    action_features : array_like of shape (K, d)
        φ(x, a) at the audited context.
    reference : array_like of shape (K,), optional
        π0(·|x).
    epsilon : float, optional
        Also audit δ(ε).
    n_random : int, default 200
        Random unit directions added to the structured candidates.
    reward_grid : int, default 21
    radii : tuple of float
        Norms of the added feature vectors (≤ 1).
    rng : int, SeedSequence, Generator or None
        Stream of the random directions and refinements.

    Returns
    -------
    KLAuditReport
    """
    features = policy._check_query(action_features)
    eps = _check_epsilon(epsilon)
    gen = as_generator(rng)
    grid = check_int(reward_grid, "reward_grid", minimum=2)
    log_pi0 = log_reference_policy(reference, features.shape[0])
    log_p = policy.log_probabilities(features, reference)
    tracker = _Tracker(log_p, eps)
    a_inv = np.linalg.inv(policy.covariance_)  # Σ⁻¹ (small d; auditing only)
    theta = policy.theta_
    base_rewards = features @ theta
    base_gamma2 = np.einsum("kd,de,ke->k", features, a_inv, features)
    phi, r = data.features, data.rewards

    def policy_for(rewards_hat: FloatArray, gamma2: FloatArray) -> FloatArray:
        u = rewards_hat - policy.beta0 * np.sqrt(np.maximum(gamma2, 0.0))
        return kl_log_policy(log_pi0, u, policy.eta)

    # removals: A₋ = A + (Aφ_i)(Aφ_i)ᵀ/(1 − s_i), θ₋ = θ + Aφ_i(φ_iᵀθ − r_i)/(1 − s_i)
    p_mat = a_inv @ phi.T                               # d × n
    s = np.einsum("nd,dn->n", phi, p_mat)               # s_i = φ_iᵀAφ_i
    fp = features @ p_mat                               # K × n
    shift = (phi @ theta - r) / (1.0 - s)
    removal_count = phi.shape[0]
    for i in range(removal_count):
        rewards_hat = base_rewards + fp[:, i] * shift[i]
        gamma2 = base_gamma2 + fp[:, i] ** 2 / (1.0 - s[i])
        tracker.add(policy_for(rewards_hat, gamma2), f"remove record {i}")

    # additions: A₊ = A − (Aφ0)(Aφ0)ᵀ/(1 + s0), θ₊ = θ + Aφ0(r0 − φ0ᵀθ)/(1 + s0)
    directions = _candidate_directions(policy.covariance_, features, phi[: min(phi.shape[0], 50)], gen,
                                       n_random)
    rewards_grid = np.linspace(0.0, data.reward_bound, grid)

    def scores(phi0: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Loss of every (candidate, reward) pair; returns (loss[C, G], log_q[C, G, K])."""
        a_phi0 = phi0 @ a_inv                            # C × d
        s0 = np.einsum("cd,cd->c", a_phi0, phi0)
        f_a = a_phi0 @ features.T                        # C × K  (φ_aᵀAφ0)
        gamma2 = base_gamma2[None, :] - f_a**2 / (1.0 + s0)[:, None]
        resid = rewards_grid[None, :] - (phi0 @ theta)[:, None]          # C × G
        rewards_hat = base_rewards[None, None, :] + (f_a / (1.0 + s0)[:, None])[:, None, :] * resid[:, :, None]
        u = rewards_hat - policy.beta0 * np.sqrt(np.maximum(gamma2, 0.0))[:, None, :]
        log_q = kl_log_policy(log_pi0, u, policy.eta)
        with np.errstate(invalid="ignore"):
            diff = np.abs(log_q - log_p)
        diff[np.isnan(diff)] = 0.0
        return diff.max(axis=-1), log_q

    candidates = np.concatenate([rad * directions for rad in radii], axis=0)
    loss, _ = scores(candidates)
    best = np.argsort(loss.max(axis=1))[::-1][:10]
    refined = [candidates]
    for idx in best:  # local random refinement, kept inside the unit ball
        start = candidates[idx]
        for scale in (0.3, 0.1, 0.03):
            trial = start + scale * gen.standard_normal((20, start.shape[0]))
            trial /= np.maximum(1.0, np.linalg.norm(trial, axis=1, keepdims=True))
            trial_loss, _ = scores(trial)
            j = int(np.argmax(trial_loss.max(axis=1)))
            if trial_loss[j].max() > loss[idx].max():
                start = trial[j]
            refined.append(trial)
        refined.append(start[None, :])
    all_candidates = np.concatenate(refined, axis=0)
    loss, log_q = scores(all_candidates)

    def label(c: int, g: int) -> str:
        return f"add (phi0={np.array2string(all_candidates[c], precision=4)}, r0={rewards_grid[g]:.4g})"

    # the worst pairs are re-evaluated with the exact primitives (privacy_loss, delta_for_epsilon)
    c, g = np.unravel_index(int(np.argmax(loss)), loss.shape)
    tracker.add(log_q[c, g], label(int(c), int(g)))
    if eps is not None:
        screen = _screening_delta(log_p, log_q, eps).ravel()
        for flat in np.argsort(screen)[::-1][:5]:
            c, g = np.unravel_index(int(flat), loss.shape)
            if screen[flat] > 0:
                tracker.add(log_q[c, g], label(int(c), int(g)))
    tracker.count = removal_count + loss.size
    return tracker.report(exact_pure=False)


# ------------------------------------------------------------------------------------- RLHF
def _unique_records(z: FloatArray, y: FloatArray) -> Iterator[int]:
    """Indices of one representative of each distinct (z_i, y_i): equal records give equal neighbours."""
    _, first = np.unique(np.column_stack([z, y]), axis=0, return_index=True)
    yield from (int(i) for i in np.sort(first))


def audit_rlhf(
    policy: KLRLHFPolicy,
    data: PreferenceData,
    action_features: ArrayLike,
    reference: ArrayLike | None = None,
    *,
    neighbouring: str = "label",
    epsilon: float | None = None,
    n_random: int = 20,
    rng: RNGLike = None,
) -> KLAuditReport:
    """Audit a fitted :class:`KLRLHFPolicy` at one prompt.

    ``neighbouring="label"``: every single-label flip (exact; identical records are deduplicated).
    ``"add_remove"``: every removal (exact) and additions (z0, y0) with ‖z0‖ = 2 along candidate
    directions (± eigenvectors of Σ, ± φ_a, ± (φ_a − φ_b), random), y0 ∈ {0, 1} (lower bound).
    Each neighbour re-solves the constrained MLE, warm-started at θ̂.

    Parameters
    ----------
    policy : KLRLHFPolicy
        Fitted on ``data``.
    data : PreferenceData
    action_features : array_like of shape (K, d)
    reference : array_like of shape (K,), optional
    neighbouring : {"label", "add_remove"}
    epsilon : float, optional
        Also audit δ(ε).
    n_random : int, default 20
        Random directions for additions.
    rng : int, SeedSequence, Generator or None

    Returns
    -------
    KLAuditReport
    """
    check_one_of(neighbouring, "neighbouring", ("label", "add_remove"))
    features = policy._check_query(action_features)
    eps = _check_epsilon(epsilon)
    log_pi0 = log_reference_policy(reference, features.shape[0])
    tracker = _Tracker(policy.log_probabilities(features, reference), eps)
    z, y = data.feature_differences, data.labels
    d = z.shape[1]

    def neighbour_log_policy(z_new: FloatArray, y_new: FloatArray, covariance: FloatArray) -> FloatArray:
        fit = bradley_terry_mle(z_new, y_new, policy.norm_bound, warm_start=policy.theta_,
                                warm_multiplier=policy.fit_.multiplier or None)
        gamma2 = np.einsum("kd,kd->k", features, np.linalg.solve(covariance, features.T).T)
        u = features @ fit.theta - policy.beta0 * np.sqrt(np.maximum(gamma2, 0.0))
        return kl_log_policy(log_pi0, u, policy.eta)

    for i in _unique_records(z, y):
        if neighbouring == "label":
            y_new = y.copy()
            y_new[i] = 1.0 - y_new[i]
            tracker.add(neighbour_log_policy(z, y_new, policy.covariance_), f"flip label of record {i}")
        else:
            cov = policy.covariance_ - np.outer(z[i], z[i])
            tracker.add(neighbour_log_policy(np.delete(z, i, axis=0), np.delete(y, i), cov),
                        f"remove record {i}")
    if neighbouring == "add_remove":
        gen = as_generator(rng)
        directions = _candidate_directions(policy.covariance_, features, np.zeros((0, d)), gen, n_random)
        for direction in directions:
            z0 = 2.0 * direction
            cov = policy.covariance_ + np.outer(z0, z0)
            for y0 in (0.0, 1.0):
                tracker.add(
                    neighbour_log_policy(np.vstack([z, z0]), np.append(y, y0), cov),
                    f"add (z0={np.array2string(z0, precision=4)}, y0={int(y0)})",
                )
    return tracker.report(exact_pure=neighbouring == "label")


# --------------------------------------------------------------------- study callbacks
def _mab_epsilon_hat(policy: KLMABPolicy, data: LoggedBanditData) -> float:
    return audit_mab(policy, data).epsilon_hat


def _mab_delta_hat(policy: KLMABPolicy, data: LoggedBanditData, epsilon: float) -> float:
    report = audit_mab(policy, data, epsilon=epsilon)
    return 1.0 if report.delta_hat is None else report.delta_hat


def _linear_epsilon_hat(policy: KLLinearPolicy, data: LoggedContextualData, actions: FloatArray,
                        rng: RNGLike) -> float:
    return audit_linear(policy, data, actions, rng=rng, n_random=100).epsilon_hat


def _rlhf_epsilon_hat(policy: KLRLHFPolicy, data: PreferenceData, actions: FloatArray) -> float:
    return audit_rlhf(policy, data, actions).epsilon_hat


def _mab_repeated_epsilon(policy: KLMABPolicy, data: LoggedBanditData, n_samples: int, delta: float) -> float:
    return repeated_sampling_epsilon_mab(policy, data, n_samples, delta)[0]


STUDY_AUDITORS.update({
    "mab": _mab_epsilon_hat,
    "mab-pld": _mab_repeated_epsilon,
    "mab-delta": _mab_delta_hat,
    "linear": _linear_epsilon_hat,
    "rlhf": _rlhf_epsilon_hat,
})
