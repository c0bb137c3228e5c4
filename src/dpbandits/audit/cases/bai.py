"""Privacy cases of the fixed-budget best-arm identification family (DP-BAI, DP-BAI-Gauss, Baseline, DP-OD).

Unit: one entry of the reward table (replace-one). The whole output — pull sequence and
recommendation — is a function of the survivor-set path, whose exact law on a tiny instance is
computed by quadrature (:func:`~dpbandits.algorithms.bai.exact_distribution.exact_path_distribution`).
Neighbours set one entry that the algorithm reads to a bound (0 or 1): adversarial by construction,
on a random table and on an extreme one (the best arm all ones, the others all zeros, so that the
outputs sit deep in the noise tails). A statistical case runs the deployed ask/tell agent on its
secure default noise. Negative controls: noise too small for the claim, one arm's noise dropped, and
seeded noise (a known seed makes the recommendation a deterministic function of the table).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from dpbandits._core.errors import InsecureNoiseWarning
from dpbandits.algorithms.bai.dp_bai import DPBAI, Baseline, DPBAIGauss
from dpbandits.algorithms.bai.dp_od import DPOD
from dpbandits.algorithms.bai.exact_distribution import exact_path_distribution
from dpbandits.algorithms.bai.phased import PhasedAlgorithm, PhasePlan, Planner
from dpbandits.audit.contract import NeighbourPair, PrivacyCase, register_privacy_cases, with_power

EPSILON = 0.8
_THREE_ARMS = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.7]])  # K = 3, d = 2: all-arms branch twice
_MAX_DET = np.array([[0.0, 1.0], [0.0, 0.9], [10.0, 0.0], [1.0, 0.3], [1.0, 0.6]])  # max-det branch


def _tables(n_arms: int, n_pulls: int) -> list[np.ndarray]:
    """A random table (fixed seed: the case is deterministic) and an extreme one."""
    extreme = np.zeros((n_arms, n_pulls))
    extreme[0] = 1.0
    return [np.random.default_rng(20261125).uniform(0.0, 1.0, size=(n_arms, n_pulls)), extreme]


def _pairs(tables: Sequence[np.ndarray], arms: Sequence[int], n_pulls: int) -> list[NeighbourPair]:
    pairs = []
    for index, table in enumerate(tables):
        kind = "random" if index == 0 else "extreme"
        for arm in arms:
            for pull in range(n_pulls):
                for value in (0.0, 1.0):
                    if table[arm, pull] != value:
                        neighbour = table.copy()
                        neighbour[arm, pull] = value
                        pairs.append(NeighbourPair(f"{kind} table, entry ({arm}, {pull}) set to {value:g}",
                                                   table, neighbour))
    return pairs


def _aligned_distribution(planner: Planner, pairs: Sequence[NeighbourPair]) -> Callable[[Any], np.ndarray]:
    """Log P(path) over the union of the paths of every input of the case (one output set).

    The laws are computed on the first call (building a case stays cheap).
    """
    laws: dict[bytes, dict[tuple[Any, ...], float]] = {}
    paths: list[tuple[Any, ...]] = []

    def distribution(table: Any) -> np.ndarray:
        if not laws:
            for pair in pairs:
                for candidate in (pair.data, pair.neighbour):
                    key = np.asarray(candidate).tobytes()
                    if key not in laws:
                        laws[key] = exact_path_distribution(planner, candidate)
            paths.extend(sorted({path for law in laws.values() for path in law}))
        law = laws[np.asarray(table).tobytes()]
        with np.errstate(divide="ignore"):
            return np.log(np.array([law.get(path, 0.0) for path in paths]))

    return distribution


class _ScaledNoise:
    """A broken planner: the noise scales of chosen coordinates divided by ``factor``."""

    def __init__(self, planner: Planner, factor: float, coordinates: slice = slice(None)) -> None:
        self._planner, self._factor, self._coordinates = planner, factor, coordinates
        self.n_arms, self.n_phases, self.noise_kind = planner.n_arms, planner.n_phases, planner.noise_kind

    def initial_state(self) -> Hashable:
        return self._planner.initial_state()

    def plan(self, phase: int, state: Hashable) -> PhasePlan:
        plan = self._planner.plan(phase, state)
        scales = plan.noise_scales.copy()
        scales[self._coordinates] /= self._factor
        return dataclasses.replace(plan, noise_scales=scales)

    def next_state(self, phase: int, state: Hashable, plan: PhasePlan, survivors: tuple[int, ...]) -> Hashable:
        return self._planner.next_state(phase, state, plan, survivors)


def _exact_case(name: str, description: str, algorithm: PhasedAlgorithm, planner: Planner,
                tables: Sequence[np.ndarray], arms: Sequence[int], n_pulls: int, *, broken: bool = False,
                control: str = "") -> PrivacyCase:
    pairs = _pairs(tables, arms, n_pulls)
    return PrivacyCase(
        algorithm=name, description=description, claim=algorithm.privacy, pairs=pairs,
        distribution=_aligned_distribution(planner, pairs), broken=broken,
        notes={"control": control} if control else {},
    )


def _run_agent(algorithm: PhasedAlgorithm, table: np.ndarray, seed: int | None,
               rng: np.random.Generator) -> int:
    """One ask/tell run fed the reward table; secure noise, or the known noise ``seed``."""
    if seed is None:
        agent = algorithm.agent(rng)
    else:  # the negative control is insecure on purpose: silence its warning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            agent = algorithm.agent(seed, insecure_seeded_noise=True)
    position = np.zeros(algorithm.planner.n_arms, dtype=np.int64)
    while not agent.done:
        arm = agent.ask()
        agent.tell(arm, float(table[arm, position[arm]]))
        position[arm] += 1
    return agent.recommendation


def _agent_sampler(algorithm: PhasedAlgorithm, seed: int | None = None) -> Callable[[Any, int, np.random.Generator], np.ndarray]:
    """Recommendations of ``n`` ask/tell runs; ``seed`` (a control) reuses one known noise seed."""

    def sample(table: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.array([_run_agent(algorithm, np.asarray(table), seed, rng) for _ in range(n)], dtype=np.int64)

    return sample


def _revealing_seed(algorithm: PhasedAlgorithm, pair: NeighbourPair, rng: np.random.Generator) -> int:
    """A known noise seed under which the neighbours' recommendations differ (what an attacker picks)."""
    for seed in range(1000):
        if _run_agent(algorithm, pair.data, seed, rng) != _run_agent(algorithm, pair.neighbour, seed, rng):
            return seed
    raise AssertionError("no revealing seed among the first 1000")  # pragma: no cover - ~1/2 of seeds reveal


@register_privacy_cases("dp-bai", "dp-bai-baseline", "dp-bai-gauss", "dp-od")
def bai_cases() -> list[PrivacyCase]:
    """Exact audits of every private BAI algorithm, a secure-agent audit, and negative controls."""
    three = [t[:3] for t in _tables(5, 12)]
    five = _tables(5, 12)
    dp_bai = DPBAI(_THREE_ARMS, 20, EPSILON)
    max_det = DPBAI(_MAX_DET, 12, EPSILON)
    gauss = DPBAIGauss(_THREE_ARMS, 20, 2.0, 1e-3, calibration="analytic")
    axis = np.diag([1.0, 1.0, 3.0])  # norms (1, 1, 3): L = 3, projection in phase 2
    extreme_od = np.zeros((3, 12))
    extreme_od[2] = 1.0
    od_tables = [three[0], extreme_od, 1.0 - extreme_od]
    dp_od = DPOD(axis, 16, EPSILON)
    cases = [
        _exact_case("dp-bai", "K=3, all-arms branch, two phases", dp_bai, dp_bai.planner, three, range(3), 8),
        _exact_case("dp-bai", "K=5, Max-Det branch", max_det, max_det.planner, five, [0, 2], 5),
        _exact_case("dp-bai-baseline", "K=3, two phases", Baseline(_THREE_ARMS, 20, EPSILON),
                    Baseline(_THREE_ARMS, 20, EPSILON).planner, three, range(3), 8),
        _exact_case("dp-bai-gauss", "K=3, analytic Gaussian (2, 1e-3)", gauss, gauss.planner, three, range(3), 8),
        _exact_case("dp-od", "axis arms with norms (1, 1, 3), projection", dp_od, dp_od.planner, od_tables,
                    range(3), 8),
        # negative controls
        _exact_case("dp-bai", "noise scale for 2ε while claiming ε", dp_bai, DPBAI(_THREE_ARMS, 20, 2 * EPSILON).planner,
                    three, range(3), 8, broken=True, control="noise too small"),
        _exact_case("dp-bai", "arm 0's noise dropped (scale × 1e-3)", dp_bai, _ScaledNoise(dp_bai.planner, 1e3, slice(0, 1)),
                    three, range(3), 8, broken=True, control="noise dropped"),
        _exact_case("dp-bai-gauss", "Gaussian noise halved", gauss, _ScaledNoise(gauss.planner, 2.0), three,
                    range(3), 8, broken=True, control="noise too small"),
        _exact_case("dp-od", "sensitivity from the smallest norm (noise / 3)", dp_od,
                    DPOD(axis, 16, 3 * EPSILON).planner, od_tables, range(3), 8, broken=True,
                    control="sensitivity understated"),
    ]
    # the deployed ask/tell agent on its secure default noise: K = 2, one phase, the best arm's entry
    two = DPBAI(np.eye(2), 4, 1.0)
    table = np.array([[1.0, 1.0], [0.0, 0.0]])
    flipped = table.copy()
    flipped[0, 0] = 0.0
    pair = [NeighbourPair("K=2: the best arm's only pulled reward set from 1 to 0", table, flipped)]
    agent_case = PrivacyCase("dp-bai", "secure ask/tell agent, K=2", two.privacy, pair, sample=_agent_sampler(two))
    mode = float(np.exp(np.max(_aligned_distribution(two.planner, pair)(table))))
    cases += [with_power(agent_case, mode, "the most likely recommendation", n_events=2, n_samples=n, heavy=n > 2000)
              for n in (2000, 20_000)]
    seed = _revealing_seed(two, pair[0], np.random.default_rng(0))
    cases.append(PrivacyCase("dp-bai", f"ask/tell agent with the known noise seed {seed}", two.privacy, pair,
                             sample=_agent_sampler(two, seed), n_samples=2000, broken=True,
                             notes={"control": "seeded noise"}))
    return cases
