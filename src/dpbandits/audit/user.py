"""Audit a user's own private algorithm: adversarial neighbours, many runs, an empirical ε bound.

:func:`audit_algorithm` runs the privacy contract of the built-ins on an algorithm the library
knows only through its public protocol — an ask/tell agent (``ask``, ``tell``, ``done``,
``recommendation``) or an offline policy (``fit``, ``sample``). For the unit it protects (one
reward, one preference label, one logged record) it builds adversarial neighbouring inputs
(:mod:`dpbandits.audit.user_inputs`), runs a fresh copy of the algorithm many times on each input of
each pair, and bounds ε from below on what the runs *released*:

* the **recommendation** (or sampled action): every possible value is an output event, fixed before
  the runs;
* the **transcript** of asks: the most frequent transcripts of a separate calibration draw are the
  events (events chosen on the audited runs would bias the bound upward);
* for the reward unit, the **number of pulls of the changed arm**: threshold events at quantiles of
  the calibration draw.

Each (pair, observable) gives a Clopper–Pearson lower bound on ε
(:func:`~dpbandits.audit.statistical.epsilon_lower_bound`); the confidence is split over all of them
(Bonferroni), so a claim that holds is refuted with probability at most 1 − ``confidence``. Beside the
bound the report states the audit's **power**: the smallest ε at which a violation on the observed
events would be detected with these runs (a claim that is false by less than that passes).

Where they apply, the report adds

* the **exact** audit (:func:`~dpbandits.audit.exact.audit_exact`) when the output distribution is
  supplied (``distribution=``) or the policy states it (``probabilities()`` after ``fit``);
* the **floating-point attack** (:func:`~dpbandits.audit.floating_point.float_attack`) when the
  released values are floats;
* a **timing** check: each run's time on extreme and mid-range inputs, and the distinguishing
  advantage of a threshold on it (the Kolmogorov–Smirnov distance). Timing on a shared machine is
  noisy, so it is reported, not part of ``passed``.

The algorithm runs with its deployment noise (secure, unseeded) unless ``seeded_noise=True`` (faster:
``rng`` and ``insecure_seeded_noise=True`` are passed when the constructor takes them; the seeded
path is then what is audited). The user's code runs in this process, as any import would.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbandits._core.errors import InsecureNoiseWarning, InvalidParameterError, UserAlgorithmError
from dpbandits._core.rng import RNGLike, as_generator
from dpbandits._core.validation import (
    check_delta,
    check_epsilon,
    check_in_interval,
    check_int,
    check_positive_float,
)
from dpbandits.algorithms.user_imports import load_user_object
from dpbandits.audit.exact import ExactAuditReport, audit_exact
from dpbandits.audit.floating_point import FloatAttackReport, float_attack
from dpbandits.audit.statistical import (
    OutcomeEvent,
    StatisticalAuditReport,
    detectable_violation,
    epsilon_lower_bound,
    threshold_events,
)
from dpbandits.audit.user_inputs import (
    UNITS,
    Feedback,
    PublicRecord,
    UserRunner,
    fit_policy,
    neighbour_inputs,
)

__all__ = ["ObservableAudit", "TimingReport", "UserAuditReport", "audit_algorithm", "detectable_epsilon"]

_TRANSCRIPT_EVENTS = 8
_THRESHOLDS = 5
_CALIBRATION_SHARE = 0.2


# ------------------------------------------------------------------------------------------ power
def detectable_epsilon(claim: float, runs: int, *, confidence: float, n_events: int, delta: float = 0.0) -> float:
    """The smallest true ε that ``runs`` runs per input could reveal, on the most favourable event.

    :func:`~dpbandits.audit.statistical.detectable_violation` gives, for an output event of
    probability p, the smallest excess over the claim that the bound of ``n_events`` events at this
    ``confidence`` detects at the expected counts; the result is the claim plus the least excess over
    p ∈ [1/runs, 1 − 1/runs]. A violation smaller than this passes unseen whatever the events; a
    larger one is detected only if the observables contain such an event. ``inf`` if none is.
    """
    candidates = np.geomspace(max(1.0 / runs, 2.0 * delta, 1e-12), 1.0 - 1.0 / runs, 40)
    excess = min(detectable_violation(float(p), runs, epsilon=claim, delta=delta, confidence=confidence,
                                      n_events=n_events) for p in candidates if p > delta)
    return claim + excess


# ---------------------------------------------------------------------------------------- reports
@dataclass(frozen=True)
class ObservableAudit:
    """The statistical audit of one observable of the runs on one neighbouring pair."""

    pair: str
    observable: str
    report: StatisticalAuditReport
    detectable_epsilon: float

    @property
    def epsilon_lower_bound(self) -> float:
        """ε_lb of this observable on this pair."""
        return self.report.epsilon_lower_bound


@dataclass(frozen=True)
class TimingReport:
    """Run times on the two inputs of each pair: the largest distinguishing advantage found."""

    advantage: float
    pair: str
    mean_seconds: tuple[float, float]

    def __str__(self) -> str:
        first, second = self.mean_seconds
        return (f"timing: best threshold on one run's time tells the inputs apart with advantage "
                f"{self.advantage:.3f} ({self.pair}: mean {first * 1e3:.3g} ms vs {second * 1e3:.3g} ms)")


@dataclass(frozen=True)
class UserAuditReport:
    """What :func:`audit_algorithm` tested, found, and could not have found."""

    algorithm: str
    unit: str
    epsilon: float
    delta: float
    runs: int
    confidence: float
    statistical: tuple[ObservableAudit, ...]
    exact: ExactAuditReport | None
    float_attacks: tuple[tuple[str, FloatAttackReport], ...]
    timing: TimingReport | None
    tested: tuple[str, ...]
    not_tested: tuple[str, ...] = field(default=())

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest ε_lb over every pair and observable."""
        return max((item.epsilon_lower_bound for item in self.statistical), default=0.0)

    @property
    def power(self) -> float:
        """The smallest true ε any observable could reveal with these runs (see :func:`detectable_epsilon`)."""
        return min((item.detectable_epsilon for item in self.statistical), default=math.inf)

    @property
    def passed(self) -> bool:
        """No statistical bound above the claim, the exact audit (if any) passed, no float attack succeeded."""
        return (self.epsilon_lower_bound <= self.epsilon
                and (self.exact is None or self.exact.passed)
                and not any(report.distinguished for _, report in self.float_attacks))

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (``dpbandits audit --json``)."""
        return {
            "algorithm": self.algorithm, "unit": self.unit, "epsilon": self.epsilon, "delta": self.delta,
            "runs": self.runs, "confidence": self.confidence, "passed": self.passed,
            "epsilon_lower_bound": self.epsilon_lower_bound, "power_epsilon": _finite(self.power),
            "statistical": [
                {"pair": item.pair, "observable": item.observable, "epsilon_lower_bound": item.epsilon_lower_bound,
                 "detectable_epsilon": _finite(item.detectable_epsilon), "evidence": str(item.report)}
                for item in self.statistical
            ],
            "exact": None if self.exact is None else {"passed": self.exact.passed,
                                                      "max_log_ratio": _finite(self.exact.max_log_ratio)},
            "float_attack": [{"pair": pair, "distinguished": report.distinguished}
                             for pair, report in self.float_attacks],
            "timing": None if self.timing is None else {"advantage": self.timing.advantage, "pair": self.timing.pair},
            "tested": list(self.tested), "not_tested": list(self.not_tested),
        }

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "REFUTED"
        lines = [
            f"{verdict}: {self.algorithm} claims ({self.epsilon:g}, {self.delta:g})-DP for one {self.unit}",
            f"empirical epsilon >= {self.epsilon_lower_bound:.4g} at confidence {self.confidence:g} "
            f"({self.runs} runs per input)",
            f"power: a true epsilon below {self.power:.3g} goes undetected at the expected counts of these runs, "
            "even on the most favourable output event (add runs for more power); a larger one is detected about "
            "half the time or more if an observable below shows it" if math.isfinite(self.power) else
            f"power: none: at the expected counts of {self.runs} runs per input no violation, however large, "
            "would be detected (add runs)",
        ]
        worst = max(self.statistical, key=lambda item: item.epsilon_lower_bound, default=None)
        if worst is not None:
            lines.append(f"strongest evidence: {worst.observable} on '{worst.pair}': {worst.report}")
        if self.exact is not None:
            lines.append(f"exact: {self.exact}")
        for pair, report in self.float_attacks:
            lines.append(f"float attack on '{pair}': {'DISTINGUISHED' if report.distinguished else 'nothing found'}")
        if self.timing is not None:
            lines.append(str(self.timing) + " (reported, not part of the verdict)")
        lines += [f"tested: {item}" for item in self.tested]
        lines += [f"not tested: {item}" for item in self.not_tested]
        return "\n".join(lines)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


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
    """The members the runs call: ``ask``, ``tell``, ``done`` of an agent; ``fit``, ``sample`` of a policy."""
    members = ("fit", "sample") if unit == "record" else ("ask", "tell", "done")
    missing = [member for member in members if not hasattr(subject, member)]
    if missing:
        kind = "a policy (unit 'record')" if unit == "record" else f"an ask/tell agent (unit {unit!r})"
        raise UserAlgorithmError(f"algorithm {name!r} has no {', '.join(missing)}: audited as {kind}, it needs "
                                 f"{', '.join(members)} (see the guide 'Your own algorithm')")


def _infer_unit(cls: Any, claim: Any) -> str:
    """The unit from the class's shape and its stated guarantee's unit and relation."""
    if hasattr(cls, "fit") and hasattr(cls, "sample"):
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
def _observables(records: Sequence[PublicRecord], changed_arm: int | None,
                 codebook: dict[Any, int]) -> dict[str, np.ndarray]:
    values: dict[str, np.ndarray] = {}
    outputs = [record.output for record in records]
    if outputs and all(isinstance(output, float) for output in outputs):
        values["released value"] = np.array(outputs, dtype=np.float64)  # thresholds, as for a count
    elif any(output is not None for output in outputs):
        values["recommendation" if records[0].transcript else "sampled output"] = _codes(outputs, codebook)
    if any(record.transcript for record in records):
        values["transcript"] = _codes([record.transcript for record in records], codebook)
    if changed_arm is not None:
        values[f"pulls of arm {changed_arm}"] = np.array(
            [sum(1 for arm in record.transcript if arm == changed_arm) for record in records], dtype=np.float64)
    return values


def _codes(values: Sequence[Any], codebook: dict[Any, int]) -> np.ndarray:
    """Each distinct released value as an integer code (equal values, equal codes, within one audit)."""
    return np.array([codebook.setdefault(value, len(codebook)) for value in values], dtype=np.int64)


def _events(name: str, calibration: np.ndarray) -> list[Any]:
    if name.startswith("pulls of arm") or name == "released value":
        return list(threshold_events(calibration, _THRESHOLDS)) or [OutcomeEvent(float(calibration[0]))]
    frequent = Counter(calibration.tolist()).most_common(_TRANSCRIPT_EVENTS)
    return [OutcomeEvent(value) for value, _ in frequent]


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
    confidence: float = 0.95,
    reward_bound: float = 1.0,
    distribution: Callable[[Any], Any] | None = None,
    seeded_noise: bool = False,
    pairs: int | None = None,
    rng: RNGLike = None,
) -> UserAuditReport:
    """Audit the privacy claim of a user's algorithm (see the module docstring).

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
        Runs per input of each pair (a fifth more for calibration); more runs, more power.
    confidence : float, default 0.95
        Joint confidence of every statistical bound.
    reward_bound : float, default 1
        R̄: rewards of the inputs lie in [0, R̄].
    distribution : callable, optional
        ``feedback -> probabilities`` over a fixed finite output set, the same for every input, or
        ``feedback -> {output: probability}`` (the output sets of each pair are then aligned)
        (``feedback.data`` is the reward table, response table or logged data set of
        :mod:`dpbandits.audit.user_inputs`): adds the exact audit.
    seeded_noise : bool, default False
        Audit the seeded simulation path (faster) instead of the deployment noise.
    pairs : int, optional
        Audit only the first ``pairs`` neighbouring pairs (faster, less thorough; the report lists
        the pairs tested).
    rng : int, SeedSequence, Generator or None
        The audit's own randomness (seeds of the seeded path).

    Returns
    -------
    UserAuditReport

    Raises
    ------
    UserAlgorithmError
        If the algorithm cannot be loaded or fails (one line naming it and the step).
    InvalidParameterError
        If a parameter is invalid, or the unit cannot be inferred.

    Privacy
    -------
    Passing is evidence, not proof: only the pairs and observables listed in the report are tested,
    and only violations above its power are detectable.

    References
    ----------
    Jagielski, Ullman & Oprea (2020), auditing by Clopper–Pearson bounds on output events; Mironov
    (2012), the floating-point attack.
    """
    name = algorithm if isinstance(algorithm, str) else f"{algorithm.__module__}:{algorithm.__qualname__}"
    cls = load_user_object(algorithm) if isinstance(algorithm, str) else algorithm
    _check_auditable(name, cls)
    given = dict(params or {})
    epsilon = None if epsilon is None else check_epsilon(epsilon)
    _check_params(given, epsilon)
    runs = check_int(runs, "runs", minimum=20)
    confidence = check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    delta = check_delta(delta)
    n_arms = check_int(n_arms, "n_arms", minimum=2)
    reward_bound = check_positive_float(reward_bound, "reward_bound")
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
        unit = _infer_unit(cls, claim) if unit is None else unit
        if unit not in UNITS:
            raise InvalidParameterError(f"unit must be one of {list(UNITS)}; got {unit!r}")
        _check_protocol(name, probe, unit)
        steps = 1 if unit == "record" else _steps(given)
        min_count = given.get("min_count") if unit == "record" else None
        inputs = neighbour_inputs(unit, n_arms, steps, reward_bound=reward_bound, min_count=min_count)
        if pairs is not None:
            inputs = inputs[:check_int(pairs, "pairs", minimum=1)]
        return _audit(name, runner, inputs, claimed, delta, unit, runs, confidence, distribution, cls, factory)


def _audit(name: str, runner: UserRunner, pairs: list[tuple[str, Feedback, Feedback]], epsilon: float,
           delta: float, unit: str, runs: int, confidence: float, distribution: Callable[[Any], Any] | None,
           cls: Any, factory: Callable[[], Any]) -> UserAuditReport:
    calibration_runs = max(10, int(_CALIBRATION_SHARE * runs))
    codebook: dict[Any, int] = {}  # one code per distinct released value, shared by every pair of this audit
    collected: list[tuple[str, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray],
                          list[PublicRecord], list[PublicRecord]]] = []
    for label, first, second in pairs:
        calibration_runs_d, calibration_runs_e = _interleaved(runner, first, second, calibration_runs)
        records_d, records_e = _interleaved(runner, first, second, runs)
        calibration_d = _observables(calibration_runs_d, first.changed_arm, codebook)
        calibration_e = _observables(calibration_runs_e, first.changed_arm, codebook)
        calibration = {key: np.concatenate([calibration_d[key], calibration_e[key]]) for key in calibration_d}
        collected.append((label, calibration, _observables(records_d, first.changed_arm, codebook),
                          _observables(records_e, first.changed_arm, codebook), records_d, records_e))
    n_tests = sum(len(observed_d) for _, _, observed_d, _, _, _ in collected)
    each = 1.0 - (1.0 - confidence) / max(n_tests, 1)
    statistical, float_attacks, timing = [], [], None
    for label, calibration, observed_d, observed_e, records_d, records_e in collected:
        for key, values_d in observed_d.items():
            values_e = observed_e[key]
            events = _events(key, calibration[key])
            report = epsilon_lower_bound(values_d, values_e, events, delta=delta, confidence=each)
            power = detectable_epsilon(epsilon, runs, confidence=each, n_events=len(events), delta=delta)
            statistical.append(ObservableAudit(label, key, report, power))
        floats_d = [record.output for record in records_d]
        if floats_d and all(isinstance(value, float) for value in floats_d):
            float_attacks.append((label, float_attack(np.array(floats_d),
                                                      np.array([record.output for record in records_e]))))
        candidate = _timing(label, records_d, records_e)
        if timing is None or candidate.advantage > timing.advantage:
            timing = candidate
    exact = _exact(cls, factory, pairs, epsilon, delta, distribution)
    tested = [f"{len(pairs)} adversarial neighbouring pairs for one {unit}: " + "; ".join(p[0] for p in pairs),
              "observables: " + ", ".join(sorted({item.observable for item in statistical}))]
    not_tested = [
        "other neighbouring inputs, and outputs other than the observables above",
        "violations smaller than the stated power",
        "composition across several runs or sessions (one run per input is one release)",
    ]
    if not float_attacks:
        not_tested.append("floating-point attack: the released values are not floats")
    if exact is None:
        not_tested.append("exact audit: no output distribution was supplied")
    return UserAuditReport(name, unit, epsilon, delta, runs, confidence, tuple(statistical), exact,
                           tuple(float_attacks), timing, tuple(tested), tuple(not_tested))


def _interleaved(runner: UserRunner, first: Feedback, second: Feedback,
                 runs: int) -> tuple[list[PublicRecord], list[PublicRecord]]:
    """``runs`` runs on each input, alternating, so drifts of the machine affect both alike."""
    records_d, records_e = [], []
    for _ in range(runs):
        records_d.append(runner.run(first))
        records_e.append(runner.run(second))
    return records_d, records_e


def _timing(label: str, records_d: Sequence[PublicRecord], records_e: Sequence[PublicRecord]) -> TimingReport:
    times_d = np.sort([record.seconds for record in records_d])
    times_e = np.sort([record.seconds for record in records_e])
    grid = np.concatenate([times_d, times_e])
    cdf_d = np.searchsorted(times_d, grid, side="right") / times_d.size
    cdf_e = np.searchsorted(times_e, grid, side="right") / times_e.size
    return TimingReport(float(np.max(np.abs(cdf_d - cdf_e))), label, (float(times_d.mean()), float(times_e.mean())))


def _exact(cls: Any, factory: Callable[[], Any], pairs: list[tuple[str, Feedback, Feedback]], epsilon: float,
           delta: float, distribution: Callable[[Any], Any] | None) -> ExactAuditReport | None:
    law = distribution
    if law is None and hasattr(cls, "fit") and hasattr(cls, "probabilities"):
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
