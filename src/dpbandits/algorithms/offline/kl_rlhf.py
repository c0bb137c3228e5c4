"""KL-regularised pessimistic RLHF policy with a Bradley–Terry reward (eq. 11 of the KL paper).

The reward model r_θ(x, a) = θᵀφ(x, a) is the Bradley–Terry maximum-likelihood estimate **constrained
to the ball ‖θ‖ ≤ B** (errata KL-3: the paper's unconstrained MLE need not exist and its
proof uses ‖θ‖ ≤ B), solved with SciPy's exact trust-region Newton method; the boundary case is a
1-d root-find (``scipy.optimize.brentq``) on the Lagrange multiplier ν of ‖θ‖² ≤ B².
The standard logistic σ(t) = 1/(1 + e^{−t}) is used (the paper's printed σ is a typo).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_factor, cho_solve, cholesky, eigvalsh, solve, solve_triangular
from scipy.optimize import brentq, minimize
from scipy.special import expit, log_expit

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.persistence import Persistable
from dpbandits._core.schema import Array, Maybe, StateSchema, rule
from dpbandits._core.typing import FloatArray
from dpbandits._core.validation import check_in_interval, check_positive_float
from dpbandits.algorithms.offline._elliptical import EllipticalKLPolicy, check_declared_domain
from dpbandits.algorithms.offline.accountants import account_rlhf
from dpbandits.algorithms.registry import register_algorithm_class
from dpbandits.envs.offline import PreferenceData
from dpbandits.privacy.guarantees import Guarantee

__all__ = ["BradleyTerryFit", "KLRLHFPolicy", "bradley_terry_mle"]

_CHUNK_ROWS = 65_536  # rows per block when forming Zᵀ diag(w) Z (bounds the temporary memory)
_POLISH_STEPS = 4  # Newton steps after SciPy's trust region stalls on float64 function values
_CHORD_STEPS = 200  # frozen-Hessian Newton steps before the exact polish
_CHORD_SWITCH_GTOL = 1e-8  # per-record gradient norm at which the exact Newton polish takes over
_WARM_NEWTON_STEPS = 8  # Newton steps tried from a warm start before the trust-region solve
_ACCEPT_GTOL = 1e-9  # per-record gradient norm below which a solve counts as converged


@dataclass(frozen=True)
class BradleyTerryFit:
    """Result of :func:`bradley_terry_mle`.

    Attributes
    ----------
    theta : ndarray, shape (d,)
        argmax_{‖θ‖ ≤ B} ℓ_D(θ).
    on_boundary : bool
        Whether ‖θ̂‖ = B (the constraint is active).
    multiplier : float
        ν >= 0, the Lagrange multiplier of the constraint, per record (0 in the interior).
    kkt_residual : float
        ‖∇ℓ_D(θ̂) − n·ν·θ̂‖₂ (0 at the exact solution).
    n_iterations : int
        Newton iterations used in total.
    """

    theta: FloatArray
    on_boundary: bool
    multiplier: float
    kkt_residual: float
    n_iterations: int


class _PenalisedNegativeLogLikelihood:
    """f_ν(θ) = −ℓ_D(θ)/n + ν/2·‖θ‖², its gradient and Hessian (the 1/n keeps values O(1))."""

    def __init__(self, z: FloatArray, y: FloatArray) -> None:
        self.z = z
        self.y = y
        self.n = max(1, z.shape[0])
        self.nu = 0.0
        self._cached_theta: FloatArray | None = None
        self._cached_margins = np.zeros(0)
        self._cached_sigmoid = np.zeros(0)
        self._margins_version = 0
        self._gradient_version = -1
        self._cached_likelihood_gradient = np.zeros(0)

    def _margins(self, theta: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Return t = Zθ and σ(t), cached for the last θ (value, gradient and Hessian share one pass)."""
        if self._cached_theta is None or not np.array_equal(theta, self._cached_theta):
            if not np.any(theta):
                t = np.zeros(self.z.shape[0])
                sig = np.full(self.z.shape[0], 0.5)  # σ(0) = 1/2, no pass over Z needed
            else:
                t = self.z @ theta
                sig = expit(t)
            self._cached_theta = np.array(theta, dtype=np.float64, copy=True)
            self._cached_margins, self._cached_sigmoid = t, sig
            self._margins_version += 1
        return self._cached_margins, self._cached_sigmoid

    def value(self, theta: FloatArray) -> float:
        t, _ = self._margins(theta)
        # −ℓ = −Σ [y·t + log σ(−t)]   (log σ(t) − log σ(−t) = t)
        return float(-(self.y @ t + np.sum(log_expit(-t))) / self.n + 0.5 * self.nu * (theta @ theta))

    def gradient(self, theta: FloatArray) -> FloatArray:
        _, sig = self._margins(theta)
        if self._gradient_version != self._margins_version:
            # ∇(−ℓ/n) = −Zᵀ(y − σ(Zθ))/n, cached with the margins of the same θ
            self._cached_likelihood_gradient = np.asarray(-(self.z.T @ (self.y - sig)) / self.n, dtype=np.float64)
            self._gradient_version = self._margins_version
        return np.asarray(self._cached_likelihood_gradient + self.nu * theta, dtype=np.float64)

    def curvature_bound(self) -> FloatArray:
        """ZᵀZ/(4n) = ∇²(−ℓ/n)(0) ⪰ ∇²(−ℓ/n)(θ) for every θ, since σ' <= 1/4 (Böhning's bound)."""
        return np.asarray(self.z.T @ self.z / (4.0 * self.n), dtype=np.float64)

    def hessian(self, theta: FloatArray) -> FloatArray:
        d = self.z.shape[1]
        h = np.zeros((d, d))
        _, sig = self._margins(theta)
        for start in range(0, self.z.shape[0], _CHUNK_ROWS):
            block = self.z[start:start + _CHUNK_ROWS]
            s = sig[start:start + _CHUNK_ROWS]
            # σ'(t) = σ(t)·σ(−t); Zᵀ diag(σ') Z = (√σ'·Z)ᵀ(√σ'·Z), a symmetric rank-k update (BLAS syrk)
            scaled = block * np.sqrt(s * (1.0 - s))[:, None]
            h += scaled.T @ scaled
        return np.asarray(h / self.n + self.nu * np.eye(d), dtype=np.float64)


def _within_ball(theta: FloatArray, bound: float) -> FloatArray:
    """``theta`` shrunk by one rounding at a time until ``np.linalg.norm(theta) <= bound`` holds in floating point.

    The fit's certificate (:meth:`KLRLHFPolicy._solver_error_bound`) is computed on the returned θ̂,
    so it covers the shrink; every dataset then passes a domain check ‖θ̂‖ <= B alike.
    """
    step = 1.0 - np.finfo(np.float64).eps
    while float(np.linalg.norm(theta)) > bound:
        theta = theta * step
    return theta


def bradley_terry_mle(
    feature_differences: ArrayLike,
    labels: ArrayLike,
    norm_bound: float,
    *,
    gtol: float = 1e-11,
    warm_start: ArrayLike | None = None,
    warm_multiplier: float | None = None,
) -> BradleyTerryFit:
    """Maximise the Bradley–Terry log-likelihood over the ball ‖θ‖ ≤ B.

    ℓ_D(θ) = Σ_i [y_i·log σ(⟨θ, z_i⟩) + (1 − y_i)·log σ(−⟨θ, z_i⟩)].

    Parameters
    ----------
    feature_differences : array_like of shape (n, d)
        z_i = φ(x_i, a¹_i) − φ(x_i, a²_i).
    labels : array_like of shape (n,)
        y_i ∈ {0, 1}.
    norm_bound : float
        B > 0.
    gtol : float, default 1e-11
        Gradient tolerance of the per-record objective (−ℓ/n).
    warm_start : array_like of shape (d,), optional
        Starting point (e.g. the fit of a neighbouring dataset).
    warm_multiplier : float, optional
        The boundary multiplier ν of a neighbouring dataset's fit, to bracket the root-find.

    Returns
    -------
    BradleyTerryFit
    """
    z = np.asarray(feature_differences, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    bound = check_positive_float(norm_bound, "norm_bound")
    d = z.shape[1]
    objective = _PenalisedNegativeLogLikelihood(z, y)
    start = np.zeros(d) if warm_start is None else np.asarray(warm_start, dtype=np.float64)
    iterations = 0

    base_hessian: list[FloatArray] = []
    upper_bound = not np.any(start)  # from θ = 0 the frozen Hessian ZᵀZ/(4n) bounds the curvature

    def chord(x: FloatArray) -> tuple[FloatArray, bool]:
        """Newton steps with the Hessian frozen at the start (one O(nd²) pass), then exact polish.

        The BT curvature σ'(⟨θ, z⟩) varies at most by the factor κ_B/4 on the ball, so the frozen
        Hessian is a good preconditioner; each step costs one gradient (O(nd)).
        """
        nonlocal iterations
        if not base_hessian:
            base_hessian.append(objective.curvature_bound() if upper_bound else objective.hessian(start)
                                - objective.nu * np.eye(d))
        try:
            factor = cho_factor(base_hessian[0] + objective.nu * np.eye(d), check_finite=False)
        except np.linalg.LinAlgError:
            return x, False
        g = objective.gradient(x)
        f = math.inf if upper_bound else objective.value(x)
        for _ in range(_CHORD_STEPS):
            if float(np.linalg.norm(g)) <= _CHORD_SWITCH_GTOL:
                break
            step = cho_solve(factor, g, check_finite=False)
            if upper_bound:
                # Böhning's bound ZᵀZ/4 ⪰ ∇²(−ℓ) everywhere: the full step always decreases f
                x = x - step
            else:
                decrease, t = float(g @ step), 1.0
                while True:  # backtracking (Armijo) line search
                    f_new = objective.value(x - t * step)
                    if f_new <= f - 1e-4 * t * decrease or t < 1e-6:
                        break
                    t *= 0.5
                if t < 1e-6:
                    return x, False
                x, f = x - t * step, f_new
            g = objective.gradient(x)
            iterations += 1
        return newton_polish(x, _POLISH_STEPS, g)

    def solve_penalised(nu: float, x0: FloatArray, maxiter: int = 200) -> tuple[FloatArray, bool]:
        nonlocal iterations
        objective.nu = nu
        x, ok = chord(x0)
        if ok:
            return x, ok
        res = minimize(objective.value, x0, jac=objective.gradient, hess=objective.hessian,
                       method="trust-exact", options={"gtol": gtol, "maxiter": maxiter})
        iterations += int(res.nit)
        # trust-exact stops once f no longer changes in float64; finish with plain Newton steps
        return newton_polish(np.asarray(res.x, dtype=np.float64), _POLISH_STEPS)

    def newton_polish(x: FloatArray, steps: int, g: FloatArray | None = None) -> tuple[FloatArray, bool]:
        """θ ← θ − H⁻¹∇f while the gradient shrinks (quadratic convergence near the optimum)."""
        nonlocal iterations
        if g is None:
            g = objective.gradient(x)
        for _ in range(steps):
            if float(np.linalg.norm(g)) <= gtol:
                break
            try:
                step = solve(objective.hessian(x), g, assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                break
            x_new = x - step
            g_new = objective.gradient(x_new)
            if not float(np.linalg.norm(g_new)) < float(np.linalg.norm(g)):
                break
            x, g = x_new, g_new
            iterations += 1
        return x, float(np.linalg.norm(g)) <= max(gtol, _ACCEPT_GTOL)

    if warm_start is not None:
        # fast path for neighbouring datasets: plain Newton steps from the warm start
        theta, converged = newton_polish(start, _WARM_NEWTON_STEPS)
        if converged and float(np.linalg.norm(theta)) <= bound:
            residual = float(np.linalg.norm(objective.gradient(theta))) * objective.n
            return BradleyTerryFit(theta, False, 0.0, residual, iterations)
    theta, converged = solve_penalised(0.0, start, maxiter=100)
    norm = float(np.linalg.norm(theta))
    if converged and norm <= bound:
        objective.nu = 0.0
        residual = float(np.linalg.norm(objective.gradient(theta))) * objective.n
        return BradleyTerryFit(theta, False, 0.0, residual, iterations)

    # Boundary: θ(ν) = argmin f + ν/2‖θ‖² has ‖θ(ν)‖ decreasing in ν; find ‖θ(ν)‖ = B.
    objective.nu = 0.0
    grad0 = float(np.linalg.norm(objective.gradient(np.zeros(d))))
    nu_high = max(grad0 / bound, 1e-300) * (1.0 + 1e-9)  # ν-strong convexity: ‖θ(ν)‖ <= ‖∇f(0)‖/ν
    state = {"x": start.copy() if warm_start is not None else np.zeros(d)}

    def excess(nu: float) -> float:
        objective.nu = nu
        x, ok = newton_polish(state["x"], _WARM_NEWTON_STEPS)  # f + ν/2‖θ‖² is ν-strongly convex
        if not ok:
            x, _ = solve_penalised(nu, state["x"])
        state["x"] = x
        return float(np.linalg.norm(x)) - bound

    candidate = 0.25 * nu_high
    if warm_multiplier is not None and 0.0 < warm_multiplier < nu_high:
        # a neighbour's multiplier is close: bracket around it first
        candidate, high = 0.5 * warm_multiplier, min(nu_high, 2.0 * warm_multiplier)
        if excess(high) <= 0:
            nu_high = high
    for _ in range(40):
        if excess(candidate) > 0:
            nu_low = candidate
            break
        nu_high, candidate = candidate, 0.25 * candidate
    else:  # pragma: no cover - the unconstrained optimum is inside the ball up to numerics
        theta = _within_ball(state["x"], bound)
        objective.nu = 0.0
        return BradleyTerryFit(theta, False, 0.0, float(np.linalg.norm(objective.gradient(theta))) * objective.n,
                               iterations)
    nu_star = float(brentq(excess, nu_low, nu_high, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=200))
    excess(nu_star)
    theta = state["x"]
    # onto the sphere ‖θ‖ = B: the root-find leaves ‖θ‖ − B ~ its tolerance, which would enter the
    # solver-error certificate through the slack term n·ν·‖θ‖·(B − ‖θ‖); then never above B in floating
    # point (the rescaling alone may leave B + 1 ulp, which a domain check ‖θ̂‖ <= B would refuse on one
    # dataset and not on its neighbour)
    theta = _within_ball(theta * (bound / float(np.linalg.norm(theta))), bound)
    objective.nu = 0.0
    # KKT: ∇ℓ(θ̂) = n·ν·θ̂
    residual = float(np.linalg.norm(-objective.gradient(theta) - nu_star * theta)) * objective.n
    return BradleyTerryFit(theta, True, nu_star, residual, iterations)


@register_algorithm_class("kl-rlhf")
class KLRLHFPolicy(EllipticalKLPolicy, Persistable):
    """KL-regularised pessimistic RLHF policy on Bradley–Terry preference data (eq. 11).

    Parameters
    ----------
    eta : float
        η > 0.
    beta0 : float, default 1
        β0 >= 0.
    ridge : float, default 1
        λ > 0; enters only Σ_D = λI + Σ_i z_iz_iᵀ (the penalty), not the MLE.
    norm_bound : float, default 1
        B > 0, the radius of the constrained MLE (a mechanism hyper-parameter: privacy does not rely
        on ‖θ*‖ ≤ B).
    solver_tolerance : float, default 1e-6
        e_tol > 0, **public**: ``fit`` certifies ‖θ̂ − θ*‖_M <= e_tol for the computed θ̂ and the exact
        constrained maximiser θ* (M = Σ_i z_iz_iᵀ) on every dataset, refining the solve once and
        refusing the data otherwise. The accountants use e_tol at the neighbouring datasets (where
        nothing is computed) and the certificate at D.
    min_eigenvalue : float, optional
        ℓ, a public floor on λ_min(Σ_D) fixed before seeing the data: the declared domain of
        ``privacy(scope="domain", neighbouring="add_remove")``; ``fit`` refuses data outside it.

    Attributes
    ----------
    theta_ : ndarray, shape (d,)
        Constrained MLE θ̂.
    fit_ : BradleyTerryFit
        Solver diagnostics (boundary, multiplier, KKT residual).
    solver_error_ : float
        Certified bound on ‖θ̂ − θ*‖_M from the KKT residual (<= ``solver_tolerance``).
    covariance_ : ndarray, shape (d, d)
        Σ_D.
    cholesky_ : ndarray
        Lower Cholesky factor of Σ_D.
    lambda_min_ : float
        λ_min(Σ_D); μ = λ_min − λ = λ_min(Σ_i z_iz_iᵀ) must be > 0 for a finite guarantee.
    n_records_, n_features_in_ : int

    Privacy
    -------
    At a fixed public prompt x, one sampled response is ε-label-DP with the corrected
    ε0 = 4κ_B/(η·μ), κ_B = 2 + e^{2B} + e^{−2B} (Theorem 3′; the paper's Theorem 3 value is 2(1+e^{−2B})
    times too small, C4), and add/remove DP with Theorem 4′ (the paper's Theorem 4 fails, C5). Under
    label neighbouring the comparisons z_i are public, so the label guarantee depends on public
    data only (``scope="domain"``: every labelling of these comparisons). The theorems assume the
    exact constrained maximiser; the released policy uses the computed one, so the accountants add
    the divergence of the computed from the exact policy at D (its certificate) **and** at the
    neighbour (the public tolerance, enforced by ``fit`` on every dataset): ε + ε̂_D + ε̂_{D'}.

    References
    ----------
    Zhang et al. (2025), eq. (11), Theorem 3, Corollary 3, Appendix D (Theorem 4);
    Paper errata KL-3, KL-C4/C5 (Theorems 3′ and 4′).
    """

    _fitted_schema = True  # an unfitted policy saves no state
    _schema = StateSchema(
        _feature_differences=Array("float64", (None, None)),
        _labels=Array("float64", (None,), low=0, high=1, integral=True),
        _warm_start=Maybe(Array("float64", (None,))),
        rules=[rule("one label per feature difference, a warm start of length d",
                    lambda p, s: s["_labels"].shape[0] == s["_feature_differences"].shape[0] and (
                        s["_warm_start"] is None or s["_warm_start"].shape[0] == s["_feature_differences"].shape[1]))],
        # refit through fit() on load: the estimate, Σ_D and the solver's certificate never come from the file
        derived=("covariance_", "cholesky_", "lambda_min_", "fit_", "theta_", "n_records_", "n_features_in_",
                 "_gram", "solver_error_"),
    )

    def __init__(self, eta: float, beta0: float = 1.0, ridge: float = 1.0, norm_bound: float = 1.0, *,
                 solver_tolerance: float = 1e-6, min_eigenvalue: float | None = None) -> None:
        self.eta = check_positive_float(eta, "eta")
        self.beta0 = check_in_interval(beta0, "beta0", 0.0, math.inf, closed="left")
        self.ridge = check_positive_float(ridge, "ridge")
        self.norm_bound = check_positive_float(norm_bound, "norm_bound")
        self.solver_tolerance = check_positive_float(solver_tolerance, "solver_tolerance")
        self.min_eigenvalue = (None if min_eigenvalue is None
                               else check_positive_float(min_eigenvalue, "min_eigenvalue"))

    def fit(self, feature_differences: ArrayLike | PreferenceData, labels: ArrayLike | None = None, *,
            warm_start: ArrayLike | None = None) -> KLRLHFPolicy:
        """Fit the constrained Bradley–Terry MLE and Σ_D.

        Parameters
        ----------
        feature_differences : array_like of shape (n, d) or PreferenceData
            z_i, rows of norm ≤ 2.
        labels : array_like of shape (n,), optional
            y_i ∈ {0, 1} (omit with PreferenceData).
        warm_start : array_like of shape (d,), optional
            Starting point of the solver.

        Returns
        -------
        KLRLHFPolicy
        """
        data = (feature_differences if isinstance(feature_differences, PreferenceData)
                else PreferenceData(feature_differences, [] if labels is None else labels))
        z, y = data.feature_differences, data.labels
        d = z.shape[1]
        gram = z.T @ z
        # Σ_D = λI + Σ z_i z_iᵀ
        self.covariance_ = self.ridge * np.eye(d) + gram
        self.cholesky_ = cholesky(self.covariance_, lower=True, check_finite=False)
        self.lambda_min_ = float(eigvalsh(self.covariance_, subset_by_index=(0, 0))[0])
        self.fit_ = bradley_terry_mle(z, y, self.norm_bound, warm_start=warm_start)
        self.theta_ = self.fit_.theta
        self.n_records_ = int(z.shape[0])
        self.n_features_in_ = int(d)
        self._gram = gram
        self._feature_differences, self._labels = z, y
        self._warm_start = None if warm_start is None else np.array(warm_start, dtype=np.float64)
        check_declared_domain(self.lambda_min_, self.min_eigenvalue, self.n_records_, None)
        self.solver_error_ = self._solver_error_bound(z, y)
        if self.solver_error_ > self.solver_tolerance:  # one refinement from the current point
            self.fit_ = bradley_terry_mle(z, y, self.norm_bound, gtol=1e-14, warm_start=self.theta_,
                                          warm_multiplier=self.fit_.multiplier or None)
            self.theta_ = self.fit_.theta
            self.solver_error_ = self._solver_error_bound(z, y)
        if not self.solver_error_ <= self.solver_tolerance:
            raise InvalidParameterError(
                f"solver_tolerance must bound the certified solver error ||theta_hat - theta*||_M on this data; "
                f"got {self.solver_tolerance!r} < {self.solver_error_!r} (M = sum z_i z_i^T singular or the "
                "solve did not converge): the privacy accounting needs it"
            )
        return self

    def _set_state(self, state: dict[str, Any]) -> None:
        """Refit from the saved data (z, y) and warm start through :meth:`fit`."""
        self.fit(state["_feature_differences"], state["_labels"], warm_start=state["_warm_start"])

    def _solver_error_bound(self, z: FloatArray, y: FloatArray) -> float:
        """Bound on ‖θ̂ − θ*‖_M for the exact constrained maximiser θ* (M = Σ z_iz_iᵀ).

        With r = ∇ℓ(θ̂) − n·ν·θ̂ (the KKT residual) and s = n·ν·‖θ̂‖·(B − ‖θ̂‖)⁺, strong concavity
        (γ = 1/κ_B in the M-norm on the ball) and the optimality of θ* give
        γ‖Δ‖²_M <= ‖r‖_{M⁻¹}‖Δ‖_M + s, hence ‖Δ‖_M <= (‖r‖_{M⁻¹} + √(‖r‖²_{M⁻¹} + 4γs))/(2γ).
        ∞ when M is singular.
        """
        chol = self._gram_cholesky()
        theta = self.theta_
        norm = float(np.linalg.norm(theta))
        if chol is None or norm > self.norm_bound * (1.0 + 1e-9):
            return math.inf  # the argument needs θ̂ in (a rounding of) the ball
        n = z.shape[0]
        # ∇ℓ(θ̂) = Zᵀ(y − σ(Zθ̂)); residual r = ∇ℓ − n·ν·θ̂
        residual = z.T @ (y - expit(z @ theta)) - n * self.fit_.multiplier * theta
        r_norm = float(np.linalg.norm(solve_triangular(chol, residual, lower=True)))
        # ⟨n·ν·θ̂, θ* − θ̂⟩ <= n·ν·‖θ̂‖·(B − ‖θ̂‖) (Cauchy–Schwarz, ‖θ*‖ <= B), <= 0 when ‖θ̂‖ >= B
        slack = n * self.fit_.multiplier * norm * max(0.0, self.norm_bound - norm)
        # σ' >= γ on the segment θ̂–θ*, inside the ball of radius max(B, ‖θ̂‖)
        radius = max(self.norm_bound, norm)
        if not 2.0 * radius < math.log(np.finfo(np.float64).max):
            return math.inf  # κ_B = 2 + e^{2B} + e^{−2B} is not a float (B > ~354): no finite certificate
        gamma = 1.0 / (2.0 + math.exp(2.0 * radius) + math.exp(-2.0 * radius))
        return (r_norm + math.sqrt(r_norm**2 + 4.0 * gamma * slack)) / (2.0 * gamma)

    def query_leverage(self, action_features: ArrayLike | None) -> float:
        """max_a ‖φ(x, a)‖_{M⁻¹} over the candidates, M = Σ_i z_iz_iᵀ (∞ if M is singular).

        ``action_features=None``: the worst case over every context, ‖φ‖ <= 1: 1/√λ_min(M), with
        λ_min(M) = λ_min(Σ_D) − λ.
        """
        if action_features is None:
            self._check_fitted()
            gap = self.lambda_min_ - self.ridge
            return 1.0 / math.sqrt(gap) if gap > 0 else math.inf
        features = self._check_query(action_features)
        chol = self._gram_cholesky()
        if chol is None:
            return math.inf
        w = solve_triangular(chol, features.T, lower=True)
        return float(np.sqrt(np.max(np.einsum("ij,ij->j", w, w))))

    def solver_divergence(self, action_features: ArrayLike | None, solver_error: float | None = None) -> float:
        """ε̂ with D∞ between the computed and the exact policy <= ε̂ in both directions, at this context.

        |r̂(a) − r*(a)| <= ‖θ̂ − θ*‖_M·‖φ(x, a)‖_{M⁻¹} =: e(a), so ε̂ = 2·max_a e(a)/η.
        ``solver_error`` defaults to the certificate ``solver_error_`` of this fit.
        """
        error = self.solver_error_ if solver_error is None else solver_error
        leverage = self.query_leverage(action_features)
        if not (math.isfinite(leverage) and math.isfinite(error)):
            return math.inf
        return 2.0 * error * leverage / self.eta

    def _public_theta_norm_bound(self) -> float:
        """B: the constrained MLE satisfies ‖θ̂‖ <= B on every dataset."""
        return self.norm_bound

    def _gram_cholesky(self) -> FloatArray | None:
        try:
            return np.asarray(cholesky(self._gram, lower=True, check_finite=False))
        except np.linalg.LinAlgError:
            return None

    @property
    def comparisons_(self) -> tuple[FloatArray, FloatArray]:
        """(z_i, y_i) of the fitted data: the accountants enumerate its neighbours."""
        self._check_fitted()
        return self._feature_differences, self._labels

    @property
    def total_multiplier_(self) -> float:
        """n·ν, the multiplier of the constraint ‖θ‖ <= B at the fit (0 in the interior)."""
        self._check_fitted()
        return float(self.n_records_ * self.fit_.multiplier)

    @property
    def max_difference_leverage_(self) -> float:
        """max_i ‖z_i‖_{M⁻¹} with M = Σ_i z_iz_iᵀ (∞ if M is singular); used by the tight label bound."""
        self._check_fitted()
        chol = self._gram_cholesky()
        if chol is None:
            return math.inf
        best = 0.0
        for start in range(0, self._feature_differences.shape[0], _CHUNK_ROWS):
            w = solve_triangular(chol, self._feature_differences[start:start + _CHUNK_ROWS].T, lower=True)
            best = max(best, float(np.sqrt(np.max(np.einsum("ij,ij->j", w, w), initial=0.0))))
        return best

    def feature_range_metric(self, action_features: ArrayLike) -> float:
        """max_{a,a'} ‖φ(x, a) − φ(x, a')‖_{M⁻¹} over the candidates (∞ if M is singular)."""
        features = self._check_query(action_features)
        chol = self._gram_cholesky()
        if chol is None:
            return math.inf
        w = solve_triangular(chol, features.T, lower=True).T  # rows L⁻¹φ_a
        sq = np.einsum("ij,ij->i", w, w)
        # ‖w_a − w_b‖² = ‖w_a‖² + ‖w_b‖² − 2⟨w_a, w_b⟩
        dist2 = sq[:, None] + sq[None, :] - 2.0 * (w @ w.T)
        return float(np.sqrt(max(0.0, float(dist2.max()))))

    def sample_guarantee(self, action_features: ArrayLike | None = None,
                         reference: ArrayLike | None = None) -> Guarantee:
        """The guarantee ``sample(accountant=...)`` records per sample: label DP over every labelling.

        ``guarantee(action_features, reference, scope="domain")`` with label neighbouring: the
        comparisons z_i are public under label DP, so ε depends on them, on the public prompt and on
        the public η, B, λ and solver tolerance only, never on the labels it protects. (Add/remove of
        whole comparisons, a different unit, is ``guarantee(scope="domain", neighbouring="add_remove")``
        with the public ``min_eigenvalue``; spend it yourself if that is the unit you protect.)
        """
        return self.guarantee(action_features, reference, scope="domain")

    def guarantee(self, action_features: ArrayLike | None = None, reference: ArrayLike | None = None, *,
                  kind: str = "pure", variant: str = "corrected", neighbouring: str = "label",
                  scope: str = "instance", **kwargs: Any) -> Guarantee:
        """Guarantee at one prompt (or every prompt); see :func:`accountants.account_rlhf`."""
        return account_rlhf(self, action_features, reference, kind=kind, variant=variant,
                            neighbouring=neighbouring, scope=scope, **kwargs)
