"""The built-ins are held to what users' algorithms are: the audit's search runs on each (issue 33).

Every subject of :data:`dpbandits.audit.cases.search.SEARCH_SUBJECTS` is audited by
:func:`dpbandits.audit.user.audit_algorithm` — the search over neighbouring inputs and events, then
certification on fresh runs — on the seeded simulation path with a small search. Correct built-ins
must not be refuted (false-failure rate <= 1 − 0.95 per subject; the seeds are fixed, so the outcome
is deterministic), the negative control must be.
"""

from __future__ import annotations

import pytest

from dpbandits.audit.cases.search import SEARCH_SUBJECTS, SearchSubject
from dpbandits.audit.user import audit_algorithm

pytestmark = pytest.mark.statistical

SMALL = {"search_runs": 10, "climb": 0, "certify_pairs": 1, "runs": 300}


@pytest.mark.slow
@pytest.mark.parametrize("subject", SEARCH_SUBJECTS, ids=[subject.name for subject in SEARCH_SUBJECTS])
def test_the_search_does_not_refute_a_built_in_and_refutes_the_control(subject: SearchSubject) -> None:
    report = audit_algorithm(subject.cls, seeded_noise=True, rng=11, **SMALL, **subject.options)
    assert report.refuted == subject.broken, str(report)


def test_the_search_covers_every_family_with_an_agent_or_policy_and_a_control() -> None:
    names = {subject.name for subject in SEARCH_SUBJECTS if not subject.broken}
    assert {"dp-bai", "em-mab", "rnm-mab", "laplace-greedy-mab"} <= names
    assert any(subject.broken for subject in SEARCH_SUBJECTS)
