"""MkDocs hooks: generate what the docs show from the code itself, at every build.

* ``docs/tutorials/*.py`` run (in parallel); each writes its figure (``generated/<name>.png``), and
  its printed output is kept (``<name>.txt``), under ``build/docs-generated/``: the tutorial pages include the
  scripts' code and output with pymdownx.snippets and show the figures, so they show what the code
  produces. The test suite runs the same scripts (tests/integration/test_docs.py).
* ``cli.md``: the ``--help`` of ``dpbandits`` and of each of its commands, as the installed CLI prints it.
* ``public-api.md``: the names importable from ``dpbandits``, from its own export table.
* ``generated/claims-*.png``: the claims pages' figures, drawn by ``docs/papers/claims_figures.py`` from
  the studies' summaries stored under ``docs/papers/data/`` (re-checked by tests/unit/test_claims_data.py).

The tutorials and the claims figures are cached by what they are computed from: a script is run again
only when the SHA-256 of its source, of the data it reads (the claims' data) or of the package's own
source (``src/dpbandits``) changed since its outputs were written (``build/docs-generated/<name>.sha256``),
so a ``mkdocs serve`` reload after editing a page does not re-run them (the first build took minutes).

Nothing generated is committed; ``build/`` is ignored by git.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.dpbandits")
ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "tutorials"
GENERATED = ROOT / "build" / "docs-generated"  # snippets' second base path: <name>.txt, cli.md, public-api.md
FIGURES = GENERATED / "generated"  # published as generated/<name>.png
ENV = {**os.environ, "MPLBACKEND": "Agg", "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb",
       "PYTHONWARNINGS": "ignore::UserWarning"}
_LIST_COMMANDS = (
    "import json, typer.main; from dpbandits.cli import app; "
    "print(json.dumps(list(typer.main.get_command(app).commands)))"  # in the order --help lists them
)


def _run_all(commands: dict[str, list[str]]) -> dict[str, str]:
    """Run the commands concurrently; return each one's stdout, failing the build on an error."""
    running = {name: subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for name, command in commands.items()}
    outputs = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=600)
        if process.returncode != 0:
            raise RuntimeError(f"docs generation: {' '.join(commands[name])} failed:\n{stderr}")
        outputs[name] = stdout
    return outputs


def _help_block(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    return "```text\n" + "\n".join(lines).strip("\n") + "\n```\n"


def _cli_page(outputs: dict[str, str], commands: list[str]) -> str:
    sections = ["## `dpbandits`\n\n" + _help_block(outputs["dpbandits"])]
    sections += [f"## `dpbandits {command}`\n\n" + _help_block(outputs[command]) for command in commands]
    return "\n".join(sections)


def _public_api_page() -> str:
    import dpbandits

    exports: dict[str, str] = dpbandits._EXPORTS
    rows = ["| Name | Defined in |", "| --- | --- |"]
    for name in sorted(exports, key=str.lower):
        module = exports[name]
        rows.append(f"| [`{name}`][{module}.{name}] | `{module}` |")
    return "\n".join(rows) + "\n"


def _digest(paths: list[Path]) -> str:
    """SHA-256 over the files' relative names and bytes (sorted: the same files give the same digest)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        digest.update(str(name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _inputs_key(script: Path, *data: Path) -> str:
    """What a generated output depends on: its script, the data it reads, the package's source, Python."""
    package = [path for path in (ROOT / "src" / "dpbandits").rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    read = [path for item in data for path in ([item] if item.is_file() else item.rglob("*")) if path.is_file()]
    return _digest([script, *read, *package]) + f" python {sys.version_info[:3]}"


def _stamp(name: str) -> Path:
    return GENERATED / f"{name}.sha256"


def _is_current(name: str, key: str) -> bool:
    """Whether ``name``'s outputs were written from inputs with this ``key`` (and its text output is there)."""
    stamp = _stamp(name)
    return stamp.exists() and stamp.read_text(encoding="utf-8") == key and (GENERATED / f"{name}.txt").exists()


def on_pre_build(config: Any) -> None:
    """Run the tutorials (those whose inputs changed) and the CLI's --help into build/docs-generated."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    claims = ROOT / "docs" / "papers" / "claims_figures.py"
    cached = {script.stem: [python, str(script), str(FIGURES)] for script in sorted(TUTORIALS.glob("*.py"))}
    cached["claims-figures"] = [python, str(claims), str(FIGURES)]
    papers = [*sorted((ROOT / "docs" / "papers").glob("*.py")), ROOT / "docs" / "papers" / "data"]  # the figures' code, data
    keys = {name: _inputs_key(Path(command[1]), *(papers if name == "claims-figures" else [])) for name, command in cached.items()}
    commands = {name: command for name, command in cached.items() if not _is_current(name, keys[name])}
    if len(commands) < len(cached):
        log.info("cached (inputs unchanged): %s", ", ".join(sorted(set(cached) - set(commands))))
    cli_commands = json.loads(_run_all({"list": [python, "-c", _LIST_COMMANDS]})["list"])
    console = Path(python).with_name("dpbandits")  # the installed console script, as users run it
    cli = [str(console)] if console.exists() else [python, "-m", "dpbandits"]
    commands["dpbandits"] = [*cli, "--help"]
    commands.update({command: [*cli, command, "--help"] for command in cli_commands})
    log.info("generating tutorial figures and CLI help (%d commands)", len(commands))
    outputs = _run_all(commands)
    for name in cached:
        if name in outputs:
            (GENERATED / f"{name}.txt").write_text(outputs[name], encoding="utf-8")
            _stamp(name).write_text(keys[name], encoding="utf-8")  # after its outputs: a failed run re-runs
    (GENERATED / "cli.md").write_text(_cli_page(outputs, cli_commands), encoding="utf-8")
    (GENERATED / "public-api.md").write_text(_public_api_page(), encoding="utf-8")


def on_files(files: Files, config: Any) -> Files:
    """Publish the generated figures under ``generated/`` (pages link them as ``generated/<name>.png``)."""
    for figure in sorted(FIGURES.glob("*.png")):
        files.append(File(f"generated/{figure.name}", src_dir=str(GENERATED), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
