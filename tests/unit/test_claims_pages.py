"""Every claim on a claims page carries a verdict word, an interval, its trials, a command and a figure.

A claim is a ``###`` section of a paper's claims page (docs/papers/); the lists under *Corrected*
and *Not checked* summarise the errata and are not claims. Each claim must state
``Verdict (<kind>): *<word>*`` with a word from the kind's vocabulary (the table on the claims
index), a number with its 95% interval ``[low, high]`` or an explicit "no interval" (an exact
computation or a proof), how many trials (datasets, draws, pairs) it rests on or that it is exact,
a ``bash`` block with the command that reproduces it, and a figure that ``claims_figures.py`` draws.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "docs" / "papers"
PAGES = ("dp-bai.md", "dp-dueling.md", "kl-regularization.md", "usca.md")
VOCABULARY = {
    "empirical": {"reproduced", "not reproduced"},
    "bound": {"holds", "tight", "loose", "violated"},
    "proof": {"correct", "corrected", "refuted"},
}
VERDICT = re.compile(r"Verdict \(([a-z]+)\): \*([a-z ]+)\*")
NUMBER = r"[−-]?\d[\d ,.·⁰¹²³⁴⁵⁶⁷⁸⁹⁻]*"
INTERVAL = re.compile(rf"\[\s*{NUMBER},\s*{NUMBER}\]")
TRIALS = re.compile(r"\b\d+\s+(?:trials|datasets|draws|neighbour pairs|pairs|runs)\b|no interval|exact computation")
FIGURE = re.compile(r"!\[[^\]]+\]\(\.\./generated/claims-([a-z0-9-]+)\.png\)")


def _figures() -> set[str]:
    spec = importlib.util.spec_from_file_location("claims_figures", PAPERS / "claims_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.FIGURES)


def claims(text: str) -> list[tuple[str, str]]:
    """The ``###`` sections of a page: (title, body up to the next heading of level 2 or 3)."""
    text = re.sub(r"```.*?```", lambda m: m.group(0).replace("#", "＃") if not m.group(0).startswith("```bash")
                  else m.group(0), text, flags=re.S)  # a '#' inside a Python block is no heading
    parts = re.split(r"^(#{2,3}) (.+)$", text, flags=re.M)
    return [(parts[i + 1], parts[i + 2]) for i in range(1, len(parts) - 2, 3) if parts[i] == "###"]


def problems(title: str, body: str, figures: set[str]) -> list[str]:
    """What a claim section lacks (empty when complete)."""
    missing = []
    verdicts = VERDICT.findall(body)
    if not verdicts:
        missing.append("no 'Verdict (kind): *word*'")
    for kind, word in verdicts:
        if word not in VOCABULARY.get(kind, set()):
            missing.append(f"verdict {word!r} is not a {kind} verdict ({sorted(VOCABULARY.get(kind, ()))})")
    if not INTERVAL.search(body) and "no interval" not in body:
        missing.append("no 95% interval [low, high] and no 'no interval' statement")
    if not TRIALS.search(body):
        missing.append("no number of trials (datasets, draws, pairs) and not stated exact")
    if "```bash" not in body:
        missing.append("no bash command")
    drawn = FIGURE.findall(body)
    if not drawn:
        missing.append("no figure")
    missing += [f"figure claims-{name}.png is not drawn by claims_figures.py" for name in drawn if name not in figures]
    return [f"{title}: {what}" for what in missing]


@pytest.mark.parametrize("page", PAGES)
def test_every_claim_has_verdict_interval_trials_command_and_figure(page: str) -> None:
    sections = claims((PAPERS / page).read_text(encoding="utf-8"))
    assert len(sections) >= 3, f"{page}: no claims found"
    figures = _figures()
    found = [problem for title, body in sections for problem in problems(title, body, figures)]
    assert not found, f"{page}:\n" + "\n".join(found)


def test_the_check_fails_on_an_incomplete_claim() -> None:
    complete = ("Verdict (bound): *holds*. The loss is 0.5 [0.4, 0.6] over 20 trials.\n\n"
                "![x](../generated/claims-kl-e4.png)\n\n```bash\ndpbandits reproduce kl-e4-delta-k\n```\n")
    figures = {"kl-e4"}
    assert problems("C", complete, figures) == []
    assert problems("C", complete.replace("*holds*", "*reproduced*"), figures)  # wrong kind
    assert problems("C", complete.replace("[0.4, 0.6]", ""), figures)
    assert problems("C", complete.replace(" over 20 trials", ""), figures)
    assert problems("C", complete.replace("```bash", "```text"), figures)
    assert problems("C", complete.replace("![x](../generated/claims-kl-e4.png)", ""), figures)
    assert problems("C", complete, set())  # a figure nobody draws
    page = "# P\n\n## A\n\n### One\n\n" + complete + "\n### Two\n\nno verdict\n\n## Corrected\n\n- a list\n"
    assert [title for title, _ in claims(page)] == ["One", "Two"]
