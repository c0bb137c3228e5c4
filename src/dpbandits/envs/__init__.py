"""Bandit environments: bounded-reward multi-armed and linear bandits with pull-consistent streams.

Every environment offers ``env.streams(rng, n_trials)`` (per-(trial, arm) streams: the k-th pull of
an arm is the same number whatever the pull order) and ``env.sample_sums(counts, rng)`` (fast,
distribution-exact sums). See :mod:`dpbandits.envs.base` for the stream scheme.
"""

from dpbandits.envs.base import BanditEnvironment, RewardStreams
from dpbandits.envs.linear import LinearBandit, dp_bai_instance, dp_bai_two_arm_instance
from dpbandits.envs.mab import BernoulliBandit, BetaBandit, ClippedGaussianBandit, UniformBandit

__all__ = [
    "BanditEnvironment",
    "BernoulliBandit",
    "BetaBandit",
    "ClippedGaussianBandit",
    "LinearBandit",
    "RewardStreams",
    "UniformBandit",
    "dp_bai_instance",
    "dp_bai_two_arm_instance",
]
