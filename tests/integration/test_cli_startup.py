"""Start-up of the command line (issues 17 and 38): ``dpbandits --help`` imports no heavy module, and
``dpbandits account mab`` on a small CSV imports only what the MAB policy and the CSV reader need.

What these commands import is checked here (in a fresh interpreter); how long they take is measured by
``benchmarks/bench_cli.py``, never by a timed test. The audit layer, no longer imported at start-up,
must still be registered wherever a ``kl-*`` task with ``audit = true`` runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAVY = ("numpy", "scipy", "matplotlib", "opendp", "pydantic", "pandas", "pyarrow", "dpbandits.algorithms",
         "dpbandits.experiments", "dpbandits.audit", "dpbandits.privacy", "dpbandits.envs")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _modules_of_command(*argv: str) -> tuple[str, list[str]]:
    """(what the command printed, the sorted names of every module imported) of ``dpbandits *argv``."""
    out = _run(f"""
        import json, sys
        sys.argv = ["dpbandits", *{list(argv)!r}]
        from dpbandits.cli import main
        try:
            main()
        except SystemExit:
            pass
        print(json.dumps(sorted(sys.modules)))
    """)
    printed, _, last = out.rstrip("\n").rpartition("\n")
    return printed, json.loads(last)


def _matching(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


# What a one-line ``account mab`` must not import: pandas (the CSV is parsed by pyarrow), SciPy (the MAB
# accountant's log-sum-exp is NumPy's; SciPy's solvers serve the linear and RLHF policies), plotting, and
# the layers of studies, audits and the service.
NOT_FOR_ACCOUNT_MAB = ("pandas", "matplotlib", "opendp", "sklearn", "scipy", "dpbandits.experiments", "dpbandits.audit", "dpbandits.serve",
                       "dpbandits.algorithms.bai", "dpbandits.algorithms.dueling", "dpbandits.algorithms.kernel",
                       "dpbandits.algorithms.offline.kl_linear", "dpbandits.algorithms.offline.kl_rlhf",
                       "dpbandits.algorithms.offline.simulate", "dpbandits.algorithms.offline.baselines")


def test_account_help_imports_no_heavy_module() -> None:
    printed, modules = _modules_of_command("account", "--help")
    assert "--n-arms" in printed and "--data" in printed
    # pydantic is left out: typer itself imports it to build a command's parameters, whatever the command
    loaded = _matching(modules, tuple(name for name in HEAVY if name != "pydantic"))
    assert loaded == [], f"account --help imported {loaded}"


def test_a_one_line_account_mab_imports_only_the_mab_policy_and_the_csv_reader(tmp_path: Path) -> None:
    data = tmp_path / "logged.csv"
    data.write_text("action,reward\n" + "".join(f"{i % 3},{(i % 7) / 7:.3f}\n" for i in range(100)))
    printed, modules = _modules_of_command("account", "mab", "--data", str(data), "--n-arms", "3", "--json")
    result = json.loads(printed.splitlines()[-1])
    assert result["setting"] == "mab" and len(result["probabilities"]) == 3  # it did account
    loaded = _matching(modules, NOT_FOR_ACCOUNT_MAB)
    assert loaded == [], f"account mab on a {data.stat().st_size}-byte CSV imported {loaded} ({len(modules)} modules)"
    # nor does the approximate (Theorem 1') account, the one that sums exponentials
    printed, modules = _modules_of_command("account", "mab", "--data", str(data), "--n-arms", "3",
                                           "--n0", "33", "--json")
    assert json.loads(printed.splitlines()[-1])["delta"] > 0  # it did account, with a delta
    assert _matching(modules, ("scipy",)) == []


def test_the_lazy_offline_package_still_registers_every_offline_algorithm() -> None:
    out = _run("""
        import sys
        import dpbandits.algorithms.offline as offline
        assert "dpbandits.algorithms.offline.simulate" not in sys.modules  # the package alone is light
        from dpbandits.algorithms.registry import get_algorithm, list_algorithms
        print(get_algorithm("kl-mab").family, offline.KLRLHFPolicy.__name__, offline.simulate.__name__)
        print(sum(spec.family == "offline" for spec in list_algorithms()) >= 5)
    """)
    assert out.split() == ["offline", "KLRLHFPolicy", "dpbandits.algorithms.offline.simulate", "True"]

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
