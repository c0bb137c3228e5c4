"""The registry-wide privacy contract: every registered private algorithm is audited, adversarially.

An algorithm that claims privacy registers *privacy cases* (:func:`register_privacy_cases`). A case
holds the claim, pairs of neighbouring inputs — including adversarial ones: the least-covered record
removed, a record of an unseen arm added, rewards or norms pushed to their bounds, labels flipped —
and a way to observe the algorithm's release on an input:

* ``distribution(data)``: the exact output distribution over a finite set (log-probabilities), for
  :func:`~dpbandits.audit.exact.audit_exact` — a counterexample refutes the claim outright;
* ``sample(data, n, rng)``: ``n`` independent releases, for the Clopper–Pearson lower bound of
  :func:`~dpbandits.audit.statistical.epsilon_lower_bound` over output events (every distinct output for
  discrete releases, thresholds on ``statistic(outputs)`` chosen on a separate calibration draw for
  continuous ones);
* ``float_attack=True`` on a sampled case: the releases are also examined by
  :func:`~dpbandits.audit.floating_point.float_attack` (low-order bits of released doubles);
* ``transcript_loss(data, neighbour, n, rng)``: for adaptive algorithms whose output law is not
  enumerable (continual counters inside an elimination loop), ``n`` sampled runs on ``data`` and, per
  run, the supremum over the noise of the exact log-density ratio of the released transcript between
  the two inputs with the run's public choices held fixed — the quantity the privacy proof bounds
  (:func:`~dpbandits.audit.transcript.compare_transcripts` computes it by recording a run's releases
  and replaying them on the neighbour). The case passes when every run's supremum is at most ε.

A case passes when no audit refutes its claim on any pair. *Negative controls* are cases with
``broken=True``: deliberately broken variants (noise scaled from the data, noise added in NumPy
floats, seeded noise, a double-counted label, ...) whose audit must fail; the contract test checks
both directions, so an audit that cannot fail is itself caught.

Cases are built lazily (their factories import the algorithm families) by the modules of
:mod:`dpbandits.audit.cases`, one per family; :func:`load_privacy_cases` imports them all.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits._core.rng import RNGLike, spawn_generators
from dpbandits.audit.exact import audit_exact
from dpbandits.audit.floating_point import float_attack
from dpbandits.audit.statistical import (
    OutcomeEvent,
    detectable_violation,
    epsilon_lower_bound,
    threshold_events,
)
from dpbandits.privacy.guarantees import Guarantee

__all__ = [
    "PRIVACY_CASES",
    "CaseRegistry",
    "CaseReport",
    "NeighbourPair",
    "PairReport",
    "PrivacyCase",
    "load_privacy_cases",
    "privacy_cases",
    "register_privacy_cases",
    "registered_case_algorithms",
    "run_privacy_case",
    "with_power",
]

CASE_MODULES: tuple[str, ...] = (
    "dpbandits.audit.cases.bai",
    "dpbandits.audit.cases.dueling",
    "dpbandits.audit.cases.kernel",
    "dpbandits.audit.cases.offline",
    "dpbandits.audit.cases.budgets",
)


class _Case(Protocol):
    @property
    def algorithm(self) -> str:
        """Registry name of the audited algorithm."""


C = TypeVar("C", bound=_Case)


@dataclass(frozen=True)
class NeighbourPair:
    """Two neighbouring inputs of an algorithm.

    Attributes
    ----------
    label : str
        What differs ("remove the least-covered record", "add a record of unseen arm 3", ...).
    data, neighbour : object
        The inputs, in whatever form the case's ``distribution``/``sample`` take.
    adversarial : bool, default True
        Whether the pair was chosen as a worst case (at the bounds, at the least-covered unit, an
        unseen arm) rather than at random.
    """

    label: str
    data: Any
    neighbour: Any
    adversarial: bool = True


Claim = Guarantee | Callable[[Any], Guarantee]
"""A guarantee, or (per-instance claims) a function of the input giving the guarantee at that input."""


@dataclass(frozen=True)
class PrivacyCase:
    """One audited configuration of a registered algorithm.

    Attributes
    ----------
    algorithm : str
        Registry name of the algorithm the case audits.
    description : str
        The configuration, in words.
    claim : Guarantee or callable
        The claim under test; a callable is evaluated at each pair's ``data`` (per-instance claims
        must hold between that input and its neighbour, in both directions of the ratio).
    pairs : sequence of NeighbourPair
    distribution : callable, optional
        ``input -> log-probabilities`` over a finite output set, the same ordered set for the two
        inputs of each pair (exact audit; a pair may carry its own output set, for example the
        intervals of a sufficient one-dimensional projection of a continuous release).
    sample : callable, optional
        ``(input, n, rng) -> releases`` of shape (n, ...) (statistical audit).
    statistic : callable, optional
        ``releases -> (n,) floats`` for continuous releases (thresholds are chosen on a calibration
        draw); without it the releases must have shape (n,) and every distinct value is an outcome
        event.
    transcript_loss : callable, optional
        ``(input, neighbour, n, rng) -> (n,)`` suprema over the noise of the transcript's exact
        log-density ratio, one per sampled run on ``input`` (see the module docstring).
    n_samples : int, default 20000
        Releases per input for the statistical audit (plus ``n_samples // 4`` for calibration).
    confidence : float, default 1 − 1e-6
        Confidence of the statistical lower bound (its false-failure rate is 1 − confidence).
    float_attack : bool, default False
        Also run the floating-point attack on the sampled releases.
    heavy : bool, default False
        A long statistical audit (many draws): the test suite marks it slow.
    broken : bool, default False
        A negative control: the audit must refute ``claim`` on some pair.
    """

    algorithm: str
    description: str
    claim: Claim
    pairs: Sequence[NeighbourPair]
    distribution: Callable[[Any], ArrayLike] | None = None
    sample: Callable[[Any, int, np.random.Generator], ArrayLike] | None = None
    statistic: Callable[[NDArray[Any]], ArrayLike] | None = None
    transcript_loss: Callable[[Any, Any, int, np.random.Generator], ArrayLike] | None = None
    n_samples: int = 20_000
    confidence: float = 1 - 1e-6
    float_attack: bool = False
    heavy: bool = False
    broken: bool = False
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.distribution is None and self.sample is None and self.transcript_loss is None:
            raise InvalidParameterError(
                f"privacy case {self.description!r} needs distribution, sample or transcript_loss"
            )
        if not self.pairs:
            raise InvalidParameterError(f"privacy case {self.description!r} needs at least one neighbour pair")

    def claim_at(self, data: Any) -> Guarantee:
        """The claim at ``data``."""
        return self.claim(data) if callable(self.claim) else self.claim


@dataclass(frozen=True)
class PairReport:
    """What the audits found on one neighbour pair."""

    label: str
    epsilon_claimed: float
    delta_claimed: float
    exact_loss: float | None = None
    exact_passed: bool | None = None
    epsilon_lower_bound: float | None = None
    float_attack_cells: int | None = None
    transcript_loss: float | None = None
    exact_delta: float | None = None

    @property
    def refuted(self) -> bool:
        """Whether some audit refuted the claim on this pair."""
        if self.exact_passed is False:
            return True
        if self.epsilon_lower_bound is not None and self.epsilon_lower_bound > self.epsilon_claimed:
            return True
        if self.transcript_loss is not None and self.transcript_loss > self.epsilon_claimed * (1 + 1e-9):
            return True
        return bool(self.float_attack_cells)

    def __str__(self) -> str:
        parts = [f"claim ({self.epsilon_claimed:.4g}, {self.delta_claimed:.3g})"]
        if self.exact_loss is not None and self.delta_claimed == 0.0:
            parts.append(f"exact loss {self.exact_loss:.4g}{'' if self.exact_passed else ' REFUTES'}")
        elif self.exact_delta is not None:  # an (ε, δ) claim is audited by δ(ε)
            parts.append(f"exact δ(ε) {self.exact_delta:.3g}{'' if self.exact_passed else ' REFUTES'}")
        if self.epsilon_lower_bound is not None:
            parts.append(f"eps_lb {self.epsilon_lower_bound:.4g}")
        if self.transcript_loss is not None:
            parts.append(f"worst transcript loss {self.transcript_loss:.4g}")
        if self.float_attack_cells:
            parts.append(f"float attack: {self.float_attack_cells} distinguishing cells")
        return f"{self.label}: " + ", ".join(parts)


@dataclass(frozen=True)
class CaseReport:
    """Outcome of :func:`run_privacy_case`."""

    case: PrivacyCase
    pairs: list[PairReport]

    @property
    def refuted(self) -> bool:
        """Whether some pair refuted the claim."""
        return any(pair.refuted for pair in self.pairs)

    @property
    def as_expected(self) -> bool:
        """A correct case is not refuted; a negative control is."""
        return self.refuted == self.case.broken

    def __str__(self) -> str:
        head = f"{self.case.algorithm}: {self.case.description}{' [negative control]' if self.case.broken else ''}"
        power = [f"power: {self.case.notes['power']}"] if "power" in self.case.notes else []
        return "\n  ".join([head, *power, *(str(p) for p in self.pairs)])


def with_power(case: PrivacyCase, probability: float, event: str, *, n_events: int, n_samples: int | None = None,
               heavy: bool = False) -> PrivacyCase:
    """``case`` with the power of its statistical audit stated in ``notes["power"]`` (and in its report).

    The power is :func:`~dpbandits.audit.statistical.detectable_violation` at the case's draws,
    confidence and claim, on an output event of probability ``probability`` (``event`` says which).
    ``n_samples`` changes the number of draws; ``heavy`` marks a long audit (slow in the test suite).
    """
    n = case.n_samples if n_samples is None else n_samples
    claim = case.claim_at(case.pairs[0].data)
    gap = detectable_violation(probability, n, epsilon=claim.epsilon, delta=claim.delta, confidence=case.confidence,
                               n_events=n_events)
    found = (f"detects a true loss above the claimed {claim.epsilon:.4g} by >= {gap:.3g}" if math.isfinite(gap)
             else f"cannot refute the claimed {claim.epsilon:.4g} by frequencies")
    text = (f"{n} draws per input at confidence 1 - {1 - case.confidence:.0e}: {found} on {event} "
            f"(probability {probability:.3g})")
    description = case.description if n_samples is None else f"{case.description}, {n} draws"
    return replace(case, n_samples=n, heavy=heavy or case.heavy, description=description,
                   notes={**case.notes, "power": text})


def _outcome_events(calibration: NDArray[Any]) -> list[OutcomeEvent]:
    if calibration.ndim != 1:
        raise InvalidParameterError(
            f"a discrete case's sample must return shape (n,) (encode structured outputs as one value); "
            f"got {calibration.shape}"
        )
    return [OutcomeEvent(value) for value in np.unique(calibration)]


def _statistical(case: PrivacyCase, pair: NeighbourPair, claim: Guarantee,
                 rng: np.random.Generator) -> tuple[float, int | None]:
    assert case.sample is not None
    n, n_cal = case.n_samples, max(case.n_samples // 4, 200)
    cal_d = np.asarray(case.sample(pair.data, n_cal, rng))
    cal_n = np.asarray(case.sample(pair.neighbour, n_cal, rng))
    out_d = np.asarray(case.sample(pair.data, n, rng))
    out_n = np.asarray(case.sample(pair.neighbour, n, rng))
    cells = None
    if case.float_attack:
        cells = len(float_attack(out_d, out_n).distinguishing_cells)
    if case.statistic is not None:
        stat = case.statistic
        events: list[Any] = threshold_events(np.concatenate([np.asarray(stat(cal_d)), np.asarray(stat(cal_n))]), 12)
        report = epsilon_lower_bound(np.asarray(stat(out_d)), np.asarray(stat(out_n)), events,
                                     delta=claim.delta, confidence=case.confidence)
    else:
        events = _outcome_events(np.concatenate([cal_d, cal_n]))
        report = epsilon_lower_bound(out_d, out_n, events, delta=claim.delta, confidence=case.confidence)
    return float(report.epsilon_lower_bound), cells


def run_privacy_case(case: PrivacyCase, rng: RNGLike = None) -> CaseReport:
    """Audit every pair of ``case``: exactly where a distribution is given, statistically where a sampler is.

    Parameters
    ----------
    case : PrivacyCase
    rng : int, SeedSequence, Generator or None
        Seed of the statistical audits' draws (the samplers receive spawned Generators).

    Returns
    -------
    CaseReport
    """
    generators = spawn_generators(rng, len(case.pairs))
    reports = []
    for pair, gen in zip(case.pairs, generators, strict=True):
        claim = case.claim_at(pair.data)
        exact_loss, exact_delta, exact_passed, eps_lb, cells = None, None, None, None, None
        if case.distribution is not None:  # audit_exact checks both directions of the ratio
            exact = audit_exact(case.distribution, [(pair.data, pair.neighbour)], epsilon=claim.epsilon,
                                delta=claim.delta, log=True)
            exact_loss, exact_passed = float(exact.max_log_ratio), bool(exact.passed)
            exact_delta = float(exact.delta_at_epsilon)
        if case.sample is not None and math.isfinite(claim.epsilon):
            eps_lb, cells = _statistical(case, pair, claim, gen)
        transcript = None
        if case.transcript_loss is not None:
            losses = np.asarray(case.transcript_loss(pair.data, pair.neighbour, case.n_samples, gen), dtype=float)
            transcript = float(np.max(losses)) if losses.size else 0.0
        reports.append(PairReport(pair.label, claim.epsilon, claim.delta, exact_loss, exact_passed, eps_lb, cells,
                                  transcript, exact_delta))
    return CaseReport(case, reports)


# ---------------------------------------------------------------------------------------- registry

class CaseRegistry(Generic[C]):
    """Case factories per registered algorithm name, built lazily, each once (one registry per kind of case)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: dict[str, list[Callable[[], list[C]]]] = {}
        self._built: dict[Callable[[], list[C]], list[C]] = {}

    def register(self, *algorithms: str) -> Callable[[Callable[[], list[C]]], Callable[[], list[C]]]:
        """Register a factory of cases for the named registered algorithms (decorator)."""
        if not algorithms:
            raise InvalidParameterError(f"registering {self.kind} cases needs at least one algorithm name")

        def decorator(factory: Callable[[], list[C]]) -> Callable[[], list[C]]:
            for name in algorithms:
                known = self._factories.setdefault(name, [])
                if factory not in known:
                    known.append(factory)
            return factory

        return decorator

    def algorithms(self) -> list[str]:
        """Algorithms with at least one registered factory (every case module imported first)."""
        load_privacy_cases()
        return sorted(self._factories)

    def cases(self, algorithm: str) -> Iterator[C]:
        """Every case of ``algorithm`` (correct ones and negative controls); each factory runs once."""
        load_privacy_cases()
        for factory in self._factories.get(algorithm, []):
            if factory not in self._built:
                self._built[factory] = factory()
            for case in self._built[factory]:
                if case.algorithm == algorithm:
                    yield case


def load_privacy_cases() -> None:
    """Import every family's case module so that all factories are registered."""
    for module in CASE_MODULES:
        importlib.import_module(module)


CaseFactory = Callable[[], list[PrivacyCase]]
PRIVACY_CASES: CaseRegistry[PrivacyCase] = CaseRegistry("privacy")
"""The registry of privacy cases (output-law audits)."""


def register_privacy_cases(*algorithms: str) -> Callable[[CaseFactory], CaseFactory]:
    """Register a factory of privacy cases for the named registered algorithms (decorator)."""
    return PRIVACY_CASES.register(*algorithms)


def registered_case_algorithms() -> list[str]:
    """Algorithms with at least one registered case factory."""
    return PRIVACY_CASES.algorithms()


def privacy_cases(algorithm: str) -> Iterator[PrivacyCase]:
    """Every case of ``algorithm`` (correct ones and negative controls); each factory runs once."""
    return PRIVACY_CASES.cases(algorithm)
