"""The claims pages' stored study summaries are what the studies produce, and the figures draw them.

``docs/papers/data/<study>/`` holds a study's ``summary.csv``, its analysis reports and ``run.json``
(command, seed, trials). These tests recompute every stored analysis from the stored summary, re-run
the cheap studies and the KL counterexamples from scratch and compare, and draw every figure.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from dpbandits.experiments.analyses import get_analysis

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "papers" / "data"
STUDIES = sorted(path.parent.name for path in DATA.glob("*/run.json"))


def _figures_module() -> Any:
    spec = importlib.util.spec_from_file_location("claims_figures", ROOT / "docs" / "papers" / "claims_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _close(stored: Any, fresh: Any, path: str = "", rel_tol: float = 1e-9) -> None:
    """Equal JSON trees, floats to ``rel_tol`` relative (NaN equal to NaN)."""
    if isinstance(stored, dict):
        assert set(stored) == set(fresh), path
        for key in stored:
            _close(stored[key], fresh[key], f"{path}.{key}", rel_tol)
    elif isinstance(stored, list):
        assert len(stored) == len(fresh), path
        for index, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            _close(a, b, f"{path}[{index}]", rel_tol)
    elif isinstance(stored, float) and isinstance(fresh, float):
        assert (math.isnan(stored) and math.isnan(fresh)) or math.isclose(stored, fresh, rel_tol=rel_tol, abs_tol=1e-12), \
            f"{path}: stored {stored}, recomputed {fresh}"
    else:
        assert stored == fresh, f"{path}: stored {stored!r}, recomputed {fresh!r}"


def test_every_stored_study_says_how_it_was_run() -> None:
    assert STUDIES, "no stored study summaries"
    for study in STUDIES:
        info = json.loads((DATA / study / "run.json").read_text(encoding="utf-8"))
        assert info["trials"] >= 1 and isinstance(info["seed"], int), study
        assert info["command"].startswith("dpbandits ") or "dpbandits run" in info["command"], study
        with open(DATA / study / "summary.csv", newline="", encoding="utf-8") as handle:
            assert list(csv.DictReader(handle)), study


def test_stored_study_files_are_the_ones_run() -> None:
    """A study stored beside its data (one the docs run, not bundled) loads, with run.json's seed and trials."""
    from dpbandits.experiments.config import load_study

    stored = sorted(DATA.glob("*/study.toml"))
    assert stored
    for path in stored:
        info = json.loads((path.parent / "run.json").read_text(encoding="utf-8"))
        study = load_study(path)
        assert (study.name, study.seed, study.trials) == (info["study"], info["seed"], info["trials"]), path
        assert f"dpbandits run docs/papers/data/{path.parent.name}/study.toml" in info["command"], path


@pytest.mark.parametrize("path", sorted(DATA.glob("*/analyses/*.json")), ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_stored_analyses_recompute_from_the_stored_summary(path: Path, tmp_path: Path) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    study_dir = path.parent.parent
    per_trial = {"fixed-epsilon-slope": "fixed_epsilon_report", "sensitivity-decay": "sensitivity_report"}
    if stored["analysis"] in per_trial:
        with open(study_dir / "trials.csv", newline="", encoding="utf-8") as handle:
            fresh = getattr(_figures_module(), per_trial[stored["analysis"]])(list(csv.DictReader(handle)))
        _close(stored, json.loads(json.dumps(fresh)))
        return
    shutil.copy(study_dir / "summary.csv", tmp_path / "summary.csv")
    fresh = get_analysis(stored["analysis"]).compute(tmp_path)
    fresh = json.loads(json.dumps({"analysis": stored["analysis"], "description": stored["description"], **fresh}))
    _close(stored, fresh)


PRIVACY = sorted(DATA.glob("privacy-*.json"))


@pytest.mark.parametrize("path", PRIVACY, ids=lambda p: p.stem)
def test_stored_privacy_audits_support_the_pages(path: Path) -> None:
    """Every correct case's audit stays within its claim; every negative control is refuted."""
    stored = json.loads(path.read_text(encoding="utf-8"))
    ratio = _figures_module().audited_ratio
    assert stored["cases"] and stored["command"] == f"python docs/papers/claims_data.py {stored['family']}"
    for case in stored["cases"]:
        name = f"{case['algorithm']}: {case['description']}"
        assert case["refuted"] == case["negative_control"], name
        if not case["negative_control"]:
            assert ratio(case) <= 1 + 1e-9 and not case["float_attack_cells"], name
        else:
            assert ratio(case) > 1 or case["float_attack_cells"] > 0, name


@pytest.mark.slow
@pytest.mark.parametrize("path", PRIVACY, ids=lambda p: p.stem)
def test_the_privacy_audits_recompute(path: Path) -> None:
    """The audits run again: exact losses equal the stored ones; sampled audits (secure noise) reach the same verdict."""
    spec = importlib.util.spec_from_file_location("claims_data", ROOT / "docs" / "papers" / "claims_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stored = json.loads(path.read_text(encoding="utf-8"))
    fresh = module.audit_family(stored["family"])
    assert [c["description"] for c in fresh["cases"]] == [c["description"] for c in stored["cases"]]
    for old, new in zip(stored["cases"], fresh["cases"], strict=True):
        assert new["refuted"] == old["refuted"], old["description"]
        if old["kind"] == "exact":  # numerical optimisation and quadrature (USCA's supremum): the last digits
            _close(old, new, rel_tol=1e-6)  # move with the machine's BLAS (4e-9 seen); the pages quote 3 digits


def test_recorded_summaries_are_consistent() -> None:
    """The recorded (not re-run) summaries: each mean lies inside its interval, with the trials stated."""
    baselines = json.loads((DATA / "usca-baselines-recorded.json").read_text(encoding="utf-8"))
    assert baselines["trials"] >= 2 and baselines["command"].startswith("OPENBLAS_NUM_THREADS=1 dpbandits ")
    for method in baselines["methods"]:
        low, high = method["ci95"]
        assert 0 < low <= method["error"] <= high, method["label"]


@pytest.mark.slow
def test_a_fresh_run_of_a_stored_study_gives_the_stored_summary(tmp_path: Path) -> None:
    """dp-bai-figure2 (1000 trials, seeded noise: about 3 s of CPU) run again gives the same numbers."""
    import warnings

    from dpbandits._core.errors import PaperVariantWarning
    from dpbandits.experiments import load_bundled_study, run_study

    info = json.loads((DATA / "dp-bai-figure2" / "run.json").read_text(encoding="utf-8"))
    study = load_bundled_study("dp-bai-figure2")
    assert (study.seed, study.trials) == (info["seed"], info["trials"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PaperVariantWarning)  # the instance as printed is run on purpose
        run_study(study, tmp_path / "run", progress="none")
    with open(DATA / "dp-bai-figure2" / "summary.csv", newline="", encoding="utf-8") as handle:
        stored = list(csv.DictReader(handle))
    with open(tmp_path / "run" / "summary.csv", newline="", encoding="utf-8") as handle:
        fresh = list(csv.DictReader(handle))
    assert fresh == stored


@pytest.mark.slow
def test_the_kl_counterexamples_recompute() -> None:
    import warnings

    import numpy as np

    from dpbandits import KLMABPolicy, KLRLHFPolicy
    from dpbandits._core.errors import PaperVariantWarning
    from dpbandits.audit.kl import audit_mab, audit_rlhf
    from dpbandits.envs.offline import LoggedBanditData, PreferenceData

    stored = {case["label"][:2]: case for case in
              json.loads((DATA / "kl-counterexamples.json").read_text(encoding="utf-8"))["cases"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PaperVariantWarning)
        data = LoggedBanditData(np.r_[np.zeros(2, int), np.ones(10_000, int)],
                                np.r_[1.0, 1.0, np.ones(6400), np.zeros(3600)], 2)
        policy = KLMABPolicy(2, eta=0.001, beta0=0.5).fit(data)
        paper = policy.guarantee(kind="approx", variant="paper", k=16)
        assert math.isclose(paper.delta, stored["C1"]["paper"], rel_tol=1e-9)
        true = audit_mab(policy, data, epsilon=paper.epsilon).delta_hat
        assert math.isclose(true, stored["C1"]["true"], rel_tol=1e-9)
        preferences = PreferenceData(np.full((1000, 1), 2.0), np.r_[np.ones(500), np.zeros(500)])
        rlhf = KLRLHFPolicy(eta=1.0, beta0=1.0, ridge=1.0, norm_bound=0.1).fit(preferences)
        actions = np.array([[1.0], [-1.0]])
        for key, options in (("C4", {}), ("C5", {"neighbouring": "add_remove"})):
            assert math.isclose(rlhf.guarantee(actions, variant="paper", **options).epsilon, stored[key]["paper"],
                                rel_tol=1e-9)
            assert math.isclose(audit_rlhf(rlhf, preferences, actions, rng=0, **options).epsilon_hat,
                                stored[key]["true"], rel_tol=1e-6)
            assert math.isclose(rlhf.guarantee(actions, **options).epsilon, stored[key]["corrected"], rel_tol=1e-9)
    for case in stored.values():
        assert case["paper"] < case["true"] <= case["corrected"], case["label"]


@pytest.mark.slow
def test_every_claims_figure_is_drawn(tmp_path: Path) -> None:
    module = _figures_module()
    module.main([str(tmp_path)])
    drawn = sorted(path.name for path in tmp_path.glob("claims-*.png"))
    assert drawn == sorted(f"claims-{name}.png" for name in module.FIGURES)
    pages = "".join((ROOT / "docs" / "papers" / page).read_text(encoding="utf-8")
                    for page in ("dp-bai.md", "kl-regularization.md", "dp-dueling.md", "usca.md"))
    for name in module.FIGURES:
        assert f"../generated/claims-{name}.png" in pages, f"claims-{name}.png is on no claims page"


def test_dueling_e1_model_chi_squares_on_the_page_recompute() -> None:
    """E1's two growth models against the trial noise: the page's χ² come from the stored fit."""
    import numpy as np
    from scipy.optimize import least_squares

    stored = json.loads((DATA / "dueling-privacy-excess-vs-horizon" / "analyses" / "dueling-excess-vs-horizon.json")
                        .read_text(encoding="utf-8"))["fits"]["DP-EBS-Elimination (eps=5)"]
    t, excess, stderr = (np.array(stored[key]) for key in ("horizons", "excess", "excess_stderr"))
    design = np.column_stack([np.ones_like(t), np.log(t)])
    coef = np.linalg.lstsq(design / stderr[:, None], excess / stderr, rcond=None)[0]
    logarithmic = float(np.sum(((design @ coef - excess) / stderr) ** 2))  # a + b ln T, weighted
    power = least_squares(lambda v: (math.exp(v[0]) * np.log(t) ** v[1] - excess) / stderr,
                          [stored["log_t_degree"]["intercept"], stored["log_t_degree"]["slope"]])
    polylog = float(np.sum(power.fun**2))  # (ln T)^p, weighted
    page = " ".join((ROOT / "docs" / "papers" / "dp-dueling.md").read_text(encoding="utf-8").split())
    dof = len(t) - 2
    assert f"**χ² {logarithmic:.0f} on {dof} degrees of freedom**" in page
    assert f"(**χ² {polylog:.0f} on {dof} degrees of freedom**)" in page
    assert logarithmic > 5 * dof and polylog > 5 * dof  # both models are rejected by the trial noise
