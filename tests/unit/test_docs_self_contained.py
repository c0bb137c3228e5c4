"""No page, docstring, comment or bundled study cites material outside the repository.

The papers' errata live on the docs page ``docs/papers/errata.md`` (labels such as DUEL-8 or KL-C1);
anything else a reader of the site or of the code cannot open (implementation notes kept elsewhere,
"the specification", a path outside the repository) must not be cited.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "docs", "examples", "benchmarks")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".rst", ".yml", ".yaml", ".cfg", ".ipynb"}

# Each pattern is a way the code base used to cite notes that are not part of the repository.
FORBIDDEN = {
    "a section sign after 'spec'": re.compile(r"\bspec(ification)?\b[^\n]*§", re.IGNORECASE),
    "a path into a specs folder": re.compile(r"specs/", re.IGNORECASE),
    "a spec file name": re.compile(r"\bspec_[a-z]", re.IGNORECASE),
    "the shared notes": re.compile(r"shared notes", re.IGNORECASE),
    "a path outside the repository": re.compile(r"\.\./shared|/work/shared"),
    "'the specification'": re.compile(r"\bspecification\b", re.IGNORECASE),
    "'the spec' as a document": re.compile(r"\b(the|this|our) spec('s)?\b|\bspec('s)? (section|item|E\d|\d)",
                                           re.IGNORECASE),
    "a capitalised 'Spec' reference": re.compile(r"\bSpec\s+(E\d|§|\d|section|item)"),
}


SCANNED_FILES = ("CHANGELOG.md", "README.md")  # top-level files a reader opens first


def _scanned_files() -> list[Path]:
    files = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                files.append(path)
    return files


def offending_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, pattern name, line) of every forbidden citation in ``text``."""
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, pattern in FORBIDDEN.items():
            if pattern.search(line):
                hits.append((number, name, line.strip()))
    return hits


def test_the_patterns_catch_the_old_citations() -> None:
    old = [
        "Constants (spec §3.3) for K arms",
        "``specs/spec_dp_dueling.md`` §5.4.",
        "(specification item B4)",
        "project's shared notes); these pages",
        "see ../shared/DESIGN.md",
        "the spec's pass criterion FAILS",
        "# Spec E7 (tau ablation):",
        'reference="spec_kl_regularization §4.3"',
    ]
    for line in old:
        assert offending_lines(line), line
    fine = ["spec = get_algorithm(name)", "for spec in specs:", "errata DUEL-8", "Chen et al. (2024), §5",
            "class Int(Spec):", "fields: Mapping[str, Spec]"]
    for line in fine:
        assert not offending_lines(line), line


@pytest.mark.parametrize("path", _scanned_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_outside_the_repository(path: Path) -> None:
    if path == Path(__file__).resolve():
        return
    hits = offending_lines(path.read_text(encoding="utf-8", errors="replace"))
    assert not hits, "\n".join(f"{path.relative_to(ROOT)}:{n}: {name}: {line}" for n, name, line in hits)


def test_errata_labels_cited_in_the_code_exist_on_the_errata_page() -> None:
    errata = (ROOT / "docs" / "papers" / "errata.md").read_text(encoding="utf-8")
    defined = set()
    # "**KL-C4/C5.**" or "**BAI-A6/A7.**" define every label they name
    for family, letter, first, rest in re.findall(r"\*\*(BAI|KL|DUEL|USCA)-([A-Z]?)(\d+)((?:/[A-Z]?\d+)*)", errata):
        defined.add(f"{family}-{letter}{first}")
        for part in filter(None, rest.split("/")):
            defined.add(f"{family}-{part}" if part[0].isalpha() else f"{family}-{letter}{part}")
    missing = {}
    for path in _scanned_files():
        for label in re.findall(r"\b((?:BAI|KL|DUEL|USCA)-[A-Z]?\d+)\b", path.read_text(encoding="utf-8", errors="replace")):
            if label not in defined and not _in_range(label, errata):
                missing.setdefault(label, str(path.relative_to(ROOT)))
    assert not missing, f"errata labels cited but not defined on docs/papers/errata.md: {missing}"


def _in_range(label: str, errata: str) -> bool:
    """Whether ``label`` falls in a range item such as **KL-20–34** or **DUEL-20–29**."""
    family, number = re.fullmatch(r"((?:BAI|KL|DUEL|USCA)-[A-Z]?)(\d+)", label).groups()  # type: ignore[union-attr]
    for low, high in re.findall(r"\*\*" + re.escape(family) + r"(\d+)[–/](\d+)", errata):
        if int(low) <= int(number) <= int(high):
            return True
    return False
