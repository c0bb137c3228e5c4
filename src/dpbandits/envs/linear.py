"""Linear bandit instances: arm features a_i ∈ ℝᵈ, an unknown θ* ∈ ℝᵈ, means μ_i = a_iᵀθ*.

A linear instance *is* a multi-armed bandit whose means come from features: :class:`LinearBandit`
builds the matching bounded-reward arm family of :mod:`dpbandits.envs.mab` and delegates the
reward draws to it, so it has the same pull-consistent streams and exact sums.

The two instances of the DP-BAI paper's experiments are built by :func:`dp_bai_instance`
(Section 5, Figure 1) and :func:`dp_bai_two_arm_instance` (Appendix E.2, Figure 2).

Examples
--------
>>> from dpbandits.envs.linear import dp_bai_instance
>>> env = dp_bai_instance()
>>> env.n_arms, env.dim, env.best_arm, env.reward_bounds
(30, 2, 0, (0.0, 1.0))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError, PaperVariantWarning
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import as_generator
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array, check_int, check_one_of, check_positive_float
from dpbandits.envs.base import BanditEnvironment, check_reward_bounds
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit
from dpbandits.envs.registry import register_environment

__all__ = ["REWARD_FAMILIES", "LinearBandit", "dp_bai_instance", "dp_bai_two_arm_instance"]

REWARD_FAMILIES: tuple[str, ...] = ("uniform", "bernoulli", "beta", "clipped-gaussian")


class LinearBandit(BanditEnvironment):
    """A linear bandit: arm ``i`` has features a_i and mean reward μ_i = a_iᵀθ*.

    Parameters
    ----------
    features : array_like of float, shape (n_arms, dim)
        The (public) arm feature vectors a_i, one per row.
    theta : array_like of float, shape (dim,)
        The unknown parameter θ*.
    reward : {"uniform", "bernoulli", "beta", "clipped-gaussian"}, default "uniform"
        The reward family with mean μ_i:

        * ``"uniform"`` — Uniform[0, 2μ_i] (the DP-BAI paper's choice); needs μ_i >= 0.
        * ``"bernoulli"`` — Bernoulli(μ_i); needs μ_i ∈ [0, 1].
        * ``"beta"`` — Beta(μ_i·c, (1 − μ_i)·c) with ``concentration`` c; needs μ_i ∈ (0, 1).
        * ``"clipped-gaussian"`` — clip(N(m_i, σ²), low, high) with m_i chosen so that the
          *clipped* mean is μ_i (so the means stay linear); needs ``sigma`` and ``reward_bounds``
          and μ_i strictly inside them.
    reward_bounds : pair of float, optional
        Declared reward bound (``"uniform"``: default ``(0, 2·max μ)``; ``"clipped-gaussian"``:
        required, the clipping interval; fixed ``(0, 1)`` for ``"bernoulli"`` and ``"beta"``).
    sigma : float, optional
        Standard deviation before clipping (``"clipped-gaussian"`` only).
    concentration : float, optional
        α + β of the Beta arms (``"beta"`` only).

    Attributes
    ----------
    features : ndarray, shape (n_arms, dim)
    theta : ndarray, shape (dim,)
    dim : int
    arm_model : BanditEnvironment
        The multi-armed environment that draws the rewards.

    Notes
    -----
    ``means`` is ``features @ theta`` exactly. For ``"beta"`` and ``"clipped-gaussian"`` the arm
    distributions' means equal it up to rounding (the clipped-Gaussian locations are solved with
    Brent's method to 1e-14).
    """

    name = "linear"
    kind = "linear"
    _read_only_arrays = ("means", "features", "theta")

    def __init__(
        self,
        features: ArrayLike,
        theta: ArrayLike,
        reward: str = "uniform",
        *,
        reward_bounds: tuple[float, float] | None = None,
        sigma: float | None = None,
        concentration: float | None = None,
    ) -> None:
        feature_arr = check_array(features, "features", ndim=2)
        theta_arr = check_array(theta, "theta", ndim=1)
        if feature_arr.shape[1] != theta_arr.shape[0]:
            raise InvalidParameterError(
                f"theta must have shape ({feature_arr.shape[1]},) to match features of shape "
                f"{feature_arr.shape}; got theta.shape={theta_arr.shape}"
            )
        self.reward = check_one_of(reward, "reward", REWARD_FAMILIES)
        self.features = np.array(feature_arr, dtype=np.float64)
        self.theta = np.array(theta_arr, dtype=np.float64)
        self.features.setflags(write=False)
        self.theta.setflags(write=False)
        linear_means = self.features @ self.theta  # μ_i = a_iᵀθ*
        self._options = {"reward_bounds": reward_bounds, "sigma": sigma, "concentration": concentration}
        try:
            self.arm_model = _arm_model(linear_means, self.reward, reward_bounds, sigma, concentration)
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"linear means μ = features @ theta: {exc}") from None
        self._init_arms(linear_means, self.arm_model.reward_bounds)
        self.origin: dict[str, Any] | None = None

    @property
    def dim(self) -> int:
        """Feature dimension d."""
        return int(self.features.shape[1])

    @property
    def variances(self) -> FloatArray:
        """Exact variance of each arm's reward distribution."""
        return self.arm_model.variances

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "features": self.features.tolist(),
            "theta": self.theta.tolist(),
            "reward": self.reward,
        }
        for key, value in self._options.items():
            if value is not None:
                params[key] = list(value) if isinstance(value, tuple) else value
        return params

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly description; adds ``dim`` and, for named instances, their ``origin``."""
        description = super().describe()
        description["dim"] = self.dim
        if self.origin is not None:
            description["origin"] = dict(self.origin)
        return description

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Inverse CDF of the arm family (see :class:`LinearBandit`)."""
        return self.arm_model.rewards_from_uniforms(uniforms, arms)

    def _sample_sums(self, counts: IntArray, generator: np.random.Generator) -> FloatArray:
        return self.arm_model._sample_sums(counts, generator)


def _arm_model(
    means: FloatArray,
    reward: str,
    reward_bounds: tuple[float, float] | None,
    sigma: float | None,
    concentration: float | None,
) -> BanditEnvironment:
    """The multi-armed environment of family ``reward`` with the given means."""
    if reward != "clipped-gaussian" and sigma is not None:
        raise InvalidParameterError(f"sigma applies to reward='clipped-gaussian' only; got reward={reward!r}")
    if reward != "beta" and concentration is not None:
        raise InvalidParameterError(f"concentration applies to reward='beta' only; got reward={reward!r}")
    if reward in ("bernoulli", "beta") and reward_bounds is not None:
        bounds = check_reward_bounds(reward_bounds)
        if bounds != (0.0, 1.0):
            raise InvalidParameterError(f"reward_bounds must be (0, 1) for reward={reward!r}; got {bounds!r}")
    if reward == "uniform":
        return UniformBandit(means, reward_bounds)
    if reward == "bernoulli":
        return BernoulliBandit(means)
    if reward == "beta":
        if concentration is None:
            raise InvalidParameterError("concentration must be given (a finite float > 0) for reward='beta'")
        return BetaBandit.from_means(means, check_positive_float(concentration, "concentration"))
    if sigma is None or reward_bounds is None:
        raise InvalidParameterError(
            f"sigma and reward_bounds must be given for reward='clipped-gaussian'; got sigma={sigma!r}, "
            f"reward_bounds={reward_bounds!r}"
        )
    return ClippedGaussianBandit.from_clipped_means(
        means, check_positive_float(sigma, "sigma"), reward_bounds
    )


def dp_bai_instance(n_arms: int = 30, *, omega_seed: int = 0, omega: ArrayLike | None = None) -> LinearBandit:
    """The synthetic instance of the DP-BAI paper's Section 5 (Figure 1).

    d = 2, θ* = [0.045, 0.5]ᵀ; a_1 = [0, 1]ᵀ, a_2 = [0, 0.9]ᵀ, a_3 = [10, 0]ᵀ and a_i = [1, ω_i]ᵀ
    for i = 4..K with ω_i ~ U[0, 0.8]. Means μ_1 = 0.5, μ_2 = μ_3 = 0.45, μ_i = 0.045 + ω_i/2;
    arm 1 (index 0) is best with gap 0.05 to arms 2 and 3. Rewards Uniform[0, 2μ_i] ⊂ [0, 1], and
    the declared reward bound is [0, 1].

    Parameters
    ----------
    n_arms : int, default 30
        K >= 3 (the paper uses 30).
    omega_seed : int, default 0
        Seed of the single draw of ω (the paper does not give it; the library fixes
        ``as_generator(0).uniform(0, 0.8, K - 3)``, i.e. ``np.random.default_rng(0)``).
    omega : array_like of float, shape (K − 3,), optional
        Explicit ω values in [0, 0.8], overriding the draw.

    Returns
    -------
    LinearBandit

    References
    ----------
    Z. Chen, P. N. Karthik, Y. M. Chee, V. Y. F. Tan, "Fixed-budget differentially private best arm
    identification", ICLR 2024 (arXiv:2401.09073), Section 5.
    """
    k = check_int(n_arms, "n_arms", minimum=3)
    check_fits("n_arms", k, 8.0 * 3 * k, what="the instance's K arms (two features and a mean each)")
    if omega is None:
        seed = check_int(omega_seed, "omega_seed", minimum=0)
        omega_arr = as_generator(seed).uniform(0.0, 0.8, k - 3)  # ω_i ~ U[0, 0.8]
    else:
        omega_arr = check_array(omega, "omega", ndim=1, allow_empty=True)
        if omega_arr.shape[0] != k - 3:
            raise InvalidParameterError(
                f"omega must have shape ({k - 3},) for n_arms={k}; got {omega_arr.shape}"
            )
        if omega_arr.size and (omega_arr.min() < 0 or omega_arr.max() > 0.8):
            raise InvalidParameterError(
                f"omega must lie in [0, 0.8]; got min {omega_arr.min()!r}, max {omega_arr.max()!r}"
            )
    features = np.vstack(
        [
            [[0.0, 1.0], [0.0, 0.9], [10.0, 0.0]],
            np.column_stack([np.ones(k - 3), omega_arr]),
        ]
    )
    env = LinearBandit(features, [0.045, 0.5], reward="uniform", reward_bounds=(0.0, 1.0))
    env.origin = {"instance": "dp-bai-section5", "n_arms": k}
    if omega is None:
        env.origin["omega_seed"] = int(omega_seed)
    return env


def dp_bai_two_arm_instance(
    y: float, *, x: float = 1.0, gap: float = 0.05, variant: str = "corrected"
) -> LinearBandit:
    """The two-arm instance of the DP-BAI paper's Appendix E.2 (Figure 2).

    a_1 = [x, 0]ᵀ, a_2 = [0, y]ᵀ, rewards Uniform[0, 2μ_i].

    * ``variant="corrected"`` (default): θ* = [0.5/x, (0.5 − Δ)/y], so μ = (0.5, 0.5 − Δ) and rewards
      stay in the declared bound [0, 1].
    * ``variant="paper"``: θ* = [(0.5 + Δ)/x, 0.5/y] as printed, so μ_1 = 0.5 + Δ and arm 1's rewards
      reach 1 + 2Δ > 1: the paper's [0, 1] reward assumption (hence its privacy claim) fails. The
      declared bound is then the true support [0, 1 + 2Δ], and a :class:`PaperVariantWarning` is
      issued.

    Parameters
    ----------
    y : float
        Second feature scale, > 0 (the paper varies y > 1 with x = 1).
    x : float, default 1.0
        First feature scale, > 0.
    gap : float, default 0.05
        Δ = μ_1 − μ_2, in (0, 0.5) (``"corrected"``) or (0, 0.5] (``"paper"``).
    variant : {"corrected", "paper"}

    Returns
    -------
    LinearBandit

    References
    ----------
    Chen et al. (ICLR 2024), Appendix E.2 and errata BAI-B4.
    """
    y_val = check_positive_float(y, "y")
    x_val = check_positive_float(x, "x")
    variant = check_one_of(variant, "variant", ("corrected", "paper"))
    delta_gap = check_positive_float(gap, "gap")
    if delta_gap >= 0.5:
        raise InvalidParameterError(f"gap must lie in (0, 0.5); got {delta_gap!r}")
    features = [[x_val, 0.0], [0.0, y_val]]
    if variant == "corrected":
        env = LinearBandit(
            features, [0.5 / x_val, (0.5 - delta_gap) / y_val], reward="uniform", reward_bounds=(0.0, 1.0)
        )
    else:
        warnings.warn(
            f"dp_bai_two_arm_instance(variant='paper'): arm 1 has rewards Uniform[0, {1 + 2 * delta_gap:g}], "
            "outside the [0, 1] bound the paper's privacy analysis assumes; the declared reward bound is "
            "the true support",
            PaperVariantWarning,
            stacklevel=2,
        )
        env = LinearBandit(features, [(0.5 + delta_gap) / x_val, 0.5 / y_val], reward="uniform")
    env.origin = {
        "instance": "dp-bai-appendix-e",
        "y": y_val,
        "x": x_val,
        "gap": delta_gap,
        "variant": variant,
    }
    return env


# ---------------------------------------------------------------------- registry factories
def _make_linear(
    features: list[list[float]],
    theta: list[float],
    reward: str = "uniform",
    reward_bounds: list[float] | None = None,
    sigma: float | None = None,
    concentration: float | None = None,
) -> LinearBandit:
    bounds = None if reward_bounds is None else check_reward_bounds(reward_bounds)
    return LinearBandit(
        features, theta, reward, reward_bounds=bounds, sigma=sigma, concentration=concentration
    )


def _make_dp_bai_section5(
    n_arms: int = 30, omega_seed: int = 0, omega: list[float] | None = None
) -> LinearBandit:
    return dp_bai_instance(n_arms, omega_seed=omega_seed, omega=omega)


def _make_dp_bai_appendix_e(
    y: float, x: float = 1.0, gap: float = 0.05, variant: str = "corrected"
) -> LinearBandit:
    return dp_bai_two_arm_instance(y, x=x, gap=gap, variant=variant)


register_environment(
    "linear",
    kind="linear",
    factory=_make_linear,
    description="linear bandit μ_i = a_iᵀθ; params: features, theta, reward, reward_bounds, sigma, concentration",
)
register_environment(
    "dp-bai-section5",
    kind="linear",
    factory=_make_dp_bai_section5,
    description="DP-BAI paper §5 instance (K=30, d=2, Uniform[0, 2μ]); params: n_arms, omega_seed, omega",
)
register_environment(
    "dp-bai-appendix-e",
    kind="linear",
    factory=_make_dp_bai_appendix_e,
    description="DP-BAI paper App. E.2 two-arm instance; params: y, x, gap, variant ('corrected'|'paper')",
)
