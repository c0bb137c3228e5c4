"""Sizes that cannot fit are refused up front (issue 24): by every constructor with K- or K×K-sized
state and by the study cost model, with one rule (``_core.resources.check_fits``) and one line that
names the parameter. The cost model covers every registered algorithm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError, StudyError
from dpbandits._core.resources import check_fits
from dpbandits.algorithms.bai.sequential_halving import SequentialHalving
from dpbandits.algorithms.bai.uniform import UniformAllocation
from dpbandits.algorithms.dueling.beat_the_mean import BeatTheMean
from dpbandits.algorithms.dueling.colstim import CoLSTIM
from dpbandits.algorithms.dueling.copeland_confidence_bound import CopelandConfidenceBound
from dpbandits.algorithms.dueling.double_thompson import DoubleThompsonSampling, simulate_double_thompson
from dpbandits.algorithms.dueling.dp_ebs_elimination import DPEBSElimination
from dpbandits.algorithms.dueling.interleaved_filter import InterleavedFilter
from dpbandits.algorithms.dueling.ldp_ebs_elimination import LDPEBSElimination
from dpbandits.algorithms.dueling.maxinp import MaxInP
from dpbandits.algorithms.dueling.rmed import RMED1
from dpbandits.algorithms.dueling.rucb import RUCB
from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.algorithms.registry import list_algorithms
from dpbandits.algorithms.sizes import PAIRWISE_COSTS
from dpbandits.envs.dueling import finite_instance
from dpbandits.experiments.config import Study
from dpbandits.experiments.costs import ALGORITHM_COSTS, PAIRWISE_ALGORITHMS, check_study_cost, trial_cost

GB = 1e9
HUGE = 10**12


@pytest.mark.parametrize(("name", "build"), [
    ("InterleavedFilter", lambda: InterleavedFilter(n_arms=HUGE, horizon=100)),
    ("DoubleThompsonSampling", lambda: DoubleThompsonSampling(HUGE, 100)),
    ("CopelandConfidenceBound", lambda: CopelandConfidenceBound(HUGE, 100)),
    ("RMED1", lambda: RMED1(HUGE, 100)),
    ("RUCB", lambda: RUCB(HUGE, 100)),
    ("BeatTheMean", lambda: BeatTheMean(HUGE, 100)),
    ("DPEBSElimination", lambda: DPEBSElimination(HUGE, 100, 1.0)),
    ("LDPEBSElimination", lambda: LDPEBSElimination(HUGE, 100, 1.0)),
    ("KLMABPolicy", lambda: KLMABPolicy(HUGE, eta=1.0)),
    ("UniformAllocation", lambda: UniformAllocation(HUGE, HUGE)),  # was a bare MemoryError
])
def test_constructors_refuse_a_number_of_arms_that_cannot_fit(name: str, build: Callable[[], Any]) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        build()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"n_arms = {HUGE}: ") and message.endswith("; lower n_arms"), message
    assert "of memory available here" in message


@pytest.mark.parametrize("algorithm", ["dp-bai", "od-linbai"])
def test_phased_agents_refuse_a_budget_they_cannot_queue(algorithm: str) -> None:
    from dpbandits.algorithms.bai.dp_bai import DPBAI
    from dpbandits.algorithms.bai.od_linbai import ODLinBAI

    build = {"dp-bai": lambda b: DPBAI(np.eye(4), b, 1.0), "od-linbai": lambda b: ODLinBAI(np.eye(4), b)}[algorithm]
    with pytest.raises(InvalidParameterError, match=r"^budget = 10{15}: the queue of phase 1's pulls .* lower budget$"):
        build(10**15).agent(rng=0)
    assert build(1000).agent(rng=0) is not None


def test_sequential_halving_refuses_a_budget_it_cannot_queue() -> None:
    with pytest.raises(InvalidParameterError, match=rf"^budget = {HUGE}: Sequential Halving's queue .* lower budget$"):
        SequentialHalving(4, HUGE)
    assert SequentialHalving(4, 10**5).budget == 10**5  # a budget that fits is accepted


def _contexts(n: int, rng: Any = None) -> np.ndarray:
    return np.random.default_rng(rng).random((n, 1))


def _kernel_options() -> dict[str, Any]:
    from dpbandits.envs.kernel import StationaryKernel

    return {"horizon": 10, "epsilon": 1.0, "reward_bound": 1.0, "kernel": StationaryKernel("se", 0.2), "rng": 0,
            "n_features": 16}


def _usca(**options: Any) -> Any:
    from dpbandits.algorithms.kernel.usca import USCA

    return USCA(**{**_kernel_options(), "context_generator": _contexts, **options})


def _feature_ridge(**options: Any) -> Any:
    from dpbandits.algorithms.kernel.learners import UniformFeatureRidge

    return UniformFeatureRidge(**{**_kernel_options(), **options})


@pytest.mark.parametrize(("parameter", "build"), [
    ("horizon", lambda: _usca(horizon=HUGE)),  # filled memory with the set-up's seeds (then T x dx actions)
    ("n_features", lambda: _usca(n_features=HUGE)),  # a MemoryError with an empty message
    ("n_features", lambda: _usca(n_features=10**6, feature_map="rff")),  # a map that fits, its Gram does not
    ("n_features", lambda: _feature_ridge(n_features=HUGE)),
    ("grid_points_per_dim", lambda: _feature_ridge(grid_points_per_dim=HUGE)),
    ("grid_points_per_dim", lambda: _usca(grid_points_per_dim=HUGE, horizon=2)),
])
def test_kernel_agents_refuse_sizes_that_cannot_fit(parameter: str, build: Callable[[], Any]) -> None:
    with pytest.raises(InvalidParameterError) as caught:
        build()
    message = str(caught.value)
    assert message.startswith(f"{parameter} = ") and message.endswith(f"; lower {parameter}"), message
    assert "of memory available here" in message and "\n" not in message


def test_an_approximating_set_names_the_parameter_that_sized_it() -> None:
    from dpbandits.algorithms.kernel.surrogate import ApproximatingSet

    with pytest.raises(InvalidParameterError, match=r"^horizon = 10{18}: the seeds of an approximating set"):
        ApproximatingSet(10**18, 1, _contexts, 0, size_name="horizon")


@pytest.mark.parametrize("agent", [MaxInP, CoLSTIM])
def test_linear_dueling_agents_refuse_k_by_k_state_that_cannot_fit(agent: Any) -> None:
    # K = 10⁶ arms of one feature (8 MB): their K×K state needs 48 TB
    features = np.linspace(-1.0, 1.0, 10**6)[:, None]
    with pytest.raises(InvalidParameterError, match=r"^n_arms = 1000000: .*K×K state .*; lower n_arms$"):
        agent(features, 100)


@pytest.mark.parametrize(("name", "params", "refusal"), [
    # each was refused only when NumPy failed to allocate it, in a line quoting NumPy
    ("dueling-unit-ball", {"theta": [0.5] * 8, "net": "ball", "resolution": 1e-3},
     r"^resolution = 0\.001: the η-net's grid of \(2m \+ 1\)\^8 points needs at least .*; raise resolution$"),
    ("dp-bai-section5", {"n_arms": HUGE}, rf"^n_arms = {HUGE}: the instance's K arms .*; lower n_arms$"),
    ("kernel-rkhs", {"n_centres": HUGE}, rf"^n_centres = {HUGE}: the function's n_centres x n_centres .*; lower n_centres$"),
])
def test_environments_refuse_sizes_that_cannot_fit(name: str, params: dict[str, Any], refusal: str) -> None:
    from dpbandits.envs.registry import get_environment

    with pytest.raises(InvalidParameterError, match=refusal):
        get_environment(name).factory(**params)


@pytest.mark.parametrize("n_arms", [10**6, HUGE])
def test_a_dueling_instance_refuses_a_preference_matrix_that_cannot_fit(n_arms: int) -> None:
    # was a MemoryError from NumPy (and "out of memory; lower trials..." from a study)
    with pytest.raises(InvalidParameterError, match=rf"^n_arms = {n_arms}: the K×K preference matrix needs at least"):
        finite_instance("f4", n_arms=n_arms)


def test_double_thompson_names_n_arms_not_a_negative_horizon() -> None:
    with pytest.raises(InvalidParameterError) as caught:
        DoubleThompsonSampling(HUGE, 100)
    assert "horizon must be < 0" not in str(caught.value)
    # K within memory but beyond the Beta samples' counter space (4K² >= 2^44)
    from dpbandits.algorithms.dueling import double_thompson

    with pytest.raises(InvalidParameterError, match=r"^n_arms must be < \d+ for double-thompson-sampling"):
        double_thompson._check(3_000_000, 10, 0.51)


def test_double_thompson_simulation_counts_every_trial_of_a_chunk() -> None:
    env = finite_instance("f4", n_arms=4000)  # 192 B per pair: 3.1 GB per trial
    with pytest.raises(InvalidParameterError, match=r"^n_arms = 4000: .* for 1000 trials at once\) needs at least 3.07 TB"):
        simulate_double_thompson(env, n_trials=1000, rng=0, horizon=10)


def test_check_fits_is_the_one_rule() -> None:
    check_fits("n_arms", 10, 80.0, what="x", limit=100.0)
    with pytest.raises(InvalidParameterError, match=r"^n_arms = 20: x needs at least 160 B, more than the 100 B"):
        check_fits("n_arms", 20, 160.0, what="x", limit=100.0)
    with pytest.raises(InvalidParameterError, match="more bytes than a float can count"):
        check_fits("n_arms", 10**400, float("inf"), what="x", limit=100.0)


# ------------------------------------------------------------------ the study cost model
def test_every_registered_algorithm_has_a_cost_model_entry() -> None:
    builtin = [spec.name for spec in list_algorithms() if spec.simulate.__module__.startswith("dpbandits.algorithms.")]
    modelled = set(ALGORITHM_COSTS) | set(PAIRWISE_ALGORITHMS)
    missing = [name for name in builtin if name not in modelled]
    assert not missing, f"no cost model entry (experiments/costs.py) for {missing}"
    stale = sorted(modelled - set(builtin))
    assert not stale, f"cost model entries for unregistered names: {stale}"


def test_every_algorithm_with_k_by_k_state_is_modelled_as_such() -> None:
    assert set(PAIRWISE_ALGORITHMS) == set(PAIRWISE_COSTS)
    for name in ("double-thompson-sampling", "copeland-confidence-bound", "rmed1", "beat-the-mean", "maxinp",
                 "colstim", "rucb", "interleaved-filter"):
        assert name in PAIRWISE_ALGORITHMS


def _dueling(algorithm: str, n_arms: int, horizon: int, trials: int = 1000) -> Study:
    return Study.from_mapping({"name": "k", "seed": 1, "trials": trials, "chunk_size": min(trials, 1000),
                               "environment": {"name": "dueling-f4", "n_arms": n_arms},
                               "algorithms": [{"name": algorithm}], "grid": {"horizon": [horizon]}})


def test_double_thompson_at_4000_arms_is_refused_up_front() -> None:
    with pytest.raises(StudyError) as caught:
        check_study_cost(_dueling("double-thompson-sampling", 4000, 1000), limit_bytes=16 * GB)
    message = str(caught.value)
    assert message.startswith("n_arms: 4000 (algorithm 'double-thompson-sampling'") and "\n" not in message
    assert "lower n_arms, chunk_size or --workers" in message


@pytest.mark.parametrize("algorithm", ["copeland-confidence-bound", "rmed1"])
def test_k_by_k_algorithms_at_3000_arms_are_estimated_honestly(algorithm: str) -> None:
    (cell,) = _dueling(algorithm, 3000, 1000, trials=1).cells()
    cost = trial_cost(cell)
    # measured >= 1.7e-7 s per arm pair and round (K = 200-400): one trial of T = 1000 is 15+ minutes
    assert cost.seconds >= 1e-7 * 3000**2 * 1000 > 600
    assert cost.bytes_per_trial >= 72 * 3000**2
    assert cost.driver == "n_arms" and cost.value == 3000


def test_cost_model_k_follows_the_environment() -> None:
    from dpbandits.experiments.costs import dueling_arms

    assert dueling_arms("dueling-f4", {"n_arms": 300}) == 300
    assert dueling_arms("dueling-f2", {}) == 10
    assert dueling_arms("dueling-utility", {"features": [[0.0], [1.0], [2.0]], "theta": [1.0]}) == 3
    assert dueling_arms("dueling-unit-ball", {"net": "sphere", "n_points": 64}) == 64
