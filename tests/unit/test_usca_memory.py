"""The exact USCA backend's peak memory matches its documented formula (issue 15).

The formula, :func:`~dpbandits.algorithms.kernel.surrogate.exact_kernel_peak_bytes`, is what the
``max_exact_size`` guard and its error message use. The peak is measured with :mod:`tracemalloc`
(NumPy reports its array buffers to it) over the whole pipeline of one run: construction (γ̂, the
M × M factor, the certified sup), the learning data, the exact mechanism probabilities at many
contexts (far more query points than one chunk) and one private prediction.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpbandits.algorithms.kernel.surrogate import exact_kernel_peak_bytes, exact_query_chunk
from dpbandits.algorithms.kernel.usca import USCA
from dpbandits.envs.kernel import KernelBanditEnvironment


@pytest.mark.parametrize("kernel", ["se", "matern"])
def test_exact_backend_peak_memory_matches_its_formula(kernel: str) -> None:
    env = KernelBanditEnvironment(kernel=kernel, function_seed=2)
    horizon = 150
    contexts = env.sample_contexts(horizon, rng=1)
    test_contexts = env.sample_contexts(24, rng=2)
    tracemalloc.start()
    try:
        agent = USCA(horizon=horizon, epsilon=1.0, reward_bound=1.5, kernel=env.kernel,
                     context_generator=env.sample_contexts, backend="kernel", clip=True, rng=3,
                     sup_max_evaluations=12_288)
        agent.observe(contexts, env.sample_rewards(agent.learning_actions, contexts, rng=4))
        log_p = agent.mechanism_log_probabilities(test_contexts)  # 24 x 1024 query points at once
        agent.recommend(test_contexts[0], rng=5, insecure_seeded_noise=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    m = agent.approx_size
    assert m >= 1000 and log_p.size > 20 * exact_query_chunk(m)  # large enough to test the chunking
    formula = exact_kernel_peak_bytes(m, horizon)
    assert 0.5 <= peak / formula <= 2.0, (m, peak, formula)


def test_formula_is_about_eleven_m_squared_for_large_m() -> None:
    m = 48_000
    assert exact_kernel_peak_bytes(m, 500) == pytest.approx(11 * m**2, rel=0.01)
    assert exact_kernel_peak_bytes(100, 10) == 8 * 100**2 + 8 * 6 * 256 * 110
    assert np.isclose(exact_query_chunk(100_000), 6250)


def _evaluation_peak(agent: USCA, env: KernelBanditEnvironment, contexts: np.ndarray) -> tuple[tuple[float, ...], int]:
    from dpbandits.algorithms.kernel.usca import _evaluate

    tracemalloc.start()
    try:
        metrics = _evaluate(agent, env, contexts)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return metrics, peak


@pytest.mark.slow  # about 5 s of CPU: a USCA build and 40 contexts x 1024 grid points evaluated
def test_the_evaluation_metrics_memory_does_not_grow_with_contexts_times_grid() -> None:
    # issue 38: a study cell held the scores, the true rewards and their features for every (context,
    # grid point) pair at once; in blocks of whole contexts its peak stays that of one block
    from dpbandits.algorithms.kernel.evaluation import expected_regret, grid_points, grid_reward_table

    env = KernelBanditEnvironment(function_seed=0)
    agent = USCA(horizon=50, epsilon=1.0, reward_bound=1.5, kernel=env.kernel, context_generator=env.sample_contexts,
                 clip=True, rng=3)
    contexts = env.sample_contexts(50, rng=1)
    agent.observe(contexts, env.sample_rewards(agent.learning_actions, contexts, rng=4))
    test_contexts = env.sample_contexts(32, rng=2)
    agent._surrogate_mean(grid_points(agent.grid, test_contexts[:1]))  # the coefficients, outside the measure
    few, few_peak = _evaluation_peak(agent, env, test_contexts[:8])
    many, many_peak = _evaluation_peak(agent, env, test_contexts)
    assert agent.grid.shape[0] * 8 >= 8192  # eight contexts fill one block
    assert many_peak < 1.5 * few_peak, f"32 contexts: {many_peak / 2**20:.1f} MiB, 8: {few_peak / 2**20:.1f} MiB"
    # the same numbers as all contexts at once
    scores = agent._surrogate_mean(grid_points(agent.grid, test_contexts)).reshape(32, -1)
    truth = grid_reward_table(env, agent.grid, test_contexts)
    log_p = agent.mechanism_log_probabilities(test_contexts)
    assert many[0] == pytest.approx(float(np.mean(expected_regret(truth, np.exp(log_p)))), rel=1e-12)
    assert many[1] == pytest.approx(float(np.max(np.abs(scores - truth))), rel=1e-12)
    assert many[2] == pytest.approx(float(np.mean(expected_regret(truth, np.full(truth.shape, 1 / truth.shape[1])))),
                                    rel=1e-12)
    assert few != many
