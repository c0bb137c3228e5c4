"""GOptimal-DPDB: ε-DP dueling bandits on large (or infinite, via a net) decision spaces.

Phased elimination with G-optimal exploration over pair differences (the paper's formulas
were lost; the reconstruction is errata DUEL-9 to DUEL-15). In phase ℓ (accuracy ε_ℓ = 2^{−ℓ}):

1. the pairs (x, y) of active arms (index order, x − y ≠ 0) give differences z_xy = x − y;
2. a G-optimal design π_ℓ on {z_xy} (Frank–Wolfe + Carathéodory, :func:`dpbandits.algorithms.bai.
   designs.g_optimal_design`, in coordinates of span{z}) with g_ℓ = g(π_ℓ), support S_ℓ of size m_ℓ;
3. every support pair is played t_ℓ(x, y) = ⌈π_ℓ(x, y)·N_ℓ⌉ times in a row, with (errata DUEL-10)

       N_ℓ = 9·g_ℓ·ln(6K²L_T/δ)/(κ²ε_ℓ²) + 1[ε < ∞]·2·m_ℓ·g_ℓ·ln(2m_ℓL_T/δ)/(κ·ε·ε_ℓ),

   L_T = ⌈log₂T⌉, K = number of arms (net size), δ = failure probability (default 1/T);
4. the per-pair win counts are privatised once, W̃ = W + Lap(1/ε), and clipped to
   [½, t − ½] (post-processing that guarantees a root);
5. the private MLE θ̂_ℓ solves Σ_s (t_s·σ(θᵀz_s) − W̄_s)·z_s = 0 in span{z} (Newton's method with
   Armijo backtracking on the convex loss Σ t·softplus(θᵀz) − W̄·θᵀz), phase-ℓ data only;
6. x survives iff max_y θ̂ᵀ(y − x) <= c_elim·ε_ℓ (c_elim = 2: UCB/LCB with half-width ε_ℓ).

With one arm left (or no distinct pair) it commits to (a, a).

Where this implementation settles what the paper leaves open: κ defaults to σ'(2·S_θ) = σ'(2) (the
slope at θ*; ``kappa="li_et_al"`` gives σ'(4)); Li et al.'s λ_min condition is only recorded as a
diagnostic by default ("warn"; errata DUEL-12; ``lambda_min_check="enforce"`` raises N_ℓ until it holds,
capped at T; "off" skips it); inside a phase nothing depends
on that phase's data, so the vectorised simulation draws each pair's wins as one Binomial
(``feedback="binomial"``) or, for exact agreement with the ask/tell agent, reads the
pull-consistent per-pair streams (``feedback="streams"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits._core.errors import PrivacyBudgetExceededError
from dpbandits._core.persistence import Persistable, register_state_dataclass
from dpbandits._core.rng import RNGLike
from dpbandits._core.schema import Array, Instance, Int, ListOf, Maybe, Noise, StateSchema, Tuple, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import (
    check_array,
    check_int,
    check_one_of,
)
from dpbandits.algorithms.bai.designs import g_optimal_design
from dpbandits.algorithms.dueling._common import check_dueling_env, check_told
from dpbandits.algorithms.dueling._goptimal_design import REFERENCE as REFERENCE
from dpbandits.algorithms.dueling._goptimal_design import UNIT as UNIT
from dpbandits.algorithms.dueling._goptimal_design import (
    GOptimalSettings,
    _lambda_min_condition,
    _play_counts,
    _release_wins,
    _settings,
    _span_basis,
    goptimal_dpdb_guarantee,
    phase_play_count,
    private_logistic_mle,
)
from dpbandits.algorithms.dueling._streams import trial_seed_sequences, trial_streams
from dpbandits.algorithms.own_agent import OwnAgent
from dpbandits.algorithms.registry import register_algorithm, register_algorithm_class
from dpbandits.envs.dueling import REGRET_METRICS, DuelStreams, UtilityDuelingEnvironment
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import PureDP
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, privacy_noise

__all__ = [
    "GOptimalDPDB",
    "GOptimalSettings",
    "goptimal_dpdb_guarantee",
    "phase_play_count",
    "private_logistic_mle",
    "simulate_goptimal_dpdb",
]


@register_state_dataclass
@dataclass
class _Phase:
    index: int
    pairs: IntArray  # (m, 2) arm indices, first < second
    counts: IntArray  # t_ℓ(x, y)
    coordinates: FloatArray  # (m, r)
    basis: FloatArray  # (d, r)
    g_value: float
    all_coordinates: FloatArray  # (n_pairs, r): every active difference, for the width diagnostic
    diagnostics: dict[str, Any] = field(default_factory=dict)


def _same_plan(saved: _Phase, plan: _Phase | None) -> bool:
    """Whether a saved phase schedules what the plan of its active set does (pairs and play counts)."""
    return plan is not None and saved.index == plan.index and _same_integers(saved.pairs, plan.pairs) and (
        _same_integers(saved.counts, plan.counts))


def _same_integers(saved: Any, planned: IntArray) -> bool:
    return isinstance(saved, np.ndarray) and saved.dtype == planned.dtype and np.array_equal(saved, planned)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _well_formed(agent: GOptimalDPDB, phase: _Phase) -> bool:
    """Whether a saved phase holds arrays of the shapes and dtypes a plan has (finished phases are history)."""
    k, d = agent.features.shape
    arrays = (phase.pairs, phase.counts, phase.coordinates, phase.basis, phase.all_coordinates)
    if not all(isinstance(a, np.ndarray) for a in arrays):
        return False
    m, r = phase.coordinates.shape if phase.coordinates.ndim == 2 else (-1, -1)
    floats = (phase.coordinates, phase.basis, phase.all_coordinates)
    diagnostics = phase.diagnostics
    return bool(
        phase.pairs.dtype == np.int64 and phase.pairs.shape == (m, 2) and m >= 1
        and ((phase.pairs >= 0) & (phase.pairs < k)).all()
        and phase.counts.dtype == np.int64 and phase.counts.shape == (m,)
        and ((phase.counts >= 0) & (phase.counts <= agent.settings.horizon + 1)).all()
        and all(a.dtype == np.float64 and np.isfinite(a).all() for a in floats)
        and phase.basis.shape == (d, r) and phase.all_coordinates.ndim == 2 and phase.all_coordinates.shape[1] == r
        and _is_number(phase.g_value) and isinstance(diagnostics, dict)
        and all(isinstance(key, str) and (isinstance(value, bool) or _is_number(value) or (
            isinstance(value, list) and all(_is_number(v) for v in value))) for key, value in diagnostics.items()))


def _plays_match_time(agent: GOptimalDPDB, s: dict[str, Any]) -> bool:
    """Whether a state's time, slot, plays in the slot and wins are those of its phases' schedules."""
    phases, slot, played, wins = s["phases"], s["_slot"], s["_played_in_slot"], s["_wins"]
    finished = sum(int(p.counts.sum()) for p in phases[:-1])
    if s["_committed_arm"] is not None:
        if not phases:
            return slot == played == 0 and wins.size == 0
        last = phases[-1].counts
        return (slot == last.size and played == 0 and wins.shape == last.shape and bool((wins <= last).all())
                and s["time"] >= finished + int(last.sum()))
    counts = phases[-1].counts
    return (s["time"] == finished + int(counts[:slot].sum()) + played
            and int(wins[slot]) <= played and not wins[slot + 1:].any())


def _last_arm(agent: GOptimalDPDB) -> int:
    return int(agent.features.shape[0]) - 1


def _plan_phase(
    features: FloatArray, active: IntArray, phase: int, settings: GOptimalSettings
) -> _Phase | None:
    """Design and play counts of phase ℓ, or None when no pair of distinct vectors remains."""
    first, second = np.triu_indices(active.size, k=1)
    pairs = np.stack([active[first], active[second]], axis=1)
    z = features[pairs[:, 0]] - features[pairs[:, 1]]
    keep = np.linalg.norm(z, axis=1) > 0
    pairs, z = pairs[keep], z[keep]
    if pairs.shape[0] == 0:
        return None
    basis, _ = _span_basis(z)
    coords = z @ basis
    design = g_optimal_design(coords, tol=settings.fw_tol)
    support = np.asarray(design.support)
    weights = np.asarray(design.weights)[support]
    total = phase_play_count(settings, phase, design.g_value, support.size)
    counts = _play_counts(weights, total, settings.horizon)  # t_ℓ = ⌈π·N_ℓ⌉, capped at T + 1
    diagnostics: dict[str, Any] = {"g": float(design.g_value), "support": int(support.size), "N": float(total)}
    if settings.lambda_min_check == "enforce":
        # raise N_ℓ until λ_min(V_ℓ) >= the requirement (V_ℓ grows linearly in N_ℓ), capped at T: a
        # function of the public schedule only, so privacy is unaffected
        base = total
        for _ in range(8):
            lambda_min, required = _lambda_min_condition(coords[support], counts, settings)
            if lambda_min >= required or total >= settings.horizon:
                break
            total = min(float(settings.horizon), total * required / lambda_min * (1.0 + 1e-9))
            counts = _play_counts(weights, total, settings.horizon)
        diagnostics.update({"N": float(total), "N_enforcement_factor": float(total / base)})
    return _Phase(phase, pairs[support], counts, coords[support], basis, float(design.g_value), coords, diagnostics)


def _finish_phase(
    plan: _Phase, noisy: FloatArray, features: FloatArray, active: IntArray, settings: GOptimalSettings,
) -> tuple[IntArray, FloatArray]:
    """Clip the released sums W̃, estimate θ̂ and eliminate; returns (new active set, θ̂)."""
    counts = plan.counts.astype(np.float64)
    clipped = np.clip(noisy, 0.5, counts - 0.5)  # W̄ = clip(W̃, ½, t − ½)
    phi = private_logistic_mle(plan.coordinates, counts, clipped)
    theta = plan.basis @ phi
    scores = features[active] @ theta
    accuracy = 2.0 ** (-plan.index)
    survivors = active[scores.max() - scores <= settings.c_elim * accuracy]  # max_y θ̂ᵀ(y − x) <= c·ε_ℓ
    plan.diagnostics.update(_width_diagnostics(plan, settings))
    plan.diagnostics["noisy_wins"] = noisy.tolist()
    return survivors, theta


def _width_diagnostics(plan: _Phase, settings: GOptimalSettings) -> dict[str, float | bool]:
    """Lemma 7's confidence width over the phase's differences, and Li et al.'s λ_min condition.

    width = 3/(2κ)·√ln(1/δ₁)·max_z ‖z‖_{V⁻¹} + u/(κε)·max_z ‖z‖_{V⁻¹}·Σ_{s∈S} ‖z_s‖_{V⁻¹}, with
    δ₁ = δ/(6K²L_T) and u = ln(2mL_T/δ); the play counts make it <= ε_ℓ (Corollary 2).
    λ_min(V) >= 8/κ⁴·(r² + ln(1/δ₁)) is Li, Lu & Zhou's condition (3), recorded unless
    ``lambda_min_check="off"`` (errata DUEL-12; "enforce" has already raised N_ℓ to meet it).
    Everything here depends on the public schedule only, not on the data.
    """
    counts = plan.counts.astype(np.float64)
    gram = (plan.coordinates * counts[:, None]).T @ plan.coordinates  # V_ℓ in span coordinates
    inverse = np.linalg.inv(gram)
    norms_all = np.sqrt(np.einsum("ij,jk,ik->i", plan.all_coordinates, inverse, plan.all_coordinates))
    norms_support = np.sqrt(np.einsum("ij,jk,ik->i", plan.coordinates, inverse, plan.coordinates))
    k, lt, delta, kappa = settings.n_arms, settings.phase_union, settings.failure_probability, settings.kappa
    log_inv_delta1 = math.log(6 * k * k * lt / delta)  # ln(1/δ₁)
    width = 1.5 / kappa * math.sqrt(log_inv_delta1) * float(norms_all.max())
    if math.isfinite(settings.epsilon):
        u = math.log(2 * counts.size * lt / delta)
        width += u / (kappa * settings.epsilon) * float(norms_all.max()) * float(norms_support.sum())
    out: dict[str, float | bool] = {"confidence_width": width, "accuracy": 2.0 ** (-plan.index)}
    if settings.lambda_min_check != "off":
        lambda_min, required = _lambda_min_condition(plan.coordinates, plan.counts, settings)
        out.update({"lambda_min": lambda_min, "lambda_min_required": required, "lambda_min_ok": lambda_min >= required})
    return out


@register_algorithm_class("goptimal-dpdb", non_private="goptimal-dpdb-nonprivate")
class GOptimalDPDB(OwnAgent, Persistable):
    """Ask/tell GOptimal-DPDB agent on a finite arm set (a net for infinite spaces).

    Parameters
    ----------
    features : array_like (K, d)
        The arms (for the unit ball: a net, see :func:`dpbandits.envs.dueling.ball_grid_net`).
    horizon : int
        T.
    epsilon : float
        ε > 0, or ``inf`` for the non-private twin (same code path, no noise, N^priv = 0).
    failure_probability : float, optional
        δ (default 1/T); not a DP parameter.
    kappa : float or {"slope_at_theta", "li_et_al"}, default "slope_at_theta"
        κ = σ'(2·S_θ) or σ'(2·(S_θ + 1)), or a value in (0, ¼].
    theta_bound : float, default 1.0
        S_θ >= ‖θ*‖.
    fw_tol : float, default 0.01
        The design stops at g <= (1 + fw_tol)·r.
    c_elim : float, default 2.0
    play_count_scale : float, default 1.0
        Multiplies N_ℓ; values != 1 are not the paper's schedule (label such runs).
    lambda_min_check : {"warn", "enforce", "off"}, default "warn"
        Li, Lu & Zhou's λ_min(V_ℓ) condition: recorded in ``phases[ℓ].diagnostics``
        ("warn"), met by raising N_ℓ (capped at T; "enforce", an ablation), or not computed ("off").
    rng : int, SeedSequence, Generator or None
        The trial's seed (its privacy-noise child seeds the noise only with ``insecure_seeded_noise``).
    noise_backend : NoiseBackend, optional
        Source of the noise; default the secure OpenDP backend (exact discrete Laplace on the
        integer per-pair win counts).
    insecure_seeded_noise : bool, default False
        Seed the noise from ``rng`` (reproduces the vectorised simulation; not private in
        deployment; warns).
    accountant : Accountant, optional
        Records the run's guarantee before any noise is drawn (an over-budget run raises
        :class:`PrivacyBudgetExceededError` at construction). A saved agent loaded under another
        ledger (``load(path, accountant=)``) pays the rest of its run there.

    Privacy
    -------
    Pure ε-DP for one preference label: each label enters exactly one per-(phase, pair) sum, which
    is released once with Laplace(1/ε) noise (sensitivity 1); plays are chosen from earlier phases'
    releases only, so everything else is post-processing (parallel composition over disjoint users).

    References
    ----------
    Saha & Asi (2024), Algorithm 2, Lemma 7–10, Theorem 3 (regret Õ(d⁶/(κε) + d√T/κ)); Li, Lu & Zhou
    (2017), Theorem 1; Lattimore & Szepesvári (2020), Theorem 21.1 (Kiefer–Wolfowitz).
    """

    _schema = StateSchema(
        active=Array("int64", (None,), low=0, high=_last_arm),
        time=Int(0, "settings.horizon"),
        phases=ListOf(Instance(_Phase), min_length=0, max_length="settings.horizon"),
        theta_estimates=ListOf(Array("float64", (lambda a: a.features.shape[1],)), max_length="settings.horizon"),
        _asked=Maybe(Tuple(Int(0, _last_arm), Int(0, _last_arm))),
        _committed_arm=Maybe(Int(0, _last_arm)),
        _slot=Int(0, "settings.horizon"),
        _played_in_slot=Int(0, "settings.horizon"),
        _wins=Array("int64", (None,), low=0),
        _noise=Noise("_noise"),
        rules=[rule("active: distinct sorted arms, at least one", lambda a, s: s["active"].size >= 1
                    and (np.diff(s["active"]) > 0).all()),
               rule("every phase: int64 pairs (m, 2) of arms and counts (m,) within [0, T + 1], finite float64 "
                    "coordinates (m, r), basis (d, r) and differences (n, r), a finite g value, numeric diagnostics",
                    lambda a, s: all(_well_formed(a, p) for p in s["phases"])),
               rule("phases numbered 1, 2, ... with one θ estimate per finished phase",
                    lambda a, s: [p.index for p in s["phases"]] == list(range(1, len(s["phases"]) + 1))
                    and len(s["theta_estimates"]) == len(s["phases"]) - (s["_committed_arm"] is None)),
               rule("the current phase is the plan of the active arms (recomputed from public values)",
                    lambda a, s: s["_committed_arm"] is not None or _same_plan(
                        s["phases"][-1], _plan_phase(a.features, s["active"], len(s["phases"]), a.settings))),
               rule("_slot < the phase's pairs, _played_in_slot < its count, _wins <= counts, one per pair",
                    lambda a, s: s["_committed_arm"] is not None or (
                        s["_wins"].shape == s["phases"][-1].counts.shape
                        and s["_slot"] < s["_wins"].size
                        and s["_played_in_slot"] < s["phases"][-1].counts[s["_slot"]]
                        and (s["_wins"] <= s["phases"][-1].counts).all())),
               rule("time = the plays of the finished phases and slots + _played_in_slot, _wins of the current "
                    "slot <= _played_in_slot and 0 after it (once committed: time >= the plays of every phase, "
                    "_slot past the last phase's pairs, _played_in_slot 0)",
                    _plays_match_time)],
    )

    def __init__(
        self,
        features: Any,
        horizon: int,
        epsilon: float,
        *,
        failure_probability: float | None = None,
        kappa: float | str = "slope_at_theta",
        theta_bound: float = 1.0,
        fw_tol: float = 0.01,
        c_elim: float = 2.0,
        play_count_scale: float = 1.0,
        lambda_min_check: str = "warn",
        rng: RNGLike = None,
        noise_backend: NoiseBackend | None = None,
        insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> None:
        self.features = check_array(features, "features", ndim=2)
        self.settings = _settings(self.features.shape[0], horizon, epsilon, failure_probability, kappa,
                                  theta_bound, fw_tol, c_elim, play_count_scale, lambda_min_check)
        if math.isfinite(self.settings.epsilon):
            # the whole run is one ε-DP release, spent before any noise (with the lineage a load recognises)
            spend(accountant, self.privacy, label=type(self).__name__, lineage=self.lineage)
        noise_seed = trial_streams(rng).noise if insecure_seeded_noise and noise_backend is None else None
        self._noise = privacy_noise(noise_seed, insecure_seeded_noise=insecure_seeded_noise, backend=noise_backend)
        self.active = np.arange(self.settings.n_arms, dtype=np.int64)
        self.time = 0
        self.phases: list[_Phase] = []
        self.theta_estimates: list[FloatArray] = []
        self._asked: tuple[int, int] | None = None
        self._committed_arm: int | None = None
        self._start_phase(1)

    _charges_run = True  # the run's guarantee is spent when built, and when loaded under another ledger

    def _run_finished(self) -> bool:
        return self.time >= self.settings.horizon

    @property
    def privacy(self) -> PureDP:
        """The guarantee (see :func:`goptimal_dpdb_guarantee`)."""
        return goptimal_dpdb_guarantee(self.settings.epsilon)

    @property
    def committed(self) -> bool:
        """Whether the agent plays (a, a) from now on."""
        return self._committed_arm is not None

    @property
    def recommendation(self) -> int:
        """The committed arm; before, the active arm of largest estimated utility xᵀθ̂.

        θ̂ is the last finished phase's (a private release); before the first, the lowest active index.
        """
        if self._committed_arm is not None:
            return self._committed_arm
        if not self.theta_estimates:
            return int(self.active.min())
        utilities = self.features[self.active] @ self.theta_estimates[-1]
        return int(self.active[int(np.argmax(utilities))])

    def _start_phase(self, index: int) -> None:
        plan = None if self.active.size == 1 else _plan_phase(self.features, self.active, index, self.settings)
        if plan is None:
            self._committed_arm = int(self.active.min())
            if not self.phases:  # committed before any phase (e.g. every arm has the same features)
                self._slot, self._played_in_slot = 0, 0
                self._wins = np.zeros(0, dtype=np.int64)
            return
        self.phases.append(plan)
        self._slot, self._played_in_slot = 0, 0
        self._wins = np.zeros(plan.counts.size, dtype=np.int64)
        self._derive_schedule()

    def _derive_schedule(self) -> None:
        """The current phase's pairs and play counts as Python ints (read every round)."""
        plan = self.phases[-1] if self.phases else None
        self._pair_list: list[tuple[int, int]] = [] if plan is None else [(a, b) for a, b in plan.pairs.tolist()]
        self._count_list: list[int] = [] if plan is None else plan.counts.tolist()

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore the state; the current phase is the plan recomputed from public values (never the file's floats)."""
        super()._set_state(state)
        if self._committed_arm is None:
            plan = _plan_phase(self.features, self.active, len(self.phases), self.settings)
            if plan is not None:  # (it is: the schema's rule checked that the saved phase is this plan)
                self.phases[-1] = plan
        self._derive_schedule()

    def ask(self) -> tuple[int, int]:
        """Return the next pair (x, y) of the current phase's schedule."""
        if self._asked is not None:
            return self._asked
        if self.time >= self.settings.horizon:
            raise PrivacyBudgetExceededError(f"horizon={self.settings.horizon} rounds were played")
        if self._committed_arm is not None:
            self._asked = (self._committed_arm, self._committed_arm)
        else:
            self._asked = self._pair_list[self._slot]
        return self._asked

    def scheduled(self, limit: int | None = None) -> list[tuple[int, int]]:
        """The pairs still to play in the current phase, in order; ``ask()`` is the first.

        A phase's pairs and counts are fixed from earlier phases' releases only, so these duels may
        be handed out at once. Once committed, the self-duel (a, a) up to the horizon. Built lazily:
        at most ``limit`` pairs (default: up to the horizon), whatever the phase's play counts.
        """
        left = self.settings.horizon - self.time
        if limit is not None:
            left = min(left, max(int(limit), 0))
        if left <= 0:
            return []
        if self._committed_arm is not None:
            return [(self._committed_arm, self._committed_arm)] * left
        scheduled: list[tuple[int, int]] = []
        played = self._played_in_slot
        for pair, count in zip(self._pair_list[self._slot:], self._count_list[self._slot:], strict=True):
            take = min(count - played, left - len(scheduled))  # built up to the horizon only
            scheduled.extend([pair] * take)
            played = 0
            if len(scheduled) >= left:
                break
        return scheduled

    def tell(self, pair: tuple[int, int], winner: int | None = None, *, first_wins: int | bool | None = None) -> None:
        """Record the outcome: ``winner`` is the arm that won, or ``first_wins`` is True iff ``pair[0]`` won.

        See :meth:`DPEBSElimination.tell <dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination.tell>`.
        """
        _, outcome = check_told(self._asked, pair, winner, first_wins)
        self._asked = None
        self.time += 1
        if self._committed_arm is not None:
            return
        plan = self.phases[-1]
        self._wins[self._slot] += outcome
        self._played_in_slot += 1
        if self._played_in_slot < self._count_list[self._slot]:
            return
        self._slot, self._played_in_slot = self._slot + 1, 0
        if self._slot < plan.counts.size:
            return
        noisy = _release_wins(self._noise, self._wins, self._noise_scale())
        self.active, theta = _finish_phase(plan, noisy, self.features, self.active, self.settings)
        self.theta_estimates.append(theta)
        self._start_phase(plan.index + 1)

    def _noise_scale(self) -> float:
        """Laplace scale of the per-pair sums, 1/ε (0 when ε = ∞; a test's broken variant overrides this)."""
        return 1.0 / self.settings.epsilon


_STREAM_CHUNK = 1 << 16  # duels read from a pair's feedback stream at once (memory constant in T)


def _stream_wins(duels: DuelStreams, pairs: IntArray, played: IntArray) -> IntArray:
    """Wins of ``pairs[s, 0]`` in its next ``played[s]`` duels against ``pairs[s, 1]`` (pull-consistent streams).

    The support pairs are distinct, so each pair's duels are read from its own stream in order, by
    chunks of at most 2¹⁶ duels: the same outcomes as reading them all at once, in memory constant
    in the phase length.
    """
    wins = np.zeros(played.size, dtype=np.int64)
    for slot, ((first, second), count) in enumerate(zip(pairs.tolist(), played.tolist(), strict=True)):
        for start in range(0, count, _STREAM_CHUNK):
            size = min(_STREAM_CHUNK, count - start)
            firsts, seconds = np.full(size, first), np.full(size, second)
            wins[slot] += int(duels.peek(firsts, seconds).sum())
            duels.advance(firsts, seconds)
    return wins


def _run_trial(
    env: UtilityDuelingEnvironment, settings: GOptimalSettings, streams: Any, feedback: str
) -> tuple[FloatArray, bool, int]:
    k = env.n_arms
    features = env.features
    noise = NumpyNoise(streams.noise)
    draws = np.random.default_rng(streams.environment)
    duels = env.streams(streams.environment, 1) if feedback == "streams" else None
    pair_counts = np.zeros((k, k))
    active = np.arange(k, dtype=np.int64)
    t, phase, horizon = 0, 0, settings.horizon
    while t < horizon:
        phase += 1
        plan = None if active.size == 1 else _plan_phase(features, active, phase, settings)
        if plan is None:
            a = int(active.min())
            pair_counts[a, a] += horizon - t
            active = np.array([a])
            break
        played = np.minimum(plan.counts, np.maximum(horizon - t - np.r_[0, np.cumsum(plan.counts)[:-1]], 0))
        if duels is None:  # one Binomial per pair: no adaptivity inside a phase
            wins = draws.binomial(played, env.preference_matrix[plan.pairs[:, 0], plan.pairs[:, 1]])
        else:
            wins = _stream_wins(duels, plan.pairs, played)
        np.add.at(pair_counts, (plan.pairs[:, 0], plan.pairs[:, 1]), played)
        t += int(played.sum())
        if t >= horizon and not np.array_equal(played, plan.counts):
            break  # the horizon ended inside the phase: no estimation
        noisy = _release_wins(noise, wins, 1.0 / settings.epsilon)  # simulation: seeded NumPy noise
        active, _ = _finish_phase(plan, noisy, features, active, settings)
    identified = active.size == 1 and int(active[0]) == env.best_arm
    return pair_counts, identified, phase


_ENVS = ("dueling-unit-ball", "dueling-f1", "dueling-f2", "dueling-f3", "dueling-f4", "dueling-utility")
_METRICS = (*REGRET_METRICS, "identified_best", "phases")


def _simulate(env: UtilityDuelingEnvironment, n_trials: int, rng: RNGLike, horizon: int, epsilon: float,
              options: dict[str, Any]) -> dict[str, FloatArray]:
    check_dueling_env(env)
    feedback = check_one_of(options.pop("feedback"), "feedback", ("binomial", "streams"))
    settings = _settings(env.n_arms, horizon, epsilon, **options)
    n = check_int(n_trials, "n_trials", minimum=1)
    pair_counts = np.zeros((n, env.n_arms, env.n_arms))
    identified, phases = np.zeros(n), np.zeros(n)
    for trial, seq in enumerate(trial_seed_sequences(rng, n)):
        counts, found, n_phases = _run_trial(env, settings, trial_streams(seq), feedback)
        pair_counts[trial], identified[trial], phases[trial] = counts, float(found), float(n_phases)
    return {**env.regret_from_pair_counts(pair_counts), "identified_best": identified, "phases": phases}


@register_algorithm(
    "goptimal-dpdb",
    family="dueling",
    privacy="ε-DP for one preference label",
    metrics=_METRICS,
    proportion_metrics=("identified_best",),
    environments=_ENVS,
)
def simulate_goptimal_dpdb(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    epsilon: float,
    failure_probability: float | None = None,
    kappa: float | str = "slope_at_theta",
    theta_bound: float = 1.0,
    fw_tol: float = 0.01,
    c_elim: float = 2.0,
    play_count_scale: float = 1.0,
    lambda_min_check: str = "warn",
    feedback: str = "binomial",
) -> Mapping[str, FloatArray]:
    """GOptimal-DPDB (Saha & Asi 2024, Algorithm 2), simulated phase by phase.

    Parameters
    ----------
    env : UtilityDuelingEnvironment
        Finite arms, or a net of the unit ball (``dueling-unit-ball``; regret against ‖θ*‖).
    n_trials, rng, horizon, epsilon
        As for the other dueling algorithms (trial k: ``trial_seed_sequences(rng, n)[k]``).
    failure_probability, kappa, theta_bound, fw_tol, c_elim, play_count_scale, lambda_min_check
        As in :class:`GOptimalDPDB`.
    feedback : {"binomial", "streams"}, default "binomial"
        One Binomial per (phase, pair) from the environment stream (fast; no adaptivity inside a
        phase), or the pull-consistent per-pair streams (identical to the ask/tell agent).

    Returns
    -------
    dict of str to ndarray (n_trials,)
        Regret metrics, ``identified_best`` (one arm left and it is the net's best) and ``phases``.

    Privacy
    -------
    ε-DP for one preference label per trial (see :class:`GOptimalDPDB`).

    References
    ----------
    Saha & Asi (2024), Algorithm 2 and Theorem 3; reconstruction in the paper errata (DUEL-9 to DUEL-15).
    """
    options = {"failure_probability": failure_probability, "kappa": kappa, "theta_bound": theta_bound,
               "fw_tol": fw_tol, "c_elim": c_elim, "play_count_scale": play_count_scale,
               "lambda_min_check": lambda_min_check, "feedback": feedback}
    return _simulate(env, n_trials, rng, horizon, epsilon, options)


@register_algorithm(
    "goptimal-dpdb-nonprivate",
    family="dueling",
    privacy="none (non-private)",
    metrics=_METRICS,
    proportion_metrics=("identified_best",),
    environments=_ENVS,
)
def simulate_goptimal_nonprivate(
    env: UtilityDuelingEnvironment,
    *,
    n_trials: int,
    rng: RNGLike,
    horizon: int,
    failure_probability: float | None = None,
    kappa: float | str = "slope_at_theta",
    theta_bound: float = 1.0,
    fw_tol: float = 0.01,
    c_elim: float = 2.0,
    play_count_scale: float = 1.0,
    lambda_min_check: str = "warn",
    feedback: str = "binomial",
) -> Mapping[str, FloatArray]:
    """The ε = ∞ twin of GOptimal-DPDB (exact counts, N^priv = 0); see :func:`simulate_goptimal_dpdb`.

    Privacy
    -------
    None (ε = ∞): a reference point for the private algorithm.

    References
    ----------
    Saha & Asi (2024), Algorithm 2 with ε = ∞; Lattimore & Szepesvári (2020), Algorithm 12
    (phased elimination with G-optimal exploration).
    """
    options = {"failure_probability": failure_probability, "kappa": kappa, "theta_bound": theta_bound,
               "fw_tol": fw_tol, "c_elim": c_elim, "play_count_scale": play_count_scale,
               "lambda_min_check": lambda_min_check, "feedback": feedback}
    return _simulate(env, n_trials, rng, horizon, math.inf, options)
