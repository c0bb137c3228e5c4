"""USCA analyses the claims pages store: computed from per-trial rows, re-checked by the tests.

``fixed_epsilon_report`` (the fixed-ε T-slope of USCA's privacy excess) and ``sensitivity_report``
(the sensitivity Δ against T) read a study's ``trials.csv``; ``claims_figures.py`` draws their stored
reports and ``tests/unit/test_claims_data.py`` recomputes them from the stored rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

SATURATION = 0.25  # a USCA cell counts when its error is at most this fraction of the uniform-action error


def fixed_epsilon_report(trials: list[dict[str, str]], n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The fixed-ε T-slope of USCA's privacy excess, from per-trial rows (``trials.csv``).

    Per ε, the excess at T is the trial-paired mean of ER(ε) − ER(∞) (the entries of a grid point
    share every trial's data); its 95% interval and the 95% interval of the log-log slope against T
    are percentile bootstraps over trials (the same resampled trials at every T), over the horizons
    whose mean error is at most :data:`SATURATION` of the uniform-action error. ``gamma_slope`` is
    the log-log slope of γ̂_T/T over the same horizons: Theorem 4.1's privacy term at fixed ε.
    """
    rng = np.random.default_rng(seed)
    by: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    gamma: dict[str, float] = {}
    uniform: dict[str, list[float]] = defaultdict(list)
    for row in trials:
        by[(row["algorithm"], row["horizon"])][int(row["trial"])] = float(row["error"])
        gamma[row["horizon"]] = float(row["gamma"])
        uniform[row["horizon"]].append(float(row["uniform_error"]))
    horizons = sorted({row["horizon"] for row in trials}, key=float)
    private = sorted({row["algorithm"] for row in trials if row["algorithm"].startswith("USCA eps=")},
                     key=lambda label: float(label.split("=")[1]))
    reference = next(row["algorithm"] for row in trials if "non-private" in row["algorithm"])
    fits = []
    for label in private:
        n = len(by[(label, horizons[0])])
        diffs = np.array([[by[(label, t)][k] - by[(reference, t)][k] for k in range(n)] for t in horizons])
        mean = diffs.mean(axis=1)
        # unsaturated horizons only: mean error at most a quarter of the uniform-action error (as the
        # usca-rate-shape analysis), where the excess measures the privacy term, not the error's ceiling
        errors = [np.mean(list(by[(label, t)].values())) for t in horizons]
        kept = [i for i, value in enumerate(mean)
                if value > 0 and errors[i] <= SATURATION * np.mean(uniform[horizons[i]])]
        log_t = np.log([float(horizons[i]) for i in kept])
        slope = float(np.polyfit(log_t, np.log(mean[kept]), 1)[0])
        boot_means, boot_slopes = [], []
        for _ in range(n_boot):
            pick = rng.integers(0, n, n)
            resampled = diffs[:, pick].mean(axis=1)
            boot_means.append(resampled)
            if np.all(resampled[kept] > 0):
                boot_slopes.append(np.polyfit(log_t, np.log(resampled[kept]), 1)[0])
        low, high = np.percentile(np.array(boot_means), [2.5, 97.5], axis=0)
        g_over_t = [gamma[horizons[i]] / float(horizons[i]) for i in kept]
        fits.append({
            "epsilon": float(label.split("=")[1]), "horizons": [float(horizons[i]) for i in kept],
            "excess": [float(mean[i]) for i in kept], "excess_ci95": [[float(low[i]), float(high[i])] for i in kept],
            "slope": slope, "slope_ci95": [float(v) for v in np.percentile(boot_slopes, [2.5, 97.5])],
            "gamma_over_t": g_over_t, "gamma_slope": float(np.polyfit(log_t, np.log(g_over_t), 1)[0]),
            "trials": n, "saturated_horizons": [float(t) for i, t in enumerate(horizons) if i not in kept],
        })
    return {"analysis": "fixed-epsilon-slope", "reference": reference, "fits": fits}


def sensitivity_report(trials: list[dict[str, str]], n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """USCA's sensitivity Δ against T, from per-trial rows (``trials.csv``), beside γ̂_T/T.

    Δ = 2·B_y·sup σ̄² is a deterministic function of a trial's public approximating set, so it is
    the same for every entry of a trial; its mean per T has a t interval over the trials, and the
    log-log slope against T a percentile bootstrap over trials (the same resampled trials at every
    T). Theorem 4.1's privacy term γ_T/(Tε) is Δ/ε up to constants, so it predicts Δ ∝ γ_T/T.
    """
    from scipy import stats

    rng = np.random.default_rng(seed)
    one = next(row["algorithm"] for row in trials)
    by: dict[float, dict[int, tuple[float, float]]] = defaultdict(dict)
    for row in trials:
        if row["algorithm"] == one:
            by[float(row["horizon"])][int(row["trial"])] = (float(row["sensitivity"]), float(row["gamma"]))
    horizons = sorted(by)
    n = len(by[horizons[0]])
    delta = np.array([[by[t][k][0] for k in range(n)] for t in horizons])
    gamma = np.array([[by[t][k][1] for k in range(n)] for t in horizons]).mean(axis=1)
    mean = delta.mean(axis=1)
    half = stats.t.ppf(0.975, n - 1) * delta.std(axis=1, ddof=1) / math.sqrt(n)
    log_t = np.log(horizons)
    boot = [np.polyfit(log_t, np.log(delta[:, rng.integers(0, n, n)].mean(axis=1)), 1)[0] for _ in range(n_boot)]
    g_over_t = gamma / np.array(horizons)
    return {
        "analysis": "sensitivity-decay", "horizons": horizons, "trials": n,
        "sensitivity": [float(v) for v in mean],
        "sensitivity_ci95": [[float(m - h), float(m + h)] for m, h in zip(mean, half, strict=True)],
        "slope": float(np.polyfit(log_t, np.log(mean), 1)[0]),
        "slope_ci95": [float(v) for v in np.percentile(boot, [2.5, 97.5])],
        "gamma_over_t": [float(v) for v in g_over_t], "gamma_slope": float(np.polyfit(log_t, np.log(g_over_t), 1)[0]),
    }
