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
