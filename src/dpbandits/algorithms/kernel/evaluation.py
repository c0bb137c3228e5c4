"""Shared trial protocol and error-rate evaluation of the kernel family.

One trial draws, from the *environment* stream and in this order: the T learning contexts, T standard
normal reward-noise values, the evaluation contexts, and the prediction context c_{T+1}. The noise is
drawn before any action is known, so every algorithm of a cell sees the same contexts and the same
noise (paired comparisons).

The error rate ER = E_c[max_x f(x, c) − f(x̂(c), c)] (eq. 1) is estimated over ``n_test_contexts``
evaluation contexts with the *exact* output probabilities of the mechanism on the output grid.
Evaluating many contexts from one run is an **evaluation protocol**: the paper's ER is defined for
one c_{T+1}, and answering k contexts privately would cost k·ε.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpbandits._core.rng import RNGLike, as_generator, spawn_seed_sequences
from dpbandits._core.typing import FloatArray
from dpbandits.envs.kernel import KernelBanditEnvironment, joint_points

__all__ = [
    "TrialData",
    "argmax_log_probabilities",
    "draw_trial_data",
    "expected_regret",
    "grid_points",
    "grid_reward_table",
    "score_policy",
    "trial_streams",
]


@dataclass(frozen=True)
class TrialData:
    """Environment randomness of one trial.

    Attributes
    ----------
    contexts : ndarray of shape (T, dc)
    noise : ndarray of shape (T,)
        Standard normal; the reward of round t is f(xₜ, cₜ) + R·noise[t].
    test_contexts : ndarray of shape (n_test, dc)
    next_context : ndarray of shape (dc,)
        c_{T+1}.
    """

    contexts: FloatArray
    noise: FloatArray
    test_contexts: FloatArray
    next_context: FloatArray

    def rewards(self, env: KernelBanditEnvironment, actions: FloatArray) -> FloatArray:
        """Rewards y = f(xₜ, cₜ) + R·ηₜ for the given learning actions (T, dx)."""
        return env.mean_reward(actions, self.contexts) + env.noise_std * self.noise


def trial_streams(rng: RNGLike, n_trials: int) -> list[tuple[np.random.SeedSequence, ...]]:
    """Per-trial (environment, algorithm, privacy-noise) seed sequences, in that order."""
    return [tuple(spawn_seed_sequences(child, 3)) for child in spawn_seed_sequences(rng, n_trials)]


def draw_trial_data(
    env: KernelBanditEnvironment, horizon: int, n_test_contexts: int, rng: RNGLike
) -> TrialData:
    """Draw one trial's environment randomness (order: contexts, noise, test contexts, c_{T+1})."""
    gen = as_generator(rng)
    contexts = env.sample_contexts(horizon, gen)
    noise = gen.standard_normal(horizon)
    test_contexts = env.sample_contexts(n_test_contexts, gen)
    next_context = env.sample_contexts(1, gen)[0]
    return TrialData(contexts, noise, test_contexts, next_context)


def grid_reward_table(env: KernelBanditEnvironment, grid: FloatArray, contexts: FloatArray) -> FloatArray:
    """f(x_j, c_i) for every context i and grid action j, shape (n_contexts, N)."""
    return env.f(joint_points(grid[None, :, :], contexts[:, None, :]))


def expected_regret(reward_table: FloatArray, probabilities: FloatArray) -> FloatArray:
    """max_j f(x_j, c) − Σ_j p_j(c)·f(x_j, c) per context (regret against the best grid action)."""
    return np.asarray(reward_table.max(axis=1) - np.sum(probabilities * reward_table, axis=1))


def grid_points(grid: FloatArray, contexts: FloatArray) -> FloatArray:
    """Joint points (x_j, c_i) for every context i and grid action j, shape (n_contexts·N, D)."""
    joint = joint_points(grid[None, :, :], contexts[:, None, :])
    return joint.reshape(-1, joint.shape[-1])


def argmax_log_probabilities(scores: FloatArray) -> FloatArray:
    """Log-probabilities of the uniform law on each row's argmax set (a non-private greedy choice)."""
    best = scores >= scores.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(best / best.sum(axis=-1, keepdims=True)))


def score_policy(
    env: KernelBanditEnvironment,
    grid: FloatArray,
    data: TrialData,
    log_probabilities: FloatArray,
    chosen_action: FloatArray,
) -> tuple[float, float]:
    """Return (ER over the evaluation contexts, regret of the chosen action at c_{T+1}).

    Parameters
    ----------
    log_probabilities : ndarray of shape (n_test, N)
        The policy's exact output law on the grid at each evaluation context.
    chosen_action : ndarray of shape (dx,)
        The action actually output at ``data.next_context``.
    """
    table = grid_reward_table(env, grid, data.test_contexts)
    error = float(np.mean(expected_regret(table, np.exp(log_probabilities))))
    best_next = float(grid_reward_table(env, grid, data.next_context[None, :]).max())
    return error, best_next - float(env.mean_reward(chosen_action, data.next_context))
