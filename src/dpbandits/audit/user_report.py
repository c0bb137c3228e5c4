"""The report of an audit of a user's algorithm: the verdict, what was searched, what was certified.

The verdict is **REFUTED** (some certified event, the exact audit or the floating-point attack on
the deployed noise shows a loss above the claim) or **NOT REFUTED** (nothing did: evidence, never a
proof). The report says which noise was audited, what the search covered, and for every certified
event the smallest true ε its runs would have shown at that event's own probabilities (its power).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpbandits.audit.exact import ExactAuditReport
from dpbandits.audit.floating_point import FloatAttackReport
from dpbandits.audit.statistical import StatisticalAuditReport

__all__ = ["CertifiedPair", "TimingReport", "UserAuditReport"]

DEPLOYED = "deployed noise (secure, unseeded: what users of the algorithm get)"
SEEDED = "seeded simulation noise (--seeded-noise: NumPy's seeded floats, not the deployed noise)"


@dataclass(frozen=True)
class CertifiedPair:
    """A neighbouring pair chosen by the search, its events chosen on a selection sample, certified on fresh runs.

    Attributes
    ----------
    pair : str
        The pair, in words.
    search_score : float
        Its plug-in strength in the search (ranks pairs; not a bound).
    events : tuple of str
        The events certified.
    report : StatisticalAuditReport
        The Clopper–Pearson bound over the events, on the fresh runs.
    powers : tuple of float
        Per event, the smallest true ε the fresh runs would show on it at its own observed
        probabilities (about half the time); ``inf`` if none.
    """

    pair: str
    search_score: float
    events: tuple[str, ...]
    report: StatisticalAuditReport
    powers: tuple[float, ...]

    @property
    def epsilon_lower_bound(self) -> float:
        """ε_lb of this pair."""
        return self.report.epsilon_lower_bound

    @property
    def power(self) -> float:
        """The least of the events' powers."""
        return min(self.powers, default=math.inf)


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
    """What :func:`~dpbandits.audit.user.audit_algorithm` searched, certified, found and could not have found."""

    algorithm: str
    unit: str
    epsilon: float
    delta: float
    runs: int
    confidence: float
    seeded_noise: bool
    certified: tuple[CertifiedPair, ...]
    exact: ExactAuditReport | None
    float_attacks: tuple[tuple[str, FloatAttackReport], ...]
    timing: TimingReport | None
    searched: tuple[str, ...]
    not_tested: tuple[str, ...] = field(default=())
    seconds: float = 0.0

    @property
    def noise_path(self) -> str:
        """Which noise the runs drew: the deployed noise or the seeded simulation."""
        return SEEDED if self.seeded_noise else DEPLOYED

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest certified ε_lb over the pairs."""
        return max((item.epsilon_lower_bound for item in self.certified), default=0.0)

    @property
    def power(self) -> float:
        """The least power of any certified event (see :class:`CertifiedPair`)."""
        return min((item.power for item in self.certified), default=math.inf)

    @property
    def refuted(self) -> bool:
        """A certified bound above the claim, a violation found by the exact audit, or a float attack that succeeded."""
        return (self.epsilon_lower_bound > self.epsilon
                or (self.exact is not None and not self.exact.passed)
                or any(report.distinguished for _, report in self.float_attacks))

    @property
    def verdict(self) -> str:
        """``"REFUTED"`` or ``"NOT REFUTED"``."""
        return "REFUTED" if self.refuted else "NOT REFUTED"

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (``dpbandits audit --json``)."""
        return {
            "verdict": self.verdict, "refuted": self.refuted,
            "algorithm": self.algorithm, "unit": self.unit, "epsilon": self.epsilon, "delta": self.delta,
            "noise_path": "seeded" if self.seeded_noise else "deployed", "noise_path_text": self.noise_path,
            "runs": self.runs, "confidence": self.confidence, "seconds": self.seconds,
            "epsilon_lower_bound": self.epsilon_lower_bound, "power_epsilon": _finite(self.power),
            "certified": [
                {"pair": item.pair, "search_score": _finite(item.search_score),
                 "epsilon_lower_bound": item.epsilon_lower_bound, "evidence": str(item.report),
                 "events": [{"event": event, "detectable_epsilon": _finite(power)}
                            for event, power in zip(item.events, item.powers, strict=True)]}
                for item in self.certified
            ],
            "exact": None if self.exact is None else {"refuted": not self.exact.passed, "pairs": self.exact.n_pairs,
                                                      "max_log_ratio": _finite(self.exact.max_log_ratio)},
            "float_attack": [{"pair": pair, "distinguished": report.distinguished}
                             for pair, report in self.float_attacks],
            "timing": None if self.timing is None else {"advantage": self.timing.advantage, "pair": self.timing.pair},
            "searched": list(self.searched), "not_tested": list(self.not_tested),
        }

    def __str__(self) -> str:
        claim = f"{self.algorithm} claims ({self.epsilon:g}, {self.delta:g})-DP for one {self.unit}"
        if self.refuted:
            lines = [f"REFUTED: {claim}: the runs show a loss above the claim at confidence {self.confidence:g}"]
        else:
            lines = [f"NOT REFUTED: {claim}: nothing searched or certified shows a loss above the claim at "
                     f"confidence {self.confidence:g} (evidence within the power below, not a proof of privacy)"]
        lines.append(f"noise path: {self.noise_path}")
        lines += [f"searched: {item}" for item in self.searched]
        lines.append(f"certified on fresh runs ({self.runs} per input; events chosen on other runs), "
                     f"largest epsilon lower bound {self.epsilon_lower_bound:.4g}:")
        for item in self.certified:
            lines.append(f"  '{item.pair}': {item.report}")
            for event, power in zip(item.events, item.powers, strict=True):
                said = (f"a true loss above {power:.3g} on it is shown about half the time or more"
                        if math.isfinite(power) else f"no loss on it, however large, would show in {self.runs} runs")
                lines.append(f"    event {event}: power: {said}")
        if math.isfinite(self.power):
            lines.append(f"power: a violation is certified only on the events above; the most sensitive detects a "
                         f"true epsilon above {self.power:.3g} (add --runs for more); smaller losses, or losses on "
                         "other events or pairs, go unseen")
        else:
            lines.append(f"power: none: at {self.runs} runs per input no certified event could show a violation, "
                         "however large (add --runs)")
        if self.exact is not None:
            exact = self.exact
            lines.append(f"exact: {'REFUTED' if not exact.passed else 'not refuted'} on {exact.n_pairs} pairs "
                         f"(the exact output laws): max log-ratio {exact.max_log_ratio:.6g}, delta(epsilon) "
                         f"{exact.delta_at_epsilon:.3g}" + ("" if exact.passed else
                                                             f" (pair {exact.worst_pair_index}, output "
                                                             f"{exact.worst_output}: VIOLATED)"))
        for pair, report in self.float_attacks:
            lines.append(f"float attack on '{pair}': {'DISTINGUISHED' if report.distinguished else 'nothing found'}")
        if self.timing is not None:
            lines.append(str(self.timing) + " (reported, not part of the verdict)")
        lines += [f"not tested: {item}" for item in self.not_tested]
        return "\n".join(lines)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
