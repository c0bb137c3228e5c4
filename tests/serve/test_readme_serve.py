"""The README's "Serving experiments" section runs as written (on a free port instead of 8000).

Its ``sh`` block lines run in order in a fresh directory; the ``dpbandits serve`` line is started in
the background and waited for; the ``py`` block is the client, run against it to the end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from dpbandits.serve.testing import free_port

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Serving experiments")
    return text[start:text.index("\n## ", start + 1)]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", _section(), re.MULTILINE | re.DOTALL)


@pytest.mark.slow
def test_readme_serving_commands_and_client_run(tmp_path: Path) -> None:
    port = str(free_port())
    lines = [line.replace("8000", port) for block in _blocks("sh") for line in block.splitlines() if line.strip()]
    assert any(line.startswith("dpbandits serve ") for line in lines)
    assert any(line.startswith("dpbandits api-key create ") for line in lines)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    server = None
    script = []
    try:
        for line in lines:
            if line.startswith("dpbandits serve "):
                server = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=tmp_path, env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                deadline = time.monotonic() + 60
                while True:
                    try:
                        if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                            break
                    except httpx.HTTPError:
                        assert time.monotonic() < deadline and server.poll() is None, "dpbandits serve did not start"
                        time.sleep(0.1)
            else:
                script.append(line)
        shell = subprocess.run(["bash", "-euc", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=120)
        assert shell.returncode == 0, shell.stderr
        assert '"ticket"' in shell.stdout and '"arm"' in shell.stdout
        (python_block,) = _blocks("py")
        result = subprocess.run([sys.executable, "-c", python_block.replace("8000", port)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("True {'arm': ")
        assert "'epsilon': 1.0" in result.stdout
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
