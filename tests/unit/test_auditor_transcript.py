"""The transcript auditor: record an adaptive algorithm's releases, replay them on a neighbour, compare."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError
from dpbandits.audit.transcript import RecordingNoise, compare_transcripts
from dpbandits.privacy.noise import NoiseBackend, NumpyNoise, SecureNoise


class _CountThenStop:
    """Releases a noisy count of ones, then (if ``leak``) stops early when the raw count is large."""

    def __init__(self, noise: NoiseBackend, scale: float, leak: bool = False) -> None:
        self.noise, self.scale, self.leak = noise, scale, leak

    def run(self, data: list[int]) -> tuple[int, ...]:
        released = []
        for start in range(0, len(data), 2):  # one release per block of two records
            block = int(sum(data[start : start + 2]))
            released.append(int(self.noise.add_discrete_laplace(np.array([block]), self.scale)[0]))
            if self.leak and block == 2:  # a public choice from the raw data, not from the release
                break
        return (len(released),)


def _compare(scale: float, data: list[int], neighbour: list[int], leak: bool = False, inner: Any = None) -> Any:
    return compare_transcripts(lambda noise: _CountThenStop(noise, scale, leak), lambda algo, d: algo.run(d),
                               inner or SecureNoise(), data, neighbour)


def test_supremum_and_realised_loss_of_a_changed_record() -> None:
    result = _compare(2.0, [1, 0, 1, 1], [1, 0, 0, 1])
    assert result.reason == "" and result.differing_releases == (1,) and result.n_releases == 2
    assert result.supremum == pytest.approx(0.5)  # |x' − x|/b = 1/2
    assert abs(result.realised) <= result.supremum + 1e-12
    assert _compare(2.0, [1, 0, 1, 1], [1, 0, 1, 1]).supremum == 0.0


def test_realised_loss_is_the_laplace_log_density_ratio() -> None:
    inner = NumpyNoise(3)
    result = _compare(1.0, [1, 1], [0, 1], inner=inner)
    recorder = RecordingNoise(NumpyNoise(3))
    _CountThenStop(recorder, 1.0).run([1, 1])
    z = float(recorder.releases[0].output[0])
    assert result.realised == pytest.approx(abs(z - 1.0) - abs(z - 2.0))  # log p(z | 2) − log p(z | 1)


def test_public_choice_from_raw_data_is_an_infinite_loss() -> None:
    more = _compare(2.0, [1, 1, 0, 0], [1, 0, 0, 0], leak=True)  # the twin asks for an unrecorded release
    assert math.isinf(more.supremum) and "diverged" in more.reason
    fewer = _compare(2.0, [1, 0, 0, 0], [1, 1, 0, 0], leak=True)  # the twin stops early
    assert math.isinf(fewer.supremum) and "made 1 releases, not 2" in fewer.reason


def test_raw_draws_cannot_be_audited() -> None:
    with pytest.raises(InvalidParameterError, match="add_laplace / add_discrete_laplace"):
        RecordingNoise(SecureNoise()).laplace(1.0, size=3)
