"""The engine shared by the phased fixed-budget BAI algorithms: one plan per phase, two drivers.

DP-BAI, DP-BAI-Gauss, Baseline, OD-LinBAI and DP-OD all proceed in phases. In each phase the
algorithm, knowing only public features and its *state* (the active set, the pulls used so far and
whatever else it needs), fixes a :class:`PhasePlan`: which arms to pull and how many times, how the
per-arm reward sums and fresh noise map to estimates of the active arms, and how many arms survive.
The plan is a deterministic function of the state, so it is computed once per distinct state and
cached — the vectorised driver groups trials that share a state.

Estimates are linear in the phase's reward sums S (pulled arms) and noise ξ::

    μ̃ = W_sum · S + W_noise · ξ,   ξ_j ~ Lap(b_j) or N(0, b_j²) independent, fresh each phase

(DP-BAI: W_sum = α/m, W_noise = α; DP-OD: W_sum = A V⁻¹ Aᵀ_P, W_noise = A V⁻¹.)
The survivors are the ``keep`` active arms with the largest μ̃; ties are broken by uniform random keys
drawn from the algorithm stream (or by the lowest index).

Two drivers run a planner:

* :func:`run_vectorised` — all trials at once (batch dimension first), one ``sample_sums`` call
  and one noise draw per phase.
* :class:`PhasedAgent` — ask/tell, one pull at a time, for use against real feedback.

Random-number consumption is arranged so that, for one trial, both drivers draw the same numbers:
per phase, noise of shape (n_trials, q) (q = length of ξ) from the noise backend, then tie-break keys
of shape (n_trials, |A_p|) from the algorithm stream. With pull-consistent rewards
(:meth:`~dpbandits.envs.base.BanditEnvironment.streams`) the two drivers give identical outputs.
"""

from __future__ import annotations

import math
import sys
import uuid
from abc import ABC, abstractmethod
from array import array
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError, InvalidActionError, InvalidParameterError, NotFittedError
from dpbandits._core.persistence import Persistable
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, spawn_generators, spawned_children
from dpbandits._core.schema import Array, Generator, Int, ListOf, Maybe, Noise, Spec, StateSchema, fail, rule
from dpbandits._core.typing import FloatArray, IntArray
from dpbandits._core.validation import check_arm, check_int, check_one_of, check_real
from dpbandits.algorithms.bai._plans import PhasePlan, Planner, _PlanCache, select_top
from dpbandits.algorithms.bai._vectorised import PhasedResult, run_vectorised
from dpbandits.algorithms.bai._vectorised import SumSampler as SumSampler
from dpbandits.envs.base import BanditEnvironment, segment_sums
from dpbandits.privacy.accounting import Accountant, spend
from dpbandits.privacy.guarantees import Guarantee
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, privacy_noise

__all__ = [
    "PhasePlan",
    "PhasedAgent",
    "PhasedAlgorithm",
    "PhasedResult",
    "Planner",
    "check_reward_bounds",
    "run_vectorised",
    "select_top",
]

_QUEUE_ALWAYS_FITS = 1 << 16
"""Pulls of a phase below which the agent does not check that its queue fits in memory (1 MiB always does)."""
_FLOAT64 = np.float64  # a reward of this exact class takes the fast path of tell (see there)


class PlannerState(Spec):
    """A planner's state, shaped as its initial state: ints where it has ints, sets of arms where it has them.

    A set of arms is a tuple of increasing arm indices (the active arms); an empty tuple in the
    initial state holds such sets (OD-LinBAI's projections). Whether the state has a plan in the
    saved phase is a rule of the agent's schema.
    """

    def check(self, value: Any, obj: Any, where: str) -> Any:
        n_arms = obj._planner.n_arms

        def arms(found: Any) -> tuple[int, ...]:
            if (not isinstance(found, tuple | list) or not all(type(a) is int for a in found)
                    or list(found) != sorted(set(found)) or any(a < 0 or a >= n_arms for a in found)):
                raise fail(where, f"a set of arms is a tuple of increasing indices in [0, {n_arms})", value)
            return tuple(found)

        def like(found: Any, model: Any) -> Any:
            if type(model) is int:
                if type(found) is not int or found < 0:
                    raise fail(where, "shaped as the planner's initial state (an integer >= 0 here)", value)
                return found
            if model == ():
                if not isinstance(found, tuple | list):
                    raise fail(where, "shaped as the planner's initial state (sets of arms here)", value)
                return tuple(arms(item) for item in found)
            if all(type(m) is int for m in model):
                return arms(found)
            if not isinstance(found, tuple | list) or len(found) != len(model):
                raise fail(where, "shaped as the planner's initial state", value)
            return tuple(like(f, m) for f, m in zip(found, model, strict=True))

        return like(value, obj._planner.initial_state())


class Log(Spec):
    """One phase's log entry: names to finite numbers, strings or numeric arrays."""

    def check(self, value: Any, obj: Any, where: str) -> Any:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise fail(where, "a record", value)
        for key, item in value.items():
            ok = (item is None or isinstance(item, bool | int | str)
                  or (isinstance(item, float) and math.isfinite(item))
                  or (isinstance(item, np.ndarray) and item.dtype.kind in "biuf" and bool(np.isfinite(item).all())))
            if not ok:
                raise fail(f"{where}[{key!r}]", "a finite number, a string or a finite numeric array", item)
        return value


def _fits_plan(agent: PhasedAgent, state: dict[str, Any]) -> bool:
    """Whether the saved phase has a plan in the saved planner state that the position and sums fit."""
    plan = agent._planner.plan(state["phase"], state["planner_state"])
    sums = state["sums"]
    return (sums is not None and sums.shape == (plan.pulled.shape[0],)
            and state["position"] < max(int(plan.pulls.sum()), 1))


def _pulls_so_far(plan: PhasePlan, position: int) -> IntArray:
    """n_j: the pulls of each pulled arm of ``plan`` among its first ``position`` (all of one arm in a row)."""
    starts = np.cumsum(plan.pulls) - plan.pulls
    return np.asarray(np.clip(position - starts, 0, plan.pulls), dtype=np.int64)


def _sums_within_bounds(agent: PhasedAgent, state: dict[str, Any]) -> bool:
    """Whether each sum of the current phase is a sum of its n_j rewards within the reward bounds."""
    if state["sums"] is None:
        return True
    sums = state["sums"]
    n = _pulls_so_far(agent._planner.plan(state["phase"], state["planner_state"]), state["position"])
    low, high = agent._bounds
    slack = 1e-9 * n * max(abs(low) if math.isfinite(low) else 0.0, abs(high) if math.isfinite(high) else 0.0, 1.0)
    with np.errstate(invalid="ignore"):  # inf·0 for an arm not pulled yet: that sum must be exactly 0
        below = np.where(n > 0, n * low - slack, 0.0)
        above = np.where(n > 0, n * high + slack, 0.0)
    return bool(np.all((sums >= below) & (sums <= above)))


def _replays(agent: PhasedAgent, state: dict[str, Any]) -> bool:
    """Whether replaying the finished phases gives the saved planner state, pulls and recommendation.

    The phases are replayed from the initial state with phase_log's survivors; the pulls include those
    of the current phase so far.
    """
    cache = _PlanCache(agent._planner)
    state_id, pulls = 0, np.zeros(agent._planner.n_arms, dtype=np.int64)
    survivors: tuple[int, ...] = ()
    for phase, entry in enumerate(state["phase_log"]):
        plan = cache.plan(phase, state_id)
        chosen = entry.get("survivors")
        if not (isinstance(chosen, np.ndarray) and chosen.dtype.kind in "iu" and chosen.shape == (plan.keep,)
                and bool(np.all(np.diff(chosen) > 0)) and bool(np.isin(chosen, plan.active).all())):
            return False
        survivors = tuple(int(a) for a in chosen)
        pulls[plan.pulled] += plan.pulls
        state_id = cache.next_id(phase, state_id, survivors)
    if cache.states[state_id] != state["planner_state"]:
        return False
    if state["phase"] < agent._planner.n_phases:
        plan = cache.plan(state["phase"], state_id)
        pulls[plan.pulled] += _pulls_so_far(plan, state["position"])
        return bool(np.array_equal(pulls, state["pulls"]))
    expected = survivors[0] if survivors else 0  # a single arm: no phase, arm 0
    return bool(np.array_equal(pulls, state["pulls"])) and state["recommendation"] == expected


class PhasedAgent(Persistable):
    """Ask/tell driver of a phased algorithm, for use against real feedback.

    ``arm = agent.ask()`` returns the next arm to pull; ``agent.tell(arm, reward)`` reports its
    reward. After the last phase, ``done`` is True and :attr:`recommendation` holds Î_T.

    A pull's work is one array update and a counter: ``tell`` stores the reward at the pull's place
    in the phase (the order of a phase's pulls is fixed when it starts), and the phase's per-arm sums
    are computed once, at its end, as the vectorised driver computes them.

    Parameters
    ----------
    planner : Planner
    noise : NoiseBackend or None
        Privacy-noise source (use the secure backend in deployment).
    algorithm_rng : numpy.random.Generator
        Tie-break stream.
    reward_bounds : pair of float, default (0, 1)
        Rewards outside are an error unless ``clip_rewards``; the privacy calibration assumes them.
    clip_rewards : bool, default False
        Clip rewards to ``reward_bounds`` (a per-entry map: the sensitivity is unchanged).
    tie_break : {"random", "index"}

    Attributes
    ----------
    done : bool
        Whether every phase has finished (then read :attr:`recommendation`).
    """

    done: bool

    _schema = StateSchema(
        phase=Int(0, "_planner.n_phases"),
        planner_state=PlannerState(),
        position=Int(0, None),
        sums=Maybe(Array("float64", (None,))),
        pulls=Array("int64", ("_planner.n_arms",), low=0),
        phase_log=ListOf(Log(), max_length="_planner.n_phases"),
        recommendation=Maybe(Int(0, lambda agent: agent._planner.n_arms - 1)),
        rng=Generator(),
        noise=Noise("_noise"),
        rules=[rule("one phase_log entry per finished phase; a recommendation exactly when every phase is done",
                    lambda a, s: len(s["phase_log"]) == s["phase"]
                    and (s["recommendation"] is not None) == (s["phase"] == a._planner.n_phases)),
               rule("planner_state has a plan in this phase; position and sums within it",
                    lambda a, s: (s["phase"] == a._planner.n_phases and s["sums"] is None and s["position"] == 0)
                    or _fits_plan(a, s)),
               rule("each sum S_j within [n_j·low, n_j·high] of reward_bounds, n_j the pulls of its arm so far "
                    "in this phase (0 for an arm not pulled yet)", _sums_within_bounds),
               rule("planner_state, pulls and recommendation are those of the finished phases' plans, "
                    "replayed from phase_log's survivors (a subset of the phase's active arms of its size)",
                    _replays)],
    )

    def __init__(self, planner: Planner, noise: NoiseBackend | None, algorithm_rng: np.random.Generator,
                 *, reward_bounds: tuple[float, float] = (0.0, 1.0), clip_rewards: bool = False,
                 tie_break: str = "random", plan_cache: _PlanCache | None = None) -> None:
        self._setup(planner, noise, algorithm_rng, reward_bounds=reward_bounds, clip_rewards=clip_rewards,
                    tie_break=tie_break, plan_cache=plan_cache)

    def _setup(self, planner: Planner, noise: NoiseBackend | None, algorithm_rng: np.random.Generator, *,
               reward_bounds: tuple[float, float], clip_rewards: bool, tie_break: str,
               plan_cache: _PlanCache | None) -> None:
        """The body of ``__init__``; :meth:`PhasedAlgorithm.agent` calls it directly (see there)."""
        self._cache = _PlanCache(planner) if plan_cache is None else plan_cache
        self._algorithm: PhasedAlgorithm | None = None  # set by PhasedAlgorithm.agent (for save/load)
        self._insecure_seeded_noise = False
        self._planner = planner
        self._noise = noise
        self._rng = algorithm_rng
        self._bounds = reward_bounds
        self._clip = clip_rewards
        self._tie_break = tie_break
        # the bounds a reward is accepted within on the fast path of tell(): infinite bounds become ±(largest
        # float), so that one chained comparison also refuses ±inf and NaN (they go to the full check)
        self._accept = (max(reward_bounds[0], -sys.float_info.max), min(reward_bounds[1], sys.float_info.max))
        self._phase = 0
        self._state_id = 0
        self._recommendation: int | None = None
        self.done = False
        self._pulls_done = np.zeros(planner.n_arms, dtype=np.int64)  # pulls of the finished phases
        self.phase_log: list[dict[str, object]] = []
        self._queue = array("q")
        self._position = self._end = 0
        if planner.n_phases == 0:
            self._recommendation, self.done = 0, True  # a single arm
        else:
            self._start_phase()

    def _start_phase(self, restored_sums: FloatArray | None = None) -> None:
        plan = self._plan = self._cache.plan(self._phase, self._state_id)
        total = plan.total_pulls
        if total > _QUEUE_ALWAYS_FITS:  # the check reads the memory limits, which costs more than a short phase
            check_fits("budget", getattr(self._planner, "budget", "?"), 16.0 * total,
                       what=f"the queue of phase {self._phase + 1}'s pulls and their rewards (two arrays)")
        # the data-independent order of the phase's pulls, and a place for each pull's reward, in typed
        # arrays (an item reads as a Python int or float, once per pull): 16 bytes a pull, and nothing for
        # the garbage collector to traverse (a list of millions of ints cost every full collection of a
        # process that keeps the agent, e.g. a server, tens of milliseconds)
        self._queue = array("q", plan.queue_bytes)
        self._rewards = array("d", bytes(8 * total))
        self._position, self._end = 0, total
        # the sums of a phase resumed from a saved state (its pulls before the saved position are zeros here)
        self._restored_sums = restored_sums
        if not total:  # a phase without pulls (budget exhausted): its release is pure noise
            self._finish_phase()

    def _phase_sums(self) -> FloatArray:
        """S_j of each pulled arm over the pulls told so far in this phase.

        Each arm's rewards are added left to right in the order they were told, starting from the sums
        of a resumed phase (whose earlier pulls are zeros here, and adding 0.0 is exact): a phase saved
        and resumed at any pull, as the service does between snapshots, adds up to exactly the sums of
        the uninterrupted phase. (A pairwise or segment sum would differ in the last bit.)

        All arms at once: row j holds arm j's start (the resumed sum, or −0.0 for a new phase), then its
        rewards, then −0.0 up to the longest arm's length, and one cumulative sum along the rows (a
        sequential sum per row) ends in S_j. −0.0 is the exact additive identity of IEEE addition
        (x + (−0.0) = x for every x, ±0.0 included; +0.0 would turn −0.0 into +0.0), so each row's sum
        is that arm's own left-to-right sum, bit for bit.
        """
        values = np.frombuffer(self._rewards, dtype=np.float64)
        plan = self._plan
        rows, width, row_of_pull, column_of_pull = plan.sum_layout
        resumed = self._restored_sums is not None
        sums = (np.array(self._restored_sums, dtype=np.float64).reshape(-1) if resumed
                else np.zeros(plan.pulls.size))
        if not rows.size:
            return sums.reshape(plan.pulls.shape)
        if not resumed and values.size == rows.size * width:  # equal pulls, no start: each row's own sum
            sums[rows] = np.cumsum(values.reshape(rows.size, width), axis=1)[:, -1]
            return sums.reshape(plan.pulls.shape)
        table = np.full((rows.size, width + 1), -0.0)
        if resumed:
            table[:, 0] = sums[rows]
        table[row_of_pull, column_of_pull] = values
        sums[rows] = np.cumsum(table, axis=1)[:, -1]
        return sums.reshape(plan.pulls.shape)

    @property
    def pulls(self) -> IntArray:
        """Pulls of each arm so far (a new array)."""
        return self._pulls_done + np.bincount(np.array(self._queue[:self._position], dtype=np.int64),
                                              minlength=self._pulls_done.shape[0])

    @property
    def recommendation(self) -> int:
        """Î_T, the recommended arm.

        Raises
        ------
        NotFittedError
            Before the last phase has finished.
        """
        if self._recommendation is None:
            raise NotFittedError("recommendation is available only once done is True")
        return self._recommendation

    def ask(self) -> int:
        """Return the next arm to pull.

        Raises
        ------
        NotFittedError
            If the algorithm has finished (read :attr:`recommendation`).
        """
        try:  # the queue is empty once done
            return self._queue[self._position]
        except IndexError:
            raise NotFittedError("the algorithm has finished; read recommendation") from None

    def scheduled(self, limit: int | None = None) -> IntArray:
        """The arms still to pull in the current phase (at most ``limit``), in order; ``ask()`` is the first.

        The order is fixed when the phase starts, from public state only (the active set), so these
        pulls may be handed out at once (a service lets several be outstanding); empty once done.
        """
        if self.done:
            return np.zeros(0, dtype=np.int64)
        end = len(self._queue) if limit is None else min(len(self._queue), self._position + max(int(limit), 0))
        return np.array(self._queue[self._position:end], dtype=np.int64)

    def tell(self, arm: int, reward: float) -> None:
        """Report the reward of the arm returned by the last :meth:`ask`.

        Raises
        ------
        InvalidActionError
            If ``arm`` is not the arm asked for.
        InvalidParameterError
            If ``reward`` is outside ``reward_bounds`` and clipping was not asked for.
        """
        position = self._position
        try:  # the queue is empty once done
            expected = self._queue[position]
        except IndexError:
            raise NotFittedError("the algorithm has finished; read recommendation") from None
        # an int that is the arm asked for passes at once; anything else gets the full check
        if (arm.__class__ is not int or arm != expected) and check_arm(arm, "arm", self._planner.n_arms) != expected:
            raise InvalidActionError(f"arm must be the arm returned by ask(), {expected}; got {arm!r}")
        # the common case: a Python float, or NumPy's float64 (the class itself) converted to one exactly
        # (comparing NumPy scalars costs more than converting), within the bounds (NaN and ±inf fail the
        # comparison), stored as it is; anything else (another type, a float subclass whose comparisons
        # could lie) is checked as a value first
        cls = reward.__class__
        if cls is not float:
            reward = float(reward) if cls is _FLOAT64 else self._checked_reward(reward)
        low, high = self._accept
        if not low <= reward <= high:
            reward = self._checked_reward(reward)
        self._rewards[position] = reward
        position += 1
        self._position = position
        if position == self._end:
            self._finish_phase()

    def _checked_reward(self, reward: object) -> float:
        """A reward off the fast path: a finite real within ``reward_bounds``, or clipped to them if asked."""
        low, high = self._accept
        if isinstance(reward, float) and low <= (value := float(reward)) <= high:  # compared as a Python float
            return value
        value = check_real(reward, "reward")
        low, high = self._bounds
        if (value < low or value > high) and not self._clip:
            raise InvalidParameterError(
                f"reward must lie in [{low}, {high}] (pass clip_rewards=True to clip); got {value!r}"
            )
        return min(max(value, low), high)

    _charges_run = True  # the run's guarantee is spent when built, and when loaded under another ledger

    def _run_finished(self) -> bool:
        return self.done

    def get_params(self) -> dict[str, object]:
        """The algorithm the agent runs and how its noise was chosen (for save/load)."""
        if self._algorithm is None:
            raise InvalidParameterError("only an agent made by PhasedAlgorithm.agent() can be saved")
        return {"algorithm": self._algorithm, "insecure_seeded_noise": self._insecure_seeded_noise}

    @property
    def privacy(self) -> Guarantee:
        """The guarantee of the run: the algorithm's :attr:`PhasedAlgorithm.privacy`.

        Raises
        ------
        InvalidParameterError
            For an agent not made by :meth:`PhasedAlgorithm.agent` (it does not know its algorithm).
        """
        return self.get_params()["algorithm"].privacy  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        algorithm = "?" if self._algorithm is None else type(self._algorithm).__name__
        return (f"PhasedAgent({algorithm}) <phase {self._phase}/{self._planner.n_phases}, "
                f"{int(self.pulls.sum())} pulls{', done' if self.done else ''}>")

    @classmethod
    def _rebuild(cls, params: Any, state: Any, decoder: Any) -> PhasedAgent:
        if not isinstance(params, dict) or set(params) != {"algorithm", "insecure_seeded_noise"} or not (
                isinstance(params["algorithm"], PhasedAlgorithm) and isinstance(params["insecure_seeded_noise"], bool)):
            raise DataFormatError("parameters of PhasedAgent must be a phased algorithm and insecure_seeded_noise")
        agent = params["algorithm"].agent(insecure_seeded_noise=params["insecure_seeded_noise"])
        agent._restore(state)
        return agent

    def _get_state(self) -> dict[str, Any]:
        return {
            "phase": self._phase, "planner_state": self._cache.states[self._state_id],
            "position": self._position if not self.done else 0,
            "sums": self._phase_sums() if not self.done else None,
            "pulls": self.pulls, "phase_log": self.phase_log, "recommendation": self._recommendation,
            "rng": self._rng, "noise": self._noise,
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        self._phase, self._recommendation = state["phase"], state["recommendation"]
        self.done = self._recommendation is not None
        self._state_id = self._cache.register(state["planner_state"])
        self.phase_log = state["phase_log"]
        self._rng, self._noise = state["rng"], state["noise"]
        self._queue, self._position, self._end = array("q"), 0, 0
        if not self.done:
            self._start_phase(restored_sums=np.array(state["sums"], dtype=np.float64))
            self._position = state["position"]
        self._pulls_done = np.zeros_like(self._pulls_done)
        self._pulls_done = np.array(state["pulls"], dtype=np.int64) - self.pulls  # less the current phase's so far
        if (self._pulls_done < 0).any():
            raise DataFormatError("state field pulls must count at least the pulls of the current phase so far")

    def _finish_phase(self) -> None:
        plan = self._plan
        self._pulls_done[plan.pulled] += plan.pulls
        if plan.noise_scales.shape[0]:
            if self._noise is None:
                raise InvalidParameterError("noise must be a NoiseBackend for a private algorithm; got None")
            # release z = M·S + ξ through the backend (inside OpenDP on the secure one), then μ̃ = W_noise·z
            statistic = plan.statistic_weights @ self._phase_sums()
            add = self._noise.add_laplace if self._planner.noise_kind == "laplace" else self._noise.add_gaussian
            released = add(statistic, plan.noise_scales)
            estimates = (plan.noise_weights @ released).reshape(1, -1)
        else:
            estimates = (plan.sum_weights @ self._phase_sums()).reshape(1, -1)
        keys = self._rng.random((1, plan.active.shape[0]))
        chosen = plan.active[select_top(estimates, plan.keep, keys if self._tie_break == "random" else None)][0]
        self.phase_log.append({**plan.info, "estimates": estimates[0].copy(), "survivors": chosen.copy()})
        self._state_id = self._cache.next_id(self._phase, self._state_id, tuple(chosen.tolist()))
        self._phase += 1
        if self._phase == self._planner.n_phases:
            self._recommendation, self.done = int(chosen[0]), True
            self._queue, self._position, self._end = array("q"), 0, 0
        else:
            self._start_phase()


TIE_BREAKS = ("random", "index")


def check_reward_bounds(env: BanditEnvironment, *, clip_rewards: bool = False, allow_out_of_range: bool = False,
                        **_: Any) -> bool:
    """Check that ``env``'s rewards lie in [0, 1], as the privacy calibration assumes; return whether to clip.

    Also the registry's ``precheck`` of the private BAI algorithms (run when a study is validated).

    Raises
    ------
    InvalidParameterError
        If the bounds exceed [0, 1] and neither ``clip_rewards`` nor ``allow_out_of_range`` is set.
    """
    low, high = env.reward_bounds
    if low >= 0.0 and high <= 1.0:
        return False
    if clip_rewards:
        return True
    if allow_out_of_range:
        return False
    raise InvalidParameterError(
        f"env.reward_bounds must lie within [0, 1] (the privacy calibration assumes it); got "
        f"{env.reward_bounds!r}; pass clip_rewards=True to clip, or allow_out_of_range=True to "
        "replicate an experiment whose rewards exceed [0, 1] (the guarantee then does not hold)"
    )


class PhasedAlgorithm(Persistable, ABC):
    """Common front end of the phased BAI algorithms: validation, streams, the two drivers.

    Subclasses build their :class:`Planner` in ``__init__`` (attribute ``planner``) and define
    :attr:`privacy`.

    Streams (fixed order): ``spawn_generators(rng, 3)`` gives the environment stream, the algorithm
    stream (tie-break keys) and the privacy-noise stream, in that order — in :meth:`simulate` and in
    :meth:`agent` alike, so that one seed drives both forms identically.
    """

    _schema = StateSchema()  # an algorithm is its parameters: no state (its agents have theirs)

    planner: Planner
    _plan_cache: _PlanCache | None = None
    tie_break: str = "random"
    clip_rewards: bool = False
    allow_out_of_range: bool = False

    def _set_common(self, tie_break: str, clip_rewards: bool, allow_out_of_range: bool) -> None:
        self.tie_break = check_one_of(tie_break, "tie_break", TIE_BREAKS)
        self.clip_rewards = bool(clip_rewards)
        self.allow_out_of_range = bool(allow_out_of_range)

    @property
    @abstractmethod
    def privacy(self) -> Guarantee:
        """The privacy guarantee, with the unit it protects."""

    def guarantee(self) -> Guarantee:
        """The guarantee of a run (:attr:`privacy`: the options that change it are constructor arguments)."""
        return self.privacy

    def _check_environment(self, env: BanditEnvironment) -> bool:
        """Check the environment's reward bounds; return whether rewards must be clipped."""
        if env.n_arms != self.planner.n_arms:
            raise InvalidParameterError(
                f"env.n_arms must equal the algorithm's number of arms {self.planner.n_arms}; got {env.n_arms}"
            )
        return check_reward_bounds(env, clip_rewards=self.clip_rewards, allow_out_of_range=self.allow_out_of_range)

    def simulate(self, env: BanditEnvironment, n_trials: int, rng: RNGLike = None, *,
                 pull_consistent: bool = False) -> PhasedResult:
        """Run ``n_trials`` independent trials on ``env``, vectorised across trials.

        Parameters
        ----------
        env : BanditEnvironment
        n_trials : int
        rng : int, SeedSequence, Generator or None
            Spawns (environment, algorithm, privacy-noise) streams, in this order.
        pull_consistent : bool, default False
            Draw rewards from ``env.streams`` (the k-th pull of an arm is the same number for every
            algorithm and for the ask/tell form) instead of the faster ``env.sample_sums``.

        Returns
        -------
        PhasedResult
            A mapping of per-trial metrics (``success``, ``simple_regret``, ``pulls_used``), as every
            algorithm's ``simulate`` returns, with the attributes ``recommended``, ``pulls`` and ``clipped``.
        """
        n = check_int(n_trials, "n_trials", minimum=1)
        clip = self._check_environment(env)
        env_rng, algorithm_rng, noise_rng = spawn_generators(rng, 3)
        sampler: SumSampler
        if pull_consistent or clip:
            streams = env.streams(env_rng, n)

            def sampler(counts: IntArray) -> FloatArray:
                if not clip:
                    return streams.pull_counts(counts)
                _, values = streams.pull_counts(counts, return_values=True)
                return segment_sums(np.clip(values, 0.0, 1.0), counts)
        else:

            def sampler(counts: IntArray) -> FloatArray:
                return env.sample_sums(counts, env_rng)

        noise = NumpyNoise(noise_rng) if self.planner.noise_kind else None
        if getattr(self, "_plan_cache", None) is None:  # plans are pure functions of public state: share them
            self._plan_cache = _PlanCache(self.planner)
        result = run_vectorised(self.planner, n, sampler, noise, algorithm_rng, tie_break=self.tie_break,
                                plan_cache=self._plan_cache)
        return PhasedResult(result.recommended, result.pulls, result.clipped, env=env)

    def agent(self, rng: RNGLike = None, *, noise_backend: NoiseBackend | None = None,
              insecure_seeded_noise: bool = False, accountant: Accountant | None = None) -> PhasedAgent:
        """Return an ask/tell agent.

        Parameters
        ----------
        rng : int, SeedSequence, Generator or None
            Spawns (environment, algorithm, privacy-noise) streams like :meth:`simulate`; the
            environment stream is not used by the agent. The algorithm stream seeds the tie-break
            keys; the privacy-noise stream is used only with ``insecure_seeded_noise=True``.
        noise_backend : NoiseBackend, optional
            Privacy-noise source; default the secure OpenDP backend (each phase's statistic gets
            its noise added inside OpenDP: floating-point safe, from the OS CSPRNG).
        insecure_seeded_noise : bool, default False
            Seed the privacy noise from ``rng`` (the agent then reproduces :meth:`simulate`).
            Simulation only: not private in deployment; warns.
        accountant : Accountant, optional
            Records the run's guarantee (:attr:`privacy`) before the agent exists: a run that would
            exceed the accountant's budget raises :class:`~dpbandits._core.errors.PrivacyBudgetExceededError` and draws nothing.
            A non-private algorithm (OD-LinBAI) has no finite guarantee to record: the accountant
            refuses it (:class:`~dpbandits._core.errors.InvalidParameterError`).
            The saved agent loaded under another ledger (``load(path, accountant=)``) pays the rest
            of its run there.

        Notes
        -----
        Rewards outside [0, 1] are refused unless ``clip_rewards`` (clipped) or
        ``allow_out_of_range`` (accepted as they are, as :meth:`simulate` does; the guarantee then
        does not hold).
        """
        # children 1 and 2 of simulate()'s three (the environment stream, child 0, is not built for an int seed)
        algorithm_seed, noise_seed = spawned_children(rng, 3, (1, 2))
        algorithm_rng = np.random.default_rng(algorithm_seed)
        noise = None
        # the agent's lineage, recorded with the spend (a load under the same ledger recognises it); without
        # an accountant it is drawn when first read (Persistable.lineage), as building agents is hot
        lineage = None if accountant is None else uuid.uuid4().hex
        # the whole run is one release of the reward table; a non-private one is refused by the accountant
        # (the guarantee is computed only when there is an accountant to charge)
        if accountant is not None:
            spend(accountant, self.privacy, label=f"{type(self).__name__}.agent", lineage=lineage)
        if self.planner.noise_kind:
            noise = privacy_noise(noise_seed if insecure_seeded_noise and noise_backend is None else None,
                                  insecure_seeded_noise=insecure_seeded_noise, backend=noise_backend)
        # allow_out_of_range: accept any finite reward, as simulate() does on such environments
        bounds = (-np.inf, np.inf) if self.allow_out_of_range and not self.clip_rewards else (0.0, 1.0)
        if getattr(self, "_plan_cache", None) is None:  # plans are pure functions of public state: share them
            self._plan_cache = _PlanCache(self.planner)
        # built without the constructor's recording of its arguments (a third of the cost of a trial's
        # agent): an agent's saved parameters are its algorithm and noise choice (PhasedAgent.get_params)
        agent = PhasedAgent.__new__(PhasedAgent)
        agent._setup(self.planner, noise, algorithm_rng, reward_bounds=bounds, clip_rewards=self.clip_rewards,
                     tie_break=self.tie_break, plan_cache=self._plan_cache)
        agent._algorithm, agent._insecure_seeded_noise = self, insecure_seeded_noise
        if lineage is not None:
            agent._lineage = lineage
        return agent
