"""The timing residual the docs state is the one the release-timing benchmark checks its runs against (issue 32, defect 7).

The stated one-call advantage of the noisy-max samplers was 0.2-0.3 while runs measured up to
0.45 here and 0.68 elsewhere; the benchmark now reports any run above the stated figure, and the
README's threat model and docs/privacy.md must state that same figure.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stated() -> float:
    spec = importlib.util.spec_from_file_location("bench_release_timing", ROOT / "benchmarks" / "bench_release_timing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return float(module.STATED_ADVANTAGE)


def _timing_paragraph(page: str) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    match = re.search(r"\*\*Timing \(residual\)\.\*\*(.*?)(?:\n- \*\*|\n\n)", text, re.S)
    assert match, f"{page} has no timing paragraph"
    return " ".join(match.group(1).split())


def test_the_docs_state_the_residual_the_benchmark_checks() -> None:
    stated = _stated()
    assert 0.68 <= stated < 1.0  # at least the largest advantage measured so far
    for page in ("README.md", "docs/privacy.md"):
        paragraph = _timing_paragraph(page)
        assert f"up to about {stated:g}" in paragraph, page
        assert "load average" in paragraph, page  # measured figures say how busy the machine was
