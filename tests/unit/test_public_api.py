"""One public API: the main classes importable from ``dpbandits`` itself (issue 14)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import dpbandits
from dpbandits.algorithms.bai.dp_bai import DPBAI


def test_the_main_classes_are_importable_from_the_package_and_load_lazily() -> None:
    for name in dpbandits.__all__:
        assert getattr(dpbandits, name) is not None, name
    assert dpbandits.DPBAI is DPBAI
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = dpbandits.Nope  # type: ignore[attr-defined]
    # importing the package imports no algorithm, no SciPy, no OpenDP
    code = "import sys, dpbandits; print(sorted(m for m in sys.modules if m.startswith(('scipy', 'opendp', 'dpbandits.'))))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


# --- issue 26: one way in -----------------------------------------------------------------------

import ast  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import re  # noqa: E402
import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

from dpbandits._core import errors  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SUBPACKAGES = (
    "dpbandits.algorithms.bai", "dpbandits.algorithms.dueling", "dpbandits.algorithms.kernel",
    "dpbandits.algorithms.offline", "dpbandits.privacy", "dpbandits.envs", "dpbandits.audit",
    "dpbandits.experiments",
)
FENCE = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def test_every_error_and_warning_class_is_importable_from_the_package() -> None:
    classes = [name for name, obj in vars(errors).items()
               if inspect.isclass(obj) and issubclass(obj, Exception | Warning) and obj.__module__ == errors.__name__]
    assert len(classes) >= 16
    missing = [name for name in classes if getattr(dpbandits, name, None) is not getattr(errors, name)]
    assert not missing, f"error/warning classes not importable from dpbandits: {missing}"


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_public_class_and_function_is_importable_from_the_package(package: str) -> None:
    module = importlib.import_module(package)
    public = [name for name in module.__all__
              if inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name))]
    missing = [name for name in public if getattr(dpbandits, name, None) is not getattr(module, name)]
    assert not missing, f"{package} names not importable from dpbandits: {missing}"


def test_the_comparators_and_phased_agent_are_importable() -> None:
    for name in ("RUCB", "InterleavedFilter", "BeatTheMean", "CopelandConfidenceBound", "RMED1",
                 "DoubleThompsonSampling", "MaxInP", "CoLSTIM", "SequentialHalving", "PhasedAgent",
                 "PessimisticGreedyMAB", "NonPrivate", "Algorithm", "Agent", "OfflinePolicy"):
        assert name in dpbandits.__all__, name


def test_load_returns_whatever_the_file_holds(tmp_path: Path, seed: int) -> None:
    agent = dpbandits.RUCB(3, horizon=10, rng=seed)
    agent.tell(agent.ask(), first_wins=True)
    loaded = dpbandits.load(agent.save(tmp_path / "rucb.npz"))
    assert type(loaded) is dpbandits.RUCB and loaded.time == 1 and loaded.ask() == agent.ask()
    bai = dpbandits.DPBAI(np.eye(3), budget=60, epsilon=1.0).agent(seed, insecure_seeded_noise=True)
    assert type(dpbandits.load(bai.save(tmp_path / "bai.npz"))) is dpbandits.PhasedAgent
    with pytest.raises(dpbandits.DataFormatError):
        dpbandits.load(tmp_path / "missing.npz")
    (tmp_path / "text.npz").write_text("not a state file")
    with pytest.raises(dpbandits.DataFormatError):
        dpbandits.load(tmp_path / "text.npz")


def _sources() -> list[tuple[str, str]]:
    """(where, Python code) of every docs code block, tutorial and example."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for index, (lang, body) in enumerate(FENCE.findall(page.read_text(encoding="utf-8"))):
            if lang in ("python", "py", "pycon") and not body.lstrip().startswith("--8<--"):
                code = "\n".join(line[4:] if line.startswith((">>> ", "... ")) else line
                                 for line in textwrap.dedent(body).splitlines())
                found.append((f"{page.relative_to(ROOT)} block {index}", code))
    for script in [*sorted((ROOT / "docs").rglob("*.py")), *sorted((ROOT / "examples").glob("*.py"))]:
        if script.name not in ("hooks.py", "griffe_sphinx_roles.py"):  # the docs build's own plugins
            found.append((str(script.relative_to(ROOT)), script.read_text(encoding="utf-8")))
    return found


def _private_imports(code: str) -> list[str]:
    """Imports of a private module (a component starting with ``_``) or a private name of dpbandits."""
    bad = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpbandits"):
            modules, names = [node.module or ""], [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [alias.name for alias in node.names if alias.name.startswith("dpbandits")], []
        else:
            continue
        for module in modules:
            if any(part.startswith("_") for part in module.split(".")):
                bad.append(module)
        bad += [f"{node.module}.{name}" for name in names if name.startswith("_")]  # type: ignore[union-attr]
    return bad


def test_docs_examples_and_tutorials_import_only_public_names() -> None:
    sources = _sources()
    assert len(sources) > 20
    offenders = {where: bad for where, code in sources if (bad := _private_imports(code))}
    assert not offenders, f"private imports in docs/examples (import from dpbandits instead): {offenders}"


def test_the_private_import_scan_catches_core_imports() -> None:
    assert _private_imports("from dpbandits._core.errors import PaperVariantWarning") == ["dpbandits._core.errors"]
    assert _private_imports("import dpbandits._core.rng as r") == ["dpbandits._core.rng"]
    assert _private_imports("from dpbandits.algorithms.dueling import _rounds") == ["dpbandits.algorithms.dueling._rounds"]
    assert _private_imports("from dpbandits import DPBAI\nimport numpy") == []
