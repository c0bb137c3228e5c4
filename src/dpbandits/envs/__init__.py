"""Bandit environments: bounded-reward multi-armed and linear bandits with pull-consistent streams.

Every environment offers ``env.streams(rng, n_trials)`` (per-(trial, arm) streams: the k-th pull of
an arm is the same number whatever the pull order) and ``env.sample_sums(counts, rng)`` (fast,
distribution-exact sums). See :mod:`dpbandits.envs.base` for the stream scheme.

Importing this package is light: each name below is imported from its module when first used (the
readers of logged data, for one, need none of the simulated environments). The environment registry
imports the modules that register environments by name (``BUILTIN_MODULES`` of :mod:`dpbandits.envs.registry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpbandits._core.lazy import lazy_dir, load_lazily

if TYPE_CHECKING:  # the names as the type checker sees them; at run time they come from __getattr__
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

_HOMES = {
    "BanditEnvironment": "base",
    "RewardStreams": "base",
    "LinearBandit": "linear",
    "dp_bai_instance": "linear",
    "dp_bai_two_arm_instance": "linear",
    "BernoulliBandit": "mab",
    "BetaBandit": "mab",
    "ClippedGaussianBandit": "mab",
    "UniformBandit": "mab",
}
"""Public name -> the submodule defining it."""


def __getattr__(name: str) -> Any:
    return load_lazily(__name__, name, _HOMES, globals())


def __dir__() -> list[str]:
    return lazy_dir(globals(), __all__)
