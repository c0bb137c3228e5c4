"""Start-up of the command line (issue 17): ``dpbandits --help`` imports no heavy module.

What ``--help`` imports is checked here (in a fresh interpreter); how long it takes is measured by
``benchmarks/bench_cli.py``, never by a timed test. The audit layer, no longer imported at start-up,
must still be registered wherever a ``kl-*`` task with ``audit = true`` runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("numpy", "scipy", "matplotlib", "opendp", "pydantic", "pandas", "pyarrow", "dpbandits.algorithms",
         "dpbandits.experiments", "dpbandits.audit", "dpbandits.privacy", "dpbandits.envs")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_imports_no_heavy_module() -> None:
    out = _run("""
        import json, sys
        sys.argv = ["dpbandits", "--help"]
        from dpbandits.cli import main
        try:
            main()
        except SystemExit:
            pass
        print(json.dumps(sorted(sys.modules)))
    """)
    modules = json.loads(out.strip().splitlines()[-1])
    assert "Usage" in out and "reproduce" in out and "account" in out  # the help itself, with every command
    loaded = [m for m in modules if any(m == heavy or m.startswith(heavy + ".") for heavy in HEAVY)]
    assert loaded == [], f"--help imported {loaded}"


@pytest.mark.slow
def test_a_kl_task_with_audit_registers_the_auditors_where_it_runs() -> None:
    out = _run("""
        import sys, tempfile
        from dpbandits.experiments.config import Study
        from dpbandits.experiments.runner import run_study
        assert "dpbandits.audit.kl" not in sys.modules
        study = Study.from_mapping({
            "name": "kl-audit-start-up", "seed": 3, "trials": 2, "chunk_size": 2,
            "metrics": ["epsilon0", "epsilon_hat", "audit_ratio"],
            "environment": {"name": "offline-bandit", "means": [0.3, 0.7], "min_pulls": 2},
            "algorithms": [{"name": "kl-mab", "audit": True}],
            "grid": {"n_records": [40], "eta": [0.5]},
        })
        result = run_study(study, tempfile.mkdtemp() + "/run", progress="none")
        print(result.status, "dpbandits.audit.kl" in sys.modules)
    """)
    assert out.split() == ["complete", "True"]
