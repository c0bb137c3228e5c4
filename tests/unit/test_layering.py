"""Enforce the import layering of DESIGN.md with an ``ast`` walk over every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "dpbandits"

# Rank of each layer: a module may import only from layers of rank <= its own.
# ``audit`` may import ``algorithms``; nothing below ``experiments`` imports ``audit``.
LAYER_RANK = {
    "_core": 0,
    "privacy": 1,
    "envs": 2,
    "algorithms": 3,
    "audit": 4,
    "experiments": 5,
    "cli": 6,
    "__main__": 6,
    "serve": 7,  # the experiment service: above everything, imported only by its cli_serve command
}


def _layer(module_parts: tuple[str, ...]) -> str | None:
    if len(module_parts) < 2 or module_parts[0] != "dpbandits":
        return None
    head = module_parts[1].removesuffix(".py")
    return head if head in LAYER_RANK else None


def _imports(path: Path, root: Path = SRC) -> list[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved against ``root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ("dpbandits", *path.relative_to(root).with_suffix("").parts[:-1])
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                found.append(".".join((*base, node.module or "")).rstrip("."))
            elif node.module:
                found.append(node.module)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


def _upward_imports(path: Path, root: Path = SRC) -> list[str]:
    """The imports of ``path`` that reach a layer above its own."""
    own = _layer(("dpbandits", *path.relative_to(root).parts))
    if own is None:
        return []
    bad = []
    for imported in _imports(path, root):
        other = _layer(tuple(imported.split(".")))
        if other is not None and LAYER_RANK[other] > LAYER_RANK[own]:
            bad.append(f"{imported} (layer {other}, above {own})")
    return bad


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_downward_only(path: Path) -> None:
    assert _upward_imports(path) == [], "DESIGN.md's layering: imports go downward only"


def test_layering_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself flags upward imports, absolute and relative (a test that can fail)."""
    (tmp_path / "privacy").mkdir()
    bad = tmp_path / "privacy" / "bad.py"
    bad.write_text(
        "from dpbandits.experiments import runner\nfrom ..envs import mab\nfrom dpbandits._core import rng\n",
        encoding="utf-8",
    )
    found = _upward_imports(bad, root=tmp_path)
    assert len(found) == 2
    assert found[0].startswith("dpbandits.experiments")
    assert found[1].startswith("dpbandits.envs")
