"""The built-ins are held to what users' algorithms are: the audit's search runs on each (issue 33).

Every subject of :data:`dpbandits.audit.cases.search.SEARCH_SUBJECTS` is audited by
:func:`dpbandits.audit.user.audit_algorithm` — the search over neighbouring inputs and events, then
certification on fresh runs — on the seeded simulation path with a small search. Correct built-ins
must not be refuted (false-failure rate <= 1 − 0.95 per subject; the seeds are fixed, so the outcome
is deterministic — except for em-mab, rnm-mab and laplace-greedy-mab, which take no ``rng`` and
always draw their secure noise), the negative control must be.

Coverage is read from the registry: every registered private algorithm is a subject or is listed in
:data:`~dpbandits.audit.cases.search.NOT_SEARCHED` with the reason, so a newly registered private
algorithm fails :func:`test_every_registered_private_algorithm_is_searched_or_excluded_with_a_reason`
by name until it is one or the other.
"""

from __future__ import annotations

import math

import pytest

from dpbandits.algorithms.registry import list_algorithms, load_builtin_algorithms
from dpbandits.audit.cases.search import NOT_SEARCHED, SEARCH_SUBJECTS, SearchSubject
from dpbandits.audit.user import audit_algorithm

pytestmark = pytest.mark.statistical

SMALL = {"search_runs": 10, "climb": 0, "certify_pairs": 1, "runs": 200}
CHEAP = {"kl-mab", "kl-mab-repeated"}  # about 1-2 s each: in the default run


def _private_registered() -> set[str]:
    load_builtin_algorithms()
    return {spec.name for spec in list_algorithms()
            if spec.is_algorithm and not spec.privacy.lower().startswith(("none", "n/a"))}


# NOT REFUTED with no power is no check: each audit must have an event that could show a violation at
# its runs, or the exact audit. These two do not at this budget (their certified events are too rare
# at 200 runs: every run released nearly the same output); the privacy contract audits them on pairs
# written for them, exactly (goptimal-dpdb: transcript loss) or by the Laplace release's closed form.
WITHOUT_POWER = {"goptimal-dpdb", "laplace-greedy-mab"}


def _audit(subject: SearchSubject) -> None:
    report = audit_algorithm(subject.cls, seeded_noise=True, rng=11, **{**SMALL, **subject.options})
    assert report.refuted == subject.broken, str(report)
    if subject.name not in WITHOUT_POWER:
        assert math.isfinite(report.power) or report.exact is not None, str(report)


@pytest.mark.parametrize("subject", [s for s in SEARCH_SUBJECTS if s.name in CHEAP], ids=lambda s: s.name)
def test_the_search_does_not_refute_a_cheap_built_in(subject: SearchSubject) -> None:
    _audit(subject)


@pytest.mark.slow
@pytest.mark.parametrize("subject", [s for s in SEARCH_SUBJECTS if s.name not in CHEAP], ids=lambda s: s.name)
def test_the_search_does_not_refute_a_built_in_and_refutes_the_control(subject: SearchSubject) -> None:
    _audit(subject)


def test_every_registered_private_algorithm_is_searched_or_excluded_with_a_reason() -> None:
    private = _private_registered()
    searched = {subject.name for subject in SEARCH_SUBJECTS if not subject.broken}
    missing = sorted(private - searched - set(NOT_SEARCHED))
    assert not missing, (f"registered private algorithms neither searched nor excluded: {missing} (add each to "
                         "SEARCH_SUBJECTS, or to NOT_SEARCHED with the reason)")
    assert not searched & set(NOT_SEARCHED), "an algorithm is both searched and excluded"
    stale = sorted((searched | set(NOT_SEARCHED)) - private)
    assert not stale, f"not registered private algorithms: {stale}"
    assert all(len(reason) > 40 for reason in NOT_SEARCHED.values())
    assert searched >= WITHOUT_POWER
    assert any(subject.broken for subject in SEARCH_SUBJECTS)
    assert {subject.options.get("unit", "reward") for subject in SEARCH_SUBJECTS} >= {"reward", "label"}
    assert any(hasattr(subject.cls, "fit") for subject in SEARCH_SUBJECTS)  # the logged-record unit


def test_the_exclusions_are_stated_in_the_guide() -> None:
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "your-algorithm.md").read_text(encoding="utf-8")
    for name in NOT_SEARCHED:
        assert f"`{name}`" in guide, f"the guide does not say that {name} is not searched"
