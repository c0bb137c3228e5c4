"""The dueling shape fits and the post-run analyses that use them recover the shapes that made the data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpbandits._core.errors import InvalidParameterError, StudyError
from dpbandits.algorithms.dueling.fits import fit_inverse_epsilon, fit_line, fit_log_log
from dpbandits.experiments.analyses import run_analyses

COLUMNS = "algorithm,n_trials,reward_regret_mean,reward_regret_stderr,reward_regret_ci_low,reward_regret_ci_high," \
          "committed_rate,committed_stderr,committed_ci_low,committed_ci_high"


def _row(label: str, regret: float, committed: float = 1.0, stderr: float = 1.0) -> str:
    return f"{label},20,{regret!r},{stderr!r},0,0,{committed!r},0,0,1"


def _write(run_dir: Path, header: str, lines: list[str]) -> Path:
    run_dir.mkdir()
    (run_dir / "summary.csv").write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return run_dir


def test_fits_recover_exact_lines_and_their_intervals_cover_noisy_ones(rng: np.random.Generator) -> None:
    eps = np.array([1.0, 2.0, 5.0, 10.0, 50.0])
    exact = fit_inverse_epsilon(eps, 100.0 + 400.0 / eps, np.ones(5))
    assert (exact.intercept, exact.slope, exact.r_squared) == pytest.approx((100.0, 400.0, 1.0))
    t = np.array([1e4, 1e5, 1e6, 1e7])
    power = fit_log_log(t, 3.0 * t**0.5, 0.01 * t**0.5)
    assert power.slope == pytest.approx(0.5) and power.slope_stderr == pytest.approx(
        fit_line(np.log(t), np.zeros(4), np.full(4, 0.01 / 3.0)).slope_stderr)
    # with noise of known standard error, the 95% interval of the slope covers the truth ~95% of the time
    x = np.arange(6.0)
    covered = 0
    for _ in range(400):
        fit = fit_line(x, 2.0 + 3.0 * x + rng.normal(0.0, 0.5, 6), np.full(6, 0.5))
        low, high = fit.slope_interval
        covered += int(low <= 3.0 <= high)
    assert 0.90 <= covered / 400 <= 0.99  # binomial(400, 0.95): this band fails with probability < 1e-4
    with pytest.raises(InvalidParameterError, match="two distinct values"):
        fit_line([1.0, 1.0], [2.0, 3.0])
    with pytest.raises(InvalidParameterError, match="must be > 0"):
        fit_log_log([1.0, 2.0], [0.0, 1.0])


def test_epsilon_fit_applies_the_guard_and_the_pass_criterion(tmp_path: Path) -> None:
    lines = [f"{eps:g}," + _row("DP", 1000.0 + 500.0 / eps) for eps in (2, 5, 10, 20, 50)]
    lines.append("1," + _row("DP", 9999.0, committed=0.5))  # eliminations did not finish: excluded
    lines += [f"{eps:g}," + _row("EBS (non-private)", 1000.0) for eps in (1, 2, 5, 10, 20, 50)]
    run = _write(tmp_path / "run", "epsilon," + COLUMNS, lines)
    report = json.loads(run_analyses(run, ["dueling-epsilon-fit"])["dueling-epsilon-fit"].read_text())
    entry = report["fits"]["DP"]
    assert entry["excluded_epsilons"] == [1.0] and entry["kept_epsilons"] == [2, 5, 10, 20, 50]
    assert entry["fit"]["intercept"] == pytest.approx(1000.0) and entry["fit"]["slope"] == pytest.approx(500.0)
    assert entry["passes"] is True and list(report["fits"]) == ["DP"]


def test_excess_vs_arms_and_horizon_and_dimension_exponent(tmp_path: Path) -> None:
    lines = []
    for k in (2, 4, 8, 16):
        for eps in (2.0, 5.0):
            lines.append(f"{k},{eps:g}," + _row("DP", 100.0 * k + 60.0 * (k - 1) / eps))
            lines.append(f"{k},{eps:g}," + _row("EBS (non-private)", 100.0 * k))
    run = _write(tmp_path / "arms", "n_arms,epsilon," + COLUMNS, lines)
    arms = json.loads(run_analyses(run, ["dueling-excess-vs-arms"])["dueling-excess-vs-arms"].read_text())
    for eps in ("2", "5"):
        assert arms["fits"]["DP"][eps]["slope_times_epsilon"] == pytest.approx(60.0)

    lines = []
    for t in (1e4, 1e5, 1e6, 1e7):
        lines.append(f"{t:g}," + _row("DP", 50.0 + 2.0 * math.log(t) ** 2))
        lines.append(f"{t:g}," + _row("EBS (non-private)", 50.0))
    run = _write(tmp_path / "horizon", "horizon," + COLUMNS, lines)
    horizon = json.loads(run_analyses(run, ["dueling-excess-vs-horizon"])["dueling-excess-vs-horizon"].read_text())
    assert horizon["fits"]["DP"]["log_t_degree"]["slope"] == pytest.approx(2.0)
    assert horizon["fits"]["DP"]["t_exponent_last_three"]["slope"] < horizon["fits"]["DP"]["t_exponent"]["slope"]

    lines = []
    for d, theta in ((2, "[0.6, 0.8]"), (3, "[0.48, 0.6, 0.64]"), (5, "[0.45, 0.45, 0.45, 0.45, 0.45]")):
        for eps in (0.01, 0.03, 0.1):
            lines.append(f'"{theta}",1e8,{eps:g},' + _row("G", 1e6 * d + 7.0 * d**3 / eps, stderr=0.01))
        for t in (1e5, 1e6, 1e7):
            lines.append(f'"{theta}",{t:g},1,' + _row("G", 5.0 * d * math.sqrt(t)))
    run = _write(tmp_path / "dims", "theta,horizon,epsilon," + COLUMNS, lines)
    reports = run_analyses(run, ["dueling-dimension-exponent", "dueling-horizon-slope"])
    exponent = json.loads(reports["dueling-dimension-exponent"].read_text())["results"][-1]
    assert exponent["exponent"]["slope"] == pytest.approx(3.0, abs=1e-6) and exponent["interval_holds_3"]
    slopes = json.loads(reports["dueling-horizon-slope"].read_text())["slopes"]
    assert [s["fit"]["slope"] for s in slopes] == pytest.approx([0.5, 0.5, 0.5])


def test_analyses_say_what_they_need(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", "horizon,algorithm,n_trials,error_mean,error_stderr,error_ci_low,error_ci_high",
                 ["10,A,2,1,0,0,1"])
    with pytest.raises(StudyError, match="needs the metric 'reward_regret'"):
        run_analyses(run, ["dueling-epsilon-fit"])


def test_the_residual_interval_sees_lack_of_fit_that_trial_noise_does_not() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    fit = fit_line(x, np.array([0.0, 1.2, 1.8, 3.1]), np.full(4, 1e-6))  # nearly noiseless, not on a line
    low, high = fit.slope_interval
    r_low, r_high = fit.slope_residual_interval
    assert high - low < 1e-5 < r_high - r_low
    assert fit.slope_widest_interval == (min(low, r_low), max(high, r_high))
    assert math.isnan(fit_line([1.0, 2.0], [1.0, 3.0]).slope_residual_interval[0])  # two points: no residual dof
