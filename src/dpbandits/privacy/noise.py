"""Noise backends behind one interface.

* :class:`NumpyNoise` — the default: fast and seeded (reproducible), for **simulation only**.
  Its floating-point samples are "idealised numerics": fine for experiments, not for deployment
  (floating-point attacks on naive Laplace samplers exist; Mironov 2012).
* ``OpenDPNoise`` — the secure backend (unseedable, floating-point safe samplers of OpenDP), for
  deployment; installed with the ``secure`` extra.

Every backend draws Laplace, Gaussian and Gumbel noise of given scales with a given shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbandits._core.rng import RNGLike, as_generator

__all__ = ["NoiseBackend", "NumpyNoise"]

Shape = int | tuple[int, ...] | None


class NoiseBackend(ABC):
    """Interface of a source of privacy noise.

    Attributes
    ----------
    name : str
        Registry name of the backend.
    seeded : bool
        Whether the backend is reproducible from a seed (simulation) or not (secure).
    """

    name: str = "abstract"
    seeded: bool = True

    @abstractmethod
    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise (density ∝ exp(−|x|/scale))."""

    @abstractmethod
    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise."""

    @abstractmethod
    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise (used by Gumbel-max exponential-mechanism sampling)."""


class NumpyNoise(NoiseBackend):
    """Seeded NumPy noise for simulation (idealised floating-point numerics).

    Parameters
    ----------
    rng : int, SeedSequence, Generator or None
        The noise stream. Pass the privacy-noise stream spawned for this purpose.
    """

    name = "numpy"
    seeded = True

    def __init__(self, rng: RNGLike = None) -> None:
        self.rng = as_generator(rng)

    def laplace(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw Laplace(0, ``scale``) noise."""
        return np.asarray(self.rng.laplace(0.0, scale, size=size), dtype=np.float64)

    def gaussian(self, scale: ArrayLike, size: Shape = None) -> NDArray[np.float64]:
        """Draw N(0, ``scale``²) noise."""
        return np.asarray(self.rng.normal(0.0, scale, size=size), dtype=np.float64)

    def gumbel(self, scale: ArrayLike = 1.0, size: Shape = None) -> NDArray[np.float64]:
        """Draw Gumbel(0, ``scale``) noise."""
        return np.asarray(self.rng.gumbel(0.0, scale, size=size), dtype=np.float64)

    def __repr__(self) -> str:
        return f"NumpyNoise(rng={self.rng!r})"
