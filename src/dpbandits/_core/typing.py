"""Type aliases shared across dpbandits."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

from dpbandits._core.rng import RNGLike

__all__ = ["BoolArray", "FloatArray", "IntArray", "RNGLike"]

FloatArray: TypeAlias = NDArray[np.float64]
IntArray: TypeAlias = NDArray[np.int64]
BoolArray: TypeAlias = NDArray[np.bool_]
