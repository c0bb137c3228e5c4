"""The privacy contract, run over every registered private algorithm (issue 12).

Every registered algorithm that claims privacy must register privacy cases
(:mod:`dpbandits.audit.cases`) with at least one adversarial neighbour pair; every correct case must
pass its audits and every negative control must be caught. Statistical audits run at confidence
1 − 1e-6 per case (false-failure rate <= 1e-6 per case); exact audits are deterministic. The audits of
the deployed samplers state their power (``notes["power"]``, printed in their reports); their
many-draw twins (``heavy``) are marked slow.
"""

from __future__ import annotations

import pytest

from dpbandits.algorithms.registry import list_algorithms
from dpbandits.audit.contract import privacy_cases, registered_case_algorithms, run_privacy_case

pytestmark = pytest.mark.statistical

REQUIRED_CONTROLS = {"data-dependent scale", "float addition", "seeded noise", "double-counted label"}


def _claims_privacy(privacy: str) -> bool:
    return not privacy.startswith(("none", "n/a"))


PRIVATE = sorted(spec.name for spec in list_algorithms() if _claims_privacy(spec.privacy))
CASES = [pytest.param(name, index, marks=[pytest.mark.slow] if case.heavy else [])
         for name in registered_case_algorithms() for index, case in enumerate(privacy_cases(name))]


@pytest.mark.parametrize("name", PRIVATE)
def test_every_private_algorithm_has_adversarial_cases(name: str) -> None:
    cases = list(privacy_cases(name))
    correct = [case for case in cases if not case.broken]
    assert correct, f"{name} claims privacy but registers no privacy case"
    assert any(pair.adversarial for case in correct for pair in case.pairs), name


@pytest.mark.parametrize(("name", "index"), CASES)
def test_case_passes_or_control_is_caught(name: str, index: int, seed: int) -> None:
    case = list(privacy_cases(name))[index]
    report = run_privacy_case(case, seed)
    assert report.as_expected, str(report)


def test_deployed_samplers_state_their_power() -> None:
    """Every statistical audit of a deployed (secure) sampler says what violation it can detect."""
    sampled = [case for name in registered_case_algorithms() for case in privacy_cases(name)
               if case.sample is not None and not case.broken and ("deployed" in case.description
                                                                   or "secure" in case.description)]
    assert sampled and all("power" in case.notes for case in sampled), [c.description for c in sampled
                                                                         if "power" not in c.notes]


def test_negative_controls_cover_the_known_defect_classes() -> None:
    kinds = {case.notes.get("control") for name in registered_case_algorithms() for case in privacy_cases(name)
             if case.broken}
    assert kinds >= REQUIRED_CONTROLS, f"missing negative controls: {sorted(REQUIRED_CONTROLS - kinds)}"


def test_the_privacy_page_states_the_power_each_audit_has() -> None:
    """docs/privacy.md's table of audit power is what the cases compute (Δ, draws, claim, event)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "privacy.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for name in registered_case_algorithms():
        for case in privacy_cases(name):
            power = case.notes.get("power") if not case.broken else None
            if power is None:
                continue
            mine = [row for row in rows if row.startswith(f"| `{name}` |")]
            assert mine, f"docs/privacy.md states no audit power for {name}"
            found = re.search(r"by >= ([0-9.e+-]+) on (.*) \(probability ([0-9.]+)\)$", power)
            if found is None:  # no frequency test can refute the claim at these draws
                assert any("no frequency test" in row and f"{case.n_samples} draws" in row for row in mine), power
                continue
            gap, event, probability = found.groups()
            assert any(f"{gap} ({case.n_samples}" in row and f"{event} ({probability})" in row for row in mine), (
                f"docs/privacy.md does not state: {power}")
