"""The docs hook re-runs a tutorial only when what it is computed from changed (mkdocs serve reloads)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mkdocs")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks_under_test", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tutorials = tmp_path / "tutorials"
    shutil.copytree(ROOT / "docs" / "tutorials", tutorials)
    monkeypatch.setattr(module, "TUTORIALS", tutorials)
    monkeypatch.setattr(module, "GENERATED", tmp_path / "generated")
    monkeypatch.setattr(module, "FIGURES", tmp_path / "generated" / "generated")
    module.ran = []

    def run_all(commands: dict[str, list[str]]) -> dict[str, str]:  # record what would run; run nothing
        module.ran.append(sorted(commands))
        return {"list": "[]"} if "list" in commands else {name: f"output of {name}\n" for name in commands}

    monkeypatch.setattr(module, "_run_all", run_all)
    return module


def test_a_reload_reruns_only_the_tutorial_whose_source_changed(hooks: Any) -> None:
    scripts = sorted(hooks.TUTORIALS.glob("*.py"))
    assert len(scripts) >= 2
    hooks.on_pre_build({})
    assert {s.stem for s in scripts} | {"claims-figures"} <= set(hooks.ran[-1])  # the first build runs them all
    hooks.on_pre_build({})
    assert hooks.ran[-1] == ["dpbandits"]  # a reload: only the CLI's --help (no command listed here)
    scripts[0].write_text(scripts[0].read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    hooks.on_pre_build({})
    assert hooks.ran[-1] == sorted(["dpbandits", scripts[0].stem])
    (hooks.GENERATED / f"{scripts[1].stem}.txt").unlink()  # an output gone: run again
    hooks.on_pre_build({})
    assert hooks.ran[-1] == sorted(["dpbandits", scripts[1].stem])


def test_the_key_covers_the_package_source_and_python(hooks: Any) -> None:
    script = next(hooks.TUTORIALS.glob("*.py"))
    key = hooks._inputs_key(script)
    assert key.endswith(f"python {sys.version_info[:3]}") and len(key.split()[0]) == 64
    assert hooks._inputs_key(script) == key
