"""Exact privacy loss of an adaptive algorithm's transcript, by recording its releases and replaying them.

An adaptive algorithm (an elimination loop around continual counters, a phased design) releases
noisy statistics x + η through its noise backend's ``add_laplace`` / ``add_discrete_laplace`` verbs
and chooses everything else — pairs played, eliminations, stopping — from those releases and from
data-free coins. Its output law is not enumerable, but the density of one released transcript is:
each release z of a statistic x at scale b has density ∝ exp(−|z − x|/b) (Laplace or discrete
Laplace). The audit of one run:

1. run the algorithm on D with a :class:`RecordingNoise` around its noise source (the secure default
   in the privacy cases): every call keeps the exact statistic x, the scale b *really used* and the
   noisy output z;
2. run a twin on the neighbour D' with the same public coins and a :class:`ReplayNoise` that returns
   the recorded outputs z, in order, and keeps the twin's statistics x'. The twin sees exactly the
   releases of the first run, so if the algorithm's public choices depend on the data only through
   its releases, it makes the same choices (checked: the driver's public record must agree, and
   every call must have the same kind, shape and scale) — the transcript is the same on D and D';
3. the exact log-density ratio of the transcript is Σ (|z − x'| − |z − x|)/b over every released
   entry, and its supremum over the noise with the public choices held fixed is Σ |x' − x|/b: the
   quantity a pure ε-DP proof bounds by ε.

A divergence (the twin asks another question, releases another shape, uses another scale, or makes
more or fewer releases) means that the public behaviour depends on the data other than through the
releases — an unaccounted channel — and the loss is reported as infinite.

Only pure (Laplace-type) releases are auditable this way: raw draws (noise drawn at 0 and added by
the caller), Gaussian releases and exponential-mechanism samples raise an error in the recorder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.errors import InvalidParameterError
from dpbandits.privacy.noise import NoiseBackend

__all__ = ["RecordedRelease", "RecordingNoise", "ReplayNoise", "TranscriptComparison", "compare_transcripts"]


@dataclass(frozen=True)
class RecordedRelease:
    """One call of a release verb: the exact statistic, the scale used and the noisy output."""

    kind: str
    statistic: NDArray[Any]
    scale: NDArray[np.float64]
    output: NDArray[Any]


class _TranscriptDivergence(Exception):
    """The twin's call differs from the recorded one (kind, shape, scale or number of calls)."""


def _unauditable(verb: str) -> NoReturn:
    raise InvalidParameterError(
        f"a transcript audit needs every release through add_laplace / add_discrete_laplace; the algorithm "
        f"called {verb}, whose release cannot be replayed exactly"
    )


class _ReleaseOnlyNoise(NoiseBackend):
    """A backend that offers only the Laplace-type release verbs (everything else is unauditable)."""

    def laplace(self, scale: ArrayLike, size: Any = None) -> NDArray[np.float64]:
        """Refused: a raw draw added by the caller is not a replayable release."""
        _unauditable("laplace (a raw draw)")

    def gaussian(self, scale: ArrayLike, size: Any = None) -> NDArray[np.float64]:
        """Refused (not a pure release)."""
        _unauditable("gaussian (a raw draw)")

    def gumbel(self, scale: ArrayLike = 1.0, size: Any = None) -> NDArray[np.float64]:
        """Refused (a raw draw)."""
        _unauditable("gumbel (a raw draw)")

    def discrete_laplace(self, scale: ArrayLike, size: Any = None) -> NDArray[np.int64]:
        """Refused: a raw draw added by the caller is not a replayable release."""
        _unauditable("discrete_laplace (a raw draw)")

    def add_gaussian(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Refused (the Gaussian transcript has no finite pure loss)."""
        _unauditable("add_gaussian")

    def randomized_response(self, bits: ArrayLike, keep_probability: float) -> NDArray[np.int64]:
        """Refused."""
        _unauditable("randomized_response")

    def gumbel_max(self, log_weights: ArrayLike, size: int | None = None) -> NDArray[np.int64]:
        """Refused."""
        _unauditable("gumbel_max")


class RecordingNoise(_ReleaseOnlyNoise):
    """Wrap a noise backend and record every Laplace-type release made through it.

    Parameters
    ----------
    inner : NoiseBackend
        The source of the noise (the secure default in privacy cases); its ``seeded`` flag is kept,
        so the library's gate treats the wrapper as it treats ``inner``.
    """

    name = "recording"

    def __init__(self, inner: NoiseBackend) -> None:
        self.inner = inner
        self.seeded = inner.seeded
        self.releases: list[RecordedRelease] = []

    def _record(self, kind: str, values: ArrayLike, scale: ArrayLike, output: NDArray[Any]) -> NDArray[Any]:
        statistic = np.array(values, copy=True)
        b = np.broadcast_to(np.asarray(scale, dtype=np.float64), np.shape(output)).copy()
        self.releases.append(RecordedRelease(kind, statistic, b, np.array(output, copy=True)))
        return output

    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """Release through ``inner`` and record the call."""
        return self._record("laplace", values, scale, self.inner.add_laplace(values, scale))

    def add_discrete_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.int64]:
        """Release through ``inner`` and record the call."""
        return self._record("discrete_laplace", values, scale, self.inner.add_discrete_laplace(values, scale))

    def __repr__(self) -> str:
        return f"RecordingNoise({self.inner!r})"


class ReplayNoise(_ReleaseOnlyNoise):
    """Return recorded releases in order, keeping the statistics the caller passes (a deterministic twin).

    Parameters
    ----------
    releases : list of RecordedRelease
        What a :class:`RecordingNoise` kept on the first input.
    """

    name = "replay"
    seeded = True  # deterministic: the library's gate treats it as seeded noise (audits only)

    def __init__(self, releases: list[RecordedRelease]) -> None:
        self._recorded = releases
        self.statistics: list[NDArray[Any]] = []

    def _replay(self, kind: str, values: ArrayLike, scale: ArrayLike) -> NDArray[Any]:
        index = len(self.statistics)
        if index >= len(self._recorded):
            raise _TranscriptDivergence(f"release {index + 1} was not made on the first input")
        recorded = self._recorded[index]
        statistic = np.array(values, copy=True)
        b = np.broadcast_to(np.asarray(scale, dtype=np.float64), recorded.output.shape)
        same_call = kind == recorded.kind and statistic.shape == recorded.statistic.shape
        if not same_call or not np.array_equal(b, recorded.scale):
            raise _TranscriptDivergence(f"release {index + 1} differs in kind, shape or scale")
        self.statistics.append(statistic)
        return recorded.output.copy()

    def add_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.float64]:
        """The recorded output of the next release (the statistic passed is kept)."""
        return self._replay("laplace", values, scale)

    def add_discrete_laplace(self, values: ArrayLike, scale: ArrayLike) -> NDArray[np.int64]:
        """The recorded output of the next release (the statistic passed is kept)."""
        return self._replay("discrete_laplace", values, scale)

    def __repr__(self) -> str:
        return f"ReplayNoise({len(self._recorded)} releases)"


@dataclass(frozen=True)
class TranscriptComparison:
    """The privacy loss of one run's transcript between two inputs.

    Attributes
    ----------
    realised : float
        log p_D(transcript) − log p_D'(transcript) at the run's noise.
    supremum : float
        Σ |x' − x|/b: the supremum of |log-density ratio| over the noise, public choices fixed.
    differing_releases : tuple of int
        Indices (in call order) of the releases whose exact statistic differs between the inputs.
    n_releases : int
        Number of release calls of the run.
    public : object
        The driver's public record of the run on D (for example the pairs played).
    algorithm : object
        The algorithm run on D (for inspection by tests).
    reason : str
        Why the loss is infinite ("" otherwise).
    """

    realised: float
    supremum: float
    differing_releases: tuple[int, ...]
    n_releases: int
    public: Any
    algorithm: Any
    reason: str = ""


def _release_losses(recorded: RecordedRelease, statistic: NDArray[Any]) -> tuple[float, float]:
    """(realised, supremum) of one release: Σ (|z − x'| − |z − x|)/b and Σ |x' − x|/b."""
    x, x_prime = recorded.statistic.astype(np.float64), statistic.astype(np.float64)
    z, b = recorded.output.astype(np.float64), recorded.scale
    gap = np.abs(x_prime - x)
    if np.any((b == 0.0) & (gap > 0)):  # an exact release of a differing statistic
        return math.inf, math.inf
    noisy = b > 0
    realised = float(np.sum((np.abs(z - x_prime) - np.abs(z - x))[noisy] / b[noisy]))
    return realised, float(np.sum(gap[noisy] / b[noisy]))


def compare_transcripts(
    build: Callable[[NoiseBackend], Any],
    drive: Callable[[Any, Any], Hashable],
    inner: NoiseBackend,
    data: Any,
    neighbour: Any,
) -> TranscriptComparison:
    """Run the algorithm on ``data`` (noise from ``inner``), replay its releases on ``neighbour``, compare.

    Parameters
    ----------
    build : callable
        ``build(noise) -> algorithm``: a fresh algorithm whose privacy noise is ``noise`` and whose
        data-free coins are the same on every call (the run's public coins). It is called with a
        :class:`RecordingNoise` (``seeded`` as ``inner``) and with a :class:`ReplayNoise` (seeded).
    drive : callable
        ``drive(algorithm, input) -> public record``: feeds the input to the algorithm and returns
        what it made public other than the releases (pairs played, eliminations, recommendation).
    inner : NoiseBackend
        The noise of the run on ``data``.
    data, neighbour
        The two inputs.

    Returns
    -------
    TranscriptComparison
        Infinite losses (with ``reason``) when the twin diverges.
    """
    recorder = RecordingNoise(inner)
    algorithm = build(recorder)
    public = drive(algorithm, data)
    replay = ReplayNoise(recorder.releases)
    n = len(recorder.releases)
    try:
        public_twin = drive(build(replay), neighbour)
    except _TranscriptDivergence as divergence:
        return TranscriptComparison(math.inf, math.inf, (), n, public, algorithm, f"the twin diverged: {divergence}")
    if len(replay.statistics) != n:
        return TranscriptComparison(math.inf, math.inf, (), n, public, algorithm,
                                    f"the twin made {len(replay.statistics)} releases, not {n}")
    if public_twin != public:
        return TranscriptComparison(math.inf, math.inf, (), n, public, algorithm,
                                    "the twin's public choices differ with the same releases")
    realised, supremum, differing = 0.0, 0.0, []
    for index, (recorded, statistic) in enumerate(zip(recorder.releases, replay.statistics, strict=True)):
        if not np.array_equal(recorded.statistic, statistic):
            differing.append(index)
            loss, sup = _release_losses(recorded, statistic)
            realised, supremum = realised + loss, supremum + sup
    return TranscriptComparison(realised, supremum, tuple(differing), n, public, algorithm)
