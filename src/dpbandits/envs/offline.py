"""Logged (offline) bandit data: validated containers and synthetic generators.

Three kinds of logged data feed the KL-regularised offline policies
(``specs/spec_kl_regularization.md`` §2):

* :class:`LoggedBanditData` — multi-armed bandit records ``(a_i, r_i)`` with ``r_i ∈ [0, R]``;
* :class:`LoggedContextualData` — linear contextual records ``(φ(x_i, a_i), r_i)`` with
  ``‖φ‖ ≤ 1`` and ``r_i ∈ [0, R]``;
* :class:`PreferenceData` — RLHF comparisons ``(φ(x_i, a¹_i), φ(x_i, a²_i), y_i)`` with
  ``y_i = 1[a¹_i ≻ a²_i]``; the policies use the feature differences ``z_i = φ(a¹) − φ(a²)``.

The generators draw such data from known ground truths (Bernoulli arms, a linear model, the
Bradley–Terry model with the *standard* logistic σ(t) = 1/(1 + e^{−t}); the paper's printed
σ(exp(r¹) − exp(r²)) is a typo, spec §7 items 1–2). Each takes ``rng`` and documents the order in
which it draws.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_array,
    check_bounded_array,
    check_int,
    check_one_of,
    check_positive_float,
    check_probability_vector,
)
from dpbandits.envs.registry import register_environment

__all__ = [
    "FEATURE_NORM_TOLERANCE",
    "LoggedBanditData",
    "LoggedContextualData",
    "OfflineBanditEnvironment",
    "OfflineLinearEnvironment",
    "OfflinePreferenceEnvironment",
    "PreferenceData",
    "check_feature_norms",
    "logging_distribution",
    "read_action_features_csv",
    "read_logged_bandit_csv",
    "read_logged_contextual_csv",
    "read_preferences_csv",
    "simulate_logged_bandit",
    "simulate_logged_contextual",
    "simulate_preferences",
]

FEATURE_NORM_TOLERANCE = 1e-9
"""Slack allowed on ``‖φ‖ ≤ bound`` (spec §2.2: validate with a small tolerance)."""


def check_feature_norms(features: ArrayLike, name: str, bound: float = 1.0) -> FloatArray:
    """Return a 2-d float array whose rows have Euclidean norm ``≤ bound·(1 + 1e-9)``.

    Parameters
    ----------
    features : array_like of shape (n, d)
    name : str
        Parameter name used in error messages.
    bound : float, default 1
        The norm bound (1 for features, 2 for RLHF feature differences).

    Raises
    ------
    InvalidParameterError
        If a row is too long; the message names the row.
    """
    arr = check_array(features, name, ndim=2, allow_empty=True)
    norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    too_long = norms > bound * (1.0 + FEATURE_NORM_TOLERANCE)
    if np.any(too_long):
        row = int(np.flatnonzero(too_long)[0])
        raise InvalidParameterError(
            f"rows of {name} must have Euclidean norm <= {bound}; got {float(norms[row])!r} in row {row}"
        )
    return np.asarray(arr, dtype=np.float64)


@dataclass(frozen=True)
class LoggedBanditData:
    """Logged multi-armed bandit data ``D = {(a_i, r_i)}``.

    Parameters
    ----------
    actions : array_like of int, shape (n,)
        Arm pulled in each record, in ``[0, n_arms)``.
    rewards : array_like of float, shape (n,)
        Observed rewards, in ``[0, reward_bound]``.
    n_arms : int
        K >= 1.
    reward_bound : float, default 1
        R > 0.
    clip : bool, default False
        Clip rewards into ``[0, R]`` instead of raising.
    """

    actions: IntArray
    rewards: FloatArray
    n_arms: int
    reward_bound: float = 1.0

    def __init__(
        self,
        actions: ArrayLike,
        rewards: ArrayLike,
        n_arms: int,
        reward_bound: float = 1.0,
        *,
        clip: bool = False,
    ) -> None:
        k = check_int(n_arms, "n_arms", minimum=1)
        bound = check_positive_float(reward_bound, "reward_bound")
        acts = check_array(actions, "actions", ndim=1, dtype=None, allow_empty=True)
        if acts.size and acts.dtype.kind not in "iu":
            if acts.dtype.kind == "f" and np.all(np.isfinite(acts)) and np.all(acts == np.round(acts)):
                acts = acts.astype(np.int64)
            else:
                raise InvalidParameterError(f"actions must be integers; got dtype {acts.dtype}")
        acts = acts.astype(np.int64, copy=False)
        if acts.size and (acts.min() < 0 or acts.max() >= k):
            bad = int(np.flatnonzero((acts < 0) | (acts >= k))[0])
            raise InvalidParameterError(
                f"actions must lie in [0, {k}); got {int(acts[bad])} in record {bad}"
            )
        rew = check_bounded_array(rewards, "rewards", 0.0, bound, clip=clip, ndim=1, allow_empty=True)
        if rew.shape != acts.shape:
            raise InvalidParameterError(
                f"rewards must have the shape of actions {acts.shape}; got {rew.shape}"
            )
        object.__setattr__(self, "actions", acts)
        object.__setattr__(self, "rewards", rew)
        object.__setattr__(self, "n_arms", k)
        object.__setattr__(self, "reward_bound", bound)

    @property
    def n_records(self) -> int:
        """Number of logged records n."""
        return int(self.actions.shape[0])

    def counts(self) -> IntArray:
        """N(a; D), the number of records of each arm."""
        return np.bincount(self.actions, minlength=self.n_arms).astype(np.int64)

    def reward_sums(self) -> FloatArray:
        """S(a; D), the sum of the rewards of each arm."""
        return np.bincount(self.actions, weights=self.rewards, minlength=self.n_arms).astype(np.float64)


@dataclass(frozen=True)
class LoggedContextualData:
    """Logged linear contextual bandit data ``D = {(φ(x_i, a_i), r_i)}``.

    Parameters
    ----------
    features : array_like, shape (n, d)
        φ(x_i, a_i), rows of Euclidean norm ≤ 1.
    rewards : array_like, shape (n,)
        Rewards in ``[0, reward_bound]``.
    reward_bound : float, default 1
        R > 0.
    clip : bool, default False
        Clip rewards into ``[0, R]`` instead of raising.
    """

    features: FloatArray
    rewards: FloatArray
    reward_bound: float = 1.0

    def __init__(
        self, features: ArrayLike, rewards: ArrayLike, reward_bound: float = 1.0, *, clip: bool = False
    ) -> None:
        bound = check_positive_float(reward_bound, "reward_bound")
        phi = check_feature_norms(features, "features")
        rew = check_bounded_array(rewards, "rewards", 0.0, bound, clip=clip, ndim=1, allow_empty=True)
        if rew.shape[0] != phi.shape[0]:
            raise InvalidParameterError(
                f"rewards must have one entry per row of features ({phi.shape[0]}); got {rew.shape[0]}"
            )
        object.__setattr__(self, "features", phi)
        object.__setattr__(self, "rewards", rew)
        object.__setattr__(self, "reward_bound", bound)

    @property
    def n_records(self) -> int:
        """Number of logged records n."""
        return int(self.features.shape[0])

    @property
    def dimension(self) -> int:
        """Feature dimension d."""
        return int(self.features.shape[1])


@dataclass(frozen=True)
class PreferenceData:
    """Pairwise preference data ``D = {(z_i, y_i)}`` with ``z_i = φ(x_i, a¹_i) − φ(x_i, a²_i)``.

    Parameters
    ----------
    feature_differences : array_like, shape (n, d)
        z_i, rows of Euclidean norm ≤ 2 (each φ has norm ≤ 1).
    labels : array_like of {0, 1}, shape (n,)
        y_i = 1 when the first response is preferred.
    """

    feature_differences: FloatArray
    labels: FloatArray

    def __init__(self, feature_differences: ArrayLike, labels: ArrayLike) -> None:
        z = check_feature_norms(feature_differences, "feature_differences", bound=2.0)
        y = check_array(labels, "labels", ndim=1, allow_empty=True)
        not_binary = (y != 0.0) & (y != 1.0)
        if np.any(not_binary):
            row = int(np.flatnonzero(not_binary)[0])
            raise InvalidParameterError(f"labels must be 0 or 1; got {float(y[row])!r} in row {row}")
        if y.shape[0] != z.shape[0]:
            raise InvalidParameterError(
                f"labels must have one entry per row of feature_differences ({z.shape[0]}); got {y.shape[0]}"
            )
        object.__setattr__(self, "feature_differences", z)
        object.__setattr__(self, "labels", y)

    @classmethod
    def from_pairs(cls, first: ArrayLike, second: ArrayLike, labels: ArrayLike) -> PreferenceData:
        """Build from the features of both responses (rows of norm ≤ 1 each)."""
        phi1 = check_feature_norms(first, "first")
        phi2 = check_feature_norms(second, "second")
        if phi1.shape != phi2.shape:
            raise InvalidParameterError(f"second must have the shape of first {phi1.shape}; got {phi2.shape}")
        return cls(phi1 - phi2, labels)

    @property
    def n_records(self) -> int:
        """Number of comparisons n."""
        return int(self.labels.shape[0])

    @property
    def dimension(self) -> int:
        """Feature dimension d."""
        return int(self.feature_differences.shape[1])


def logging_distribution(n_arms: int, logging: str | ArrayLike = "balanced") -> FloatArray:
    """Return the logging policy's arm probabilities.

    Parameters
    ----------
    n_arms : int
    logging : {"balanced", "zipf"} or array_like
        ``"balanced"``: uniform; ``"zipf"``: p(a) ∝ 1/(a + 1); or explicit probabilities (renormalised
        when they sum to 1 within 1e-3, as rounded study files do).
    """
    k = check_int(n_arms, "n_arms", minimum=1)
    if isinstance(logging, str):
        check_one_of(logging, "logging", ("balanced", "zipf"))
        weights = np.ones(k) if logging == "balanced" else 1.0 / np.arange(1, k + 1)
        return np.asarray(weights / weights.sum(), dtype=np.float64)
    p = check_probability_vector(logging, "logging", atol=1e-3)
    p = p / p.sum()
    if p.shape[0] != k:
        raise InvalidParameterError(f"logging must have n_arms={k} entries; got {p.shape[0]}")
    return p


def simulate_logged_bandit(
    means: ArrayLike,
    n_records: int,
    *,
    logging: str | ArrayLike = "balanced",
    min_pulls: int = 0,
    rng: RNGLike = None,
) -> LoggedBanditData:
    """Draw logged Bernoulli-bandit data.

    Parameters
    ----------
    means : array_like, shape (K,)
        μ(a) ∈ [0, 1]; rewards are Bernoulli(μ(a)) and R = 1.
    n_records : int
        n >= 0.
    logging : {"balanced", "zipf"} or array_like, default "balanced"
        ``"balanced"`` gives exactly ``n // K`` pulls per arm (the remainder to the first arms);
        otherwise arms are drawn i.i.d. from the logging probabilities.
    min_pulls : int, default 0
        Force each arm to be pulled at least this often (spec E1 uses 2 with Zipf logging); the forced
        pulls come first and count toward ``n_records``.
    rng : int, SeedSequence, Generator or None
        Draw order: the arms, then the rewards.

    Returns
    -------
    LoggedBanditData
    """
    mu = check_bounded_array(means, "means", 0.0, 1.0, ndim=1)
    k = mu.shape[0]
    n = check_int(n_records, "n_records", minimum=0)
    forced = check_int(min_pulls, "min_pulls", minimum=0)
    if forced * k > n:
        raise InvalidParameterError(f"n_records must be >= min_pulls * n_arms = {forced * k}; got {n}")
    gen = as_generator(rng)
    probs = logging_distribution(k, logging)
    if isinstance(logging, str) and logging == "balanced":
        actions = np.arange(n, dtype=np.int64) % k
    else:
        drawn = gen.choice(k, size=n - forced * k, p=probs)
        actions = np.concatenate([np.repeat(np.arange(k, dtype=np.int64), forced), drawn.astype(np.int64)])
    rewards = (gen.random(n) < mu[actions]).astype(np.float64)
    return LoggedBanditData(actions, rewards, k, 1.0)


def _unit_sphere(gen: np.random.Generator, n: int, d: int) -> FloatArray:
    x = gen.standard_normal((n, d))
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float64)


def simulate_logged_contextual(
    theta: ArrayLike, n_records: int, *, rng: RNGLike = None
) -> LoggedContextualData:
    """Draw linear contextual data: φ uniform on the unit sphere, r ~ Bernoulli((1 + θ*ᵀφ)/2).

    Parameters
    ----------
    theta : array_like, shape (d,)
        θ* with ‖θ*‖ ≤ 1, so the success probability lies in [0, 1] and R = 1 (spec E2).
    n_records : int
    rng : int, SeedSequence, Generator or None
        Draw order: the features, then the rewards.
    """
    th = check_array(theta, "theta", ndim=1)
    if float(np.linalg.norm(th)) > 1.0 + FEATURE_NORM_TOLERANCE:
        raise InvalidParameterError(f"theta must have Euclidean norm <= 1; got {float(np.linalg.norm(th))!r}")
    n = check_int(n_records, "n_records", minimum=0)
    gen = as_generator(rng)
    phi = _unit_sphere(gen, n, th.shape[0])
    p = np.clip(0.5 * (1.0 + phi @ th), 0.0, 1.0)
    rewards = (gen.random(n) < p).astype(np.float64)
    return LoggedContextualData(phi, rewards, 1.0)


def simulate_preferences(
    theta: ArrayLike,
    n_records: int,
    *,
    n_prompts: int = 200,
    responses_per_prompt: int = 10,
    rng: RNGLike = None,
) -> PreferenceData:
    """Draw Bradley–Terry preference data (spec E3).

    Each prompt has ``responses_per_prompt`` responses with features uniform on the unit sphere;
    each comparison picks a prompt and two distinct responses uniformly, and
    ``P[y = 1] = σ(θ*ᵀ(φ¹ − φ²))`` with the standard logistic σ.

    Parameters
    ----------
    theta : array_like, shape (d,)
        θ*.
    n_records : int
    n_prompts : int, default 200
    responses_per_prompt : int, default 10
    rng : int, SeedSequence, Generator or None
        Draw order: the response features, the prompts, the pairs, the labels.
    """
    th = check_array(theta, "theta", ndim=1)
    n = check_int(n_records, "n_records", minimum=0)
    m = check_int(n_prompts, "n_prompts", minimum=1)
    k = check_int(responses_per_prompt, "responses_per_prompt", minimum=2)
    gen = as_generator(rng)
    d = th.shape[0]
    responses = _unit_sphere(gen, m * k, d).reshape(m, k, d)
    prompts = gen.integers(0, m, size=n)
    first = gen.integers(0, k, size=n)
    second = (first + gen.integers(1, k, size=n)) % k  # uniform over the other k − 1 responses
    z = responses[prompts, first] - responses[prompts, second]
    # P[y = 1] = σ(θ*ᵀ z) = 1 / (1 + e^{−θ*ᵀz})
    p = 1.0 / (1.0 + np.exp(-(z @ th)))
    labels = (gen.random(n) < p).astype(np.float64)
    return PreferenceData(z, labels)



# ---------------------------------------------------------------------------------------- CSV
# Documented formats (a header line, then one record per line; extra columns are an error):
#   MAB:          action,reward                     action an int in [0, K), reward in [0, R]
#   linear:       x0,...,x{d-1},reward              ‖x‖ <= 1, reward in [0, R]
#   RLHF:         z0,...,z{d-1},label               z = φ(x, a¹) − φ(x, a²), ‖z‖ <= 2, label 0 or 1
#   actions:      x0,...,x{d-1}                     candidate features φ(x, a) at one context, ‖x‖ <= 1


def _read_numeric_csv(path: str | Path, expected: list[str] | None, prefix: str | None,
                      tail: list[str]) -> tuple[list[str], FloatArray]:
    """Read a numeric CSV; columns are ``expected`` or ``prefix0..prefix{d-1}`` followed by ``tail``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFormatError(f"{file}: cannot read the file ({exc.strerror})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or not rows[0]:
        raise DataFormatError(f"{file}: line 1: missing header (expected columns {expected or prefix})")
    header = [h.strip() for h in rows[0]]
    if expected is not None:
        if header != expected:
            raise DataFormatError(f"{file}: line 1: header must be {','.join(expected)}; got {','.join(header)}")
    else:
        n_lead = len(header) - len(tail)
        lead = [f"{prefix}{j}" for j in range(max(n_lead, 0))]
        if n_lead < 1 or header != lead + tail:
            want = ",".join([f"{prefix}0", "...", f"{prefix}{{d-1}}", *tail])
            raise DataFormatError(f"{file}: line 1: header must be {want}; got {','.join(header)}")
    while len(rows) > 1 and not any(cell.strip() for cell in rows[-1]):
        rows.pop()  # trailing blank lines are not records (a blank line inside the data still is an error)
    values = np.empty((len(rows) - 1, len(header)))
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DataFormatError(f"{file}: line {line}: expected {len(header)} columns; got {len(row)}")
        for col, (name, cell) in enumerate(zip(header, row, strict=True)):
            try:
                values[line - 2, col] = float(cell)
            except ValueError:
                raise DataFormatError(
                    f"{file}: line {line}, column {name!r}: cannot parse {cell!r} as a number"
                ) from None
            if not np.isfinite(values[line - 2, col]):
                raise DataFormatError(f"{file}: line {line}, column {name!r}: value must be finite; got {cell!r}")
    return header, values


def _check_column(file: str | Path, header: list[str], values: FloatArray, name: str, ok: np.ndarray,
                  constraint: str) -> None:
    bad = np.flatnonzero(~ok)
    if bad.size:
        row = int(bad[0])
        raise DataFormatError(
            f"{file}: line {row + 2}, column {name!r}: {constraint}; got {float(values[row, header.index(name)])!r}"
        )


def _check_norms(file: str | Path, header: list[str], block: FloatArray, bound: float, prefix: str) -> None:
    norms = np.linalg.norm(block, axis=1)
    ok = norms <= bound * (1.0 + FEATURE_NORM_TOLERANCE)
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise DataFormatError(
            f"{file}: line {int(bad[0]) + 2}, columns {prefix}0..{prefix}{block.shape[1] - 1}: "
            f"Euclidean norm must be <= {bound}; got {float(norms[bad[0]])!r}"
        )


def read_logged_bandit_csv(path: str | Path, *, reward_bound: float = 1.0,
                           n_arms: int | None = None) -> LoggedBanditData:
    """Read MAB logged data from a CSV with header ``action,reward``.

    Parameters
    ----------
    path : str or Path
    reward_bound : float, default 1
        R; rewards outside [0, R] are an error naming the line and column.
    n_arms : int, optional
        K; by default ``max(action) + 1``.

    Raises
    ------
    DataFormatError
        On a malformed file; the message names the line and the column.
    """
    bound = check_positive_float(reward_bound, "reward_bound")
    header, values = _read_numeric_csv(path, ["action", "reward"], None, [])
    actions = values[:, 0]
    if n_arms is not None:
        k = check_int(n_arms, "n_arms", minimum=1)
    else:
        k = int(actions.max()) + 1 if actions.size else 1
    _check_column(path, header, values, "action", (actions == np.round(actions)) & (actions >= 0) & (actions < k),
                  f"must be an integer arm in [0, {k})")
    _check_column(path, header, values, "reward", (values[:, 1] >= 0) & (values[:, 1] <= bound),
                  f"must lie in [0, {bound}]")
    return LoggedBanditData(actions.astype(np.int64), values[:, 1], k, bound)


def read_logged_contextual_csv(path: str | Path, *, reward_bound: float = 1.0) -> LoggedContextualData:
    """Read linear contextual logged data from a CSV with header ``x0,...,x{d-1},reward``."""
    bound = check_positive_float(reward_bound, "reward_bound")
    header, values = _read_numeric_csv(path, None, "x", ["reward"])
    _check_norms(path, header, values[:, :-1], 1.0, "x")
    _check_column(path, header, values, "reward", (values[:, -1] >= 0) & (values[:, -1] <= bound),
                  f"must lie in [0, {bound}]")
    return LoggedContextualData(values[:, :-1], values[:, -1], bound)


def read_preferences_csv(path: str | Path) -> PreferenceData:
    """Read RLHF preference data from a CSV with header ``z0,...,z{d-1},label``."""
    header, values = _read_numeric_csv(path, None, "z", ["label"])
    _check_norms(path, header, values[:, :-1], 2.0, "z")
    _check_column(path, header, values, "label", np.isin(values[:, -1], (0.0, 1.0)), "must be 0 or 1")
    return PreferenceData(values[:, :-1], values[:, -1])


def read_action_features_csv(path: str | Path) -> FloatArray:
    """Read candidate action features φ(x, a) at one context from a CSV with header ``x0,...,x{d-1}``."""
    header, values = _read_numeric_csv(path, None, "x", [])
    if values.shape[0] == 0:
        raise DataFormatError(f"{path}: line 2: at least one action is needed")
    _check_norms(path, header, values, 1.0, "x")
    return values




# ----------------------------------------------------------------------- study environments
@dataclass(frozen=True)
class OfflineBanditEnvironment:
    """Data-generating process of logged Bernoulli-bandit data (studies E1, E4–E6).

    Parameters
    ----------
    means : sequence of float
        μ(a) ∈ [0, 1].
    n_records : int
        n per dataset.
    logging : {"balanced", "zipf"}, default "balanced"
    min_pulls : int, default 0
        Forced pulls per arm (E1 uses 2 with Zipf logging).
    """

    means: tuple[float, ...]
    n_records: int
    logging: str | tuple[float, ...] = "balanced"
    min_pulls: int = 0

    def draw(self, rng: RNGLike) -> LoggedBanditData:
        """One logged dataset (arms, then rewards, from ``rng``)."""
        logging = self.logging if isinstance(self.logging, str) else np.asarray(self.logging)
        return simulate_logged_bandit(np.asarray(self.means), self.n_records, logging=logging,
                                      min_pulls=self.min_pulls, rng=rng)


@dataclass(frozen=True)
class OfflineLinearEnvironment:
    """Logged linear contextual data plus one query context with ``n_actions`` unit features (E2).

    θ* is drawn uniformly on the sphere of radius ``theta_norm`` (<= 1) per dataset.
    """

    dimension: int
    n_records: int
    n_actions: int = 20
    theta_norm: float = 1.0

    def draw(self, rng: RNGLike) -> tuple[LoggedContextualData, FloatArray, FloatArray]:
        """Return (data, θ*, query features) drawn in that order from ``rng``."""
        gen = as_generator(rng)
        theta = self.theta_norm * _unit_sphere(gen, 1, self.dimension)[0]
        data = simulate_logged_contextual(theta, self.n_records, rng=gen)
        return data, theta, _unit_sphere(gen, self.n_actions, self.dimension)


@dataclass(frozen=True)
class OfflinePreferenceEnvironment:
    """Bradley–Terry preference data plus one query prompt with ``n_actions`` responses (E3).

    θ* is drawn uniformly on the sphere of radius ``theta_norm`` per dataset.
    """

    dimension: int
    n_records: int
    theta_norm: float = 0.05
    n_prompts: int = 200
    responses_per_prompt: int = 10
    n_actions: int = 10

    def draw(self, rng: RNGLike) -> tuple[PreferenceData, FloatArray, FloatArray]:
        """Return (data, θ*, query features) drawn in that order from ``rng``."""
        gen = as_generator(rng)
        theta = self.theta_norm * _unit_sphere(gen, 1, self.dimension)[0]
        data = simulate_preferences(theta, self.n_records, n_prompts=self.n_prompts,
                                    responses_per_prompt=self.responses_per_prompt, rng=gen)
        return data, theta, _unit_sphere(gen, self.n_actions, self.dimension)


def _make_offline_bandit(means: ArrayLike, n_records: int, logging: str | ArrayLike = "balanced",
                         min_pulls: int = 0) -> OfflineBanditEnvironment:
    mu = check_bounded_array(means, "means", 0.0, 1.0, ndim=1)
    probs = logging_distribution(mu.size, logging)
    kept: str | tuple[float, ...] = logging if isinstance(logging, str) else tuple(float(p) for p in probs)
    n = check_int(n_records, "n_records", minimum=1)
    forced = check_int(min_pulls, "min_pulls", minimum=0)
    if forced * mu.size > n:
        raise InvalidParameterError(f"n_records must be >= min_pulls * n_arms = {forced * mu.size}; got {n}")
    return OfflineBanditEnvironment(tuple(float(m) for m in mu), n, kept, forced)


def _make_offline_linear(dimension: int, n_records: int, n_actions: int = 20,
                         theta_norm: float = 1.0) -> OfflineLinearEnvironment:
    return OfflineLinearEnvironment(
        check_int(dimension, "dimension", minimum=1), check_int(n_records, "n_records", minimum=1),
        check_int(n_actions, "n_actions", minimum=1), float(check_bounded_array(theta_norm, "theta_norm", 0.0, 1.0)),
    )


def _make_offline_preferences(dimension: int, n_records: int, theta_norm: float = 0.05, n_prompts: int = 200,
                              responses_per_prompt: int = 10, n_actions: int = 10) -> OfflinePreferenceEnvironment:
    return OfflinePreferenceEnvironment(
        check_int(dimension, "dimension", minimum=1), check_int(n_records, "n_records", minimum=1),
        check_positive_float(theta_norm, "theta_norm"), check_int(n_prompts, "n_prompts", minimum=1),
        check_int(responses_per_prompt, "responses_per_prompt", minimum=2),
        check_int(n_actions, "n_actions", minimum=1),
    )


register_environment("offline-bandit", kind="offline", factory=_make_offline_bandit,
                     description="Logged Bernoulli-bandit data; params: means, n_records, logging, min_pulls")
register_environment("offline-linear", kind="offline", factory=_make_offline_linear,
                     description="Logged linear contextual data + one query context; params: dimension, n_records")
register_environment("offline-preferences", kind="offline", factory=_make_offline_preferences,
                     description="Bradley-Terry preferences + one query prompt; params: dimension, n_records, "
                                 "theta_norm")

# The bundled-dataset environment lives in envs/datasets.py (which imports this module); importing it
# here registers it whenever the built-in environments are loaded.
from dpbandits.envs import datasets as _datasets  # noqa: E402, F401
