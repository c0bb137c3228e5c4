"""Multi-armed bandits with bounded rewards: Bernoulli, Uniform[0, 2μ], Beta and clipped Gaussian arms.

Every class derives from :class:`dpbandits.envs.base.BanditEnvironment` and so offers
pull-consistent per-(trial, arm) streams (``env.streams(rng, n_trials)``) and fast exact sums
(``env.sample_sums(counts, rng)``). Each is registered in :mod:`dpbandits.envs.registry` under a
kebab-case name (``bernoulli``, ``uniform``, ``beta``, ``clipped-gaussian``).

Examples
--------
>>> import numpy as np
>>> from dpbandits.envs.mab import UniformBandit
>>> env = UniformBandit([0.5, 0.45, 0.3])
>>> env.best_arm, env.reward_bounds
(0, (0.0, 1.0))
>>> sums = env.sample_sums(np.full((4, 3), 10), rng=0)
>>> sums.shape
(4, 3)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_array
from dpbandits.envs.base import BanditEnvironment, check_entries, check_reward_bounds, segment_sums
from dpbandits.envs.registry import register_environment

__all__ = ["BernoulliBandit", "BetaBandit", "ClippedGaussianBandit", "UniformBandit"]


def _per_arm(value: ArrayLike, name: str, n_arms: int) -> FloatArray:
    """Broadcast a scalar or a per-arm array of finite floats to shape (n_arms,)."""
    arr = check_array(value, name, ndim=(0, 1))
    if arr.ndim == 1 and arr.shape[0] != n_arms:
        raise InvalidParameterError(
            f"{name} must be a float or have shape ({n_arms},); got {name}.shape={arr.shape}"
        )
    return np.array(np.broadcast_to(arr, (n_arms,)), dtype=np.float64)


def _check_positive_entries(arr: FloatArray, name: str) -> None:
    check_entries(arr, arr > 0, f"{name} must be > 0 entrywise")


class BernoulliBandit(BanditEnvironment):
    """Arms with Bernoulli(μ_a) rewards in {0, 1}.

    Parameters
    ----------
    means : array_like of float, shape (n_arms,)
        Success probabilities μ_a ∈ [0, 1].

    Notes
    -----
    Streams: reward = 1 if u < μ_a else 0. Exact sums: Binomial(n, μ_a).
    """

    name = "bernoulli"

    def __init__(self, means: ArrayLike) -> None:
        self._init_arms(means, (0.0, 1.0))

    @property
    def variances(self) -> FloatArray:
        """Variance μ(1 − μ) of each arm."""
        return np.asarray(self.means * (1.0 - self.means), dtype=np.float64)

    def _params(self) -> dict[str, Any]:
        return {"means": self.means.tolist()}

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Reward 1 if ``u < μ_a``, else 0."""
        return (uniforms < self.means[arms]).astype(np.float64)

    def _sample_sums(self, counts: IntArray, generator: np.random.Generator) -> FloatArray:
        # Σ of n Bernoulli(μ) rewards ~ Binomial(n, μ): exact, one draw per (trial, arm).
        return generator.binomial(counts, self.means).astype(np.float64)


class UniformBandit(BanditEnvironment):
    """Arms with Uniform[0, 2μ_a] rewards, as in the DP-BAI paper's experiments.

    Parameters
    ----------
    means : array_like of float, shape (n_arms,)
        Means μ_a >= 0.
    reward_bounds : pair of float, optional
        Declared reward bound; must contain every support [0, 2μ_a]. Default ``(0, 2·max μ)``
        (``(0, 1)`` if every mean is 0).

    Notes
    -----
    Streams: reward = 2μ_a·u. Exact sums: one draw of every Uniform(0, 1) and one segmented sum,
    scaled by 2μ_a.

    References
    ----------
    Z. Chen, P. N. Karthik, Y. M. Chee, V. Y. F. Tan, "Fixed-budget differentially private best arm
    identification", ICLR 2024 (arXiv:2401.09073), Section 5: rewards ν_i = Uniform[0, 2μ_i].
    """

    name = "uniform"

    def __init__(self, means: ArrayLike, reward_bounds: tuple[float, float] | None = None) -> None:
        mean_arr = check_array(means, "means", ndim=1)
        check_entries(mean_arr, mean_arr >= 0, "means must be >= 0 for Uniform[0, 2μ] arms")
        top = 2.0 * float(mean_arr.max())
        if reward_bounds is None:
            bounds = (0.0, top if top > 0 else 1.0)
        else:
            bounds = check_reward_bounds(reward_bounds)
            if bounds[0] > 0 or bounds[1] < top:
                raise InvalidParameterError(
                    f"reward_bounds must contain every support [0, 2μ_a] = [0, {top!r}] at most; "
                    f"got {bounds!r}"
                )
        self._declared_bounds = reward_bounds is not None
        self._init_arms(mean_arr, bounds)
        self._widths = 2.0 * self.means  # support width 2μ_a

    @property
    def variances(self) -> FloatArray:
        """Variance (2μ)²/12 = μ²/3 of each arm."""
        return np.asarray(self.means**2 / 3.0, dtype=np.float64)

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"means": self.means.tolist()}
        if self._declared_bounds:
            params["reward_bounds"] = list(self.reward_bounds)
        return params

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Reward 2μ_a·u."""
        return np.asarray(self._widths[arms] * uniforms, dtype=np.float64)

    def _sample_sums(self, counts: IntArray, generator: np.random.Generator) -> FloatArray:
        # Σ_j 2μ·U_j = 2μ·Σ_j U_j: one draw of all uniforms, one segmented sum, one scaling.
        unit_sums = segment_sums(generator.random(int(counts.sum())), counts)
        unit_sums *= self._widths
        return unit_sums


class BetaBandit(BanditEnvironment):
    """Arms with Beta(α_a, β_a) rewards in [0, 1].

    Parameters
    ----------
    alphas, betas : array_like of float, shape (n_arms,)
        Shape parameters, > 0.

    See Also
    --------
    BetaBandit.from_means : parametrise by means and a concentration α + β.

    Notes
    -----
    Streams: reward = I⁻¹_u(α_a, β_a) (``scipy.special.betaincinv``). Exact sums: one Beta draw per arm
    (scalar parameters) and one segmented sum.
    """

    name = "beta"

    def __init__(self, alphas: ArrayLike, betas: ArrayLike) -> None:
        alpha_arr = check_array(alphas, "alphas", ndim=1)
        beta_arr = check_array(betas, "betas", ndim=1)
        if alpha_arr.shape != beta_arr.shape:
            raise InvalidParameterError(
                f"alphas and betas must have the same shape; got {alpha_arr.shape} and {beta_arr.shape}"
            )
        _check_positive_entries(alpha_arr, "alphas")
        _check_positive_entries(beta_arr, "betas")
        self.alphas = np.array(alpha_arr, dtype=np.float64)
        self.betas = np.array(beta_arr, dtype=np.float64)
        self._init_arms(self.alphas / (self.alphas + self.betas), (0.0, 1.0))  # μ = α/(α+β)

    @classmethod
    def from_means(cls, means: ArrayLike, concentration: float | ArrayLike) -> BetaBandit:
        """Beta arms with means μ_a ∈ (0, 1) and concentration c = α + β > 0: α = μc, β = (1 − μ)c."""
        mean_arr = check_array(means, "means", ndim=1)
        check_entries(mean_arr, (mean_arr > 0) & (mean_arr < 1), "means must lie in (0, 1) for Beta arms")
        conc = _per_arm(concentration, "concentration", mean_arr.shape[0])
        _check_positive_entries(conc, "concentration")
        return cls(mean_arr * conc, (1.0 - mean_arr) * conc)

    @property
    def variances(self) -> FloatArray:
        """Variance αβ / ((α + β)²(α + β + 1)) of each arm."""
        total = self.alphas + self.betas
        return np.asarray(self.alphas * self.betas / (total**2 * (total + 1.0)), dtype=np.float64)

    def _params(self) -> dict[str, Any]:
        return {"alphas": self.alphas.tolist(), "betas": self.betas.tolist()}

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Reward I⁻¹_u(α_a, β_a), the Beta inverse CDF."""
        from scipy import special  # lazily: scipy is heavy to import

        return np.asarray(special.betaincinv(self.alphas[arms], self.betas[arms], uniforms), dtype=np.float64)

    def _fill_arm(self, arm: int, out: FloatArray, generator: np.random.Generator) -> None:
        out[:] = generator.beta(self.alphas[arm], self.betas[arm], size=out.shape[0])


def _clipped_normal_moments(
    location: FloatArray, sigma: FloatArray, low: float, high: float
) -> tuple[FloatArray, FloatArray]:
    """Mean and variance of clip(X, low, high) for X ~ N(location, sigma²), exactly."""
    a = (low - location) / sigma  # α = (low − m)/σ
    b = (high - location) / sigma  # β = (high − m)/σ
    from scipy import special  # lazily: scipy is heavy to import

    cdf_a, cdf_b = special.ndtr(a), special.ndtr(b)
    pdf_a = np.exp(-0.5 * a**2) / np.sqrt(2.0 * np.pi)
    pdf_b = np.exp(-0.5 * b**2) / np.sqrt(2.0 * np.pi)
    inside = cdf_b - cdf_a
    # E[Y] = low·Φ(α) + high·(1 − Φ(β)) + m·(Φ(β) − Φ(α)) + σ·(φ(α) − φ(β))
    mean = low * cdf_a + high * (1.0 - cdf_b) + location * inside + sigma * (pdf_a - pdf_b)
    # E[Y²] = low²Φ(α) + high²(1 − Φ(β)) + (m² + σ²)(Φ(β) − Φ(α)) + 2mσ(φ(α) − φ(β)) + σ²(αφ(α) − βφ(β))
    second = (
        low**2 * cdf_a
        + high**2 * (1.0 - cdf_b)
        + (location**2 + sigma**2) * inside
        + 2.0 * location * sigma * (pdf_a - pdf_b)
        + sigma**2 * (a * pdf_a - b * pdf_b)
    )
    return np.asarray(mean, dtype=np.float64), np.asarray(np.maximum(second - mean**2, 0.0), dtype=np.float64)


class ClippedGaussianBandit(BanditEnvironment):
    """Arms with rewards clip(X_a, low, high), X_a ~ N(m_a, σ_a²).

    Parameters
    ----------
    means : array_like of float, shape (n_arms,)
        Means m_a of the Gaussians **before** clipping (kept as ``locations``). The arms'
        expected rewards ``means`` are the exact clipped means, which differ from m_a when
        clipping is not symmetric around m_a. Use :meth:`from_clipped_means` to fix the clipped
        means instead.
    sigma : float or array_like of float
        Standard deviations σ_a > 0 before clipping.
    bounds : pair of float
        The clipping interval, which is also the declared reward bound.

    Notes
    -----
    Streams: reward = clip(m_a + σ_a·Φ⁻¹(u), low, high). Exact sums: one Gaussian draw per arm
    (in place), clipping, one segmented sum.
    """

    name = "clipped-gaussian"

    def __init__(self, means: ArrayLike, sigma: float | ArrayLike, bounds: tuple[float, float]) -> None:
        locations = check_array(means, "means", ndim=1)
        sigmas = _per_arm(sigma, "sigma", locations.shape[0])
        _check_positive_entries(sigmas, "sigma")
        low, high = check_reward_bounds(bounds, "bounds")
        self.locations = np.array(locations, dtype=np.float64)
        self.sigmas = sigmas
        clipped_means, self._variances = _clipped_normal_moments(self.locations, self.sigmas, low, high)
        self._init_arms(np.clip(clipped_means, low, high), (low, high))

    @classmethod
    def from_clipped_means(
        cls, means: ArrayLike, sigma: float | ArrayLike, bounds: tuple[float, float]
    ) -> ClippedGaussianBandit:
        """Clipped Gaussian arms whose clipped means equal ``means`` (each strictly inside ``bounds``).

        The clipped mean is strictly increasing in the location m, so each m_a is the unique root
        of E[clip(X, low, high)] − μ_a, found by Brent's method (``scipy.optimize.brentq``).
        """
        from scipy import optimize  # lazily: scipy is heavy to import

        targets = check_array(means, "means", ndim=1)
        low, high = check_reward_bounds(bounds, "bounds")
        check_entries(
            targets,
            (targets > low) & (targets < high),
            f"means must lie strictly inside bounds ({low}, {high})",
        )
        sigmas = _per_arm(sigma, "sigma", targets.shape[0])
        _check_positive_entries(sigmas, "sigma")
        locations = np.empty_like(targets)
        for arm, (target, scale) in enumerate(zip(targets, sigmas, strict=True)):

            def excess(location: float, target: float = float(target), scale: float = float(scale)) -> float:
                mean, _ = _clipped_normal_moments(np.array([location]), np.array([scale]), low, high)
                return float(mean[0]) - target

            width = 1.0
            while excess(low - width * scale) > 0 or excess(high + width * scale) < 0:
                width *= 2.0
            locations[arm] = optimize.brentq(
                excess, low - width * scale, high + width * scale, xtol=1e-14, rtol=1e-15
            )
        return cls(locations, sigmas, (low, high))

    @property
    def variances(self) -> FloatArray:
        """Exact variance of each clipped arm."""
        return self._variances

    def _params(self) -> dict[str, Any]:
        return {
            "means": self.locations.tolist(),
            "sigma": self.sigmas.tolist(),
            "bounds": list(self.reward_bounds),
        }

    def rewards_from_uniforms(self, uniforms: FloatArray, arms: IntArray) -> FloatArray:
        """Reward clip(m_a + σ_a·Φ⁻¹(u), low, high)."""
        low, high = self.reward_bounds
        from scipy import special  # lazily: scipy is heavy to import

        gaussian = self.locations[arms] + self.sigmas[arms] * special.ndtri(uniforms)
        return np.asarray(np.clip(gaussian, low, high), dtype=np.float64)

    def _fill_arm(self, arm: int, out: FloatArray, generator: np.random.Generator) -> None:
        low, high = self.reward_bounds
        generator.standard_normal(out=out)
        out *= self.sigmas[arm]
        out += self.locations[arm]  # X = m_a + σ_a·Z
        np.clip(out, low, high, out=out)


# ---------------------------------------------------------------------- registry factories
def _make_bernoulli(means: list[float]) -> BernoulliBandit:
    return BernoulliBandit(means)


def _make_uniform(means: list[float], reward_bounds: list[float] | None = None) -> UniformBandit:
    return UniformBandit(means, None if reward_bounds is None else tuple(reward_bounds))  # type: ignore[arg-type]


def _make_beta(
    alphas: list[float] | None = None,
    betas: list[float] | None = None,
    means: list[float] | None = None,
    concentration: float | list[float] | None = None,
) -> BetaBandit:
    by_shape = alphas is not None and betas is not None and means is None and concentration is None
    by_mean = means is not None and concentration is not None and alphas is None and betas is None
    if by_shape:
        return BetaBandit(alphas, betas)  # type: ignore[arg-type]
    if by_mean:
        return BetaBandit.from_means(means, concentration)  # type: ignore[arg-type]
    raise InvalidParameterError(
        "beta environment needs either (alphas, betas) or (means, concentration); "
        f"got alphas={alphas!r}, betas={betas!r}, means={means!r}, concentration={concentration!r}"
    )


def _make_clipped_gaussian(
    means: list[float],
    sigma: float | list[float],
    bounds: list[float],
    means_are: str = "location",
) -> ClippedGaussianBandit:
    if means_are == "location":
        return ClippedGaussianBandit(means, sigma, tuple(bounds))  # type: ignore[arg-type]
    if means_are == "clipped":
        return ClippedGaussianBandit.from_clipped_means(means, sigma, tuple(bounds))  # type: ignore[arg-type]
    raise InvalidParameterError(f"means_are must be one of ['location', 'clipped']; got {means_are!r}")


register_environment(
    "bernoulli", kind="mab", factory=_make_bernoulli, description="Bernoulli(μ) arms; params: means"
)
register_environment(
    "uniform",
    kind="mab",
    factory=_make_uniform,
    description="Uniform[0, 2μ] arms (DP-BAI paper); params: means, reward_bounds (optional)",
)
register_environment(
    "beta",
    kind="mab",
    factory=_make_beta,
    description="Beta arms; params: alphas + betas, or means + concentration",
)
register_environment(
    "clipped-gaussian",
    kind="mab",
    factory=_make_clipped_gaussian,
    description="clip(N(m, σ²), low, high) arms; params: means, sigma, bounds, means_are ('location'|'clipped')",
)
