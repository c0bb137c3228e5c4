"""The docs stay true: every tutorial, example and Python block of the docs runs as written.

The docs build (``mkdocs build --strict``, in CI) runs ``docs/tutorials/*.py`` itself to draw the
figures the tutorial pages show; these tests run the same scripts (and every script of
``examples/``) so that a change in the library that breaks them fails the suite, not only the docs.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dpbandits
from dpbandits.experiments.bundled import list_bundled_studies
from dpbandits.experiments.config import AlgorithmConfig, EnvironmentConfig, GridConfig, Study

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.py"))
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)  # fences may be indented
ENV = {**os.environ, "MPLBACKEND": "Agg"}


def _python_blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in PAGES:
        # blocks that include a tutorial's code (pymdownx.snippets, "--8<--") run with the tutorial
        bodies = [textwrap.dedent(body) for lang, body in FENCE.findall(page.read_text(encoding="utf-8"))
                  if lang == "python" and not body.lstrip().startswith("--8<--")]
        found += [(str(page.relative_to(DOCS)), index, body) for index, body in enumerate(bodies)]
    return found


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("script", TUTORIALS, ids=lambda path: path.stem)
def test_tutorial_runs_and_draws_its_figure(script: Path, tmp_path: Path) -> None:
    result = _run([sys.executable, str(script), str(tmp_path)], tmp_path)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stderr}"
    figure = tmp_path / f"{script.stem}.png"
    assert figure.stat().st_size > 10_000, f"{script.name} did not draw {figure.name}"
    assert result.stdout.strip(), f"{script.name} printed nothing for its page to show"


def test_every_tutorial_script_has_its_page() -> None:
    for script in TUTORIALS:
        page = DOCS / "tutorials" / f"{script.stem.replace('_', '-')}.md"
        text = page.read_text(encoding="utf-8")
        assert f'docs/tutorials/{script.name}' in text and f"generated/{script.stem}.png" in text, page


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.stem)
@pytest.mark.slow
def test_example_runs(script: Path, tmp_path: Path) -> None:
    result = _run([sys.executable, str(script)], tmp_path)
    assert result.returncode == 0, f"examples/{script.name} failed:\n{result.stderr}"


def test_examples_cover_every_family_and_the_api_features() -> None:
    names = {script.stem for script in EXAMPLES}
    for topic in ("bai", "kl", "dueling", "usca", "save_load", "accountant"):
        assert any(topic in name for name in names), f"no example about {topic}: {sorted(names)}"
    page = (DOCS / "examples.md").read_text(encoding="utf-8")
    listing = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    for script in EXAMPLES:
        assert f'--8<-- "examples/{script.name}"' in page, f"docs/examples.md does not show {script.name}"
        assert f"`{script.name}`" in listing, f"examples/README.md does not list {script.name}"


@pytest.mark.parametrize("page, index, source", _python_blocks(), ids=lambda value: str(value)[:40])
@pytest.mark.slow
def test_docs_python_block_runs(page: str, index: int, source: str, tmp_path: Path) -> None:
    result = _run([sys.executable, "-c", source], tmp_path)
    assert result.returncode == 0, f"docs/{page} python block {index} failed:\n{source}\n{result.stderr}"


def test_cited_bundled_studies_exist() -> None:
    bundled = {study.name for study in list_bundled_studies()}
    cited = {name for page in PAGES for name in re.findall(r"dpbandits reproduce ([a-z0-9][a-z0-9.-]*)", page.read_text("utf-8"))}
    assert cited, "the docs cite no bundled study"
    assert cited <= bundled, f"the docs cite studies that are not bundled: {sorted(cited - bundled)}"


def test_cited_test_files_exist() -> None:
    cited = {path for page in PAGES for path in re.findall(r"\b(tests/[\w/]+\.py)", page.read_text("utf-8"))}
    missing = sorted(path for path in cited if not (ROOT / path).exists())
    assert not missing, f"the docs cite test files that do not exist: {missing}"


def _rendered_modules() -> set[str]:
    directives = set()
    for page in (DOCS / "reference").glob("*.md"):
        directives |= set(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.MULTILINE))
    return directives


def test_api_reference_covers_every_public_module() -> None:
    # a package directive renders its public submodules (show_submodules), so a module is covered by
    # its own directive or one of its parent packages'; the CLI modules are documented by cli.md, and
    # dpbandits.algorithms is only the namespace of the families (each has its page)
    directives = _rendered_modules()
    not_api = {"dpbandits.cli", "dpbandits.cli_account", "dpbandits.cli_audit", "dpbandits.cli_catalog", "dpbandits.cli_ledger",
               "dpbandits.cli_serve",
               "dpbandits.__main__",
               "dpbandits.algorithms"}
    missing = []
    for info in pkgutil.walk_packages(dpbandits.__path__, "dpbandits."):
        name = info.name
        if name in not_api or any(part.startswith("_") and part != "_core" for part in name.split(".")[1:]):
            continue
        parents = {".".join(name.split(".")[:i]) for i in range(2, name.count(".") + 2)}
        if not parents & directives:
            missing.append(name)
    assert not missing, f"modules missing from docs/reference/*.md (add a page and a nav entry): {missing}"


@pytest.mark.parametrize("model", [Study, EnvironmentConfig, AlgorithmConfig, GridConfig], ids=lambda m: m.__name__)
def test_study_reference_documents_every_field(model: type) -> None:
    text = (DOCS / "studies.md").read_text(encoding="utf-8")
    undocumented = [name for name in model.model_fields if f"`{name}`" not in text]
    assert not undocumented, f"docs/studies.md does not describe {model.__name__} fields {undocumented}"


def test_public_api_names_resolve() -> None:
    for name in dpbandits.__all__:
        assert getattr(dpbandits, name) is not None
        if name not in ("__version__", "load"):
            module = importlib.import_module(dpbandits._EXPORTS[name])
            assert getattr(module, name) is getattr(dpbandits, name)


@pytest.mark.slow
def test_the_usca_figure_reads_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the reward curve is in the legend, both panels show the same ε, the log axis has labelled ticks
    import runpy

    from matplotlib.figure import Figure

    saved: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: saved.append(self))
    monkeypatch.setattr(sys, "argv", ["usca.py", str(tmp_path)])
    runpy.run_path(str(DOCS / "tutorials" / "usca.py"), run_name="__main__")
    (figure,) = saved
    left, right = figure.axes[:2]
    left_labels = [text.get_text() for text in left.get_legend().get_texts()]
    right_labels = [text.get_text() for text in right.get_legend().get_texts()]
    assert any(label.startswith("reward") for label in left_labels), left_labels
    epsilons = {label.split("eps = ")[1] for label in left_labels if "eps = " in label}
    assert epsilons == {label.split("eps = ")[1] for label in right_labels} and len(epsilons) == 3
    figure.canvas.draw()
    low, high = right.get_ylim()
    labelled = [t for t in right.get_yticklabels() if t.get_text() and low <= t.get_position()[1] <= high]
    assert len(labelled) >= 3, [t.get_text() for t in labelled]
