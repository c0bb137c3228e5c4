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
}


def _layer(module_parts: tuple[str, ...]) -> str | None:
    if len(module_parts) < 2 or module_parts[0] != "dpbandits":
        return None
    head = module_parts[1].removesuffix(".py")
    return head if head in LAYER_RANK else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ("dpbandits", *path.relative_to(SRC).with_suffix("").parts[:-1])
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


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_downward_only(path: Path) -> None:
    own = _layer(("dpbandits", *path.relative_to(SRC).parts))
    if own is None:
        return
    for imported in _imports(path):
        other = _layer(tuple(imported.split(".")))
        if other is None:
            continue
        assert LAYER_RANK[other] <= LAYER_RANK[own], (
            f"{path.relative_to(SRC)} (layer {own}) imports {imported} (layer {other}), "
            "which sits above it in DESIGN.md's layering"
        )


def test_layering_check_catches_an_upward_import(tmp_path: Path) -> None:
    """The checker itself must flag an upward import (a test that cannot fail is no test)."""
    privacy_dir = tmp_path / "privacy"
    privacy_dir.mkdir()
    bad = privacy_dir / "bad.py"
    bad.write_text("from dpbandits.experiments import runner\nfrom ..envs import mab\n", encoding="utf-8")
    tree = ast.parse(bad.read_text(encoding="utf-8"))
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    ranks = [LAYER_RANK[_layer(tuple(f"dpbandits.{m}".split(".")) if n.level else tuple(m.split(".")))]
             for n, m in zip([n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)], modules)]
    assert all(r > LAYER_RANK["privacy"] for r in ranks)
