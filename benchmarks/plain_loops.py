"""Plain per-step NumPy loops of the algorithms dpbandits serves ask/tell: the references of bench_agents.py.

Each function runs one algorithm for ``steps`` rounds (pulls), written the plainest correct way from
the papers: one Python loop over rounds, the state in NumPy arrays, the algorithm's own randomness
from a NumPy ``Generator``, no dpbandits code, no input validation and no ask/tell interface. Feedback
comes the same way as in the benchmark's agent loops: the duel (a, b) of round t is won by a iff
``u[t] < P[a, b]``; a pull of arm i returns ``rewards[t]`` scaled as the caller says. A ratio
"agent / plain loop" therefore measures what the library's agent costs beyond the algorithm itself
(validation, ask/tell bookkeeping, agent == simulation reproducibility), on the same machine, in the
same process, in the same rounds of an interleaved timing.

The loops are written independently of the library (a plain reading of each paper; where the
library resolves an ambiguity of a paper, the loop does the same so that the work per round is the
same), and only their cost matters here: they are not tested for equality with the agents. Each
returns a small summary of its run (so that no work can be skipped) — pair counts or the
recommended arm.

References
----------
Zoghi et al. 2014 (RUCB), Yue & Joachims 2011 (Beat-the-Mean), Komiyama et al. 2015 (RMED1),
Wu & Liu 2016 (Double Thompson Sampling), Zoghi et al. 2015 (Copeland Confidence Bound), Saha 2021
(MaxInP), Bengs, Saha & Hüllermeier 2022 (CoLSTIM), Yue et al. 2012 (Interleaved Filter 2), Saha & Asi
2024 (DP-EBS-Elimination, GOptimal-DPDB), Chen, Karthik, Chee & Tan 2024 (DP-BAI), Karnin, Koren &
Somekh 2013 (Sequential Halving), Pavlovic, Salgia & Zhao 2025 (USCA's learning stage), Chan, Shi &
Song 2011 (binary-tree counter).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# --------------------------------------------------------------------------- dueling, round by round


def rucb(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator, alpha: float = 0.51) -> np.ndarray:
    """RUCB: U = W/N + √(α ln t/N) (x/0 := 1), C = {c: U_cj >= ½ ∀j}, c from C (B kept w.p. ½), d = argmax_j U_jc."""
    k = P.shape[0]
    wins = np.zeros((k, k))
    plays = np.zeros((k, k), dtype=np.int64)
    best = -1
    for t in range(1, steps + 1):
        totals = wins + wins.T
        with np.errstate(divide="ignore", invalid="ignore"):
            upper = np.where(totals > 0, wins / totals + np.sqrt(alpha * math.log(t) / totals), 2.0)
        np.fill_diagonal(upper, 0.5)
        candidates = np.flatnonzero((upper >= 0.5).all(axis=1))
        coins = rng.random(3)
        if candidates.size == 0:
            best, c = -1, int(coins[1] * k)
        else:
            if best not in candidates:
                best = -1
            if candidates.size == 1:
                best = c = int(candidates[0])
            elif best >= 0 and coins[0] < 0.5:
                c = best
            else:
                others = candidates[candidates != best]
                c = int(others[int(coins[1] * others.size)])
        column = upper[:, c]
        ties = np.flatnonzero(column == column.max())
        if ties.size > 1:
            ties = ties[ties != c]
        d = int(ties[int(coins[2] * ties.size)])
        o = 1 if u[t - 1] < P[c, d] else 0
        wins[c, d] += o
        wins[d, c] += 1 - o
        plays[c, d] += 1
    return plays


def beat_the_mean(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator, horizon: int,
                  gamma: float = 1.0) -> np.ndarray:
    """Beat-the-Mean (online): b = least-compared working arm, b' ~ Unif(W); drop the worst once separated."""
    k = P.shape[0]
    working = np.ones(k, dtype=bool)
    wins, comparisons = np.zeros((k, k)), np.zeros((k, k))
    win_sums, comparison_sums = np.zeros(k), np.zeros(k)
    log_inv_delta = math.log(2 * horizon * k)  # δ = 1/(2TK)
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(steps):
        active = np.flatnonzero(working)
        if active.size == 1:
            a = int(active[0])
            plays[a, a] += 1
            continue
        counts = comparison_sums[active]
        least = active[counts == counts.min()]
        coins = rng.random(2)
        b = int(least[int(coins[0] * least.size)])
        b2 = int(active[int(coins[1] * active.size)])
        o = 1 if u[t] < P[b, b2] else 0
        plays[b, b2] += 1
        wins[b, b2] += o
        comparisons[b, b2] += 1
        win_sums[b] += o
        comparison_sums[b] += 1
        counts = comparison_sums[active]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.where(counts > 0, win_sums[active] / counts, 0.5)
        least_count = counts.min()
        radius = 3.0 * gamma**2 * math.sqrt(log_inv_delta / least_count) if least_count > 0 else 1.0
        if estimate.min() + radius <= estimate.max() - radius:
            worst = int(active[np.argmin(estimate)])
            working[worst] = False
            win_sums -= wins[:, worst]
            comparison_sums -= comparisons[:, worst]
    return plays


def _kl_to_half(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(2 * p), 0.0) + np.where(p < 1, (1 - p) * np.log(2 * (1 - p)), 0.0)


def rmed1(P: np.ndarray, steps: int, u: list[float]) -> np.ndarray:
    """RMED1: every pair once, then loops over the candidates L_C; l_t's opponent is î* or its weakest opponent."""
    k = P.shape[0]
    tolerance = 0.3 * k**1.01  # f(K)
    off = ~np.eye(k, dtype=bool)
    initial = [(i, j) for i in range(k) for j in range(i + 1, k)]
    wins = np.zeros((k, k))
    remaining, next_loop = np.ones(k, dtype=bool), np.zeros(k, dtype=bool)
    means = np.full((k, k), 0.5)
    leader = 0
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(1, steps + 1):
        if t <= len(initial):
            a, b = initial[t - 1]
        else:
            a = int(np.argmax(remaining))
            opponents = (means[a] <= 0.5) & off[a]
            if not opponents.any() or opponents[leader]:
                b = leader
            else:
                row = means[a].copy()
                row[a] = np.inf
                b = int(np.argmin(row))
        o = 1 if u[t - 1] < P[a, b] else 0
        plays[a, b] += 1
        if a != b:
            wins[a, b] += o
            wins[b, a] += 1 - o
        totals = wins + wins.T
        means = np.where(totals > 0, wins / np.maximum(totals, 1), 0.5)
        divergence = np.where((means <= 0.5) & off, totals * _kl_to_half(means), 0.0).sum(axis=1)  # I_i
        leader = int(np.argmin(divergence))
        if t > len(initial):
            remaining[a] = False
            next_loop |= ~remaining & (divergence - divergence[leader] <= math.log(t) + tolerance)
            if not remaining.any():
                remaining, next_loop = next_loop, np.zeros(k, dtype=bool)
    return plays


def double_thompson(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
                    alpha: float = 0.51) -> np.ndarray:
    """D-TS: Copeland candidates from the UCBs, θ⁽¹⁾ ~ Beta picks a⁽¹⁾, θ⁽²⁾ ~ Beta picks a⁽²⁾ among l_{i a⁽¹⁾} <= ½."""
    k = P.shape[0]
    off = ~np.eye(k, dtype=bool)
    upper_triangle = np.triu(np.ones((k, k), dtype=bool), 1)
    wins = np.zeros((k, k))
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(1, steps + 1):
        totals = wins + wins.T
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = wins / totals
            radius = np.sqrt(alpha * math.log(t) / totals)
        upper = np.where(totals > 0, ratio + radius, np.inf)
        lower = np.where(totals > 0, ratio - radius, -np.inf)
        np.fill_diagonal(upper, 0.5)
        np.fill_diagonal(lower, 0.5)
        copeland = ((upper > 0.5) & off).sum(axis=1)
        candidates = copeland == copeland.max()
        theta = rng.beta(wins + 1, wins.T + 1)
        theta = np.where(upper_triangle, theta, np.where(upper_triangle.T, 1.0 - theta.T, 0.5))
        score = np.where(candidates, ((theta > 0.5) & off).sum(axis=1), -1)
        best = np.flatnonzero(score == score.max())
        a1 = int(best[int(rng.random() * best.size)])
        theta2 = rng.beta(wins[:, a1] + 1, wins[a1, :] + 1)
        theta2[a1] = 0.5
        a2 = int(np.argmax(np.where(lower[:, a1] <= 0.5, theta2, -np.inf)))
        o = 1 if u[t - 1] < P[a1, a2] else 0
        plays[a1, a2] += 1
        if a1 != a2:
            wins[a1, a2] += o
            wins[a2, a1] += 1 - o
    return plays


def copeland_confidence_bound(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
                              alpha: float = 0.51) -> np.ndarray:
    """CCB (Zoghi et al. 2015, Algorithm 1): reset/remove/add steps on B and the B^i, then the pair of step 1 or 2."""
    k = P.shape[0]
    off = ~np.eye(k, dtype=bool)
    wins = np.zeros((k, k))
    best_set = np.ones(k, dtype=bool)
    beaters = np.zeros((k, k), dtype=bool)
    max_losses = k
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(1, steps + 1):
        totals = wins + wins.T
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(totals > 0, wins / totals, 1.0)
            radius = np.where(totals > 0, np.sqrt(alpha * math.log(t) / totals), 1.0)
        upper, lower = ratio + radius, ratio - radius
        np.fill_diagonal(upper, 0.5)
        np.fill_diagonal(lower, 0.5)
        optimistic = ((upper >= 0.5) & off).sum(axis=1)
        pessimistic = ((lower >= 0.5) & off).sum(axis=1)
        candidates = optimistic == optimistic.max()
        coins = rng.random(6)
        if (beaters & (lower > 0.5)).any():  # A: a hypothesis disproven
            best_set[:], beaters[:], max_losses = True, False, k
        drop = best_set & (optimistic < pessimistic.max())  # B
        refill = drop & (beaters.sum(axis=1) != max_losses + 1)
        beaters[refill] = (upper < 0.5)[refill]
        best_set &= ~drop
        if not best_set.any():
            best_set[:], beaters[:], max_losses = True, False, k
        settled = candidates & (optimistic == pessimistic)  # C
        if settled.any():  # B ← B ∪ {i} and B^i ← ∅ for every settled i (all share Cpld⁺ = max)
            best_set |= settled
            beaters[settled] = False
            max_losses = k - 1 - int(optimistic.max())
            keep = max_losses + 1
            sizes = beaters.sum(axis=1)
            others = ~settled
            beaters[others & (sizes < keep)] = False
            for j in np.flatnonzero(others & (sizes > keep)):
                members = np.flatnonzero(beaters[j])
                beaters[j] = False
                beaters[j, rng.permutation(members)[:keep]] = True
        open_pairs = np.flatnonzero(beaters & (lower <= 0.5) & (upper >= 0.5))
        if coins[0] < 0.25 and open_pairs.size:  # 1: an unresolved pair (c, d), d ∈ B^c
            c, d = divmod(int(open_pairs[int(coins[1] * open_pairs.size)]), k)
        else:  # 2
            both = candidates & best_set
            pool = np.flatnonzero(both if both.any() and coins[2] < 2.0 / 3.0 else candidates)
            c = int(pool[int(coins[3] * pool.size)])
            own = beaters[c]
            column = np.where(own if coins[4] < 0.5 and own.any() else True, upper[:, c], -np.inf)
            ties = np.flatnonzero(column >= column.max())
            if ties.size > 1:
                ties = ties[ties != c]
            d = int(ties[int(coins[5] * ties.size)])
        o = 1 if u[t - 1] < P[c, d] else 0
        plays[c, d] += 1
        wins[c, d] += o
        wins[d, c] += 1 - o
    return plays


class _PairwiseLogistic:
    """Ridge logistic MLE on pair statistics (Newton with step halving, warm start), and V = λI + Σ N_p z_p z_pᵀ."""

    def __init__(self, features: np.ndarray, ridge: float) -> None:
        k, d = features.shape
        self.first, self.second = np.triu_indices(k, 1)
        self.index = np.full((k, k), -1)
        self.index[self.first, self.second] = self.index[self.second, self.first] = np.arange(self.first.size)
        self.z = features[self.first] - features[self.second]
        self.counts, self.wins = np.zeros(self.first.size), np.zeros(self.first.size)
        self.ridge, self.theta, self.gram = ridge, np.zeros(d), ridge * np.eye(d)

    def add(self, a: int, b: int, o: int) -> None:
        if a == b:
            return
        p = self.index[a, b]
        self.counts[p] += 1
        self.wins[p] += o if a < b else 1 - o
        self.gram += np.outer(self.z[p], self.z[p])

    def _loss(self, theta: np.ndarray) -> float:
        v = self.z @ theta
        return float(np.sum(self.counts * np.logaddexp(0.0, v) - self.wins * v) + 0.5 * self.ridge * theta @ theta)

    def fit(self) -> np.ndarray:
        theta = self.theta
        for _ in range(50):
            s = 1.0 / (1.0 + np.exp(-(self.z @ theta)))
            gradient = self.z.T @ (self.counts * s - self.wins) + self.ridge * theta
            hessian = (self.z * (self.counts * s * (1 - s))[:, None]).T @ self.z + self.ridge * np.eye(theta.size)
            step = np.linalg.solve(hessian, gradient)
            current, rate = self._loss(theta), 1.0
            for _ in range(40):
                if self._loss(theta - rate * step) <= current - 1e-4 * rate * float(gradient @ step):
                    break
                rate /= 2.0
            theta = theta - rate * step
            if np.linalg.norm(rate * step) < 1e-10:
                break
        self.theta = theta
        return theta


def _linear_settings(features: np.ndarray, horizon: int) -> tuple[float, int, float]:
    """κ = σ'(2·max‖x‖) (S_θ = 1), t₀ = d·K, δ = 1/T."""
    s = 1.0 / (1.0 + math.exp(-2.0 * float(np.linalg.norm(features, axis=1).max())))
    return s * (1 - s), features.shape[0] * features.shape[1], 1.0 / horizon


def _pair_norms(features: np.ndarray, gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    products = features @ np.linalg.inv(gram) @ features.T
    diagonal = np.diag(products)
    return np.sqrt(np.maximum(diagonal[:, None] + diagonal[None, :] - 2 * products, 0.0)), diagonal


def _random_distinct_pair(rng: np.random.Generator, k: int) -> tuple[int, int]:
    """A uniform ordered pair of two different arms (the linear comparators' t₀ exploration rounds)."""
    a = int(rng.integers(k))
    b = int(rng.integers(k - 1))
    return a, b + (b >= a)


def _record_duel(model: _PairwiseLogistic, plays: np.ndarray, a: int, b: int, first_wins: bool) -> None:
    plays[a, b] += 1
    model.add(a, b, 1 if first_wins else 0)


def maxinp(features: np.ndarray, P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
           horizon: int, ridge: float = 1.0) -> np.ndarray:
    """MaxInP: t₀ random pairs, then the pair of largest ‖x − y‖_{V⁻¹} among the optimistic candidates C_t."""
    k, d = features.shape
    kappa, t0, delta = _linear_settings(features, horizon)
    model = _PairwiseLogistic(features, ridge)
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(1, steps + 1):
        if t <= t0:
            a, b = _random_distinct_pair(rng, k)
        else:
            theta = model.fit()
            norms, _ = _pair_norms(features, model.gram)
            width = math.sqrt(d / 2 * math.log(1 + 2 * t / (d * ridge)) + math.log(1 / delta)) / kappa  # γ_t
            utilities = features @ theta
            candidates = np.all(utilities[:, None] - utilities[None, :] + width * norms >= 0, axis=1)
            flat = int(np.argmax(np.where(candidates[:, None] & candidates[None, :], norms, -1.0)))
            a, b = divmod(flat, k)
        _record_duel(model, plays, a, b, u[t - 1] < P[a, b])
    return plays


def colstim(features: np.ndarray, P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
            horizon: int, ridge: float = 1.0) -> np.ndarray:
    """CoLSTIM: τ random pairs, then i_t = argmax θ̂ᵀx + clip(Gumbel)·‖x‖, j_t = argmax θ̂ᵀx + c₁‖x − x_{i_t}‖."""
    k, d = features.shape
    _, t0, _ = _linear_settings(features, horizon)
    threshold = width = math.sqrt(d * math.log(max(horizon, 2)))  # C = c₁ = √(d ln T)
    model = _PairwiseLogistic(features, ridge)
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(1, steps + 1):
        if t <= t0:
            a, b = _random_distinct_pair(rng, k)
        else:
            theta = model.fit()
            norms, own = _pair_norms(features, model.gram)
            utilities = features @ theta
            noise = np.clip(rng.gumbel(size=k), -threshold, threshold)
            a = int(np.argmax(utilities + noise * np.sqrt(np.maximum(own, 0.0))))
            b = int(np.argmax(utilities + width * norms[:, a]))
        _record_duel(model, plays, a, b, u[t - 1] < P[a, b])
    return plays


def interleaved_filter(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
                       horizon: int) -> np.ndarray:
    """IF2: the candidate b̂ duels the remaining arms in sweeps; after each sweep prune, or switch candidate."""
    k = P.shape[0]
    log_inv_delta = math.log(horizon * k * k)  # δ = 1/(TK²)
    candidate = int(rng.random() * k)
    remaining = np.array([a for a in range(k) if a != candidate])
    wins = np.zeros(remaining.size)
    sweeps = position = 0
    plays = np.zeros((k, k), dtype=np.int64)
    for t in range(steps):
        if remaining.size == 0:
            plays[candidate, candidate] += 1
            continue
        b = int(remaining[position])
        o = 1 if u[t] < P[candidate, b] else 0
        plays[candidate, b] += 1
        wins[position] += o
        position += 1
        if position < remaining.size:
            continue
        position, sweeps = 0, sweeps + 1
        estimate = wins / sweeps
        radius = math.sqrt(log_inv_delta / sweeps)
        keep = ~(estimate - radius > 0.5)
        remaining, wins, estimate = remaining[keep], wins[keep], estimate[keep]
        beats = estimate + radius < 0.5
        if beats.any():
            challengers = np.flatnonzero(beats)
            new = int(remaining[challengers[np.argmin(estimate[challengers])]])
            remaining = remaining[(estimate <= 0.5) & (remaining != new)]
            candidate, wins, sweeps = new, np.zeros(remaining.size), 0
    return plays


# --------------------------------------------------------------------------- private dueling


def opendp_adder(kind: str, scale: float):
    """An OpenDP measurement that adds Laplace (``"float"``) or discrete Laplace (``"int"``) noise to a vector."""
    import opendp.domains as dom
    import opendp.measurements as meas
    import opendp.metrics as met
    import opendp.mod

    opendp.mod.enable_features("contrib")
    t = float if kind == "float" else "i64"
    measurement = meas.make_laplace(dom.vector_domain(dom.atom_domain(T=t, **({"nan": False} if t is float else {}))),
                                    met.l1_distance(T=t), scale=scale)
    dtype = np.float64 if kind == "float" else np.int64
    return lambda values: np.array(measurement(values.tolist()), dtype=dtype)


def _discrete_laplace(rng: np.random.Generator, scale: float, size: int) -> np.ndarray:
    """Discrete Laplace(b): the difference of two geometric variables with P(G >= k) = e^{−k/b}."""
    p = 1.0 - math.exp(-1.0 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def _css_bound(levels: int, scale: float, beta: float) -> float:
    """Chan–Shi–Song Corollary 2.9: B = b·max{√L, √ln(2/β)}·√(8 ln(2/β))."""
    log_term = math.log(2.0 / beta)
    return scale * max(math.sqrt(levels), math.sqrt(log_term)) * math.sqrt(8 * log_term)


def _ebs_duel(P: np.ndarray, coin: float, pointer: int, active: np.ndarray, rng: np.random.Generator,
              pair_counts: np.ndarray, pair_wins: np.ndarray, counts: np.ndarray) -> tuple[int, int] | None:
    """One EBS round: the left arm round robin over the active ones (``pointer``: the rounds with a
    duel so far), the right one uniform; records the duel and returns (left, outcome). None for the
    self-duel of a lone arm (recorded too)."""
    m = active.size
    if m == 1:
        a = int(active[0])
        pair_counts[a, a] += 1
        return None
    left = int(active[pointer % m])
    right = int(active[int(rng.random() * m)])
    o = 1 if coin < P[left, right] else 0
    pair_counts[left, right] += 1
    pair_wins[left, right] += o
    counts[left] += 1
    return left, o


def dp_ebs_elimination(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator, horizon: int,
                       epsilon: float, noise: str = "numpy") -> np.ndarray:
    """DP-EBS-Elimination with one binary-tree counter per arm (CSS Algorithm 2), eliminations by noisy EBS.

    ``noise="numpy"``: discrete Laplace node noise from ``rng`` (one draw of K values per round);
    ``noise="opendp"``: one OpenDP call per round that adds discrete Laplace noise to the K node p-sums
    (the secure path's reference: the cost of OpenDP itself).
    """
    k = P.shape[0]
    levels = horizon.bit_length()  # L = ⌊log₂T⌋ + 1
    counter_epsilon = epsilon / 4.0  # ε_c = ε/4
    scale = levels / counter_epsilon  # b = L/ε_c
    delta = 1.0 / horizon
    confidence_log = math.log(4 * k * k * horizon / delta)  # λ = ln(4K²T/δ)
    bound = _css_bound(levels, scale, delta / (2 * k * horizon))  # B at β = δ/(2KT)
    add_noise = opendp_adder("int", scale) if noise == "opendp" else None

    exact = np.zeros((levels + 1, k), dtype=np.int64)  # α_j: exact p-sum of level j
    noisy = np.zeros((levels + 1, k), dtype=np.int64)  # α̂_j: noisy p-sum of level j
    active = np.arange(k)
    counts = np.zeros(k, dtype=np.int64)  # n_i
    pending = np.zeros(k, dtype=np.int64)
    pair_counts = np.zeros((k, k), dtype=np.int64)
    pair_wins = np.zeros((k, k), dtype=np.int64)
    released = np.zeros(k, dtype=np.int64)
    pointer = 0
    for t in range(1, steps + 1):
        duel = _ebs_duel(P, u[t - 1], pointer, active, rng, pair_counts, pair_wins, counts)
        if duel is None:
            continue
        pointer += 1
        left, o = duel
        element = -pending
        element[left] += o
        pending[:] = 0
        level = (t & -t).bit_length() - 1  # the node ending at t: its level is the lowest set bit of t
        exact[level] = exact[:level].sum(axis=0) + element
        exact[:level] = 0
        noisy[:level] = 0
        if add_noise is None:
            noisy[level] = exact[level] + _discrete_laplace(rng, scale, k)
        else:
            noisy[level] = add_noise(exact[level])
        released = noisy.sum(axis=0)  # Σ α̂_j over the set bits j of t (the others are 0)
        n = counts[active]
        if (n == 0).any():
            continue
        estimate = released[active] / n
        width = np.sqrt(confidence_log / (2 * n)) + bound / n  # wid(n) = √(λ/(2n)) + B/n
        gone = estimate + width < (estimate - width).max()
        if gone.any():
            eliminated, active = active[gone], active[~gone]
            pending[active] += pair_wins[np.ix_(active, eliminated)].sum(axis=1)
            counts[active] -= pair_counts[np.ix_(active, eliminated)].sum(axis=1)
    return pair_counts


def ldp_ebs_elimination(P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator, horizon: int,
                        epsilon: float) -> np.ndarray:
    """The local-DP baseline's learner: exact counts of randomised reports, debiased, widths × (e^ε+1)/(e^ε−1)."""
    k = P.shape[0]
    q = 1.0 / (1.0 + math.exp(epsilon))  # flip probability of a report
    spread = (math.exp(epsilon) + 1.0) / (math.exp(epsilon) - 1.0)
    confidence_log = math.log(4 * k * k * horizon * horizon)  # λ = ln(4K²T/δ), δ = 1/T
    active = np.arange(k)
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros(k, dtype=np.int64)
    pair_counts = np.zeros((k, k), dtype=np.int64)
    pair_wins = np.zeros((k, k), dtype=np.int64)
    pointer = 0
    for t in range(1, steps + 1):
        duel = _ebs_duel(P, u[t - 1], pointer, active, rng, pair_counts, pair_wins, counts)
        if duel is None:
            continue
        pointer += 1
        left, report = duel  # the user's (already randomised) report
        sums[left] += report
        n = counts[active]
        if (n == 0).any():
            continue
        estimate = (sums[active] / n - q) / (1.0 - 2.0 * q)
        width = spread * np.sqrt(confidence_log / (2 * n))
        gone = estimate + width < (estimate - width).max()
        if gone.any():
            eliminated, active = active[gone], active[~gone]
            sums[active] -= pair_wins[np.ix_(active, eliminated)].sum(axis=1)
            counts[active] -= pair_counts[np.ix_(active, eliminated)].sum(axis=1)
    return pair_counts


def _g_optimal(points: np.ndarray, tol: float) -> np.ndarray:
    """A G-optimal design by Frank–Wolfe (Fedorov–Wynn steps), weights below 1e-6 dropped."""
    n, r = points.shape
    weights = np.full(n, 1.0 / n)
    for _ in range(100_000):
        inverse = np.linalg.inv((points * weights[:, None]).T @ points)
        leverage = np.einsum("ij,jk,ik->i", points, inverse, points)
        j = int(np.argmax(leverage))
        if leverage[j] <= (1 + tol) * r:
            break
        gamma = (leverage[j] - r) / (r * (leverage[j] - 1.0))
        weights *= 1.0 - gamma
        weights[j] += gamma
    weights[weights < 1e-6] = 0.0
    return weights / weights.sum()


def _logistic_mle(coordinates: np.ndarray, counts: np.ndarray, wins: np.ndarray) -> np.ndarray:
    """argmin Σ t_s softplus(y_sᵀφ) − W̄_s y_sᵀφ by Newton with backtracking."""
    def loss(phi: np.ndarray) -> float:
        v = coordinates @ phi
        return float(np.sum(counts * np.logaddexp(0.0, v) - wins * v))

    phi = np.zeros(coordinates.shape[1])
    for _ in range(100):
        s = 1.0 / (1.0 + np.exp(-(coordinates @ phi)))
        gradient = coordinates.T @ (counts * s - wins)
        hessian = (coordinates * (counts * s * (1 - s))[:, None]).T @ coordinates
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        current, rate = loss(phi), 1.0
        while rate > 1e-12 and loss(phi - rate * step) > current - 1e-4 * rate * float(gradient @ step):
            rate /= 2.0
        phi = phi - rate * step
        if np.linalg.norm(rate * step) < 1e-12:
            break
    return phi


def goptimal_dpdb(features: np.ndarray, P: np.ndarray, steps: int, u: list[float], rng: np.random.Generator,
                  horizon: int, epsilon: float, play_count_scale: float = 1.0, noise: str = "numpy") -> np.ndarray:
    """GOptimal-DPDB: per phase a G-optimal design over the active pairs' differences, N_ℓ plays, noisy MLE, elimination.

    ``noise="opendp"``: the per-pair win counts get their discrete Laplace noise from one OpenDP call per phase.
    """
    add_noise = opendp_adder("int", 1.0 / epsilon) if noise == "opendp" else None
    k = features.shape[0]
    s2 = 1.0 / (1.0 + math.exp(-2.0))
    kappa = s2 * (1 - s2)  # κ = σ'(2·S_θ), S_θ = 1
    phase_union = max(1, math.ceil(math.log2(horizon)))  # L_T
    delta = 1.0 / horizon
    active = np.arange(k)
    phase = 0
    pairs: list[tuple[int, int]] = []
    plays = np.zeros((k, k), dtype=np.int64)

    def start(active: np.ndarray, phase: int):
        first, second = np.triu_indices(active.size, 1)
        pair_array = np.stack([active[first], active[second]], axis=1)
        z = features[pair_array[:, 0]] - features[pair_array[:, 1]]
        _, sigma, vt = np.linalg.svd(z, full_matrices=False)
        basis = vt[: int(np.sum(sigma > 1e-10 * sigma[0]))].T
        coordinates = z @ basis
        weights = _g_optimal(coordinates, 0.01)
        support = np.flatnonzero(weights > 0)
        g = float(np.max(np.einsum("ij,jk,ik->i", coordinates,
                                   np.linalg.inv((coordinates * weights[:, None]).T @ coordinates), coordinates)))
        accuracy = 2.0 ** -phase
        total = 9 * g * math.log(6 * k * k * phase_union / delta) / (kappa**2 * accuracy**2)
        total += 2 * support.size * g * math.log(2 * support.size * phase_union / delta) / (kappa * epsilon * accuracy)
        counts = np.ceil(weights[support] * total * play_count_scale).astype(np.int64)
        return [tuple(p) for p in pair_array[support].tolist()], counts, coordinates[support], basis

    phase = 1
    pairs, counts, coordinates, basis = start(active, phase)
    wins = np.zeros(len(pairs), dtype=np.int64)
    slot = played = 0
    committed = -1
    for t in range(steps):
        if committed >= 0:
            plays[committed, committed] += 1
            continue
        a, b = pairs[slot]
        o = 1 if u[t] < P[a, b] else 0
        plays[a, b] += 1
        wins[slot] += o
        played += 1
        if played < counts[slot]:
            continue
        slot, played = slot + 1, 0
        if slot < len(pairs):
            continue
        if add_noise is None:
            noisy = wins + _discrete_laplace(rng, 1.0 / epsilon, wins.size)  # W̃ = W + dLap(1/ε)
        else:
            noisy = add_noise(wins)
        clipped = np.clip(noisy, 0.5, counts - 0.5)
        theta = basis @ _logistic_mle(coordinates, counts.astype(float), clipped)
        scores = features[active] @ theta
        active = active[scores.max() - scores <= 2.0 * 2.0**-phase]  # c_elim·ε_ℓ
        phase += 1
        if active.size == 1:
            committed = int(active[0])
            continue
        pairs, counts, coordinates, basis = start(active, phase)
        wins = np.zeros(len(pairs), dtype=np.int64)
        slot = 0
    return plays


# --------------------------------------------------------------------------- best-arm identification


def dp_bai_schedule(n_arms: int, dim: int) -> tuple[list[int], int]:
    """Phase sizes s_1..s_{M+1} and the reserved pulls T − T' of DP-BAI (eqs. 4–8)."""
    c_d = math.ceil(dim * dim / 4)
    excess = n_arms - c_d
    lam = 2.0 if excess <= 1 else (math.inf if dim == 1 else max(2.0, excess ** (1 / math.log(dim))))
    g = [min(n_arms, c_d)]
    while g[-1] > 1:
        g.append(math.ceil(g[-1] / 2))
    h = [max(n_arms - c_d, 0)]
    while h[-1] > 0:
        h.append(max(math.ceil((h[-1] + 1) / lam) - 1, 0))
    m1, m = len(h) - 1, len(h) - 1 + len(g) - 1
    sizes = [g[0] + h[p - 1] for p in range(1, m1 + 1)] + [g[p - m1 - 1] for p in range(m1 + 1, m + 2)]
    return sizes, m1 * dim + (m - m1) * c_d


def dp_bai(features: np.ndarray, budget: int, epsilon: float, widths: np.ndarray, uniforms: list[float],
           rng: np.random.Generator, noise: str = "numpy") -> int:
    """DP-BAI (Algorithm 1) one pull at a time: per phase Max-Det arms, m_p pulls each, Laplace(1/(ε m_p)) noise.

    ``noise="opendp"``: each phase's means get their noise from one OpenDP call (a measurement per phase).
    """
    k, dim = features.shape
    sizes, reserved = dp_bai_schedule(k, dim)
    n_phases = len(sizes) - 1
    t_prime = budget - reserved
    active = np.arange(k)
    used = 0
    for phase in range(n_phases):
        x = features[active]
        _, sigma, vt = np.linalg.svd(x, full_matrices=False)
        rank = int(np.sum(sigma > max(x.shape) * 2.2e-13 * sigma[0]))
        coords = x if rank == x.shape[1] else x @ vt[:rank].T
        if rank * rank < active.size:  # Max-Det collection of `rank` arms, extrapolation α
            subsets = np.array(list(itertools.combinations(range(active.size), rank)))
            basis = subsets[int(np.argmax(np.abs(np.linalg.det(coords[subsets]))))]
            alpha = np.linalg.solve(coords[basis].T, coords.T).T
            pulled = active[basis]
        else:
            alpha, pulled = np.eye(active.size), active
        pulls = math.ceil(t_prime / (n_phases * pulled.size))
        if used + pulls * pulled.size > budget:
            pulls = (budget - used) // pulled.size
        sums = np.zeros(pulled.size)
        for slot, arm in enumerate(pulled.tolist()):
            for _ in range(pulls):  # one pull at a time
                sums[slot] += min(1.0, widths[arm] * uniforms[used])
                used += 1
        if noise == "opendp":
            noisy = opendp_adder("float", 1.0 / (epsilon * pulls))(sums / pulls)
        else:
            noisy = sums / pulls + rng.laplace(0.0, 1.0 / (epsilon * pulls), size=pulled.size)
        estimates = alpha @ noisy
        order = np.argsort(-estimates, kind="stable")
        active = np.sort(active[order[: sizes[phase + 1]]])
    return int(active[0])


def sequential_halving(n_arms: int, budget: int, widths: np.ndarray, uniforms: list[float]) -> int:
    """Sequential Halving: ⌈log₂K⌉ rounds of round-robin pulls, ⌊T/(|S_r|·R)⌋ per arm, keep the top half."""
    rounds = math.ceil(math.log2(n_arms))
    surviving = np.arange(n_arms)
    used = 0
    for _ in range(rounds):
        size = surviving.size
        pulls = budget // (size * rounds)
        sums = np.zeros(size)
        arms = surviving.tolist()
        for i in range(size * pulls):  # one pull at a time, round robin
            slot = i % size
            sums[slot] += widths[arms[slot]] * uniforms[used]
            used += 1
        order = np.argsort(-sums, kind="stable")
        surviving = np.sort(surviving[order[: -(-size // 2)]])
    return int(surviving[0])


# --------------------------------------------------------------------------- kernel


def usca_learning(frequencies: np.ndarray, weights: np.ndarray, actions: np.ndarray, contexts: np.ndarray,
                  rewards: list[float], steps: int) -> np.ndarray:
    """USCA's learning stage one round at a time: b += φ(x_t, c_t)·y_t with trigonometric features φ."""
    m = frequencies.shape[0]
    scale = np.sqrt(weights)
    reward_vector = np.zeros(2 * m)
    for t in range(steps):
        phase = frequencies @ np.array([actions[t, 0], contexts[t, 0]])
        reward_vector[:m] += scale * np.cos(phase) * rewards[t]
        reward_vector[m:] += scale * np.sin(phase) * rewards[t]
    return reward_vector
