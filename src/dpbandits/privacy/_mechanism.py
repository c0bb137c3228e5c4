"""The interface every privacy mechanism shares (see :mod:`dpbandits.privacy.mechanisms`).

A mechanism gives its guarantee, its privacy event for accounting and a release verb that takes its
noise from a backend (:mod:`dpbandits.privacy.noise`), secure by default; the event is spent with the
accountant before any noise is drawn.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.rng import RNGLike
from dpbandits._core.validation import check_array
from dpbandits.privacy.accounting import Accountant, PrivacyEvent, spend
from dpbandits.privacy.guarantees import ApproxDP, Guarantee, Neighbouring, PureDP
from dpbandits.privacy.noise import NoiseBackend, privacy_noise

__all__ = [
    "BackendLike",
    "Mechanism",
]

BackendLike = NoiseBackend | str | None

# ---------------------------------------------------------------------------------------------------
# Common interface
# ---------------------------------------------------------------------------------------------------


class Mechanism(ABC):
    """Common verbs of the privacy mechanisms.

    Attributes
    ----------
    name : str
        Registry name.
    epsilon : float
        ε of the guarantee.
    delta : float
        δ of the guarantee (0 for pure mechanisms).
    """

    name: str = "abstract"
    reference: str = ""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """ε of the guarantee."""

    @property
    def delta(self) -> float:
        """δ of the guarantee (0 for pure mechanisms)."""
        return 0.0

    @property
    @abstractmethod
    def event(self) -> PrivacyEvent:
        """The privacy event of one release, for accounting."""

    @abstractmethod
    def release(
        self, data: ArrayLike, rng: RNGLike = None, backend: BackendLike = None, *, insecure_seeded_noise: bool = False,
        accountant: Accountant | None = None,
    ) -> NDArray[Any]:
        """Run the mechanism once on ``data`` (once per batch row for selection mechanisms)."""

    @abstractmethod
    def example_input(self) -> NDArray[np.float64]:
        """Return a valid input for :meth:`release` (used by contract tests and docs)."""

    def _noise(self, rng: RNGLike, backend: BackendLike, insecure_seeded_noise: bool,
               accountant: Accountant | None, count: int = 1) -> NoiseBackend:
        """The release's noise source, after the accountant (if any) has recorded ``count`` events.

        The event is spent *before* any noise is drawn, so an over-budget release draws nothing.
        """
        noise = privacy_noise(rng, insecure_seeded_noise=insecure_seeded_noise, backend=backend, stacklevel=4)
        spend(accountant, self.event, count, label=f"{type(self).__name__}.release")
        return noise

    def guarantee(self, unit: str, neighbouring: Neighbouring | str, reference: str | None = None) -> Guarantee:
        """Return the guarantee of one release.

        Parameters
        ----------
        unit : str
            What one unit of neighbouring data is, in words ("one reward in the reward table").
        neighbouring : Neighbouring or str
            The relation under which the sensitivity given to the mechanism holds.
        reference : str, optional
            Defaults to the mechanism's textbook reference.

        Returns
        -------
        Guarantee
            :class:`PureDP` when δ = 0, else :class:`ApproxDP`.
        """
        ref = self.reference if reference is None else reference
        if self.delta == 0.0:
            return PureDP(epsilon=self.epsilon, unit=unit, neighbouring=neighbouring,  # type: ignore[arg-type]
                          reference=ref)
        return ApproxDP(epsilon=self.epsilon, delta=self.delta, unit=unit,
                        neighbouring=neighbouring, reference=ref)  # type: ignore[arg-type]


def _check_values(value: ArrayLike, name: str) -> NDArray[np.float64]:
    return np.asarray(check_array(value, name), dtype=np.float64)
