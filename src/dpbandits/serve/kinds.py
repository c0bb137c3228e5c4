"""The experiment kinds a server runs: one registry entry per agent type.

A *kind* (``"dp-bai"``, ``"dp-ebs-elimination"``, ...) names a pydantic model of its parameters and
a builder that turns validated parameters into an agent (an ask/tell agent or a KL-offline policy,
always :class:`~dpbandits._core.persistence.Persistable`). Everything else is shared by its
*family*, which knows how the agents of one protocol look from the outside:

* ``schedule(agent, limit)`` — the next actions known without further feedback, in order (the first
  is ``agent.ask()``). Phased BAI agents know a whole phase, GOptimal-DPDB a whole phase of duels,
  USCA every learning round; DP-EBS-Elimination only its next duel. Agents without ``scheduled()``
  give ``[agent.ask()]``. The server hands these steps out as tickets.
* ``check_feedback`` / ``apply`` — validate one step's feedback (before it is stored) and feed it.
* ``summary`` — the public view: progress, done, and what is already released (recommendation,
  released estimates), never raw feedback or noise.

Adding a kind is one :func:`register_kind` call: a parameter model and a builder, e.g. a non-private
dueling comparator::

    register_kind(ExperimentKind("rucb", DUELING, DuelingParams,
                                 lambda p, seed: RUCB(p.n_arms, p.horizon, rng=seed),
                                 "Relative UCB (non-private)"))

Builders receive ``seed`` = None in deployment (secure OpenDP noise from the OS CSPRNG, fresh public
coins) and an int only on a server started with ``--allow-insecure-seeded-noise`` (tests that replay
a run exactly).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dpbandits._core.errors import InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.serve.limits import usca_max_approx_size
from dpbandits.serve.params import (
    MAX_DIMENSION,
    BAIParams,
    DesignBAIParams,
    DuelingParams,
    FeatureDuelingParams,
    GaussBAIParams,
    KLMABParams,
    USCAParams,
)

__all__ = [
    "BAI",
    "DUELING",
    "KERNEL",
    "OFFLINE",
    "ExperimentKind",
    "Family",
    "get_kind",
    "list_kinds",
    "register_kind",
]

SCHEDULE_LIMIT = 4096
"""At most this many steps of a schedule are handed out at once."""

Action = dict[str, Any]
"""An action as JSON: ``{"arm": 2}``, ``{"pair": [0, 3]}`` or ``{"action": [0.25]}``."""


class Feedback(BaseModel):
    """What a client reports for one ticket (the fields its family needs; the others stay unset).

    Strict JSON types: ``reward: "0.5"`` or ``first_wins: 1`` is refused, not coerced.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    reward: float | None = Field(None, description="BAI and kernel: the observed reward.")
    winner: int | None = Field(None, description="Dueling: the arm that won (one of the pair).")
    first_wins: bool | None = Field(None, description="Dueling: True iff pair[0] won (required for a self-duel).")
    context: list[float] | None = Field(None, max_length=MAX_DIMENSION, description="Kernel: the round's context.")


class Family(ABC):
    """How the agents of one protocol are driven and shown (see the module docstring)."""

    name: str
    interactive: bool = True
    """Whether the agents take ask/tell feedback (False: data is uploaded instead)."""
    run_event: bool = True
    """Whether the guarantee covers the whole run, spent when the experiment is created (False: each
    sample spends the guarantee, against the experiment's budget)."""

    def schedule(self, agent: Any, limit: int = SCHEDULE_LIMIT) -> list[Action]:
        """The next ``limit`` (at most) actions known without further feedback; [] when done."""
        if self.done(agent):
            return []
        scheduled = getattr(agent, "scheduled", None)
        actions = scheduled(limit) if callable(scheduled) else [agent.ask()]
        if isinstance(actions, np.ndarray):  # as Python numbers: NumPy scalars cost ~10x more to encode
            actions = actions.tolist()
        return [self.encode_action(a) for a in actions]

    @abstractmethod
    def encode_action(self, action: Any) -> Action:
        """The agent's action as JSON."""

    @abstractmethod
    def check_feedback(self, agent: Any, action: Action, feedback: Feedback) -> dict[str, Any]:
        """Validate feedback for ``action``; return it normalised (what is stored and applied).

        Raises
        ------
        InvalidParameterError
            Naming the field, the constraint and the value.
        """

    @abstractmethod
    def apply(self, agent: Any, action: Action, payload: dict[str, Any]) -> None:
        """Feed one step's normalised feedback to the agent (``action`` is its ``ask()``)."""

    @abstractmethod
    def done(self, agent: Any) -> bool:
        """Whether the agent takes no more feedback."""

    @abstractmethod
    def steps_total(self, agent: Any) -> int | None:
        """The number of steps a run takes at most (budget or horizon)."""

    def steps_taken(self, agent: Any) -> int | None:
        """The number of steps applied so far (what a done run took: phases may end under the budget)."""
        return None

    def recommendation(self, agent: Any) -> Any:
        """The released recommendation once done (post-processing of released values), else None."""
        return None

    def estimates(self, agent: Any) -> dict[str, Any] | None:
        """Released per-arm estimates for the status plot: ``{"label", "arms", "values"}`` or None."""
        return None

    def guarantee(self, agent: Any) -> Guarantee:
        """The guarantee of the run (ask/tell kinds) or of one release (sampling kinds)."""
        return agent.privacy

    def release_guarantee(self, agent: Any, params: Any) -> Guarantee:
        """The guarantee of one release, known when the experiment is created (before any data)."""
        return self.guarantee(agent)

    def sample(self, agent: Any, size: int, context: list[float] | None, seed: Any) -> list[Any]:
        """Draw ``size`` private samples (the caller has spent ``size`` × :meth:`guarantee` first).

        ``seed`` is None (secure noise) or a SeedSequence (insecure seeded noise, tests only).
        """
        raise InvalidParameterError(f"a {self.name} experiment releases no samples; read its status")

    def summary(self, agent: Any) -> dict[str, Any]:
        """The public view of the agent (see the module docstring)."""
        done = self.done(agent)
        estimates = self.estimates(agent)
        if estimates is not None:  # JSON has no infinity: a non-finite value is shown as missing
            estimates["values"] = [v if math.isfinite(v) else None for v in estimates["values"]]
        # once done, the total is what the run took (a DP-BAI run may end a few pulls under its budget)
        total = self.steps_taken(agent) if done else None
        return {"done": done, "steps_total": self.steps_total(agent) if total is None else total,
                "recommendation": self.recommendation(agent) if done else None, "estimates": estimates}


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be a finite number; got {value!r}")
    return float(value)


def _only(feedback: Feedback, allowed: tuple[str, ...], family: str) -> None:
    extra = [name for name in ("reward", "winner", "first_wins", "context")
             if getattr(feedback, name) is not None and name not in allowed]
    if extra:
        raise InvalidParameterError(f"{family} feedback takes only {list(allowed)}; got also {extra}")


class _BAIFamily(Family):
    """Fixed-budget best-arm identification: action ``{"arm": i}``, feedback ``{"reward": r}``."""

    name = "bai"

    def encode_action(self, action: Any) -> Action:
        return {"arm": int(action)}

    def check_feedback(self, agent: Any, action: Action, feedback: Feedback) -> dict[str, Any]:
        _only(feedback, ("reward",), "bai")
        if feedback.reward is None:
            raise InvalidParameterError("reward is required for a best-arm identification experiment; got none")
        reward = _finite("reward", feedback.reward)
        low, high = agent._bounds
        if not (low <= reward <= high) and not agent._clip:
            raise InvalidParameterError(
                f"reward must lie in [{low}, {high}] (the privacy calibration assumes it; create the "
                f"experiment with clip_rewards=true to clip); got {reward!r}"
            )
        return {"reward": reward}

    def apply(self, agent: Any, action: Action, payload: dict[str, Any]) -> None:
        agent.tell(action["arm"], payload["reward"])

    def done(self, agent: Any) -> bool:
        return bool(agent.done)

    def steps_total(self, agent: Any) -> int | None:
        return int(agent.get_params()["algorithm"].budget)

    def steps_taken(self, agent: Any) -> int | None:
        return int(np.sum(agent.pulls))

    def recommendation(self, agent: Any) -> Any:
        return {"arm": int(agent.recommendation)}

    def estimates(self, agent: Any) -> dict[str, Any] | None:
        # μ̃ of each arm in the last phase it was active: post-processing of the released z = M·S + ξ
        if not agent.phase_log:
            return None
        active = list(range(agent.pulls.shape[0]))
        latest: dict[int, float] = {}
        for entry in agent.phase_log:
            for arm, value in zip(active, entry["estimates"], strict=True):
                latest[arm] = float(value)
            active = [int(a) for a in entry["survivors"]]
        arms = sorted(latest)
        return {"label": "released noisy mean estimate (last phase each arm was active)",
                "arms": arms, "values": [latest[a] for a in arms]}

    def guarantee(self, agent: Any) -> Guarantee:
        return agent.get_params()["algorithm"].privacy


class _DuelingFamily(Family):
    """Dueling bandits: action ``{"pair": [i, j]}``, feedback ``{"winner": i}`` or ``{"first_wins": b}``."""

    name = "dueling"

    def encode_action(self, action: Any) -> Action:
        return {"pair": [int(action[0]), int(action[1])]}

    def check_feedback(self, agent: Any, action: Action, feedback: Feedback) -> dict[str, Any]:
        _only(feedback, ("winner", "first_wins"), "dueling")
        first, second = action["pair"]
        if (feedback.winner is None) == (feedback.first_wins is None):
            raise InvalidParameterError("dueling feedback needs exactly one of winner and first_wins; got "
                                        f"winner={feedback.winner!r}, first_wins={feedback.first_wins!r}")
        if feedback.first_wins is not None:
            return {"first_wins": bool(feedback.first_wins)}
        if first == second:
            raise InvalidParameterError(f"winner cannot say which side of the self-duel {[first, second]} won; "
                                        "send first_wins instead")
        if feedback.winner not in (first, second):
            raise InvalidParameterError(f"winner must be one of the pair {[first, second]}; got {feedback.winner!r}")
        return {"first_wins": feedback.winner == first}

    def apply(self, agent: Any, action: Action, payload: dict[str, Any]) -> None:
        pair = tuple(action["pair"])
        if agent.ask() != pair:  # the agents take the outcome of their last asked pair
            raise InvalidActionError(f"the agent's next pair is {agent.ask()}, not the scheduled {pair}")
        agent.tell(pair, first_wins=payload["first_wins"])

    def _horizon(self, agent: Any) -> int:
        return int(agent.get_params()["horizon"])

    def done(self, agent: Any) -> bool:
        return bool(agent.time >= self._horizon(agent))

    def steps_total(self, agent: Any) -> int | None:
        return self._horizon(agent)

    def steps_taken(self, agent: Any) -> int | None:
        return int(agent.time)

    def recommendation(self, agent: Any) -> Any:
        if hasattr(agent, "recommendation"):
            return {"arm": int(agent.recommendation)}
        if getattr(agent, "committed", False):
            return {"arm": int(agent._committed_arm)}
        scores = self._utilities(agent)
        return None if scores is None else {"arm": int(scores[0][int(np.argmax(scores[1]))])}

    def _utilities(self, agent: Any) -> tuple[list[int], list[float]] | None:
        """GOptimal-DPDB: x_iᵀθ̃ of the active arms from the last released θ̃ (post-processing)."""
        thetas = getattr(agent, "theta_estimates", None)
        if not thetas:
            return None
        active = [int(a) for a in agent.active]
        features = np.asarray(agent.features)
        values = features[active] @ np.asarray(thetas[-1])  # θ̃ is in the arms' coordinates
        return active, [float(v) for v in values]

    def estimates(self, agent: Any) -> dict[str, Any] | None:
        released = getattr(agent, "_released", None)
        if released is not None:  # DP-EBS: w̃_i / n_i, the released counters over the public counts
            active = agent.active_arms
            counts = agent._left_counts
            arms = [a for a in active if counts[a] > 0]
            if not arms:
                return None
            return {"label": "released noisy win rate as left arm (active arms)", "arms": arms,
                    "values": [float(released[a] / counts[a]) for a in arms]}
        utilities = self._utilities(agent)
        if utilities is None:
            return None
        return {"label": "released utility estimate x_i·θ̃ (active arms)", "arms": utilities[0],
                "values": utilities[1]}


class _KernelFamily(Family):
    """USCA: action ``{"action": x}``, feedback ``{"context": c, "reward": y}``; releases by sampling."""

    name = "kernel"
    run_event = False

    def encode_action(self, action: Any) -> Action:
        return {"action": [float(v) for v in np.ravel(action)]}

    def check_feedback(self, agent: Any, action: Action, feedback: Feedback) -> dict[str, Any]:
        _only(feedback, ("reward", "context"), "kernel")
        if feedback.reward is None or feedback.context is None:
            raise InvalidParameterError("kernel feedback needs context and reward")
        context = [_finite("context", v) for v in feedback.context]
        if len(context) != agent.context_dim:
            raise InvalidParameterError(f"context must have {agent.context_dim} coordinates; got {len(context)}")
        reward = _finite("reward", feedback.reward)
        if not agent.clip and (abs(reward) > agent.reward_bound or any(not 0.0 <= c <= 1.0 for c in context)):
            raise InvalidParameterError(
                f"reward must lie in [-{agent.reward_bound}, {agent.reward_bound}] and context in [0, 1]; "
                f"got reward={reward!r}, context={context!r}"
            )
        return {"context": context, "reward": reward}

    def apply(self, agent: Any, action: Action, payload: dict[str, Any]) -> None:
        agent.tell(payload["context"], payload["reward"])

    def done(self, agent: Any) -> bool:
        return bool(agent.rounds_observed >= agent.horizon)

    def steps_total(self, agent: Any) -> int | None:
        return int(agent.horizon)

    def steps_taken(self, agent: Any) -> int | None:
        return int(agent.rounds_observed)

    def sample(self, agent: Any, size: int, context: list[float] | None, seed: Any) -> list[Any]:
        if context is None:
            raise InvalidParameterError("context is required to sample a USCA recommendation; got none")
        seeded = {} if seed is None else {"rng": seed, "insecure_seeded_noise": True}
        draws = agent.recommend(context, size=size, **seeded)
        return [[float(v) for v in row] for row in np.reshape(draws, (size, -1))]


class _OfflineFamily(Family):
    """KL-offline policies: no ask/tell; upload logged data, then sample private actions."""

    name = "offline"
    interactive = False
    run_event = False

    def schedule(self, agent: Any, limit: int = SCHEDULE_LIMIT) -> list[Action]:
        return []

    def encode_action(self, action: Any) -> Action:
        return {"arm": int(action)}

    def check_feedback(self, agent: Any, action: Action, feedback: Feedback) -> dict[str, Any]:
        raise InvalidParameterError("an offline experiment takes no feedback: upload logged data instead")

    def apply(self, agent: Any, action: Action, payload: dict[str, Any]) -> None:
        raise InvalidParameterError("an offline experiment takes no feedback")

    def done(self, agent: Any) -> bool:
        return hasattr(agent, "log_probabilities_")

    def steps_total(self, agent: Any) -> int | None:
        return None

    def guarantee(self, agent: Any) -> Guarantee:
        # over the declared public domain (min_count): an ordinary DP guarantee, data-independent. The
        # MAB policy gives it before fit too; an experiment samples only once its data are uploaded
        # (checked here, before the release spawns its isolated job)
        self._require_data(agent)
        return agent.guarantee(scope="domain")

    def _require_data(self, agent: Any) -> None:
        """Refuse to sample before the upload: 409 ``not_ready``, whichever step asks first."""
        if not self.done(agent):
            raise NotFittedError("upload the logged data before sampling")

    def release_guarantee(self, agent: Any, params: Any) -> Guarantee:
        # the same ε, from the public parameters (the policy is not fitted yet)
        from dpbandits.privacy.guarantees import Neighbouring, PureDP

        return PureDP(epsilon=params.sample_epsilon(), unit="one logged record (one sample over the declared domain)",
                      neighbouring=Neighbouring.ADD_REMOVE,
                      reference="Zhang et al. (2025), Theorem 1 eq. (9) at N_min = min_count")

    def sample(self, agent: Any, size: int, context: list[float] | None, seed: Any) -> list[Any]:
        if context is not None:
            raise InvalidParameterError("an offline MAB policy samples without a context; got one")
        self._require_data(agent)
        seeded = {} if seed is None else {"rng": seed, "insecure_seeded_noise": True}
        return [int(a) for a in np.atleast_1d(agent.sample(size=size, **seeded))]

    def read_upload(self, params: Any, path: str, *, file_format: str, action_column: str, reward_column: str,
                    clip: bool) -> Any:
        """Stream an uploaded CSV or Parquet file into per-arm statistics (K and R from ``params``)."""
        from dpbandits.envs.readers import read_bandit_statistics

        return read_bandit_statistics(path, n_arms=params.n_arms, reward_bound=params.reward_bound,
                                      action_column=action_column, reward_column=reward_column, clip=clip,
                                      file_format=file_format)

    def fit(self, agent: Any, statistics: Any) -> None:
        """Fit the policy to :meth:`read_upload`'s statistics (refused outside the declared domain)."""
        agent.fit_statistics(statistics.counts, statistics.reward_sums)

    def summary(self, agent: Any) -> dict[str, Any]:
        return {"done": False, "fitted": self.done(agent), "steps_total": None, "recommendation": None,
                "estimates": None}


BAI: Family = _BAIFamily()
DUELING: Family = _DuelingFamily()
KERNEL: Family = _KernelFamily()
OFFLINE: Family = _OfflineFamily()


@dataclass(frozen=True)
class ExperimentKind:
    """One registry entry: a name, its family, its parameter model and its builder.

    Attributes
    ----------
    name : str
        Kebab-case (``"dp-bai"``).
    family : Family
    params : type of pydantic.BaseModel
        The parameters a client sends (validated, extra fields refused).
    build : callable
        ``build(params, seed) -> agent``; ``seed`` is None for secure noise (see the module docstring).
    description : str
    load_overrides : callable, optional
        ``load_overrides(params) -> dict``: constructor arguments the state format cannot hold
        (callables), passed again to ``from_bytes``.
    warm_loads : bool, default False
        Whether a process that built or loaded an agent of some parameters loads another agent of
        the same parameters in a fraction of a second, whatever its state's size (its algorithm's
        plans are kept per process, keyed by public parameters: DP-BAI's planners).
    """

    name: str
    family: Family
    params: type[BaseModel]
    build: Callable[[Any, int | None], Persistable]
    description: str
    load_overrides: Callable[[Any], dict[str, Any]] | None = None
    warm_loads: bool = False

    def load(self, params: BaseModel, state: bytes) -> Persistable:
        """Rebuild an agent of this kind from its stored bytes."""
        overrides = {} if self.load_overrides is None else self.load_overrides(params)
        return Persistable.from_bytes(state, **overrides)


_KINDS: dict[str, ExperimentKind] = {}


def register_kind(kind: ExperimentKind) -> ExperimentKind:
    """Add ``kind`` to the registry (a name registered twice is an error)."""
    if kind.name in _KINDS and _KINDS[kind.name] is not kind:
        raise InvalidParameterError(f"experiment kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> ExperimentKind:
    """The registered kind ``name``.

    Raises
    ------
    InvalidParameterError
        Listing the registered kinds.
    """
    try:
        return _KINDS[name]
    except KeyError:
        raise InvalidParameterError(f"kind must be one of {sorted(_KINDS)}; got {name!r}") from None


def list_kinds() -> list[ExperimentKind]:
    """Every registered kind, by name."""
    return [_KINDS[name] for name in sorted(_KINDS)]


# ----------------------------------------------------------------------------------- builders
def _insecure(seed: int | None) -> dict[str, Any]:
    return {} if seed is None else {"rng": seed, "insecure_seeded_noise": True}


def _build_dp_bai(p: BAIParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.bai import DPBAI

    return DPBAI(p.feature_matrix(), p.budget, p.epsilon, clip_rewards=p.clip_rewards).agent(**_insecure(seed))


def _build_dp_bai_gauss(p: GaussBAIParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.bai import DPBAIGauss

    # the analytic calibration (Balle & Wang 2018) holds for every ε; the classical one for ε < 1 only
    algorithm = DPBAIGauss(p.feature_matrix(), p.budget, p.epsilon, p.delta, calibration="analytic",
                           clip_rewards=p.clip_rewards)
    return algorithm.agent(**_insecure(seed))


def _build_baseline(p: BAIParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.bai import Baseline

    return Baseline(p.feature_matrix(), p.budget, p.epsilon, clip_rewards=p.clip_rewards).agent(**_insecure(seed))


def _build_dp_od(p: DesignBAIParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.bai import DPOD

    return DPOD(p.feature_matrix(), p.budget, p.epsilon, clip_rewards=p.clip_rewards).agent(**_insecure(seed))


def _build_dp_ebs(p: DuelingParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.dueling import DPEBSElimination

    return DPEBSElimination(p.n_arms, p.horizon, p.epsilon, **_insecure(seed))


def _build_ldp_ebs(p: DuelingParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.dueling import LDPEBSElimination

    return LDPEBSElimination(p.n_arms, p.horizon, p.epsilon, rng=seed)  # no central noise: users randomise


def _build_goptimal(p: FeatureDuelingParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.dueling import GOptimalDPDB

    return GOptimalDPDB(np.asarray(p.features, dtype=float), p.horizon, p.epsilon, **_insecure(seed))


@dataclass(frozen=True)
class UniformContexts:
    """The context law κ of served USCA experiments: uniform on [0, 1]^dc (the algorithm's own coins)."""

    context_dim: int

    def __call__(self, size: int, rng: Any) -> np.ndarray:
        return np.asarray(rng.random((size, self.context_dim)))


def _build_usca(p: USCAParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.kernel import USCA
    from dpbandits.envs.kernel import StationaryKernel

    # M = T·⌈T/γ̂⌉ is known once γ̂ is: USCA refuses an approximating set whose set-up exceeds the limit
    return USCA(horizon=p.horizon, epsilon=p.epsilon, reward_bound=p.reward_bound,
                kernel=StationaryKernel(p.kernel, p.length_scale), context_generator=UniformContexts(p.context_dim),
                action_dim=p.action_dim, context_dim=p.context_dim, clip=p.clip, rng=seed,
                max_approx_size=usca_max_approx_size(p.horizon, p.kernel, p.dim))


def _usca_overrides(p: USCAParams) -> dict[str, Any]:
    return {"context_generator": UniformContexts(p.context_dim)}


def _build_kl_mab(p: KLMABParams, seed: int | None) -> Persistable:
    from dpbandits.algorithms.offline import KLMABPolicy

    return KLMABPolicy(p.n_arms, p.eta, p.beta0, reward_bound=p.reward_bound, min_count=p.min_count)


for _kind in (
    ExperimentKind("dp-bai", BAI, BAIParams, _build_dp_bai,
                   "DP-BAI (Chen et al. 2024, Alg. 1): ε-DP fixed-budget best arm, one reward protected",
                   warm_loads=True),
    ExperimentKind("dp-bai-gauss", BAI, GaussBAIParams, _build_dp_bai_gauss,
                   "DP-BAI-Gauss (Alg. 2): (ε, δ)-DP with Gaussian noise", warm_loads=True),
    ExperimentKind("baseline-bai", BAI, BAIParams, _build_baseline,
                   "Baseline of Chen et al. (2024): every active arm pulled, Laplace noise", warm_loads=True),
    ExperimentKind("dp-od", BAI, DesignBAIParams, _build_dp_od,
                   "DP-OD: ε-DP optimal-design linear best-arm identification"),
    ExperimentKind("dp-ebs-elimination", DUELING, DuelingParams, _build_dp_ebs,
                   "DP-EBS-Elimination (Saha & Asi 2024, Alg. 1): ε-DP dueling, one preference label protected"),
    ExperimentKind("ldp-ebs-elimination", DUELING, DuelingParams, _build_ldp_ebs,
                   "LDP-EBS-Elimination: local DP baseline; clients send randomised-response labels"),
    ExperimentKind("goptimal-dpdb", DUELING, FeatureDuelingParams, _build_goptimal,
                   "GOptimal-DPDB (Saha & Asi 2024, Alg. 2): ε-DP linear dueling"),
    ExperimentKind("usca", KERNEL, USCAParams, _build_usca,
                   "USCA (Pavlovic et al. 2025): ε-jointly-DP kernelised contextual bandit; sample after T rounds",
                   _usca_overrides),
    ExperimentKind("kl-mab", OFFLINE, KLMABParams, _build_kl_mab,
                   "KL-regularised offline MAB policy (Zhang et al. 2025): upload logged data, sample actions"),
):
    register_kind(_kind)
