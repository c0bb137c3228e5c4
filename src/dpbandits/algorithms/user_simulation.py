"""Run a user's algorithm in a study: drive an agent class across trials, or call a simulate function.

The study runner calls a simulation entry point ``simulate(env, *, n_trials, rng, **params)`` for
each chunk of trials of a cell. For a user's algorithm named by import path (see
:mod:`dpbandits.algorithms.user_imports`) that entry point is one of the picklable callables here;
they hold only the import path, so the process and Dask backends' workers import the user's module
themselves.

Driving an agent class
----------------------
:class:`AgentSimulation` builds one agent per trial with keyword arguments, each passed only if the
constructor accepts it:

* the environment's public description: ``n_arms`` (K) and, on a linear environment, ``features``;
* the cell's parameters (the algorithm's fixed parameters and the grid's swept ones, such as
  ``budget``, ``horizon``, ``epsilon``), which the study passes because the constructor names them;
* ``rng``: a :class:`numpy.random.Generator` of the trial's own algorithm stream, and
  ``insecure_seeded_noise=True``: a study is a simulation, and the same seed must give the same
  numbers on every backend (deployments leave both out and get secure noise).

Seeding order, as for the built-ins: the chunk's seed sequence is split into the environment stream
(first) and the algorithm stream (second), which is split again into one stream per trial. The
agents of a chunk are driven in lockstep, one step of every unfinished trial at a time:

* **multi-armed and linear environments** (kind ``"mab"`` / ``"linear"``): ``arm = agent.ask()``,
  then ``agent.tell(arm, reward)`` with the reward of the environment's pull-consistent reward
  streams, until ``agent.done``; then ``agent.recommendation`` must be an arm. Metrics: ``success``
  (the recommended arm is a best arm), ``simple_regret`` (μ* − μ of the recommended arm) and
  ``cumulative_regret`` (Σ_t μ* − μ_{arm_t} over the pulls);
* **dueling environments** (kind ``"dueling"``): ``(i, j) = agent.ask()``, then
  ``agent.tell((i, j), winner=w)`` (a self-duel i = j is told ``first_wins=``, as for the built-in
  dueling agents), until ``agent.done``. Metrics: every regret of
  :data:`dpbandits.envs.dueling.REGRET_METRICS`, summed over the duels.

An agent that asks for more steps than the ``budget`` or ``horizon`` it was given (10⁷ if it was
given neither), asks for something that is not an arm, or raises, fails the cell with a
:class:`~dpbandits._core.errors.UserAlgorithmError` naming the algorithm, the trial and the step.
"""

from __future__ import annotations

import inspect
import reprlib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandits._core.errors import InsecureNoiseWarning, UserAlgorithmError
from dpbandits._core.rng import spawn_seed_sequences
from dpbandits.algorithms.user_imports import load_user_object
from dpbandits.envs.dueling import REGRET_METRICS
from dpbandits.privacy.guarantees import Guarantee

__all__ = [
    "AGENT_METRICS",
    "PROPORTION_METRICS",
    "RUNNER_SUPPLIED",
    "AgentSimulation",
    "FunctionSimulation",
    "UserCalls",
    "class_privacy_statement",
    "environment_kind",
    "guarantee_statement",
    "has_member",
]

AGENT_METRICS: dict[str, tuple[str, ...]] = {
    "mab": ("success", "simple_regret", "cumulative_regret"),
    "linear": ("success", "simple_regret", "cumulative_regret"),
    "dueling": REGRET_METRICS,
}
"""The metrics the runner computes for a driven agent, per environment kind."""

PROPORTION_METRICS: tuple[str, ...] = ("success",)

RUNNER_SUPPLIED: tuple[str, ...] = ("n_arms", "features", "rng", "insecure_seeded_noise")
"""Constructor arguments the runner fills in itself (a study may not set them)."""

_STEP_LIMIT = 10**7
_RUNNER_ARGUMENTS = ("env", "n_trials", "rng")


def environment_kind(env: Any) -> str:
    """The kind of a built environment: ``"mab"``, ``"linear"``, ``"dueling"``, ... ."""
    kind = getattr(env, "kind", None)
    if isinstance(kind, str):
        return kind
    if hasattr(env, "pair_costs"):
        return "dueling"
    return type(env).__name__


def _step_limit(params: Mapping[str, Any]) -> int:
    for name in ("budget", "horizon"):
        value = params.get(name)
        if isinstance(value, int | np.integer) and not isinstance(value, bool) and value > 0:
            return int(value)
    return _STEP_LIMIT


class UserCalls:
    """Calls into a user's object; its exceptions become one-line :class:`UserAlgorithmError` naming where.

    ``where`` is the place in words (``"trial 3, step 17"``, ``"audit run, step 5"``). Used by the
    study runner here and by the audit's runner (:mod:`dpbandits.audit.user_inputs`).
    """

    def __init__(self, target: str) -> None:
        self.target = target

    def fail(self, where: str, what: str) -> UserAlgorithmError:
        """The error to raise: ``algorithm 'target' (where): what``."""
        return UserAlgorithmError(f"algorithm {self.target!r} ({where}): {what}")

    def call(self, where: str, verb: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)``; an exception of the user's code is re-raised as theirs."""
        try:
            return function(*args, **kwargs)
        except UserAlgorithmError:
            raise
        except Exception as exc:
            raise self.fail(where, f"{verb} raised {type(exc).__name__}: {exc}") from exc

    def arm(self, where: str, value: Any, n_arms: int, what: str) -> int:
        """``value`` as an arm of 0..K−1, or a one-line error saying what returned it."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= int(value) < n_arms:
            raise self.fail(where, f"{what} {value!r} is not an arm in 0..{n_arms - 1}")
        return int(value)


_UNCHECKED = "its agents' own statement: a study does not check it, dpbandits audit does"


def guarantee_statement(privacy: object) -> str:
    """A user's agent's ``privacy`` as the summary's privacy line says it, without its ε and δ values.

    A :class:`~dpbandits.privacy.guarantees.Guarantee` reads ``"ε-DP [replace-one] protecting one entry
    of the reward table (...)"`` (``(ε, δ)-DP`` for an approximate one; the values are the study's, printed
    after it); an infinite one (``NonPrivate``) ``"none (non-private): <its reason>"``; any other
    value its ``str``.
    """
    if isinstance(privacy, Guarantee):
        if not privacy.is_finite:
            return f"none (non-private): {getattr(privacy, 'reason', '') or 'its agents state no finite guarantee'}"
        kind = "(ε, δ)-DP" if privacy.delta > 0.0 else "ε-DP"
        relation = getattr(privacy.neighbouring, "value", privacy.neighbouring)
        return f"{kind} [{relation}] protecting {privacy.unit} ({_UNCHECKED})"
    return f"{privacy} ({_UNCHECKED})"


def class_privacy_statement(cls: type) -> str | None:
    """The privacy statement an agent class declares as a class attribute (``privacy`` or ``PRIVACY``), if any.

    A ``privacy`` property, or an attribute set in ``__init__``, is read from an agent instead
    (:meth:`AgentSimulation.privacy_statement`).
    """
    for name in ("privacy", "PRIVACY"):
        try:
            found = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(found, Guarantee | str) and str(found):
            return guarantee_statement(found)
    return None


def has_member(agent: Any, name: str) -> bool:
    """Whether ``agent`` has ``name`` (on its class or set on the instance), without evaluating a property.

    The one test of an agent's or policy's members, for the study runner and the audit alike: a
    method, a property (not evaluated: it may need a run first) or an attribute set in ``__init__``;
    an object with ``__getattr__`` is asked when driven.
    """
    try:
        inspect.getattr_static(agent, name)
    except AttributeError:
        return callable(getattr(type(agent), "__getattr__", None))  # dynamic attributes: asked when driven
    return True


class _TrialCalls(UserCalls):
    """Calls into the agents of one chunk of trials; places name the trial by its index in the cell."""

    def __init__(self, target: str, first_trial: int) -> None:
        super().__init__(target)
        self.first_trial = first_trial

    def at(self, trial: int, step: int) -> str:
        """``"trial i, step t"``: i is the cell's index of the chunk's ``trial``-th trial."""
        return f"trial {self.first_trial + trial}, step {step}"


@dataclass(frozen=True)
class AgentSimulation:
    """The simulation entry point of a user's agent class, named by its import path (picklable).

    Parameters
    ----------
    target : str
        ``"package.module:AgentClass"``.
    first_trial : int, default 0
        The index in its cell of the first trial this entry point runs (the study runner sets it per
        chunk of trials), so that an error names the trial as the cell numbers it.
    """

    target: str
    first_trial: int = 0

    def _agent_class(self) -> Any:
        return load_user_object(self.target)

    def _constructor(self) -> inspect.Signature:
        try:
            return inspect.signature(self._agent_class())
        except (TypeError, ValueError) as exc:
            raise UserAlgorithmError(f"algorithm {self.target!r}: cannot read its constructor's signature") from exc

    @property
    def __signature__(self) -> inspect.Signature:
        """``(env, *, n_trials, rng, <the constructor's parameters but the runner's own>)``."""
        own = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY) for name in _RUNNER_ARGUMENTS[1:]]
        taken = [
            parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            if parameter.kind is not inspect.Parameter.VAR_KEYWORD else parameter
            for parameter in self._constructor().parameters.values()
            if parameter.name not in (*RUNNER_SUPPLIED, *_RUNNER_ARGUMENTS)
            and parameter.kind is not inspect.Parameter.VAR_POSITIONAL
        ]
        first = inspect.Parameter("env", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        var_keyword = [p for p in taken if p.kind is inspect.Parameter.VAR_KEYWORD]
        return inspect.Signature([first, *own, *[p for p in taken if p not in var_keyword], *var_keyword])

    def build_agents(self, env: Any, params: Mapping[str, Any], seeds: list[np.random.SeedSequence]) -> list[Any]:
        """One agent per trial: public description, the cell's parameters, the trial's own stream."""
        cls = self._agent_class()
        accepted = self._constructor().parameters
        any_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        public: dict[str, Any] = {"n_arms": int(env.n_arms)}
        if hasattr(env, "features"):
            public["features"] = np.asarray(env.features)
        given = {name: value for name, value in public.items() if name in accepted or any_keyword}
        caller = _TrialCalls(self.target, self.first_trial)
        agents = []
        with warnings.catch_warnings():
            # a study is a simulation: seeded noise is asked for on purpose (see the module docstring)
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            for trial, seed in enumerate(seeds):
                seeded: dict[str, Any] = {}
                if "rng" in accepted:
                    seeded["rng"] = np.random.default_rng(seed)
                if "insecure_seeded_noise" in accepted:
                    seeded["insecure_seeded_noise"] = True
                agent = caller.call(caller.at(trial, 0), "the constructor", cls, **given, **params, **seeded)
                missing = [name for name in ("done", "recommendation") if not has_member(agent, name)]
                if missing:
                    raise caller.fail(caller.at(trial, 0), f"the agent has no {' and no '.join(missing)}: an agent "
                                      "needs ask(), tell(...), done and recommendation (methods, properties or "
                                      "attributes set in __init__)")
                agents.append(agent)
        return agents

    def privacy_statement(self, env: Any, params: Mapping[str, Any]) -> str | None:
        """The privacy statement of one agent built as a study builds it (its ``privacy``), or None.

        For the summary's privacy line: an agent class that sets ``self.privacy`` in ``__init__`` (or
        has a ``privacy`` property) states its guarantee on an instance only.
        """
        (agent,) = self.build_agents(env, params, [np.random.SeedSequence(0)])
        if not has_member(agent, "privacy"):
            return None
        privacy = UserCalls(self.target).call("reading its privacy", "privacy", getattr, agent, "privacy")
        return guarantee_statement(privacy) if privacy is not None else None

    def __call__(self, env: Any, *, n_trials: int, rng: Any, **params: Any) -> dict[str, np.ndarray]:
        """Run ``n_trials`` trials of the user's agent on ``env`` (see the module docstring)."""
        kind = environment_kind(env)
        if kind not in AGENT_METRICS:
            raise UserAlgorithmError(
                f"algorithm {self.target!r}: agent classes run on {sorted(AGENT_METRICS)} environments, not "
                f"{kind!r}; write a vectorised simulate function for it instead"
            )
        env_seed, algorithm_seed = spawn_seed_sequences(rng, 2)  # order: environment, algorithm
        agents = self.build_agents(env, params, algorithm_seed.spawn(n_trials))
        streams = env.streams(env_seed, n_trials)
        drive = _drive_dueling if kind == "dueling" else _drive_arms
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureNoiseWarning)
            return drive(_TrialCalls(self.target, self.first_trial), env, streams, agents, _step_limit(params))


def _done(caller: _TrialCalls, trial: int, step: int, agent: Any) -> bool:
    return bool(caller.call(caller.at(trial, step), "done", getattr, agent, "done"))


def _unfinished(caller: _TrialCalls, agents: list[Any], active: list[int], step: int, limit: int) -> list[int]:
    still = [trial for trial in active if not _done(caller, trial, step, agents[trial])]
    if still and step >= limit:
        raise caller.fail(caller.at(still[0], step), f"not done after {limit} steps (its budget or horizon)")
    return still


def _drive_arms(caller: _TrialCalls, env: Any, streams: Any, agents: list[Any], limit: int) -> dict[str, np.ndarray]:
    """Multi-armed or linear environment: ask an arm, tell its reward, recommend an arm."""
    n_arms, n_trials = int(env.n_arms), len(agents)
    means = np.asarray(env.means, dtype=np.float64)
    best_mean = float(means.max())
    cumulative = np.zeros(n_trials)
    step = 0
    active = _unfinished(caller, agents, list(range(n_trials)), step, limit)
    while active:
        step += 1
        arms = np.array([caller.arm(caller.at(trial, step), caller.call(caller.at(trial, step), "ask()",
                                                                       agents[trial].ask), n_arms, "ask() returned")
                         for trial in active], dtype=np.int64)
        rewards = streams.pull(arms, trials=np.array(active, dtype=np.int64))
        for trial, arm, reward in zip(active, arms.tolist(), rewards.tolist(), strict=True):
            caller.call(caller.at(trial, step), "tell()", agents[trial].tell, arm, reward)
        cumulative[active] += best_mean - means[arms]  # Σ_t μ* − μ_{arm_t}
        active = _unfinished(caller, agents, active, step, limit)
    recommended = np.array([
        caller.arm(caller.at(trial, step), caller.call(caller.at(trial, step), "recommendation", getattr, agent,
                                                       "recommendation"), n_arms, "recommendation")
        for trial, agent in enumerate(agents)
    ], dtype=np.int64)
    chosen = means[recommended]
    return {"success": (chosen == best_mean).astype(np.float64), "simple_regret": best_mean - chosen,
            "cumulative_regret": cumulative}


def _drive_dueling(caller: _TrialCalls, env: Any, streams: Any, agents: list[Any], limit: int) -> dict[str, np.ndarray]:
    """Dueling environment: ask a pair, tell the winner; regret from the pairs played."""
    n_arms, n_trials = int(env.n_arms), len(agents)
    pair_counts = np.zeros((n_trials, n_arms, n_arms), dtype=np.int64)
    step = 0
    active = _unfinished(caller, agents, list(range(n_trials)), step, limit)
    while active:
        step += 1
        for trial in active:
            where = caller.at(trial, step)
            asked = caller.call(where, "ask()", agents[trial].ask)
            if not isinstance(asked, tuple | list) or len(asked) != 2:
                raise caller.fail(where, f"ask() returned {asked!r}, not a pair of arms")
            first = caller.arm(where, asked[0], n_arms, "ask() returned")
            second = caller.arm(where, asked[1], n_arms, "ask() returned")
            first_wins = bool(streams.duel(first, second, trial))
            if first == second:
                caller.call(where, "tell()", agents[trial].tell, (first, second), first_wins=first_wins)
            else:
                winner = first if first_wins else second
                caller.call(where, "tell()", agents[trial].tell, (first, second), winner=winner)
            pair_counts[trial, first, second] += 1
        active = _unfinished(caller, agents, active, step, limit)
    return {name: np.asarray(values, dtype=np.float64)
            for name, values in env.regret_from_pair_counts(pair_counts).items()}


@dataclass(frozen=True)
class FunctionSimulation:
    """A user's vectorised simulation function, named by its import path (picklable).

    Parameters
    ----------
    target : str
        ``"package.module:function"`` with the built-ins' signature
        ``simulate(env, *, n_trials, rng, **params) -> {metric: array}``.
    """

    target: str

    @property
    def __signature__(self) -> inspect.Signature:
        """The function's own signature: a study passes it exactly the parameters it accepts."""
        return inspect.signature(load_user_object(self.target))

    def __call__(self, env: Any, *, n_trials: int, rng: Any, **params: Any) -> dict[str, Any]:
        """Run the user's function; its exceptions are reported as the user's."""
        function = load_user_object(self.target)
        caller, where = UserCalls(self.target), f"a chunk of {n_trials} trials"
        output = caller.call(where, "simulate", function, env, n_trials=n_trials, rng=rng, **params)
        if not isinstance(output, Mapping):
            raise caller.fail(where, f"simulate returned {reprlib.repr(output)}, not a mapping "
                                     "{metric: array of shape (n_trials,)}")
        return dict(output)
