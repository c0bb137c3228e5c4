"""Neighbouring inputs for auditing a user's algorithm, the search space over them, and the runs that feed them.

The audit of a user's algorithm (:mod:`dpbandits.audit.user`) knows the algorithm only through its
public protocol, so it supplies the *feedback* itself, for the unit the algorithm declares. The
search (:func:`search_bases`, :func:`search_points`, :func:`mutate`) ranges over a base input and one
change to it (a :class:`SearchPoint`):

``"reward"`` — one entry of the reward table (replace-one)
    An ask/tell agent over K arms. A reward table R (K × steps) answers the n-th pull of arm a with
    R[a, n]. Bases: every reward 0, at the bound, mid-range; one arm at the bound; graded arms; an
    asymmetric table; one arm at a round level (a gap at a threshold); random tables. Changes: for
    every arm (K <= 4; else on each base the most and the least pulled arm and a block of arms that
    moves from base to base, so that every arm is changed on some base) its first, middle and last
    pull — as the runs on the base showed them, and the last pull every run reached — set to the
    other bound (both bounds from a mid-range value). The hill-climb sets a run of one arm's rewards
    to a level, or moves the changed position, arm or value.

``"label"`` — one preference label (label-only)
    A dueling agent asking pairs (i, j). A response table answers round t's duel. Bases: every user
    prefers the lower index, the higher index, random preferences. Changes: every answer of one user
    flipped — the first, a quarter, the middle, three quarters and the last round's. The hill-climb
    redraws some users' answers or moves the flipped user.

``"record"`` — one logged record (add/remove)
    An offline policy with ``fit`` (a :class:`~dpbandits.envs.logged.LoggedBanditData`, or
    ``actions, rewards``) and ``sample()`` over K arms. Bases: one covers the arms unevenly (an arm
    without records — or at the declared ``min_count`` floor m —, a least-covered arm, rewards at
    both bounds), two put sparse arms of rewards 0 beside an arm of 1000 rewards at the bound (noise
    sized from the data is small there), one ties two arms for the most records (a rule on raw counts
    flips there), two are random. Changes: a record at either bound added to
    an arm (an unseen arm included), an arm's smallest and largest reward removed — the extremes of
    :func:`dpbandits.audit.kl.mab_neighbour_datasets`, inside the declared floor. The hill-climb
    flips a record's reward or adds a record.

:func:`neighbour_inputs` keeps the fixed adversarial pairs of each unit (a short list for direct use).
Each run builds a fresh object with :class:`UserRunner` and returns its *public record*: what the
algorithm showed the world (the transcript of asks and the recommendation, or the sampled action).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpbandits._core.errors import InvalidParameterError, UserAlgorithmError
from dpbandits.algorithms.user_simulation import UserCalls
from dpbandits.audit.cases.dueling import flip_user, lower_index_wins
from dpbandits.audit.kl import mab_neighbour_datasets
from dpbandits.envs.logged import LoggedBanditData

__all__ = ["UNITS", "Feedback", "PublicRecord", "SearchPoint", "UserRunner", "fit_policy", "mutate",
           "neighbour_inputs", "search_bases", "search_points"]

UNITS: tuple[str, ...] = ("reward", "label", "record")
"""The units a user's algorithm can be audited for."""

_STEP_LIMIT = 10**6
_ALL_ARMS = 4  # up to this many arms, the search changes a reward of every arm


@dataclass(frozen=True)
class Feedback:
    """One input of the audit: a reward table, a response table or a logged data set."""

    unit: str
    data: Any
    changed_arm: int | None = None  # reward unit: the arm whose entry differs in the pair


@dataclass(frozen=True)
class PublicRecord:
    """What one run released: the transcript of asks, the recommendation (or sampled action) and its time."""

    transcript: tuple[Any, ...]
    output: Any
    seconds: float


# ------------------------------------------------------------------------- a point of the search
@dataclass(frozen=True)
class SearchPoint:
    """A base input and one change to it: a neighbouring pair the search can evaluate and mutate.

    ``change`` is ``(arm, position, value)`` for the reward unit (R[arm, position] set to value), the
    1-based round whose user's labels are flipped for the label unit, and the index of a neighbour
    among :func:`~dpbandits.audit.kl.mab_neighbour_datasets` of the base for the record unit.
    """

    unit: str
    base_name: str
    base: Any
    change: Any
    min_count: int | None = None

    def pair(self) -> tuple[str, Feedback, Feedback]:
        """``(label, input, neighbour)``."""
        if self.unit == "reward":
            arm, position, value = self.change
            neighbour = np.array(self.base, dtype=np.float64, copy=True)
            neighbour[arm, position] = value
            label = (f"{self.base_name}; R[{arm}, {position}] (arm {arm}'s pull {position + 1}) "
                     f"{float(self.base[arm, position]):.4g} -> {value:.4g}")
            return label, Feedback("reward", self.base, arm), Feedback("reward", neighbour, arm)
        if self.unit == "label":
            return (f"{self.base_name}; the labels of the user of round {self.change} flipped",
                    Feedback("label", self.base), Feedback("label", flip_user(self.base, self.change)))
        options = list(mab_neighbour_datasets(self.base, min_count=self.min_count))
        label, neighbour = options[self.change % len(options)]
        return f"{self.base_name}: {label}", Feedback("record", self.base), Feedback("record", neighbour)


def _levels(bound: float) -> tuple[float, ...]:
    return tuple(bound * t for t in (0.1, 0.2, 0.25, 0.3, 0.5, 0.75))


def _reward_bases(n_arms: int, steps: int, bound: float,
                  rng: np.random.Generator) -> list[tuple[str, NDArray[np.float64]]]:
    """Symmetric, asymmetric, graded, threshold and random reward tables (K × steps)."""
    shape = (n_arms, steps)
    bases = [("every reward 0", np.zeros(shape)), ("every reward at the bound", np.full(shape, bound)),
             ("every reward mid-range", np.full(shape, bound / 2))]
    best = np.zeros(shape)
    best[0] = bound
    bases.append(("arm 0 at the bound, others 0", best))
    graded = np.repeat((bound * (n_arms - 1 - np.arange(n_arms)) / (n_arms - 1))[:, None], steps, axis=1)
    bases.append(("graded means (arm a at (K-1-a)/(K-1) of the bound)", graded))
    asymmetric = np.full(shape, 0.1 * bound)
    asymmetric[n_arms - 1] = 0.9 * bound
    bases.append(("asymmetric: one arm at 0.9 of the bound, others at 0.1", asymmetric))
    for level in _levels(bound):
        table = np.zeros(shape)
        table[0] = level
        bases.append((f"arm 0 at {level:.4g} (a gap at a threshold), others 0", table))
    bases.append(("random rewards in [0, bound]", rng.uniform(0.0, bound, shape)))
    bases.append(("random rewards at the bounds", bound * rng.integers(0, 2, shape).astype(np.float64)))
    return bases


def _changed_arms(n_arms: int, medians: NDArray[np.float64], slot: tuple[int, int]) -> list[int]:
    """The arms whose rewards one base's pairs change: all of them (K <= 4), else a sample covering every arm.

    For K > 4 base b of B changes the most and the least pulled arm and the block of s = max(2, ⌈K/B⌉)
    arms b·s, ..., b·s + s − 1 (mod K): the B blocks cover B·s >= K consecutive arms, so across the
    search every arm has its first, middle and last pull changed on some base.
    """
    if n_arms <= _ALL_ARMS:
        return list(range(n_arms))
    index, count = slot
    size = max(2, -(-n_arms // max(count, 1)))
    block = [(index * size + j) % n_arms for j in range(size)]
    return list(dict.fromkeys([int(np.argmax(medians)), int(np.argmin(medians)), *block]))


def _reward_changes(table: NDArray[np.float64], pulls: NDArray[np.int64], bound: float,
                    slot: tuple[int, int]) -> list[Any]:
    """The changed arms' (:func:`_changed_arms`) first, middle and last pulls, to the other bound(s)."""
    n_arms = table.shape[0]
    medians = np.median(pulls, axis=0) if pulls.size else np.full(n_arms, table.shape[1])
    changes = []
    for arm in _changed_arms(n_arms, medians, slot):
        count = max(1, min(int(medians[arm]), table.shape[1]))
        last_always = max(0, min(int(pulls[:, arm].min()) if pulls.size else count, table.shape[1]) - 1)
        for position in sorted({0, (count - 1) // 2, count - 1, last_always}):
            value = float(table[arm, position])
            targets = [0.0, bound] if 0.0 < value < bound else [bound if value < bound / 2 else 0.0]
            changes += [(arm, position, target) for target in targets if target != value]
    return changes


def _label_bases(n_arms: int, steps: int, rng: np.random.Generator) -> list[tuple[str, NDArray[np.int8]]]:
    lower = lower_index_wins(steps, n_arms)
    upper = (1 - lower).astype(np.int8)
    upper[:, np.arange(n_arms), np.arange(n_arms)] = 1  # a self-duel answers "first wins"
    random = rng.integers(0, 2, lower.shape).astype(np.int8)
    return [("every user prefers the lower index", lower), ("every user prefers the higher index", upper),
            ("random preferences", random)]


def _label_changes(steps: int) -> list[int]:
    return sorted({1, max(1, steps // 4), (steps + 1) // 2, max(1, (3 * steps) // 4), steps})


def _random_data(n_arms: int, bound: float, floor: int, rng: np.random.Generator) -> LoggedBanditData:
    counts = floor + rng.integers(0, 12, n_arms)
    actions = np.repeat(np.arange(n_arms), counts)
    rewards = bound * rng.integers(0, 2, actions.size).astype(np.float64)
    return LoggedBanditData(actions, rewards, n_arms, bound)


def _record_bases(n_arms: int, bound: float, min_count: int | None,
                  rng: np.random.Generator) -> list[tuple[str, LoggedBanditData]]:
    floor = 0 if min_count is None else min_count
    bases = [("uneven coverage", _uneven_data(n_arms, bound, floor))]
    for sparse in sorted({max(floor + 1, 3), max(floor + 1, 6)}):
        bases.append((f"{sparse}-record arms beside a 1000-record arm", _dominated_data(n_arms, bound, sparse)))
    bases.append(("two arms tied for the most records", _tied_data(n_arms, bound, floor)))
    bases += [(f"random data set {index + 1}", _random_data(n_arms, bound, floor, rng)) for index in range(2)]
    return bases


def _tied_data(n_arms: int, bound: float, floor: int) -> LoggedBanditData:
    """Arms 0 and 1 tied for the most records (a record added or removed breaks the tie), the others at the floor."""
    counts = [floor + 4, floor + 4, *([floor + 1] * (n_arms - 2))]
    actions = np.repeat(np.arange(n_arms), counts)
    rewards = np.resize(np.array([bound, 0.0]), actions.size)
    return LoggedBanditData(actions, rewards, n_arms, bound)


def search_bases(unit: str, n_arms: int, steps: int, *, reward_bound: float = 1.0, min_count: int | None = None,
                 rng: np.random.Generator) -> list[tuple[str, Any]]:
    """The base inputs the search starts from (see the module docstring), named."""
    if unit == "reward":
        return list(_reward_bases(n_arms, steps, reward_bound, rng))
    if unit == "label":
        return list(_label_bases(n_arms, steps, rng))
    return list(_record_bases(n_arms, reward_bound, min_count, rng))


def search_points(unit: str, name: str, base: Any, pulls: NDArray[np.int64], *, reward_bound: float = 1.0,
                  min_count: int | None = None, slot: tuple[int, int] = (0, 1)) -> list[SearchPoint]:
    """The changes tried on one base: positions read off the runs on it (``pulls``: runs × arms).

    ``slot`` is ``(b, B)``, the base's index among the B bases of the search: with more than four arms
    it chooses which arms this base's pairs change, so that the bases together change every arm.
    """
    if unit == "reward":
        return [SearchPoint(unit, name, base, change) for change in _reward_changes(base, pulls, reward_bound, slot)]
    if unit == "label":
        return [SearchPoint(unit, name, base, user) for user in _label_changes(base.shape[0])]
    count = sum(1 for _ in mab_neighbour_datasets(base, min_count=min_count))
    return [SearchPoint(unit, name, base, index, min_count) for index in range(count)]


def mutate(point: SearchPoint, rng: np.random.Generator, *, reward_bound: float = 1.0) -> SearchPoint:
    """A random neighbour of ``point`` in the search space: its base input or its change, perturbed."""
    if point.unit == "reward":
        table = np.array(point.base, dtype=np.float64, copy=True)
        arm, position, value = point.change
        n_arms, steps = table.shape
        move = int(rng.integers(4))
        if move == 0:  # a run of one arm's rewards set to a level
            row, start = int(rng.integers(n_arms)), int(rng.integers(steps))
            table[row, start:start + int(rng.integers(1, steps + 1))] = rng.choice(
                [0.0, reward_bound, reward_bound / 2, float(rng.uniform(0.0, reward_bound))])
        elif move == 1:
            position = int(np.clip(position + rng.integers(-3, 4), 0, steps - 1))
        elif move == 2:
            arm = int(rng.integers(n_arms))
        else:
            value = float(rng.choice([0.0, reward_bound, float(rng.uniform(0.0, reward_bound))]))
        if value == table[arm, position]:
            value = reward_bound if table[arm, position] < reward_bound / 2 else 0.0
        return SearchPoint("reward", "hill-climbed table", table, (arm, position, value))
    if point.unit == "label":
        table = point.base.copy()
        user = point.change
        if rng.integers(2):
            rows = rng.integers(table.shape[0], size=max(1, table.shape[0] // 8))
            table[rows] = rng.integers(0, 2, table[rows].shape).astype(np.int8)
        else:
            user = int(np.clip(user + rng.integers(-2, 3), 1, table.shape[0]))
        return SearchPoint("label", "hill-climbed responses", table, user)
    data: LoggedBanditData = point.base
    actions, rewards = data.actions.copy(), data.rewards.copy()
    index = int(rng.integers(actions.size)) if actions.size else 0
    if actions.size and rng.integers(2):
        rewards[index] = data.reward_bound - rewards[index]
    else:
        arm = int(rng.integers(data.n_arms))
        actions, rewards = np.append(actions, arm), np.append(rewards, data.reward_bound * rng.integers(2))
    mutated = LoggedBanditData(actions, rewards, data.n_arms, data.reward_bound)
    return SearchPoint("record", "hill-climbed data set", mutated, int(rng.integers(1 << 16)), point.min_count)


def _reward_tables(n_arms: int, steps: int, bound: float) -> Iterator[tuple[str, Feedback, Feedback]]:
    zeros = np.zeros((n_arms, steps))
    raised = zeros.copy()
    raised[0, 0] = bound
    yield ("every reward 0; arm 0's first reward raised to the bound",
           Feedback("reward", zeros, 0), Feedback("reward", raised, 0))
    best = zeros.copy()
    best[0] = bound
    dropped = best.copy()
    dropped[0, 0] = 0.0
    yield ("arm 0 at the bound, others 0; arm 0's first reward dropped to 0",
           Feedback("reward", best, 0), Feedback("reward", dropped, 0))
    middle = np.full((n_arms, steps), bound / 2.0)
    pushed = middle.copy()
    pushed[n_arms - 1, 0] = bound
    yield (f"every reward mid-range; arm {n_arms - 1}'s first reward pushed to the bound",
           Feedback("reward", middle, n_arms - 1), Feedback("reward", pushed, n_arms - 1))


def _label_tables(n_arms: int, steps: int) -> Iterator[tuple[str, Feedback, Feedback]]:
    table = lower_index_wins(steps, n_arms)
    for user, where in ((1, "first"), ((steps + 1) // 2, "middle"), (steps, "last")):
        yield (f"every user prefers the lower index; the {where} user's (round {user}) labels flipped",
               Feedback("label", table), Feedback("label", flip_user(table, user)))


def _uneven_data(n_arms: int, bound: float, floor: int) -> LoggedBanditData:
    """Arms covered unevenly (an unseen arm, or one at the floor; a least-covered one; ...), both bounds in each."""
    counts = [floor, *(floor + 1 + 2 * arm for arm in range(n_arms - 1))]
    actions = np.repeat(np.arange(n_arms), counts)
    rewards = np.resize(np.array([0.0, bound]), actions.size)
    return LoggedBanditData(actions, rewards, n_arms, bound)


def _dominated_data(n_arms: int, bound: float, sparse: int) -> LoggedBanditData:
    """Sparse arms of rewards 0 beside one arm of 1000 rewards at the bound: small noise is exposed here."""
    counts = [sparse] * (n_arms - 1) + [1000]
    actions = np.repeat(np.arange(n_arms), counts)
    rewards = np.where(actions == n_arms - 1, bound, 0.0)
    return LoggedBanditData(actions, rewards, n_arms, bound)


def _record_pairs(n_arms: int, bound: float, min_count: int | None) -> Iterator[tuple[str, Feedback, Feedback]]:
    floor = 0 if min_count is None else min_count
    bases: list[tuple[str, LoggedBanditData, range | None]] = [
        ("uneven coverage", _uneven_data(n_arms, bound, floor), None)]
    for sparse in sorted({max(floor + 1, 3), max(floor + 1, 6)}):
        bases.append((f"{sparse}-record arms beside a 1000-record arm",
                      _dominated_data(n_arms, bound, sparse), range(n_arms - 1)))
    for name, data, arms in bases:
        for label, neighbour in mab_neighbour_datasets(data, min_count=min_count, arms=arms):
            yield (f"{name}: {label}", Feedback("record", data), Feedback("record", neighbour))


def neighbour_inputs(unit: str, n_arms: int, steps: int, *, reward_bound: float = 1.0,
                     min_count: int | None = None) -> list[tuple[str, Feedback, Feedback]]:
    """The adversarial neighbouring inputs of ``unit`` (see the module docstring).

    Parameters
    ----------
    unit : {"reward", "label", "record"}
    n_arms : int
        K >= 2, the public action space.
    steps : int
        The most steps a run takes (the agent's budget or horizon); sizes the tables.
    reward_bound : float, default 1
        R̄: rewards lie in [0, R̄].
    min_count : int, optional
        ``"record"`` only: the declared per-arm floor of the policy's domain guarantee.
    """
    if unit not in UNITS:
        raise InvalidParameterError(f"unit must be one of {list(UNITS)}; got {unit!r}")
    if n_arms < 2:
        raise InvalidParameterError(f"n_arms must be >= 2 for an audit; got {n_arms}")
    if unit == "reward":
        return list(_reward_tables(n_arms, steps, reward_bound))
    if unit == "label":
        return list(_label_tables(n_arms, steps))
    return list(_record_pairs(n_arms, reward_bound, min_count))


class UserRunner:
    """Builds a fresh user object per run and feeds it one input; returns its public record.

    Parameters
    ----------
    target : str
        The algorithm's name in messages.
    factory : callable
        ``() -> object``: a fresh agent or policy.
    n_arms : int
    """

    def __init__(self, target: str, factory: Callable[[], Any], n_arms: int) -> None:
        self.target, self.factory, self.n_arms = target, factory, n_arms
        self.calls = UserCalls(target)

    def _fail(self, step: int, what: str) -> UserAlgorithmError:
        return self.calls.fail(f"audit run, step {step}", what)

    def _call(self, step: int, what: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.calls.call(f"audit run, step {step}", what, function, *args, **kwargs)

    def _arm(self, step: int, value: Any, what: str) -> int:
        return self.calls.arm(f"audit run, step {step}", value, self.n_arms, what)

    def run(self, feedback: Feedback) -> PublicRecord:
        """One run on ``feedback``; times the whole run (construction to release)."""
        started = time.perf_counter()
        subject = self._call(0, "the constructor", self.factory)
        if feedback.unit == "record":
            self._call(0, "fit()", fit_policy, subject, feedback.data)
            output = _plain(self._call(1, "sample()", subject.sample))
            return PublicRecord((), output, time.perf_counter() - started)
        transcript = self._drive(subject, feedback)
        output = _plain(self._call(len(transcript), "recommendation", getattr, subject, "recommendation", None))
        return PublicRecord(tuple(transcript), output, time.perf_counter() - started)

    def _drive(self, agent: Any, feedback: Feedback) -> list[Any]:
        table = feedback.data
        limit = min(_STEP_LIMIT, table.shape[1] if feedback.unit == "reward" else table.shape[0])
        pulls = np.zeros(self.n_arms, dtype=np.int64)
        transcript: list[Any] = []
        while not self._call(len(transcript), "done", getattr, agent, "done"):
            step = len(transcript) + 1
            if step > limit:
                raise self._fail(step, f"not done after {limit} steps (its budget or horizon)")
            asked = self._call(step, "ask()", agent.ask)
            if feedback.unit == "reward":
                arm = self._arm(step, asked, "ask() returned")
                reward = float(table[arm, min(pulls[arm], table.shape[1] - 1)])  # R[a, n]: a's n-th pull
                pulls[arm] += 1
                self._call(step, "tell()", agent.tell, arm, reward)
                transcript.append(arm)
                continue
            if not isinstance(asked, tuple | list) or len(asked) != 2:
                raise self._fail(step, f"ask() returned {asked!r}, not a pair of arms")
            first, second = self._arm(step, asked[0], "ask() returned"), self._arm(step, asked[1], "ask() returned")
            first_wins = bool(table[step - 1, first, second])
            if first == second:
                self._call(step, "tell()", agent.tell, (first, second), first_wins=first_wins)
            else:
                self._call(step, "tell()", agent.tell, (first, second), winner=first if first_wins else second)
            transcript.append((first, second))
        return transcript


def fit_policy(policy: Any, data: LoggedBanditData) -> Any:
    """``policy.fit(data)`` if ``fit`` takes one argument (a logged data set), else ``fit(actions, rewards)``."""
    try:
        required = [p for p in inspect.signature(policy.fit).parameters.values()
                    if p.default is inspect.Parameter.empty
                    and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        required = []
    if len(required) == 1:
        policy.fit(data)
    else:
        policy.fit(data.actions, data.rewards)
    return policy


def _plain(value: Any) -> Any:
    """A released value as plain Python (an int, a float, a tuple), comparable across runs."""
    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.tolist()) if value.ndim else _plain(value.item())
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items()))
    return value
