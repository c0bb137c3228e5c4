"""Audit a user's own private algorithm: search for the violation, then certify it on fresh runs.

:func:`audit_algorithm` runs the privacy contract of the built-ins on an algorithm the library
knows only through its public protocol — an ask/tell agent (``ask``, ``tell``, ``done``,
``recommendation``) or an offline policy (``fit``, ``sample``) — in two stages.

**Search.** For the unit the algorithm protects (one reward, one preference label, one logged
record) it runs the algorithm on base inputs of several shapes (:func:`~dpbandits.audit.user_inputs.search_bases`:
symmetric, asymmetric, graded, gaps at round thresholds, random) and on neighbours that change the
unit at every stage of a run: for the reward unit the first, middle and last pull of every arm
(with more than four arms, on each base the most and the least pulled arm and a block of arms that
moves from base to base, so that every arm is changed on some base), as the runs on the base showed
them (so every phase of a phased algorithm is reached); for the label unit the first, a quarter, the middle, three
quarters and the last user; for the record unit a record at either bound added to each arm, and
each arm's extreme records removed.
Each pair is scored by the plug-in strength of its most revealing event
(:func:`~dpbandits.audit.search.search_score`); a hill-climb then perturbs the best pair (its
table, the changed position, arm and value) and keeps what scores higher, within ``climb`` steps.

**Certification.** The ``certify`` best pairs get fresh runs: a selection sample on which output
events are chosen from what the runs released (likelihood-ratio sets of the recommendation, the
transcript, its length and the pulls of the changed arm; a threshold on a classifier's score of
the runs' numeric features), then ``runs`` runs per input on which those events are counted.
Nothing certified was chosen on the runs that certify it, so each Clopper–Pearson bound
(:func:`~dpbandits.audit.statistical.epsilon_lower_bound`, Bonferroni over pairs and events) holds
at ``confidence``. The report states per certified event the smallest true ε these runs would show
at the event's own probabilities (its power).

Where they apply, the report adds

* the **exact** audit (:func:`~dpbandits.audit.exact.audit_exact`) on every structured pair of the
  search and the certified ones, when the output distribution is supplied (``distribution=``) or
  the policy states it (``probabilities()`` after ``fit``);
* the **floating-point attack** (:func:`~dpbandits.audit.floating_point.float_attack`) on released
  floats — the certified pairs' releases, and ``runs`` fresh runs of the ``certify_pairs`` pairs whose
  released value moved most in the search — with the deployed noise only: the seeded simulation
  draws NumPy floats, which are not float-safe by design, so a result there says nothing about the
  deployed algorithm;
* a **timing** check: the largest distinguishing advantage of a threshold on one run's time over
  every pair run (reported, not part of the verdict: timing on a shared machine is noisy).

The algorithm runs with its deployment noise (secure, unseeded) unless ``seeded_noise=True`` (faster:
``rng`` and ``insecure_seeded_noise=True`` are passed when the constructor takes them; the seeded
path is then what is audited, and the report says so). A run budget that cannot finish within
``max_seconds`` (timed on a few runs first) or in memory is refused before the audit starts. The
user's code runs in this process, as any import would.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dpbandits._core.errors import InsecureNoiseWarning, InvalidParameterError, UserAlgorithmError
from dpbandits._core.resources import check_fits
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import (
    check_delta,
    check_epsilon,
    check_in_interval,
    check_int,
    check_positive_float,
)
from dpbandits.algorithms.user_imports import load_user_object
from dpbandits.algorithms.user_simulation import has_member
from dpbandits.audit.exact import ExactAuditReport, audit_exact
from dpbandits.audit.floating_point import FloatAttackReport, float_attack
from dpbandits.audit.search import Observations, certify, choose_events, event_power, search_score
from dpbandits.audit.user_inputs import (
    UNITS,
    Feedback,
    PublicRecord,
    SearchPoint,
    UserRunner,
    fit_policy,
    mutate,
    search_bases,
    search_points,
)
from dpbandits.audit.user_report import CertifiedPair, TimingReport, UserAuditReport

__all__ = ["CertifiedPair", "TimingReport", "UserAuditReport", "audit_algorithm"]

Progress = Callable[[int, int], None]
"""``progress(runs done, runs planned)``, called as the audit goes."""

_EVENTS_PER_PAIR = 4
_POINTS_PER_BASE = 12  # planning figure: the reward unit tries 4 positions × 1-2 values per arm, usually 8-12
_RECORD_BYTES = 64  # per step of a stored transcript, and per run's other fields (a lower bound)


# ------------------------------------------------------------------------------- the subject
def _accepts(cls: Any) -> tuple[Mapping[str, inspect.Parameter], bool]:
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return {}, True
    return parameters, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _factory(cls: Any, n_arms: int, params: Mapping[str, Any], seeded: bool,
             generator: np.random.Generator) -> Callable[[], Any]:
    accepted, any_keyword = _accepts(cls)
    public = {"n_arms": n_arms} if "n_arms" in accepted or any_keyword else {}

    def build() -> Any:
        extra: dict[str, Any] = {}
        if seeded and "rng" in accepted:
            extra["rng"] = np.random.default_rng(generator.integers(2**63))
        if seeded and "insecure_seeded_noise" in accepted:
            extra["insecure_seeded_noise"] = True
        return cls(**public, **params, **extra)

    return build


def _check_auditable(name: str, found: Any) -> None:
    """A class (or factory) of agents or policies: a vectorised simulate function has no runs to audit."""
    try:
        runner_arguments = {"n_trials", "rng"} <= set(inspect.signature(found).parameters)
    except (TypeError, ValueError):
        runner_arguments = False
    if not callable(found) or (not inspect.isclass(found) and (runner_arguments or hasattr(found, "metrics"))):
        raise InvalidParameterError(
            f"{name} is not an agent or policy class: the audit runs one agent (ask/tell) or one policy "
            "(fit/sample) per run, and a vectorised simulate function releases only metrics"
        )


_SET_BY_THE_AUDIT = {"n_arms": "n_arms= (--n-arms)", "rng": "seeded_noise= and rng= (--seeded-noise)",
                     "insecure_seeded_noise": "seeded_noise= (--seeded-noise)"}


def _check_params(params: Mapping[str, Any], epsilon: float | None) -> None:
    """Constructor arguments the audit sets itself are not ``params``; ``epsilon`` there must be the claim."""
    for key, option in _SET_BY_THE_AUDIT.items():
        if key in params:
            raise InvalidParameterError(f"params may not set {key!r}: the audit sets it from {option}")
    if epsilon is not None and "epsilon" in params and params["epsilon"] != epsilon:
        raise InvalidParameterError(
            f"params sets epsilon={params['epsilon']!r} but the claim tested is epsilon={epsilon!r}: the "
            "algorithm would run at another epsilon than the one audited (give one of them)"
        )


def _check_protocol(name: str, subject: Any, unit: str) -> None:
    """The members the runs call, checked on the built object as a study checks them.

    ``ask``, ``tell``, ``done``, ``recommendation`` of an agent; ``fit``, ``sample`` of a policy:
    methods, properties (not evaluated) or attributes set in ``__init__``.
    """
    members = ("fit", "sample") if unit == "record" else ("ask", "tell", "done", "recommendation")
    missing = [member for member in members if not has_member(subject, member)]
    if missing:
        kind = "a policy (unit 'record')" if unit == "record" else f"an ask/tell agent (unit {unit!r})"
        raise UserAlgorithmError(f"algorithm {name!r} has no {', '.join(missing)}: audited as {kind}, it needs "
                                 f"{', '.join(members)} (see the guide 'Your own algorithm')")


def _infer_unit(subject: Any, claim: Any) -> str:
    """The unit from the built object's shape (not its class's: members may be set in ``__init__``) and its guarantee."""
    if has_member(subject, "fit") and has_member(subject, "sample"):
        return "record"
    text = f"{getattr(claim, 'unit', '')} {getattr(claim, 'neighbouring', '')}".lower()
    if "label" in text or "preference" in text:
        return "label"
    if "reward" in text or "replace-one" in text:
        return "reward"
    raise InvalidParameterError(
        "cannot tell which unit the algorithm protects: pass unit='reward', 'label' or 'record' (--unit)"
    )


def _steps(params: Mapping[str, Any]) -> int:
    for name in ("budget", "horizon"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise InvalidParameterError("an ask/tell agent needs a budget or horizon parameter to audit (--param budget=N)")


# --------------------------------------------------------------------------------- observables
def _numbers(output: Any) -> tuple[float, ...] | None:
    """A released value as numbers (a number, or a tuple of numbers), else None."""
    if isinstance(output, bool):
        return (float(output),)
    if isinstance(output, int | float):
        return (float(output),)
    if isinstance(output, tuple) and output and all(isinstance(v, int | float) and not isinstance(v, bool)
                                                   for v in output):
        return tuple(float(v) for v in output)
    return None


def _output_width(records: Sequence[PublicRecord]) -> int:
    """How many numbers the released value has in every run (0 if it is not always the same count of numbers)."""
    widths = {len(n) if (n := _numbers(record.output)) is not None else -1 for record in records}
    return widths.pop() if len(widths) == 1 and -1 not in widths else 0


def _observe(records: Sequence[PublicRecord], unit: str, n_arms: int, changed_arm: int | None,
             width: int) -> Observations:
    """The observables of runs: discrete values for likelihood-ratio sets, numeric features for the classifier."""
    outputs = [record.output for record in records]
    discrete: dict[str, list[Any]] = {}
    floats = width > 0 and any(isinstance(v, float) for o in outputs for v in (_numbers(o) or ()))
    if not floats and any(output is not None for output in outputs):
        discrete["sampled output" if unit == "record" else "recommendation"] = outputs
    rows: list[list[float]] = []
    if unit != "record":
        transcripts = [record.transcript for record in records]
        discrete["transcript"] = transcripts
        discrete["length of the transcript"] = [len(t) for t in transcripts]
        pulls = np.array([_pull_counts(t, n_arms, None) for t in transcripts], dtype=np.float64).reshape(-1, n_arms)
        early = np.array([_pull_counts(t, n_arms, max(1, len(t) // 2)) for t in transcripts],
                         dtype=np.float64).reshape(-1, n_arms)
        if changed_arm is not None:
            discrete[f"pulls of arm {changed_arm}"] = pulls[:, changed_arm].astype(int).tolist()
        rows = np.hstack([np.array([[len(t)] for t in transcripts], dtype=np.float64).reshape(-1, 1),
                          pulls, early]).tolist()
    else:
        rows = [[] for _ in records]
    for row, output in zip(rows, outputs, strict=True):
        numbers = _numbers(output)
        row.extend(numbers if numbers is not None and len(numbers) == width else [0.0] * width)
    numeric = np.array(rows, dtype=np.float64).reshape(len(records), -1)
    return Observations(discrete, numeric)


def _pull_counts(transcript: Sequence[Any], n_arms: int, prefix: int | None) -> list[int]:
    counts = [0] * n_arms
    for asked in transcript[:prefix]:
        for arm in (asked if isinstance(asked, tuple) else (asked,)):
            counts[arm] += 1
    return counts


# ------------------------------------------------------------------------------------- the audit
def audit_algorithm(
    algorithm: str | type,
    *,
    epsilon: float | None = None,
    delta: float = 0.0,
    unit: str | None = None,
    n_arms: int = 3,
    params: Mapping[str, Any] | None = None,
    runs: int = 2000,
    search_runs: int = 100,
    climb: int = 16,
    certify_pairs: int = 3,
    confidence: float = 0.95,
    reward_bound: float = 1.0,
    distribution: Callable[[Any], Any] | None = None,
    seeded_noise: bool = False,
    max_seconds: float = 3600.0,
    progress: Progress | None = None,
    rng: RNGLike = None,
) -> UserAuditReport:
    """Audit the privacy claim of a user's algorithm: search, then certify (see the module docstring).

    Parameters
    ----------
    algorithm : str or class
        ``"package.module:Class"`` (or an entry point name), or the class itself: an ask/tell agent
        or an offline policy with ``fit(actions, rewards)`` and ``sample()``.
    epsilon : float, optional
        The claimed ε, also passed to the constructor as ``epsilon`` if it takes one and ``params``
        does not set it; default the ``privacy.epsilon`` of an object built with ``params``.
    delta : float, default 0
        The claimed δ.
    unit : {"reward", "label", "record"}, optional
        The unit protected; default inferred (a policy protects a record; an agent's guarantee names
        a reward or a preference label).
    n_arms : int, default 3
        K, the public action space of the audit's inputs (given to the constructor as ``n_arms``).
    params : mapping, optional
        Further constructor arguments (``budget`` or ``horizon`` for an agent, ``min_count`` for a
        policy's domain guarantee, ...).
    runs : int, default 2000
        Fresh runs per input of each certified pair (a quarter more choose its events); more runs,
        more power.
    search_runs : int, default 100
        Runs per input of each pair the search scores.
    climb : int, default 16
        Steps of the hill-climb after the structured search (0: none).
    certify_pairs : int, default 3
        How many of the best pairs found are certified.
    confidence : float, default 0.95
        Joint confidence of every certified bound.
    reward_bound : float, default 1
        R̄: rewards of the inputs lie in [0, R̄].
    distribution : callable, optional
        ``feedback -> probabilities`` over a fixed finite output set, the same for every input, or
        ``feedback -> {output: probability}`` (``feedback.data`` is the reward table, response table
        or logged data set of :mod:`dpbandits.audit.user_inputs`): adds the exact audit.
    seeded_noise : bool, default False
        Audit the seeded simulation path (faster) instead of the deployment noise; the float attack
        is then not run.
    max_seconds : float, default 3600
        Refuse, before starting, a run budget whose estimated time (from a few timed runs) exceeds this.
    progress : callable, optional
        ``progress(runs done, runs planned)``.
    rng : int, SeedSequence, Generator or None
        The audit's own randomness (random tables, the hill-climb, seeds of the seeded path).

    Returns
    -------
    UserAuditReport

    Raises
    ------
    UserAlgorithmError
        If the algorithm cannot be loaded or fails (one line naming it and the step).
    InvalidParameterError
        If a parameter is invalid, the unit cannot be inferred, or the run budget cannot finish in
        ``max_seconds`` or fit in memory.

    Privacy
    -------
    NOT REFUTED is evidence, not proof: only the pairs searched, the events certified and violations
    above each event's stated power can show. A REFUTED verdict holds at ``confidence``.

    References
    ----------
    Jagielski, Ullman & Oprea (2020), auditing by Clopper–Pearson bounds on output events; Bichsel et al.
    (2021), DP-Sniper; Ding et al. (2018), StatDP; Kong et al. (2024), DP-Auditorium; Mironov (2012),
    the floating-point attack.
    """
    started = time.perf_counter()
    name = algorithm if isinstance(algorithm, str) else f"{algorithm.__module__}:{algorithm.__qualname__}"
    cls = load_user_object(algorithm) if isinstance(algorithm, str) else algorithm
    _check_auditable(name, cls)
    given = dict(params or {})
    epsilon = None if epsilon is None else check_epsilon(epsilon)
    _check_params(given, epsilon)
    budget = _Budget(check_int(runs, "runs", minimum=20), check_int(search_runs, "search_runs", minimum=10),
                     check_int(climb, "climb", minimum=0), check_int(certify_pairs, "certify_pairs", minimum=1))
    confidence = check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    delta = check_delta(delta)
    n_arms = check_int(n_arms, "n_arms", minimum=2)
    reward_bound = check_positive_float(reward_bound, "reward_bound")
    max_seconds = check_positive_float(max_seconds, "max_seconds")
    generator = as_generator(rng)
    accepted, any_keyword = _accepts(cls)
    if epsilon is not None and "epsilon" not in given and ("epsilon" in accepted or any_keyword):
        given["epsilon"] = epsilon  # the algorithm runs at the ε whose claim is tested
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureNoiseWarning)  # seeded only when asked for (seeded_noise)
        factory = _factory(cls, n_arms, given, seeded_noise, generator)
        runner = UserRunner(name, factory, n_arms)
        probe = runner._call(0, "the constructor", factory)
        claim = runner._call(0, "privacy", getattr, probe, "privacy", None)
        claimed = epsilon if epsilon is not None else getattr(claim, "epsilon", None)
        if claimed is None:
            raise InvalidParameterError(f"{name} states no privacy.epsilon: pass the claimed epsilon (--epsilon)")
        claimed = check_epsilon(claimed)
        unit = _infer_unit(probe, claim) if unit is None else unit
        if unit not in UNITS:
            raise InvalidParameterError(f"unit must be one of {list(UNITS)}; got {unit!r}")
        _check_protocol(name, probe, unit)
        steps = 1 if unit == "record" else _steps(given)
        min_count = given.get("min_count") if unit == "record" else None
        bases = search_bases(unit, n_arms, steps, reward_bound=reward_bound, min_count=min_count, rng=generator)
        audit = _Audit(name, runner, unit, n_arms, claimed, delta, confidence, reward_bound, min_count, budget,
                       seeded_noise, generator, progress)
        audit.check_budget(bases, steps, max_seconds)
        return audit.run(bases, probe, factory, distribution, started)


class _Budget:
    """The run budget: certification runs, search runs per input, hill-climb steps, pairs certified."""

    def __init__(self, runs: int, search_runs: int, climb: int, certify_pairs: int) -> None:
        self.runs, self.search_runs, self.climb, self.certify_pairs = runs, search_runs, climb, certify_pairs
        self.selection = max(50, runs // 4)

    def planned(self, n_bases: int) -> int:
        """Runs the audit plans (the search's changes per base estimated)."""
        search = n_bases * (1 + _POINTS_PER_BASE) * self.search_runs + self.climb * 2 * self.search_runs
        return search + self.certify_pairs * 2 * (self.selection + self.runs)

    def describe(self) -> str:
        return (f"{self.search_runs} runs per input of each pair searched; hill-climb of {self.climb} steps; "
                f"the best {self.certify_pairs} pairs certified")


class _Audit:
    """One audit's state: the runner, the claim, the budget and the progress of its runs."""

    def __init__(self, name: str, runner: UserRunner, unit: str, n_arms: int, epsilon: float, delta: float,
                 confidence: float, reward_bound: float, min_count: int | None, budget: _Budget, seeded: bool,
                 generator: np.random.Generator, progress: Progress | None) -> None:
        self.name, self.runner, self.unit, self.n_arms = name, runner, unit, n_arms
        self.epsilon, self.delta, self.confidence = epsilon, delta, confidence
        self.reward_bound, self.min_count, self.budget, self.seeded = reward_bound, min_count, budget, seeded
        self.generator, self.progress = generator, progress
        self.done, self.total = 0, 0
        self.timing: TimingReport | None = None
        self.shifts: list[tuple[float, SearchPoint]] = []

    # ------------------------------------------------------------------------------ the budget
    def check_budget(self, bases: list[tuple[str, Any]], steps: int, max_seconds: float) -> None:
        """Refuse a budget that cannot fit in memory or finish in ``max_seconds`` (timed on a few runs)."""
        budget = self.budget
        held = 2 * (budget.runs + budget.selection)  # the records of one certified pair are held at once
        check_fits("runs", budget.runs, held * _RECORD_BYTES * (steps + 1),
                   what=f"the records of {held} runs of {steps} steps")
        self.total = budget.planned(len(bases))
        probes = 3
        feedback = self._feedback(bases[0][1])
        self.runner.run(feedback)  # the first run may import and warm up the algorithm's libraries: not timed
        started = time.perf_counter()
        for _ in range(probes):
            self.runner.run(feedback)
        each = (time.perf_counter() - started) / probes
        estimate = each * self.total
        if estimate > max_seconds:
            raise InvalidParameterError(
                f"runs = {budget.runs}, search_runs = {budget.search_runs}: the audit plans about {self.total:.3g} "
                f"runs of about {each * 1e3:.3g} ms each, about {_duration(estimate)}, more than the limit of "
                f"{_duration(max_seconds)}; lower runs or search_runs, or raise the limit (--max-minutes)")

    def _feedback(self, base: Any) -> Feedback:
        return Feedback(self.unit, base)

    def _runs(self, feedback: Feedback, n: int) -> list[PublicRecord]:
        records = []
        for _ in range(n):
            records.append(self.runner.run(feedback))
            self.done += 1
            if self.progress is not None and self.done % 25 == 0:
                self.progress(self.done, max(self.total, self.done))
        return records

    def _interleaved(self, first: Feedback, second: Feedback, n: int) -> tuple[list[PublicRecord], list[PublicRecord]]:
        """``n`` runs on each input, alternating, so drifts of the machine affect both alike."""
        records_d: list[PublicRecord] = []
        records_e: list[PublicRecord] = []
        for _ in range(n):
            records_d += self._runs(first, 1)
            records_e += self._runs(second, 1)
        return records_d, records_e

    # ------------------------------------------------------------------------------ the search
    def _score(self, records_d: list[PublicRecord], records_e: list[PublicRecord], changed_arm: int | None) -> float:
        width = _output_width(records_d + records_e)
        observed_d = _observe(records_d, self.unit, self.n_arms, changed_arm, width)
        observed_e = _observe(records_e, self.unit, self.n_arms, changed_arm, width)
        return search_score(observed_d, observed_e, delta=self.delta)

    def search(self, bases: list[tuple[str, Any]]) -> tuple[list[tuple[float, SearchPoint]], int]:
        """Every structured pair scored, then the hill-climb from the best; all scored points, and the structured count."""
        n = self.budget.search_runs
        scored: list[tuple[float, SearchPoint]] = []
        for index, (name, base) in enumerate(bases):
            base_records = self._runs(self._feedback(base), n)
            pulls = np.array([_pull_counts(r.transcript, self.n_arms, None) for r in base_records],
                             dtype=np.int64).reshape(n, self.n_arms)
            for point in search_points(self.unit, name, base, pulls, reward_bound=self.reward_bound,
                                       min_count=self.min_count, slot=(index, len(bases))):
                label, first, second = point.pair()
                records_e = self._runs(second, n)
                scored.append((self._score(base_records, records_e, first.changed_arm), point))
                self._observe_side_channels(label, point, base_records, records_e)
        structured = len(scored)
        if scored and self.budget.climb:
            best_score, best = max(scored, key=lambda item: item[0])
            for _ in range(self.budget.climb):
                candidate = mutate(best, self.generator, reward_bound=self.reward_bound)
                _, first, second = candidate.pair()
                records_d, records_e = self._interleaved(first, second, n)
                score = self._score(records_d, records_e, first.changed_arm)
                scored.append((score, candidate))
                self._observe_side_channels(candidate.pair()[0], candidate, records_d, records_e)
                if score >= best_score:
                    best_score, best = score, candidate
        return scored, structured

    def _observe_side_channels(self, label: str, point: SearchPoint, records_d: list[PublicRecord],
                               records_e: list[PublicRecord]) -> None:
        """Keep the pair's timing advantage, and how far a released float moved (for the float attack's pairs)."""
        candidate = _timing(label, records_d, records_e)
        if self.timing is None or candidate.advantage > self.timing.advantage:
            self.timing = candidate
        values_d = [r.output for r in records_d]
        values_e = [r.output for r in records_e]
        if all(isinstance(v, float) and math.isfinite(v) for v in values_d + values_e):
            spread = float(np.std(values_d + values_e)) or 1.0
            self.shifts.append((abs(float(np.median(values_d)) - float(np.median(values_e))) / spread, point))

    def _float_attacks(self, certified: list[tuple[str, list[PublicRecord], list[PublicRecord]]],
                       ) -> list[tuple[str, FloatAttackReport]]:
        """The float attack on the certified pairs' releases, and on fresh runs of the pairs whose released float moved most.

        A pair whose released value does not move (an arm whose statistic the change leaves equal) has
        no floating-point signature, however revealing its other outputs; so the attack also takes the
        ``certify_pairs`` pairs whose median release moved most in the search.
        """
        attacks = []
        done = {label for label, _, _ in certified}
        for label, records_d, records_e in certified:
            floats_d = [record.output for record in records_d]
            if floats_d and all(isinstance(value, float) for value in floats_d):
                attacks.append((label, float_attack(np.array(floats_d), np.array([r.output for r in records_e]))))
        if not attacks:
            return attacks
        for _, point in sorted(self.shifts, key=lambda item: -item[0]):
            label, first, second = point.pair()
            if label in done:
                continue
            if len(done) >= 2 * self.budget.certify_pairs:
                break
            done.add(label)
            records_d, records_e = self._interleaved(first, second, self.budget.runs)
            floats_d, floats_e = [r.output for r in records_d], [r.output for r in records_e]
            if all(isinstance(v, float) for v in floats_d + floats_e):
                attacks.append((label, float_attack(np.array(floats_d), np.array(floats_e))))
        return attacks

    # ---------------------------------------------------------------------------- certification
    def certify(self, point: SearchPoint, score: float, confidence_each: float,
                ) -> tuple[CertifiedPair, list[PublicRecord], list[PublicRecord]]:
        """Events chosen on a selection sample of the pair, then counted on fresh runs."""
        label, first, second = point.pair()
        selection_d, selection_e = self._interleaved(first, second, self.budget.selection)
        width = _output_width(selection_d + selection_e)
        chosen = choose_events(_observe(selection_d, self.unit, self.n_arms, first.changed_arm, width),
                               _observe(selection_e, self.unit, self.n_arms, first.changed_arm, width),
                               delta=self.delta, keep=_EVENTS_PER_PAIR)
        events = [event for _, event in chosen]
        records_d, records_e = self._interleaved(first, second, self.budget.runs)
        observed_d = _observe(records_d, self.unit, self.n_arms, first.changed_arm, width)
        observed_e = _observe(records_e, self.unit, self.n_arms, first.changed_arm, width)
        if not events:  # the selection sample shows no variation at all: every output identical
            report = certify(observed_d, observed_e, [_Constant()], delta=self.delta, confidence=confidence_each)
            return CertifiedPair(label, score, ("every run's output (no variation in the selection runs)",),
                                 report, (math.inf,)), records_d, records_e
        report = certify(observed_d, observed_e, events, delta=self.delta, confidence=confidence_each)
        powers = tuple(event_power(event, observed_d, observed_e, epsilon=self.epsilon, delta=self.delta,
                                   runs=self.budget.runs, confidence=confidence_each, n_events=len(events))
                       for event in events)
        return CertifiedPair(label, score, tuple(str(e) for e in events), report, powers), records_d, records_e

    def run(self, bases: list[tuple[str, Any]], probe: Any, factory: Callable[[], Any],
            distribution: Callable[[Any], Any] | None, started: float) -> UserAuditReport:
        scored, structured = self.search(bases)
        ranked = sorted(scored, key=lambda item: -item[0])
        chosen: list[tuple[float, SearchPoint]] = []
        for score, point in ranked:
            if len(chosen) < self.budget.certify_pairs and point.pair()[0] not in {p.pair()[0] for _, p in chosen}:
                chosen.append((score, point))
        self.total = self.done + len(chosen) * 2 * (self.budget.selection + self.budget.runs)
        each = 1.0 - (1.0 - self.confidence) / max(len(chosen), 1)
        certified, releases = [], []
        for score, point in chosen:
            item, records_d, records_e = self.certify(point, score, each)
            certified.append(item)
            releases.append((item.pair, records_d, records_e))
            self._observe_side_channels(item.pair, point, records_d, records_e)
        float_attacks = [] if self.seeded else self._float_attacks(releases)
        timing = self.timing
        if self.progress is not None:
            self.progress(self.done, self.done)
        exact_pairs = [point.pair() for _, point in scored[:structured]] + [point.pair() for _, point in chosen]
        exact = _exact(probe, factory, exact_pairs, self.epsilon, self.delta, distribution)
        searched = [
            f"{len(bases)} base inputs for one {self.unit}: " + "; ".join(name for name, _ in bases),
            f"{structured} neighbouring pairs changing the {self.unit} at every stage of a run"
            + ((" (the first, middle and last pull of each arm, to the other bound)" if self.n_arms <= 4 else
                " (the first, middle and last pull of the most and least pulled arms and of a block of arms that "
                "moves from base to base, so every arm on some base; to the other bound)")
               if self.unit == "reward" else ""),
            f"{len(scored) - structured} pairs of a hill-climb from the best one",
            self.budget.describe() + f"; {self.done} runs in all",
            "events: likelihood-ratio sets of the discrete observables and a threshold on a classifier's score, "
            f"chosen on {self.budget.selection} other runs per input",
        ]
        not_tested = [
            "other neighbouring inputs, and events other than those certified",
            "violations smaller than each event's stated power",
            "composition across several runs or sessions (one run per input is one release)",
        ]
        if self.seeded:
            not_tested.append("the deployed noise, and the floating-point attack: the seeded simulation draws NumPy "
                              "floats, which are not float-safe by design (audit without --seeded-noise)")
        elif not float_attacks:
            not_tested.append("floating-point attack: the released values are not floats")
        if exact is None:
            not_tested.append("exact audit: no output distribution was supplied")
        return UserAuditReport(self.name, self.unit, self.epsilon, self.delta, self.budget.runs, self.confidence,
                               self.seeded, tuple(certified), exact, tuple(float_attacks), timing, tuple(searched),
                               tuple(not_tested), time.perf_counter() - started)


class _Constant:
    """The event "any output" (certifies nothing: used when the selection runs never varied)."""

    def indicator(self, observed: Observations) -> np.ndarray:
        return np.ones(observed.size, dtype=np.bool_)

    def __str__(self) -> str:
        return "any output"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} hours"
    return f"{seconds / 60:.3g} minutes" if seconds >= 60 else f"{seconds:.3g} s"


def _timing(label: str, records_d: Sequence[PublicRecord], records_e: Sequence[PublicRecord]) -> TimingReport:
    times_d = np.sort([record.seconds for record in records_d])
    times_e = np.sort([record.seconds for record in records_e])
    grid = np.concatenate([times_d, times_e])
    cdf_d = np.searchsorted(times_d, grid, side="right") / times_d.size
    cdf_e = np.searchsorted(times_e, grid, side="right") / times_e.size
    return TimingReport(float(np.max(np.abs(cdf_d - cdf_e))), label, (float(times_d.mean()), float(times_e.mean())))

def _exact(probe: Any, factory: Callable[[], Any], pairs: list[tuple[str, Feedback, Feedback]], epsilon: float,
           delta: float, distribution: Callable[[Any], Any] | None) -> ExactAuditReport | None:
    law = distribution
    if law is None and has_member(probe, "fit") and has_member(probe, "probabilities"):
        def law(feedback: Feedback) -> Any:
            return fit_policy(factory(), feedback.data).probabilities()
    if law is None:
        return None
    try:
        laws = [(_law(law, first), _law(law, second)) for _, first, second in pairs]
    except UserAlgorithmError:
        raise
    except Exception as exc:
        raise UserAlgorithmError(f"the output distribution of the audited algorithm raised {type(exc).__name__}: "
                                 f"{exc}") from exc
    aligned = [_aligned(p, q) for p, q in laws]
    return audit_exact(lambda vector: vector, aligned, epsilon, delta)


def _law(law: Callable[[Any], Any], feedback: Feedback) -> Any:
    value = law(feedback)
    return dict(value) if isinstance(value, Mapping) else np.asarray(value, dtype=np.float64)


def _aligned(p: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two laws on one ordered output set: mappings ``{output: probability}`` over the union of outputs."""
    if isinstance(p, dict) and isinstance(q, dict):
        outputs = sorted(set(p) | set(q), key=repr)
        return (np.array([p.get(o, 0.0) for o in outputs], dtype=np.float64),
                np.array([q.get(o, 0.0) for o in outputs], dtype=np.float64))
    if isinstance(p, dict) or isinstance(q, dict) or np.shape(p) != np.shape(q):
        raise InvalidParameterError("distribution must return probability vectors over one output set, or mappings "
                                    "{output: probability}, for every input")
    return np.asarray(p), np.asarray(q)
