"""State files name classes by ``module.qualname``: every name a released version wrote must still load.

Splitting a long module moves code, and a persistable class (or a saved dataclass) moved to another
module gets another path: the files saved before would then be refused as naming an unknown class.
``RELEASED`` lists the paths this version's state files can hold; a new class adds its path, and
none is ever removed while files naming it may exist.
"""

from __future__ import annotations

import importlib

import pytest

from dpbandits._core import codec

RELEASED_PERSISTABLE = (
    "dpbandits.algorithms.bai.dp_bai.Baseline",
    "dpbandits.algorithms.bai.dp_bai.DPBAI",
    "dpbandits.algorithms.bai.dp_bai.DPBAIGauss",
    "dpbandits.algorithms.bai.dp_bai._DPBAIFamily",
    "dpbandits.algorithms.bai.dp_od.DPOD",
    "dpbandits.algorithms.bai.od_linbai.ODLinBAI",
    "dpbandits.algorithms.bai.phased.PhasedAgent",
    "dpbandits.algorithms.bai.phased.PhasedAlgorithm",
    "dpbandits.algorithms.bai.sequential_halving.SequentialHalving",
    "dpbandits.algorithms.bai.uniform.UniformAllocation",
    "dpbandits.algorithms.dueling._rounds.RoundAgent",
    "dpbandits.algorithms.dueling.beat_the_mean.BeatTheMean",
    "dpbandits.algorithms.dueling.colstim.CoLSTIM",
    "dpbandits.algorithms.dueling.copeland_confidence_bound.CopelandConfidenceBound",
    "dpbandits.algorithms.dueling.double_thompson.DoubleThompsonSampling",
    "dpbandits.algorithms.dueling.dp_ebs_elimination.DPEBSElimination",
    "dpbandits.algorithms.dueling.goptimal_dpdb.GOptimalDPDB",
    "dpbandits.algorithms.dueling.interleaved_filter.InterleavedFilter",
    "dpbandits.algorithms.dueling.ldp_ebs_elimination.LDPEBSElimination",
    "dpbandits.algorithms.dueling.maxinp.MaxInP",
    "dpbandits.algorithms.dueling.rmed.RMED1",
    "dpbandits.algorithms.dueling.rucb.RUCB",
    "dpbandits.algorithms.kernel.learners.CGPUCB",
    "dpbandits.algorithms.kernel.learners.UniformFeatureRidge",
    "dpbandits.algorithms.kernel.learners._FeatureLearner",
    "dpbandits.algorithms.kernel.usca.USCA",
    "dpbandits.algorithms.offline.baselines.ExponentialMechanismMAB",
    "dpbandits.algorithms.offline.baselines.LaplaceStatisticsGreedyMAB",
    "dpbandits.algorithms.offline.baselines.PessimisticGreedyMAB",
    "dpbandits.algorithms.offline.baselines.ReportNoisyMaxMAB",
    "dpbandits.algorithms.offline.baselines._MABBaseline",
    "dpbandits.algorithms.offline.kl_linear.KLLinearPolicy",
    "dpbandits.algorithms.offline.kl_mab.KLMABPolicy",
    "dpbandits.algorithms.offline.kl_rlhf.KLRLHFPolicy",
    "dpbandits.privacy.counters.BinaryTreeCounter",
    "dpbandits.privacy.counters.BinaryTreeCounterBank",
)

RELEASED_DATACLASSES = (
    "dpbandits.algorithms.dueling.goptimal_dpdb._Phase",
    "dpbandits.envs.kernel.StationaryKernel",
)


def _load_all() -> None:
    for module in (*codec.PERSISTABLE_MODULES, "dpbandits.envs.kernel"):
        importlib.import_module(module)


@pytest.mark.parametrize("path", RELEASED_PERSISTABLE)
def test_a_released_persistable_class_path_still_loads(path: str) -> None:
    cls = codec.persistable_class(path)
    assert codec.class_path(cls) == path, f"{path} now saves as {codec.class_path(cls)}: old files would not load"


@pytest.mark.parametrize("path", RELEASED_DATACLASSES)
def test_a_released_dataclass_path_still_loads(path: str) -> None:
    _load_all()
    assert path in codec._DATACLASSES, f"state files holding a {path} would be refused"
    assert codec.class_path(codec._DATACLASSES[path]) == path


def test_every_persistable_class_is_listed() -> None:
    """A class added since adds its path here (so that it, too, is never moved unnoticed)."""
    _load_all()
    ours = {path for path in codec._PERSISTABLE if path.startswith("dpbandits.")}
    assert ours <= set(RELEASED_PERSISTABLE)
    assert {path for path in codec._DATACLASSES if path.startswith("dpbandits.")} <= set(RELEASED_DATACLASSES)
