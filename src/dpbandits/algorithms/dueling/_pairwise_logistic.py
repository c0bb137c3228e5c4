"""Ridge-regularised logistic MLE on pairwise comparisons of K fixed arms, for a batch of trials.

The linear dueling baselines (MaxInP, CoLSTIM) model P(i ≻ j) = σ(θᵀ(x_i − x_j)). Their data are
sufficient statistics per unordered pair {i, j} (i < j): the comparisons N_p and the wins W_p of i,
with z_p = x_i − x_j. The estimate minimises the strictly convex

    ℓ(θ) = Σ_p (N_p·softplus(θᵀz_p) − W_p·θᵀz_p) + (λ/2)·‖θ‖²,

whose gradient Σ_p (N_p·σ(θᵀz_p) − W_p)·z_p + λθ is the MLE equation of the papers plus the ridge
term; λ > 0 makes the minimiser exist while the data are still separable (early rounds). The design
matrix is V = λI + Σ_p N_p·z_p z_pᵀ. Newton's method with step halving, warm-started at the previous
estimate, runs per trial until the step is below 1e-10 (each trial stops on its own, so a batch of
trials and a batch of one compute the same numbers).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dpbandits._core.typing import FloatArray, IntArray

__all__ = ["PairwiseLogistic"]


class PairwiseLogistic:
    """Pairwise-comparison statistics, the ridge logistic estimate θ̂ and V⁻¹ for ``n_trials`` trials.

    Parameters
    ----------
    features : ndarray (K, d)
        x_i.
    n_trials : int
    ridge : float
        λ > 0.

    Attributes
    ----------
    theta : ndarray (n_trials, d)
        θ̂ after the last :meth:`fit`.
    gram : ndarray (n_trials, d, d)
        V = λI + Σ_p N_p z_p z_pᵀ.
    """

    def __init__(self, features: FloatArray, n_trials: int, ridge: float) -> None:
        self.features = np.asarray(features, dtype=np.float64)
        k, d = self.features.shape
        self.ridge = float(ridge)
        lo, hi = np.triu_indices(k, k=1)
        self._pair = np.full((k, k), -1, dtype=np.int64)
        self._pair[lo, hi] = np.arange(lo.size)
        self._pair[hi, lo] = np.arange(lo.size)
        self._lower = lo
        self.differences = self.features[lo] - self.features[hi]  # z_p = x_i − x_j, i < j
        self.counts = np.zeros((n_trials, lo.size))
        self.wins = np.zeros((n_trials, lo.size))  # wins of the lower-index arm
        self.theta = np.zeros((n_trials, d))
        self.gram = np.repeat(self.ridge * np.eye(d)[None], n_trials, axis=0)
        self._ridge_identity = self.ridge * np.eye(d)  # λI
        self._fitted = True

    def add(self, first: IntArray, second: IntArray, outcome: IntArray) -> None:
        """Record one duel per trial (self-duels carry no information and are skipped)."""
        if first.shape[0] == 1:  # one trial (an agent's step): the same additions with scalar indices
            if first[0] != second[0]:
                self._add_one(int(first[0]), int(second[0]), int(outcome[0]))
            return
        rows = np.flatnonzero(first != second)
        if rows.size == 0:
            return
        pair = self._pair[first[rows], second[rows]]
        lower_won = np.where(first[rows] == self._lower[pair], outcome[rows], 1 - outcome[rows])
        self.counts[rows, pair] += 1
        self.wins[rows, pair] += lower_won
        z = self.differences[pair]
        self.gram[rows] += z[:, :, None] * z[:, None, :]  # V += z zᵀ
        self._fitted = False

    def _add_one(self, first: int, second: int, outcome: int) -> None:
        pair = int(self._pair[first, second])
        self.counts[0, pair] += 1
        self.wins[0, pair] += outcome if first == self._lower[pair] else 1 - outcome
        z = self.differences[pair]
        self.gram[0] += z[:, None] * z[None, :]  # V += z zᵀ
        self._fitted = False

    def _loss(self, theta: FloatArray, counts: FloatArray, wins: FloatArray) -> tuple[FloatArray, FloatArray]:
        """ℓ(θ) per trial, and the θᵀz_p it computed (the next Newton step's input when θ is kept)."""
        u = theta @ self.differences.T  # θᵀz_p
        # np.add.reduce is ndarray.sum without its Python wrapper (the same sums, ~0.3 µs less each)
        loss = np.add.reduce(counts * np.logaddexp(0.0, u) - wins * u, axis=1)
        return np.asarray(loss + 0.5 * self.ridge * np.add.reduce(theta * theta, axis=1)), u

    def fit(self, max_iter: int = 50) -> FloatArray:
        """θ̂ of every trial (Newton with step halving from the previous estimate); returns ``theta``."""
        if self._fitted:
            return self.theta
        z = self.differences
        active: IntArray | None = None  # the trials still moving; None: all (views instead of fancy indexing)
        # the loss at the current estimate and its θᵀz_p, when the last step computed them
        current: FloatArray | None = None
        projections: FloatArray | None = None
        candidate: FloatArray | None = None  # the loss at the last rates tried
        for _ in range(max_iter):
            if active is None:
                theta, counts, wins = self.theta, self.counts, self.wins
            elif active.size == 0:
                break
            else:
                theta, counts, wins = self.theta[active], self.counts[active], self.wins[active]
            s = special.expit(theta @ z.T if projections is None else projections)
            gradient = (counts * s - wins) @ z + self.ridge * theta  # Σ(N σ − W) z + λθ
            curvature = counts * s * (1.0 - s)
            hessian = np.einsum("np,pi,pj->nij", curvature, z, z) + self._ridge_identity
            step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
            if current is None:
                current = self._loss(theta, counts, wins)[0]
            slope = np.add.reduce(gradient * step, axis=1)
            rate = np.ones(step.shape[0])
            for _ in range(40):  # halve the step where the loss did not decrease (Armijo, c = 1e-4)
                move = rate[:, None] * step
                estimate = theta - move
                candidate, projections = self._loss(estimate, counts, wins)
                bad = candidate > current - 1e-4 * rate * slope
                if not bad.any():
                    break
                rate = np.where(bad, rate / 2.0, rate)
            else:  # the last evaluation is not at the rates kept
                candidate = projections = None
                move = rate[:, None] * step
                estimate = theta - move
            if active is None:
                self.theta[:] = estimate
            else:
                self.theta[active] = estimate
            moving = np.sqrt(np.add.reduce(move * move, axis=1)) >= 1e-10  # ‖move‖ (np.linalg.norm's formula)
            if moving.all():
                current = candidate  # the loss at the new estimate
                continue
            active = (np.arange(self.theta.shape[0]) if active is None else active)[moving]
            # θᵀz_p is recomputed on the smaller batch: a matrix product of fewer rows may round differently
            current, projections = (None if candidate is None else candidate[moving]), None
        self._fitted = True
        return self.theta

    def inverse_gram(self) -> FloatArray:
        """V⁻¹ of every trial, shape (n_trials, d, d)."""
        return np.asarray(np.linalg.inv(self.gram))

    def feature_products(self) -> FloatArray:
        """G = X V⁻¹ Xᵀ per trial (n_trials, K, K): ‖x_i‖²_{V⁻¹} = G_ii, ‖x_i − x_j‖²_{V⁻¹} = G_ii + G_jj − 2G_ij."""
        x = self.features
        return np.asarray(np.einsum("id,nde,je->nij", x, self.inverse_gram(), x))

    @staticmethod
    def difference_norms(products: FloatArray, rows_of: IntArray | None = None) -> FloatArray:
        """‖x_i − x_j‖_{V⁻¹} from :meth:`feature_products`, shape (n_trials, K, K).

        With ``rows_of`` (one arm i per trial), only row i of each trial: shape (n_trials, K), the
        same numbers.
        """
        diagonal = np.einsum("nii->ni", products)
        if rows_of is None:
            squared = diagonal[:, :, None] + diagonal[:, None, :] - 2.0 * products
        else:
            trials = np.arange(products.shape[0])
            squared = diagonal[trials, rows_of][:, None] + diagonal - 2.0 * products[trials, rows_of]
        return np.asarray(np.sqrt(np.maximum(squared, 0.0)))
