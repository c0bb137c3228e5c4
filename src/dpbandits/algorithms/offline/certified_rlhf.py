"""Certified per-instance privacy loss of the RLHF KL policy at one public prompt (label or add/remove DP).

The per-instance pure loss of one sample, ε*(D) = sup_{D'} max_a |log π̃(a|x; D') − log π̃(a|x; D)|, is
bracketed between the loss of neighbours found and a certified upper bound. The label flips and
removals are finitely many; the additions (a comparison of norm <= 2 with either label) are covered
by branch and bound over boxes (:mod:`.loss_bracket`). A neighbour's estimate is a constrained
maximum-likelihood estimate with no closed form: it is computed approximately and enclosed in a
certified ball (strong concavity of the Bradley–Terry likelihood), so the bound never relies on the
accuracy of that computation; the released estimate at D' may be anywhere within the public solver
tolerance of the exact one, which the ball includes.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpbandits._core.typing import FloatArray
from dpbandits.algorithms.offline.certified_linear import EllipticalFit
from dpbandits.algorithms.offline.loss_bracket import (
    ROUNDING_MARGIN,
    LossBracket,
    RecordBox,
    active_actions,
    addition_penalty_bounds,
    branch_and_bound,
    cholesky_solve,
    interval_loss_bounds,
    penalty_change,
)
from dpbandits.envs.logged import FEATURE_NORM_TOLERANCE

__all__ = ["RLHFFit", "rlhf_loss_bracket"]

_CHUNK = 256  # neighbours evaluated together (bounds the temporary memory: _CHUNK × n floats)


class RLHFFit(EllipticalFit, Protocol):
    """What :func:`rlhf_loss_bracket` reads of a fitted RLHF policy."""

    norm_bound: float
    solver_tolerance: float

    @property
    def comparisons_(self) -> tuple[FloatArray, FloatArray]:
        """(z_i, y_i) of the fitted data."""

    @property
    def total_multiplier_(self) -> float:
        """n·ν, the multiplier of the constraint ‖θ‖ <= B at D (0 in the interior)."""


# -------------------------------------------------------------------------------------- RLHF
_CHORD_STEPS = 12  # Newton steps with the Hessian of D frozen, for every neighbour at once, before their own
_TAYLOR_RECORDS = 500  # from this many records on, neighbours are certified without a pass over the data
_POLISH_RADIUS = 1e-8  # a neighbour whose certified ball is wider (M-norm) is solved again on its own


def _kappa(radius: float) -> float:
    return 2.0 + math.exp(2.0 * radius) + math.exp(-2.0 * radius)


def _newton(z: FloatArray, y: FloatArray, multiplier: float, x: FloatArray, steps: int = 100) -> FloatArray:
    """Argmin of −ℓ(θ) + m/2·‖θ‖² by Newton's method with backtracking, from x."""
    from scipy.linalg import solve
    from scipy.special import expit, log_expit

    d = z.shape[1]

    def value(v: FloatArray) -> float:
        t = z @ v
        return float(-(y @ t + np.sum(log_expit(-t))) + 0.5 * multiplier * (v @ v))

    current = value(x)
    for _ in range(steps):
        sig = expit(z @ x)
        grad = z.T @ (sig - y) + multiplier * x
        if float(np.linalg.norm(grad)) <= 1e-12 * max(1.0, float(z.shape[0])):
            break
        hess = (z * (sig * (1.0 - sig))[:, None]).T @ z + multiplier * np.eye(d)
        try:
            step = solve(hess, grad, assume_a="pos", check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            step = grad
        if float(np.linalg.norm(step)) <= 1e-15 * (1.0 + float(np.linalg.norm(x))):
            break
        size = 1.0
        while size > 1e-12:
            trial = value(x - size * step)
            # Armijo, with room for the rounding of f near the optimum
            if trial <= current - 1e-4 * size * float(grad @ step) + 1e-13 * (1.0 + abs(current)):
                break
            size *= 0.5
        if size <= 1e-12:
            break
        x, current = x - size * step, trial
    return x


def _constrained_mle(z: FloatArray, y: FloatArray, bound: float, start: FloatArray) -> FloatArray:
    """An approximate argmax of ℓ over ‖θ‖ <= B (its accuracy is certified separately, never assumed)."""
    x = _newton(z, y, 0.0, start)
    if float(np.linalg.norm(x)) <= bound:
        return x
    low, high = 0.0, float(np.linalg.norm(z.T @ (y - 0.5))) / bound * (1.0 + 1e-9) + 1e-300
    for _ in range(50):  # ‖θ(m)‖ decreases in m: bisect for ‖θ(m)‖ = B
        middle = 0.5 * (low + high)
        x = _newton(z, y, middle, x, steps=4)
        low, high = (middle, high) if float(np.linalg.norm(x)) > bound else (low, middle)
    x = _newton(z, y, high, x)
    return np.asarray(x * min(1.0, bound / float(np.linalg.norm(x))), dtype=np.float64)


class _RLHFNeighbours:
    """The RLHF policy at D, and certified balls around the estimates of batches of its neighbours.

    A neighbour changes one comparison z: its log-likelihood gradient is
    ∇ℓ_{D'}(θ) = ∇ℓ_D(θ) + [a·(y_new − σ(zᵀθ)) − b·(y_old − σ(zᵀθ))]·z with (a, b) = (1, 1) for a label
    flip, (0, 1) for a removal and (1, 0) for an addition, and M' = M + (a − b)·zzᵀ, Σ' = Σ + (a − b)·zzᵀ.
    """

    def __init__(self, policy: RLHFFit, features: FloatArray, log_p: FloatArray) -> None:
        from scipy.linalg import cholesky
        from scipy.special import expit

        self.z, self.y = policy.comparisons_
        self.n, self.d = self.z.shape
        self.bound, self.eta, self.beta0 = policy.norm_bound, policy.eta, policy.beta0
        self.theta = policy.theta_
        self.tolerance = policy.solver_tolerance
        self.gamma = 1.0 / _kappa(self.bound)
        self.log_p = log_p
        gram = self.z.T @ self.z
        self.mu = float(np.linalg.eigvalsh(gram)[0])
        self.m_chol = np.asarray(cholesky(gram, lower=True, check_finite=False), dtype=np.float64)
        self.sigma_chol = policy.cholesky_
        self.sigma_top = 4.0 * (1.0 + FEATURE_NORM_TOLERANCE) ** 2 / policy.lambda_min_
        self.multiplier = policy.total_multiplier_
        sig = expit(self.z @ self.theta)
        self.hessian = (self.z * (sig * (1.0 - sig))[:, None]).T @ self.z  # −∇²ℓ_D(θ̂)
        self.h_values, self.h_vectors = np.linalg.eigh(self.hessian)
        self.gradient0 = self.z.T @ (self.y - sig)  # ∇ℓ_D(θ̂)
        self.gram = gram
        # differences to the most likely candidate: the loss does not change when every u(a) moves together
        self.diffs = features - features[int(np.argmax(log_p))]  # (K, d)
        self.m_inv_diffs = cholesky_solve(self.m_chol, self.diffs.T)  # (d, K)
        self.diff_norms = np.sqrt(np.maximum(np.einsum("ka,ak->k", self.diffs, self.m_inv_diffs), 0.0))
        self.sigma_inv_features = cholesky_solve(self.sigma_chol, features.T)  # (d, K)
        self.g = np.sqrt(np.einsum("ka,ak->k", features, self.sigma_inv_features))
        self.sigma_inverse = cholesky_solve(self.sigma_chol, np.eye(self.d))
        self.polished = 0
        self.leverages = np.sqrt(np.einsum("ij,ji->i", self.z, cholesky_solve(self.m_chol, self.z.T)))  # ‖z_j‖_{M⁻¹}

    def _ball_multiplier(self, rhs: FloatArray, values: FloatArray | None = None) -> FloatArray:
        """The smallest m >= 0 with ‖(Λ + m)⁻¹c‖ <= B for each row c (Λ: Hessian eigenvalues, per row or shared)."""
        values = self.h_values[None, :] if values is None else values
        low = np.zeros(rhs.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.sum((rhs / values) ** 2, axis=1) <= self.bound**2
        high = np.sqrt(np.sum(rhs**2, axis=1)) / self.bound + 1e-300
        for _ in range(60):  # ‖(Λ + m)⁻¹c‖ decreases in m: bisection on every row at once
            middle = 0.5 * (low + high)
            outside = np.sum((rhs / (values + middle[:, None])) ** 2, axis=1) > self.bound**2
            low, high = np.where(outside, middle, low), np.where(outside, high, middle)
        return np.where(inside & (values[:, :1].min(axis=1) > 0), 0.0, high)

    def _newton_rows(self, thetas: FloatArray, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray,
                     y_old: FloatArray, steps: int = 30) -> FloatArray:
        """Newton steps for the constrained problem of each neighbour (its own Hessian), rows at once."""
        from scipy.special import expit

        change = a - b
        for _ in range(steps):
            sig = expit(thetas @ self.z.T)  # (m, n)
            weights = sig * (1.0 - sig)
            own = expit(np.einsum("ij,ij->i", zs, thetas))
            hess = np.einsum("rn,nk,nl->rkl", weights, self.z, self.z) + (
                change * own * (1.0 - own))[:, None, None] * np.einsum("rk,rl->rkl", zs, zs)
            values, vectors = np.linalg.eigh(hess)
            grads = self._gradients(thetas, zs, a, b, y_new, y_old)
            rhs = np.einsum("rkl,rk->rl", vectors, grads + np.einsum("rkl,rl->rk", hess, thetas))
            multiplier = self._ball_multiplier(rhs, values)
            new = np.einsum("rkl,rl->rk", vectors, rhs / (values + multiplier[:, None]))
            new = np.where(np.isfinite(new), new, thetas)
            moved = float(np.max(np.abs(new - thetas), initial=0.0))
            thetas = new
            if not moved > 1e-14 * (1.0 + self.bound):
                break
        return thetas

    def _gradients(self, thetas: FloatArray, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray,
                   y_old: FloatArray) -> FloatArray:
        """∇ℓ_{D'} of each neighbour (row) at its row of ``thetas``."""
        from scipy.special import expit

        out = np.empty_like(thetas)
        for start in range(0, thetas.shape[0], 256):
            block = thetas[start:start + 256]
            out[start:start + 256] = (self.y[None, :] - expit(block @ self.z.T)) @ self.z
        sig = expit(np.einsum("ij,ij->i", zs, thetas))
        return np.asarray(out + (a * (y_new - sig) - b * (y_old - sig))[:, None] * zs, dtype=np.float64)

    def _m_inverse_norms(self, vectors: FloatArray, zs: FloatArray, change: FloatArray,
                         m_zs: FloatArray) -> FloatArray:
        """‖v‖_{M'⁻¹} for rows v, M' = M + change·zzᵀ (Sherman–Morrison); ∞ if M' is singular."""
        m_v = cholesky_solve(self.m_chol, vectors.T).T
        base = np.einsum("ij,ij->i", vectors, m_v)
        cross = np.einsum("ij,ij->i", m_v, zs)
        lev = np.einsum("ij,ij->i", zs, m_zs)
        denominator = 1.0 + change * lev
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(denominator > 0, base - change * cross**2 / denominator, np.inf)
        return np.asarray(np.sqrt(np.maximum(value, 0.0)), dtype=np.float64)

    def _radius(self, thetas: FloatArray, grads: FloatArray, zs: FloatArray, change: FloatArray,
                extra: FloatArray | None, residual_extra: FloatArray | None = None) -> FloatArray:
        """Certified bound on ‖θ̃ − θ*_{D'}‖_{M'} for each row (θ̃ in the ball).

        γ‖Δ‖²_{M'} <= ⟨∇ℓ_{D'}(θ̃), Δ⟩ (strong concavity, γ = 1/κ_B, and optimality of θ* on the
        ball) = ⟨r, Δ⟩ + m⟨θ̃, Δ⟩ for r = ∇ℓ_{D'}(θ̃) − mθ̃ and any m >= 0, with ⟨θ̃, Δ⟩ <= ‖θ̃‖(B − ‖θ̃‖);
        so ‖Δ‖_{M'} <= (‖r‖_{M'⁻¹} + √(‖r‖²_{M'⁻¹} + 4γs))/(2γ), s = m‖θ̃‖(B − ‖θ̃‖)⁺. ``extra`` (boxes
        of additions) is added to ‖r‖ measured in M⁻¹ (M' ⪰ M for an addition).
        """
        m_zs = cholesky_solve(self.m_chol, zs.T).T
        use = np.zeros_like(change) if extra is not None else change
        norms = np.sqrt(np.einsum("ij,ij->i", thetas, thetas))
        theta_m = self._m_inverse_norms(thetas, zs, use, m_zs)
        cross_m = cholesky_solve(self.m_chol, grads.T).T
        # the least-squares multiplier in the M'⁻¹ inner product (Sherman–Morrison applied to ⟨θ, g⟩)
        inner = np.einsum("ij,ij->i", thetas, cross_m) - use * (
            np.einsum("ij,ij->i", thetas, m_zs) * np.einsum("ij,ij->i", grads, m_zs)
            / np.maximum(1.0 + use * np.einsum("ij,ij->i", zs, m_zs), 1e-300))
        with np.errstate(divide="ignore", invalid="ignore"):
            fitted = np.where(theta_m > 0, np.maximum(inner / theta_m**2, 0.0), 0.0)
        best = np.full(thetas.shape[0], np.inf)
        terms = []
        for multiplier in (np.zeros_like(fitted), fitted, np.full_like(fitted, self.multiplier)):
            residual = self._m_inverse_norms(grads - multiplier[:, None] * thetas, zs, use, m_zs)
            if residual_extra is not None:
                residual = residual + residual_extra
            elif extra is not None:
                residual = residual + extra
            slack = multiplier * norms * np.maximum(self.bound - norms, 0.0)
            terms.append((residual, slack))
            radius = (residual + np.sqrt(residual**2 + 4.0 * self.gamma * slack)) / (2.0 * self.gamma)
            best = np.minimum(best, np.where(np.isfinite(residual), radius, np.inf))
        if extra is None:
            return best
        # additions: θ* lies within `best` of θ̃ in the M-norm, so on the segment every record's margin is
        # at most |z_jᵀθ̃| + best·‖z_j‖_{M⁻¹}, and −∇²ℓ_{D'} ⪰ Σ_j σ'(that)·z_jz_jᵀ ⪰ γ_loc·M there
        from scipy.special import expit

        margins = np.abs(thetas @ self.z.T) + best[:, None] * self.leverages[None, :]
        margins = np.minimum(margins, 2.0 * self.bound * (1.0 + FEATURE_NORM_TOLERANCE))
        local = expit(margins) * expit(-margins)
        gamma = np.maximum(np.min(local, axis=1), self.gamma)
        for residual, slack in terms:
            radius = (residual + np.sqrt(residual**2 + 4.0 * gamma * slack)) / (2.0 * gamma)
            best = np.minimum(best, np.where(np.isfinite(residual), radius, np.inf))
        return best

    def _neighbour_data(self, index: int, z: FloatArray, a: float, b: float, y_new: float,
                        source: int) -> tuple[FloatArray, FloatArray]:
        """(Z', y') of one neighbour: ``source`` is the record changed (flip, removal) or -1 (addition)."""
        if a and b:
            labels = self.y.copy()
            labels[source] = y_new
            return self.z, labels
        if b:
            return np.delete(self.z, source, axis=0), np.delete(self.y, source)
        return np.vstack([self.z, z[None, :]]), np.append(self.y, y_new)

    def _taylor_enclose(self, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray, y_old: FloatArray,
                        extra: FloatArray | None) -> tuple[FloatArray, FloatArray]:
        """One Newton step from θ̂ per neighbour, certified in O(d²) each (no pass over the data).

        With δ = θ̃ − θ̂, ∇ℓ_D(θ̃) = ∇ℓ_D(θ̂) − H0·δ − ρ where ρ = Σ_j [σ(t_j + z_jᵀδ) − σ(t_j) − σ'(t_j)z_jᵀδ]z_j;
        |σ''| <= 1/(6√3), so each bracket is at most (z_jᵀδ)²/(12√3), and since Z·M⁻¹·Zᵀ is a projection
        ‖ρ‖_{M⁻¹} <= ‖c‖₂ <= max_j ‖z_j‖_{M⁻¹}·‖δ‖²_M/(12√3).
        """
        from scipy.special import expit

        change = a - b
        own = expit(zs @ self.theta)
        weights = change * own * (1.0 - own)
        record = (a * (y_new - own) - b * (y_old - own))[:, None] * zs
        hess = self.hessian[None, :, :] + weights[:, None, None] * np.einsum("rk,rl->rkl", zs, zs)
        values, vectors = np.linalg.eigh(hess)
        rhs = np.einsum("rkl,rk->rl", vectors, self.gradient0[None, :] + record + self.theta @ self.hessian
                        + weights[:, None] * (zs @ self.theta)[:, None] * zs)
        multiplier = self._ball_multiplier(rhs, values)
        thetas = np.einsum("rkl,rl->rk", vectors, rhs / (values + multiplier[:, None]))
        thetas = np.where(np.isfinite(thetas), thetas, self.theta)
        norms = np.sqrt(np.einsum("ij,ij->i", thetas, thetas))
        thetas = thetas * np.minimum(1.0, self.bound / np.maximum(norms, 1e-300))[:, None]
        delta = thetas - self.theta
        new = expit(np.einsum("ij,ij->i", zs, thetas))
        grads = (self.gradient0[None, :] - delta @ self.hessian
                 + (a * (y_new - new) - b * (y_old - new))[:, None] * zs)
        delta_m = np.sqrt(np.maximum(np.einsum("ij,ij->i", delta, delta @ self.gram), 0.0))
        remainder = float(np.max(self.leverages)) * delta_m**2 / (12.0 * math.sqrt(3.0))
        lev_own = np.sqrt(np.einsum("ij,ji->i", zs, cholesky_solve(self.m_chol, zs.T)))
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(change < 0, 1.0 / np.sqrt(np.maximum(1.0 - lev_own**2, 0.0)), 1.0)  # M' ⪰ (1 − lev²)M
        total = remainder * scale + (0.0 if extra is None else extra)
        return thetas, self._radius(thetas, grads, zs, change, extra, residual_extra=total)

    def enclose(self, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray, y_old: FloatArray,
                sources: FloatArray, extra: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """(θ̃, certified radius) of each neighbour: frozen-Hessian Newton steps, then own solves if needed."""
        if self.n >= _TAYLOR_RECORDS:
            thetas, radius = self._taylor_enclose(zs, a, b, y_new, y_old, extra)
            wide = ~(radius <= np.maximum(_POLISH_RADIUS, 2e-2 * np.sqrt(np.maximum(np.einsum(
                "ij,ij->i", thetas - self.theta, (thetas - self.theta) @ self.gram), 0.0)))
                     + (0.0 if extra is None else 1.1 * extra / self.gamma))
            if extra is not None or not np.any(wide):  # a box keeps its certified ball: no pass per box
                return thetas, radius
            rows = np.flatnonzero(wide)
            sub_t, sub_r = self._enclose_by_passes(zs[rows], a[rows], b[rows], y_new[rows], y_old[rows],
                                                   sources[rows], None if extra is None else extra[rows])
            thetas[rows], radius[rows] = sub_t, np.minimum(radius[rows], sub_r)
            return thetas, radius
        return self._enclose_by_passes(zs, a, b, y_new, y_old, sources, extra)

    def _enclose_by_passes(self, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray,
                           y_old: FloatArray, sources: FloatArray,
                           extra: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """:meth:`enclose` with the gradient of every neighbour computed over the data (small n)."""
        thetas = np.tile(self.theta, (zs.shape[0], 1))
        for _ in range(_CHORD_STEPS):
            # frozen-Hessian step for the constrained problem: θ ← (H0 + mI)⁻¹(∇ℓ_{D'}(θ) + H0θ) with the
            # smallest m >= 0 that keeps it in the ball (its fixed points are the KKT points)
            rhs = (self._gradients(thetas, zs, a, b, y_new, y_old) + thetas @ self.hessian) @ self.h_vectors
            multiplier = self._ball_multiplier(rhs)
            new = (rhs / (self.h_values[None, :] + multiplier[:, None])) @ self.h_vectors.T
            new = np.where(np.isfinite(new), new, self.theta)
            moved = float(np.max(np.abs(new - thetas), initial=0.0))
            thetas = new
            if not moved > 1e-14 * (1.0 + self.bound):
                break
        change = a - b
        radius = self._radius(thetas, self._gradients(thetas, zs, a, b, y_new, y_old), zs, change, extra)
        # solve again only where the solve, not the box's own width, makes the ball wide
        floor = _POLISH_RADIUS + (0.0 if extra is None else 1.1 * extra / self.gamma)
        poor = np.flatnonzero(~(radius <= floor))
        if poor.size:
            thetas[poor] = self._newton_rows(thetas[poor], zs[poor], a[poor], b[poor], y_new[poor], y_old[poor])
            radius[poor] = self._radius(thetas[poor], self._gradients(thetas[poor], zs[poor], a[poor], b[poor],
                                                                      y_new[poor], y_old[poor]),
                                        zs[poor], change[poor], None if extra is None else extra[poor])
        for i in np.flatnonzero(~(radius <= floor)):
            data = self._neighbour_data(int(i), zs[i], float(a[i]), float(b[i]), float(y_new[i]), int(sources[i]))
            if data[0].shape[0] == 0:
                continue
            thetas[i] = _constrained_mle(data[0], data[1], self.bound, thetas[i])
            self.polished += 1
            row = slice(int(i), int(i) + 1)
            radius[row] = self._radius(thetas[row], self._gradients(thetas[row], zs[row], a[row], b[row],
                                                                     y_new[row], y_old[row]),
                                       zs[row], change[row], None if extra is None else extra[row])
        return thetas, radius

    def changes(self, thetas: FloatArray, radius: FloatArray, zs: FloatArray, change: FloatArray,
                penalty: tuple[FloatArray, FloatArray] | None = None
                ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Bounds of x = δu/η, wide (upper) and narrow (lower), for each neighbour.

        Wide: the released estimate at D' anywhere within the tolerance of the exact one; narrow: the
        exact estimate. ``penalty`` overrides the exact change of the penalty (boxes of additions).
        """
        centre = (thetas - self.theta) @ self.diffs.T
        if penalty is None:
            p = zs @ self.sigma_inv_features
            s = np.einsum("ij,jk,ik->i", zs, self.sigma_inverse, zs)
            exact = np.zeros((zs.shape[0], self.diffs.shape[0]))  # a label flip leaves Σ unchanged
            for sign in (-1.0, 1.0):
                rows = change == sign
                if np.any(rows):
                    exact[rows] = penalty_change(self.g, p[rows], s[rows, None], sign)
            pen_lo = pen_hi = self.beta0 * exact
            m_zs = cholesky_solve(self.m_chol, zs.T).T
            norms = np.stack([self._m_inverse_norms(np.tile(v, (zs.shape[0], 1)), zs, change, m_zs)
                              for v in self.diffs], axis=1)
        else:
            pen_lo, pen_hi = self.beta0 * penalty[0], self.beta0 * penalty[1]
            norms = np.tile(self.diff_norms, (zs.shape[0], 1))
        wide = (radius + self.tolerance)[:, None] * norms
        narrow = radius[:, None] * norms
        return ((centre - wide + pen_lo) / self.eta, (centre + wide + pen_hi) / self.eta,
                (centre - narrow + pen_lo) / self.eta, (centre + narrow + pen_hi) / self.eta)

    def bracket_finite(self, zs: FloatArray, a: FloatArray, b: FloatArray, y_new: FloatArray,
                       sources: FloatArray, what: str) -> LossBracket:
        """The bracket over finitely many neighbours (flips or removals of the records ``sources``)."""
        upper, lower, worst = 0.0, 0.0, "none"
        for start in range(0, zs.shape[0], _CHUNK):
            part = slice(start, start + _CHUNK)
            y_old = self.y[sources[part].astype(int)]
            thetas, radius = self.enclose(zs[part], a[part], b[part], y_new[part], y_old, sources[part])
            x = self.changes(thetas, radius, zs[part], a[part] - b[part])
            ups, _ = interval_loss_bounds(self.log_p, x[0], x[1])
            _, lows = interval_loss_bounds(self.log_p, x[2], x[3])
            ups = np.where(np.isfinite(radius), ups, np.inf)
            upper = max(upper, float(np.max(ups)))
            i = int(np.argmax(lows))
            if lows[i] > lower:
                lower, worst = float(lows[i]), f"{what} {int(sources[part][i])}"
        return LossBracket(upper * (1.0 + ROUNDING_MARGIN), lower, worst, 0, True)

    def bracket_additions(self, *, rtol: float, max_boxes: int, known: float) -> LossBracket:
        """Branch and bound over added comparisons (z, y), ‖z‖ <= 2, y in {0, 1}."""
        d, radius_z = self.d, 2.0 * (1.0 + FEATURE_NORM_TOLERANCE)

        def evaluate(lows: FloatArray, highs: FloatArray) -> tuple[FloatArray, FloatArray]:
            box = RecordBox(lows, highs, d, radius_z)
            labels = lows[:, d]
            ones = np.ones(len(labels))
            zeros = np.zeros(len(labels))
            theta_norms = np.full(len(labels), self.bound)
            # ‖r(z) − r(z_p)‖_{M⁻¹} <= (1 + ‖θ̃‖/2)·‖z − z_p‖/√μ: ψ(z) = (y − σ(zᵀθ))z is (1 + ‖θ‖/2)-Lipschitz on the ball
            reach = np.sqrt(np.einsum("ij,ij->i", box.h, box.h)) + np.sqrt(
                np.einsum("ij,ij->i", box.c - box.point, box.c - box.point))
            extra = (1.0 + theta_norms / 2.0) * reach / math.sqrt(self.mu)
            thetas, radius = self.enclose(box.point, ones, zeros, labels, zeros, -ones, extra)
            p_lo, p_hi = box.linear(self.sigma_inv_features)
            s_lo, s_hi = box.quadratic(self.sigma_inverse, self.sigma_top)
            top = self.g * np.sqrt(s_hi)[:, None]
            pen = addition_penalty_bounds(self.g, np.maximum(p_lo, -top), np.minimum(p_hi, top), s_lo, s_hi)
            x_lo, x_hi, _, _ = self.changes(thetas, radius, box.point, ones, pen)
            upper, _ = interval_loss_bounds(self.log_p, x_lo, x_hi)
            point_radius = self._radius(thetas, self._gradients(thetas, box.point, ones, zeros, labels, zeros),
                                        box.point, ones, None)
            x = self.changes(thetas, point_radius, box.point, ones)
            _, lower = interval_loss_bounds(self.log_p, x[2], x[3])
            upper = np.where(np.isfinite(radius), upper, np.inf)
            return np.where(box.feasible, upper, -np.inf), np.where(box.feasible, lower, -np.inf)

        def describe(centre: FloatArray) -> str:
            z = centre[:d] * min(1.0, radius_z / max(float(np.linalg.norm(centre[:d])), 1e-300))
            return f"add a comparison z = {np.round(z, 4).tolist()} with label {int(centre[d])}"

        low = np.array([np.concatenate([-np.full(d, radius_z), [label]]) for label in (0.0, 1.0)])
        high = np.array([np.concatenate([np.full(d, radius_z), [label]]) for label in (0.0, 1.0)])
        scale = np.concatenate([np.full(d, 2.0 * radius_z), [1.0]])
        return branch_and_bound(evaluate, low, high, scale, rtol=rtol, max_boxes=max_boxes, describe=describe,
                                known=known)


def rlhf_loss_bracket(policy: RLHFFit, action_features: ArrayLike, reference: ArrayLike | None = None, *,
                      neighbouring: str = "label", rtol: float = 0.1, max_boxes: int = 6_000) -> LossBracket:
    """Bracket the per-instance loss of one sample of a fitted :class:`KLRLHFPolicy` at one prompt.

    Parameters
    ----------
    policy : KLRLHFPolicy
    action_features : array_like of shape (K, d)
        φ(x, a) of the candidate responses.
    reference : array_like of shape (K,), optional
        π0(·|x); uniform when omitted.
    neighbouring : {"label", "add_remove"}
        Flip one label (features public), or add or remove one whole comparison.
    rtol : float, default 0.1
        The search over added comparisons stops within (1 + rtol) of the loss found.
    max_boxes : int, default 6000
        Budget of boxes of added comparisons.

    Returns
    -------
    LossBracket
        ``upper`` bounds the loss between the released policy at D and the released policy at any
        neighbour (whose estimate is within the public solver tolerance of its exact maximiser);
        ``lower`` is a certified lower bound of the loss against the exact maximiser at the
        neighbour found.

    Privacy
    -------
    Each neighbour's constrained maximiser θ*_{D'} is enclosed in a ball ‖θ − θ̃‖_{M'} <= ρ around an
    approximate one (see :meth:`_RLHFNeighbours._radius`); the released θ̂_{D'} lies within ρ + e_tol.
    Then (θ − θ̂)ᵀ(φ_a − φ_c) is within (θ̃ − θ̂)ᵀ(φ_a − φ_c) ± (ρ + e_tol)‖φ_a − φ_c‖_{M'⁻¹}, and the
    penalty's change is exact (Sherman–Morrison), or bounded over a box of added comparisons; the
    loss follows (:func:`.loss_bracket.interval_loss_bounds`). Over a box of additions one θ̃ serves
    every comparison z in it: the gradient moves by at most (1 + B/2)‖z − z_p‖ and ‖·‖_{M'⁻¹} <= ‖·‖_{M⁻¹}.

    References
    ----------
    Zhang et al. (2025), eq. (11) (the policy); Bradley & Terry (1952).
    """
    features = policy._check_query(action_features)
    log_p_all = policy.log_probabilities(features, reference)
    active = active_actions(log_p_all)
    features, log_p = features[active], log_p_all[active]
    if features.shape[0] < 2:
        return LossBracket(0.0, 0.0, "one response has all the probability", 0, True)
    z, y = policy.comparisons_
    if z.shape[0] == 0 or np.linalg.eigvalsh(z.T @ z)[0] <= 0:
        return LossBracket(math.inf, math.inf, "sum of z z^T is singular: no certified bound", 0, True)
    space = _RLHFNeighbours(policy, features, log_p)
    indices = np.arange(z.shape[0], dtype=np.float64)
    ones, zeros = np.ones(z.shape[0]), np.zeros(z.shape[0])
    if neighbouring == "label":
        return space.bracket_finite(z, ones, ones, 1.0 - y, indices, "flip the label of comparison")
    removal = space.bracket_finite(z, zeros, ones, zeros, indices, "remove comparison")
    return removal.merge(space.bracket_additions(rtol=rtol, max_boxes=max_boxes, known=removal.lower))
