"""The claims pages' figures, drawn from the studies' stored summaries in ``docs/papers/data/``.

Each figure shows one claim's measured quantity with its 95% interval and, beside it, what the paper
(or the library's reconstruction of a lost formula) predicts. The numbers come only from the stored
``summary.csv`` files and analysis reports that the studies wrote (``run.json`` says the command,
seed and number of trials), the privacy contract's audits (``privacy-<family>.json``, written by
``claims_data.py``), and the few summaries marked *recorded* (a study's earlier full run, not re-run);
``tests/unit/test_claims_data.py`` recomputes the fits from the stored summaries and re-runs the audits.
The docs build runs this script (``docs/hooks.py``) into ``build/docs-generated/generated``.

Usage: ``python docs/papers/claims_figures.py OUT_DIR [NAME ...]``.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from dpbandits.experiments.plot_labels import format_number

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module, also when loaded by path
from claims_analyses import fixed_epsilon_report, sensitivity_report

__all__ = ["FIGURES", "audited_ratio", "fixed_epsilon_report", "main", "sensitivity_report"]

DATA = Path(__file__).resolve().parent / "data"
Z95 = 1.959963984540054


def rows(study: str) -> list[dict[str, str]]:
    """The rows of a stored ``summary.csv``."""
    with open(DATA / study / "summary.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def analysis(study: str, name: str) -> dict[str, Any]:
    """A stored analysis report."""
    return json.loads((DATA / study / "analyses" / f"{name}.json").read_text(encoding="utf-8"))


def run_info(study: str) -> dict[str, Any]:
    """The stored ``run.json``: study, trials, seed and command."""
    return json.loads((DATA / study / "run.json").read_text(encoding="utf-8"))


def series(table: list[dict[str, str]], x: str, y: str, **where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, mean of y, 95% half-width) of the rows matching ``where``, sorted by x."""
    chosen = [row for row in table if all(row[key] == value for key, value in where.items())]
    chosen.sort(key=lambda row: float(row[x]))
    xs = np.array([float(row[x]) for row in chosen])
    means = np.array([float(row[f"{y}_mean"] if f"{y}_mean" in row else row[f"{y}_rate"]) for row in chosen])
    stderr = np.array([float(row[f"{y}_stderr"]) for row in chosen])
    return xs, means, Z95 * stderr


def _finish(fig: plt.Figure, ax: plt.Axes, title: str, study: str | None, out: Path, key: str,
            categories: bool = False) -> Path:
    trials = f" ({run_info(study)['trials']} trials; error bars: 95% intervals)" if study else ""
    ax.set_title(title + trials, fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    for axis in (ax.yaxis,) if categories else (ax.xaxis, ax.yaxis):  # 8·10⁵, not 800000
        if isinstance(axis.get_major_locator(), FixedLocator):  # named ticks (cases, categories) stay
            continue
        if axis.get_scale() == "linear":
            axis.set_major_formatter(FuncFormatter(lambda value, _: format_number(value)))
        else:
            low, high = axis.get_view_interval()
            if high / low >= 100:  # over two decades the powers of ten suffice; below, minor labels stay
                axis.set_minor_formatter(NullFormatter())
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    path = out / f"claims-{key}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _figure() -> tuple[plt.Figure, plt.Axes]:
    return plt.subplots(figsize=(6.4, 3.4))


# ----------------------------------------------------------------------------------------- dueling
def dueling_excess_vs_horizon(out: Path) -> Path:
    """E2(c): the privacy excess against T, its fits, and plain ln T / (ln T)² growth beside it."""
    study = "dueling-privacy-excess-vs-horizon"
    fit = analysis(study, "dueling-excess-vs-horizon")["fits"]["DP-EBS-Elimination (eps=5)"]
    t, excess, err = np.array(fit["horizons"]), np.array(fit["excess"]), Z95 * np.array(fit["excess_stderr"])
    fig, ax = _figure()
    ax.errorbar(t, excess, yerr=err, fmt="o", color="C0", label="measured excess R(5) − R(∞)")
    grid = np.geomspace(t.min(), t.max(), 50)
    q, p = fit["t_exponent"], fit["log_t_degree"]
    ax.plot(grid, math.exp(q["intercept"]) * grid ** q["slope"], color="C0", lw=1,
            label=f"fit T^q, q = {q['slope']:.3f} [{q['slope_ci95_widest'][0]:.3f}, {q['slope_ci95_widest'][1]:.3f}]")
    ax.plot(grid, math.exp(p["intercept"]) * np.log(grid) ** p["slope"], color="C2", lw=1, ls="-.",
            label=f"fit (ln T)^p, p = {p['slope']:.2f} [{p['slope_ci95_widest'][0]:.2f}, {p['slope_ci95_widest'][1]:.2f}]")
    for degree, style in ((1, ":"), (2, "--")):
        anchor = excess[0] / math.log(t[0]) ** degree
        ax.plot(grid, anchor * np.log(grid) ** degree, color="grey", ls=style,
                label=f"(ln T)^{degree} through the first point" + (" (plain log)" if degree == 1 else
                                                                        " (reconstructed polylog)"))
    ax.set(xscale="log", yscale="log", xlabel="horizon T", ylabel="privacy excess (reward regret)")
    return _finish(fig, ax, "DP-EBS-Elimination, F1, ε = 5: privacy excess against T", study, out, "dueling-e2c")


def dueling_regret_vs_epsilon(out: Path) -> Path:
    """E2(a): regret against 1/ε with the fit a + b/ε and the non-private regret (the additive reading)."""
    study = "dueling-regret-vs-epsilon"
    table = rows(study)
    report = analysis(study, "dueling-epsilon-fit")["fits"]["DP-EBS-Elimination"]
    eps, regret, err = series(table, "epsilon", "reward_regret", algorithm="DP-EBS-Elimination")
    fig, ax = _figure()
    ax.errorbar(1 / eps, regret, yerr=err, fmt="o", color="C0", label="DP-EBS-Elimination (measured)")
    fit = report["fit"]
    grid = np.linspace(0, 1 / eps.min(), 50)
    ax.plot(grid, fit["intercept"] + fit["slope"] * grid, color="C0", lw=1,
            label=f"fit a + b/ε: a = {fit['intercept']:.0f} [{fit['intercept_ci95'][0]:.0f}, "
                  f"{fit['intercept_ci95'][1]:.0f}]")
    ax.axhline(report["non_private_regret"], color="C1", ls="--",
               label=f"additive reading: a = non-private regret ({report['non_private_regret']:.0f})")
    e_l, local, err_l = series(table, "epsilon", "reward_regret", algorithm="Local DP (randomised response) baseline")
    ax.errorbar(1 / e_l, local, yerr=err_l, fmt="s", color="C2", label="local-DP baseline (measured)")
    e_t, typical, _ = series(table, "epsilon", "reward_regret", algorithm="Theory: typical regret (2 wid = gap)")
    ax.plot(1 / e_t, typical, color="grey", ls=":", label="reconstruction: typical regret (2·wid = gap)")
    ax.set(xlabel="1/ε", ylabel="reward regret at T = 10⁷")
    return _finish(fig, ax, "DP-EBS-Elimination, F1, T = 10⁷: regret against 1/ε", study, out, "dueling-e2a")


def _grouped(value: float) -> str:
    """326 700, as the pages write large numbers."""
    return f"{value:,.0f}".replace(",", " ")


def dueling_excess_vs_arms(out: Path) -> Path:
    """E2(b): the excess × ε against K per ε with its intervals; K/ε predicts one line for every ε."""
    study = "dueling-k-scaling"
    fits = analysis(study, "dueling-excess-vs-arms")["fits"]["DP-EBS-Elimination"]
    fig, ax = _figure()
    for index, (eps, entry) in enumerate(sorted(fits.items(), key=lambda item: float(item[0]))):
        k, scale = np.array(entry["arms"]), float(eps)
        excess = np.array(entry["excess"]) * scale
        ax.errorbar(k, excess, yerr=Z95 * np.array(entry["excess_stderr"]) * scale, fmt="o", color=f"C{index}",
                    capsize=2, label=f"ε = {scale:g}: excess × ε")
        fit = entry["fit"]
        low, high = (v * scale for v in fit["slope_ci95_widest"])
        ax.plot(k, (fit["intercept"] + fit["slope"] * k) * scale, color=f"C{index}", lw=1,
                label=f"slope × ε = {_grouped(entry['slope_times_epsilon'])} [{_grouped(low)}, {_grouped(high)}] (widest)")
    ax.set(xlabel="number of arms K", ylabel="excess regret R(ε) − R(∞), × ε")
    return _finish(fig, ax, "F4, T = 10⁷: K/ε predicts one line for both ε", study, out, "dueling-e2b")


def dueling_comparators(out: Path) -> Path:
    """The comparators' regret on F1 at T = 10⁵ with its intervals (MaxInP with both widths)."""
    study = "dueling-e1-f1-comparators"
    table = sorted(rows(study), key=lambda row: float(row["reward_regret_mean"]))
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.35 * len(table)))
    shown = set()
    for index, row in enumerate(table):
        mean, low, high = (float(row[f"reward_regret_{key}"]) for key in ("mean", "ci_low", "ci_high"))
        paper = "paper's width" in row["algorithm"]
        ax.errorbar([mean], [index], xerr=[[mean - low], [high - mean]], fmt="o", capsize=3,
                    color="C3" if paper else "C0",
                    label=None if paper in shown else ("the paper's MaxInP width" if paper else "default settings"))
        shown.add(paper)
    ax.set_yticks(range(len(table)), [row["algorithm"] for row in table], fontsize=7)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel="reward regret at T = 10⁵ (95% interval)")
    return _finish(fig, ax, "Non-private comparators on F1 at T = 10⁵", study, out, "dueling-comparators")


def dueling_horizon_slope(out: Path) -> Path:
    """E3: regret against T per d on the unit ball, with √T through the first point."""
    study = "dueling-unit-ball-dimensions"
    table = rows(study)
    slopes = {(s["algorithm"], s["dim"]): s["fit"] for s in analysis(study, "dueling-horizon-slope")["slopes"]}
    fig, ax = _figure()
    for index, (points, dim) in enumerate(((32, 2), (64, 3), (128, 5))):
        t, regret, err = series(table, "horizon", "reward_regret", algorithm="GOptimal-DPDB", epsilon="1.0",
                                n_points=str(points))
        fit = slopes[("GOptimal-DPDB", dim)]
        low, high = fit["slope_ci95_widest"]
        ax.errorbar(t, regret, yerr=err, fmt="o-", color=f"C{index}", lw=1,
                    label=f"d = {dim}: slope {fit['slope']:.2f} [{low:.2f}, {high:.2f}]")
        ax.plot(t, regret[0] * np.sqrt(t / t[0]), color=f"C{index}", ls=":", lw=1)
    ax.plot([], [], color="grey", ls=":", label="Theorem 3: d√T (slope ½), through the first point")
    ax.set(xscale="log", yscale="log", xlabel="horizon T", ylabel="reward regret (ε = 1)")
    return _finish(fig, ax, "GOptimal-DPDB on the unit ball: regret against T", study, out, "dueling-e3")


def dueling_dimension_exponent(out: Path) -> Path:
    """E4: the privacy coefficient b against d, the fitted d^e with its interval, d³ and d⁶ beside it."""
    study = "dueling-unit-ball-dimensions"
    result = analysis(study, "dueling-dimension-exponent")["results"][0]
    dims = np.array(sorted(int(d) for d in result["per_dimension"]), dtype=float)
    b = np.array([result["per_dimension"][str(int(d))]["slope"] for d in dims])
    b_ci = np.array([result["per_dimension"][str(int(d))]["slope_ci95_widest"] for d in dims])
    exponent = result["exponent"]
    fig, ax = _figure()
    ax.errorbar(dims, b, yerr=[b - b_ci[:, 0], b_ci[:, 1] - b], fmt="o", color="C0",
                label="b of R = a + b/ε per d (T = 10⁸)")
    grid = np.linspace(dims.min(), dims.max(), 50)
    low, high = exponent["slope_ci95_widest"]
    ax.plot(grid, math.exp(exponent["intercept"]) * grid ** exponent["slope"], color="C0", lw=1,
            label=f"fit d^e, e = {exponent['slope']:.2f} [{low:.2f}, {high:.2f}] (1 residual dof)")
    for power, style, what in ((3, "--", "reconstruction d³"), (6, ":", "Theorem 3's upper bound d⁶")):
        ax.plot(grid, b[0] * (grid / dims[0]) ** power, color="grey", ls=style, label=f"{what}, through d = 2")
    ax.set(xscale="log", yscale="log", xlabel="dimension d", ylabel="privacy coefficient b")
    ax.set_xticks(dims, [f"{int(d)}" for d in dims])
    return _finish(fig, ax, "GOptimal-DPDB: the privacy term's growth with d", study, out, "dueling-e4")


def dueling_regret_vs_horizon(out: Path) -> Path:
    """E1: regret against T per ε with the non-private twin and the Lemma 6 upper curve."""
    study = "dueling-regret-vs-horizon"
    table = rows(study)
    fig, ax = _figure()
    for index, eps in enumerate(("1.0", "5.0", "20.0")):
        t, regret, err = series(table, "horizon", "reward_regret", algorithm="DP-EBS-Elimination", epsilon=eps)
        ax.errorbar(t, regret, yerr=err, fmt="o-", lw=1, color=f"C{index}", label=f"DP-EBS-Elimination ε = {float(eps):g}")
        t_u, upper, _ = series(table, "horizon", "reward_regret", algorithm="Theory: Lemma 6 upper curve", epsilon=eps)
        ax.plot(t_u, upper, color=f"C{index}", ls=":", lw=1)
    t, twin, err = series(table, "horizon", "reward_regret", algorithm="EBS-Elimination (non-private)", epsilon="1.0")
    ax.errorbar(t, twin, yerr=err, fmt="s-", lw=1, color="black", label="non-private twin")
    ax.plot([], [], color="grey", ls=":", label="Lemma 6 upper curve (explicit bound)")
    ax.set(xscale="log", yscale="log", xlabel="horizon T", ylabel="reward regret")
    return _finish(fig, ax, "DP-EBS-Elimination on F1: regret against T", study, out, "dueling-e1")


# --------------------------------------------------------------------------------------------- BAI
def bai_figure1(out: Path) -> Path:
    """Figure 1 (b): success rate against ε at T = 1000, each algorithm with its Wilson interval."""
    study = "dp-bai-figure1"
    table = [row for row in rows(study) if row["budget"] == "1000"]
    fig, ax = _figure()
    for index, algorithm in enumerate(sorted({row["algorithm"] for row in table})):
        chosen = sorted((row for row in table if row["algorithm"] == algorithm), key=lambda r: float(r["epsilon"]))
        eps = np.array([float(r["epsilon"]) for r in chosen])
        rate = np.array([float(r["success_rate"]) for r in chosen])
        low = np.array([float(r["success_ci_low"]) for r in chosen])
        high = np.array([float(r["success_ci_high"]) for r in chosen])
        ax.plot(eps, rate, "o-", lw=1, color=f"C{index}", label=algorithm)
        ax.fill_between(eps, low, high, color=f"C{index}", alpha=0.2)
    ax.set(xscale="log", xlabel="ε", ylabel="success rate (T = 1000)", ylim=(0, 1.02))
    return _finish(fig, ax, "DP-BAI Figure 1: the paper's order DP-BAI ≥ DP-OD ≥ Baseline, OD-LinBAI above",
                   study, out, "bai-figure1")


def bai_figure2(out: Path) -> Path:
    """Figure 2: success against the ratio y at T = 1000, ε = 0.1, both instances."""
    study = "dp-bai-figure2"
    table = [row for row in rows(study) if float(row["epsilon"]) == 0.1 and row["budget"] == "1000"]
    fig, ax = _figure()
    groups: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in table:
        groups[f"{row['algorithm']}, {row.get('variant', '')}".rstrip(", ")].append(row)
    for index, (label, chosen) in enumerate(sorted(groups.items())):
        chosen.sort(key=lambda r: float(r["y"]))
        y = np.array([float(r["y"]) for r in chosen])
        ax.plot(y, [float(r["success_rate"]) for r in chosen], "o-", lw=1, color=f"C{index}", label=label)
        ax.fill_between(y, [float(r["success_ci_low"]) for r in chosen], [float(r["success_ci_high"]) for r in chosen],
                        color=f"C{index}", alpha=0.2)
    ax.set(xscale="log", xlabel="ratio y = (x ∨ y)/(x ∧ y)", ylabel="success rate", ylim=(0, 1.02))
    return _finish(fig, ax, "DP-BAI Figure 2 (T = 1000, ε = 0.1): the paper predicts DP-OD falls, DP-BAI flat",
                   study, out, "bai-figure2")


# ---------------------------------------------------------------------------------------------- KL
def kl_counterexamples(out: Path) -> Path:
    """C1–C5: the paper's value, the true value (exact or audited) and the library's corrected bound."""
    cases = json.loads((DATA / "kl-counterexamples.json").read_text(encoding="utf-8"))["cases"]
    fig, ax = _figure()
    x = np.arange(len(cases))
    for offset, key, label, color in ((-0.25, "paper", "paper's claim", "C3"), (0.0, "true", "true (exact or audited)", "C0"),
                                      (0.25, "corrected", "library's corrected bound", "C2")):
        ax.bar(x + offset, [case[key] for case in cases], width=0.25, color=color, label=label)
    ax.set_xticks(x, [case["label"] for case in cases], fontsize=7)
    ax.set(yscale="log", ylabel="δ at the paper's ε (C1–C3), ε (C4–C5)")
    return _finish(fig, ax, "KL regularisation: the paper's approximate and RLHF bounds against the truth", None, out,
                   "kl-counterexamples", categories=True)


def kl_privacy_utility(out: Path) -> Path:
    """E5: regret against ε of the KL policy and the baselines."""
    study = "kl-e5-privacy-utility"
    table = rows(study)
    fig, ax = _figure()
    keys = [key for key in ("logging",) if key in table[0]]
    where = {key: sorted({row[key] for row in table})[0] for key in keys}
    for index, algorithm in enumerate(sorted({row["algorithm"] for row in table})):
        eps, regret, err = series(table, "epsilon", "regret", algorithm=algorithm, **where)
        if eps.size:
            ax.errorbar(eps, regret, yerr=err, fmt="o-", lw=1, color=f"C{index % 10}", label=algorithm)
    ax.set(xscale="log", xlabel="ε", ylabel="regret")
    return _finish(fig, ax, "Offline MAB: regret against ε", study, out, "kl-e5")


def _positive(low: np.ndarray, mean: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
    """Error bars for a log axis: a lower end at or below 0 is drawn down to a tenth of the mean."""
    return [mean - np.where(low > 0, low, mean / 10), high - mean]


def _named_xticks(ax: plt.Axes, values: list[float]) -> None:
    """Ticks at the grid's values only (a log axis under two decades otherwise labels its minor ticks)."""
    ax.set_xticks(values, [format_number(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _curve(ax: plt.Axes, table: list[dict[str, str]], x: str, y: str, label: str, style: str, color: str,
           **where: str) -> None:
    """Means of ``y`` against ``x`` with their 95% intervals (the summary's t intervals), for a log y axis."""
    chosen = sorted((row for row in table if all(row[k] == v for k, v in where.items())), key=lambda r: float(r[x]))
    xs = np.array([float(r[x]) for r in chosen])
    mean = np.array([float(r[f"{y}_mean"]) for r in chosen])
    low, high = (np.array([float(r[f"{y}_ci_{end}"]) for r in chosen]) for end in ("low", "high"))
    ax.errorbar(xs, mean, yerr=_positive(low, mean, high), fmt=style,
                color=color, lw=1, ms=4, capsize=2, label=label)


def _bound_curves(ax: plt.Axes, table: list[dict[str, str]], x: str,
                  curves: tuple[tuple[str, str, str, str], ...], **where: str) -> None:
    """Several metrics (key, label, style, colour) against ``x`` on log-log axes ticked at the grid's values."""
    for key, label, style, color in curves:
        _curve(ax, table, x, key, label, style, color, **where)
    ax.set(xscale="log", yscale="log")
    _named_xticks(ax, sorted({float(r[x]) for r in table}))


def kl_theorem1(out: Path) -> Path:
    """E1: Theorem 1's ε₀ and the exact per-instance loss against n, beside 1/n."""
    study = "kl-e1-mab-decay"
    table = rows(study)
    fig, ax = _figure()
    for index, logging in enumerate(("balanced", "zipf")):
        _bound_curves(ax, table, "n_records", (("epsilon0", f"Theorem 1's ε₀ ({logging} logging)", "o-", f"C{index}"),
                                               ("epsilon_hat", f"exact loss ({logging} logging)", "s--", f"C{index}")),
                      logging=logging, eta="0.1", beta0="0.5")
    n = np.array(sorted({float(r["n_records"]) for r in table}))
    first = next(float(r["epsilon0_mean"]) for r in table if r["logging"] == "balanced" and r["eta"] == "0.1"
                 and r["beta0"] == "0.5" and float(r["n_records"]) == n[0])
    ax.plot(n, first * n[0] / n, color="grey", ls=":", label="1/n through the first point (Theorem 1's rate)")
    ax.set(xlabel="records n", ylabel="ε (per instance), η = 0.1, β₀ = 0.5")
    return _finish(fig, ax, "KL MAB, Theorem 1: the bound ε₀ against the exact loss", study, out, "kl-theorem1")


def kl_theorem2(out: Path) -> Path:
    """E2: Theorem 2's ε₀ and the audited loss (a lower bound) against n for d = 2, 5, 10."""
    study = "kl-e2-linear-subset"
    table = rows(study)
    fig, ax = _figure()
    for index, dim in enumerate(sorted({r["dimension"] for r in table}, key=int)):
        _bound_curves(ax, table, "n_records", (("epsilon0", f"d = {dim}: Theorem 2's ε₀", "o-", f"C{index}"),
                                               ("epsilon_hat", f"d = {dim}: audited loss (lower bound)", "s--",
                                                f"C{index}")), dimension=dim)
    ax.set(xlabel="records n", ylabel="ε (per instance), η = 0.1, β₀ = 1")
    return _finish(fig, ax, "KL linear, Theorem 2: the bound ε₀ against the audited loss", study, out, "kl-theorem2")


def kl_rlhf_label(out: Path) -> Path:
    """E3: Theorem 3 (paper) and 3′ (corrected) against the exact label-DP loss, by B."""
    study = "kl-e3-rlhf-label"
    fig, ax = _figure()
    _bound_curves(ax, rows(study), "norm_bound", (("epsilon0_paper", "paper's Theorem 3", "o-", "C3"),
                                                  ("epsilon0_corrected", "corrected Theorem 3′", "^-", "C2"),
                                                  ("epsilon_hat", "exact label-DP loss", "s--", "C0")))
    ax.set(xlabel="parameter norm bound B", ylabel="ε of one label flip")
    return _finish(fig, ax, "KL RLHF, Theorem 3: the bounds against the exact loss", study, out, "kl-e3")


def kl_delta_k(out: Path) -> Path:
    """E4: Corollary 1's δ(k) against Theorem 1′'s δ and the exact δ, at η = 0.01, β₀ = 2."""
    study = "kl-e4-delta-k"
    fig, ax = _figure()
    _bound_curves(ax, rows(study), "k", (("delta_paper", "Corollary 1 (paper, with the 1/η fix)", "o-", "C3"),
                                         ("delta_paper_verbatim", "Corollary 1 verbatim", "v:", "C1"),
                                         ("delta_corrected", "corrected Theorem 1′", "^-", "C2"),
                                         ("delta_audit", "exact δ (audit)", "s--", "C0")), eta="0.01", beta0="2.0")
    ax.set(xlabel="k (N₀ = ⌊N_max/k⌋)", ylabel="δ at ε(k) (mean over the datasets)")
    return _finish(fig, ax, "KL MAB, Corollary 1: δ against k on benign data (η = 0.01, β₀ = 2)", study, out, "kl-e4")


def kl_repeated(out: Path) -> Path:
    """E6: the total ε of T samples: basic, advanced (δ = 10⁻⁶) and the exact PLD over the extreme neighbours."""
    study = "kl-e6-repeated"
    table = rows(study)
    fig, ax = _figure()
    for index, eps in enumerate(sorted({r["epsilon"] for r in table}, key=float)):
        _bound_curves(ax, table, "n_samples", (
            ("epsilon_basic", f"ε₁ = {eps}: basic Tε₁ (δ = 0)", "-", f"C{index}"),
            ("epsilon_advanced", f"ε₁ = {eps}: advanced, δ = 10⁻⁶", "--", f"C{index}"),
            ("epsilon_pld", f"ε₁ = {eps}: exact PLD, δ = 10⁻⁶ (not a guarantee)", "o:", f"C{index}")), epsilon=eps)
    ax.set(xlabel="samples T", ylabel="total ε")
    return _finish(fig, ax, "KL MAB: the total ε of T samples", study, out, "kl-e6")


def kl_real_data(out: Path) -> Path:
    """Real data: test accuracy against Theorem 2's per-context ε₀, per data set and η, beside the greedy accuracy."""
    study = "kl-real-data"
    table = rows(study)
    fig, ax = _figure()
    for index, dataset in enumerate(sorted({r["dataset"] for r in table})):
        chosen = sorted((r for r in table if r["dataset"] == dataset), key=lambda r: float(r["eta"]))
        eps = np.array([float(r["epsilon0_mean"]) for r in chosen])
        acc = np.array([float(r["accuracy_mean"]) for r in chosen])
        low, high = (np.array([float(r[f"accuracy_ci_{end}"]) for r in chosen]) for end in ("low", "high"))
        ax.errorbar(eps, acc, yerr=[acc - low, high - acc], fmt="o-", color=f"C{index}", lw=1, ms=4, capsize=2,
                    label=f"{dataset} (η = {', '.join(r['eta'] for r in chosen)}, right to left)")
        ax.axhline(float(chosen[0]["greedy_accuracy_mean"]), color=f"C{index}", ls=":", lw=1)
    ax.plot([], [], color="grey", ls=":", label="greedy (non-private) accuracy")
    ax.axvspan(1e-3, 1.0, color="C2", alpha=0.08, label="ε ≤ 1, where the paper's thesis would place it")
    ax.set(xscale="log", xlabel="Theorem 2's per-context ε₀ (mean)", ylabel="test accuracy")
    ax.set_xlim(left=0.3)
    return _finish(fig, ax, "KL linear policy on real data: accuracy against ε₀", study, out, "kl-real-data")


# -------------------------------------------------------------------------------------------- USCA
def usca_fixed_epsilon(out: Path) -> Path:
    """Theorem 4.1 at fixed ε: the privacy excess against T, beside γ̂/T through the first point."""
    study = "usca-fixed-epsilon"
    report = json.loads((DATA / study / "analyses" / "fixed-epsilon-slope.json").read_text(encoding="utf-8"))
    fig, ax = _figure()
    for index, fit in enumerate(report["fits"]):
        t = np.array(fit["horizons"], dtype=float)
        excess = np.array(fit["excess"])
        low, high = np.array(fit["excess_ci95"]).T
        ax.errorbar(t, excess, yerr=[excess - low, high - excess], fmt="o", color=f"C{index}",
                    label=f"ε = {fit['epsilon']:g}: slope {fit['slope']:.2f} [{fit['slope_ci95'][0]:.2f}, "
                          f"{fit['slope_ci95'][1]:.2f}]")
        gamma_over_t = np.array(fit["gamma_over_t"])
        ax.plot(t, excess[0] * gamma_over_t / gamma_over_t[0], color=f"C{index}", ls="--", lw=1,
                label=f"Theorem 4.1: γ̂/T (slope {fit['gamma_slope']:.2f}), through the first point")
    ax.set(xscale="log", yscale="log", xlabel="horizon T", ylabel="privacy excess ER(ε) − ER(∞)")
    return _finish(fig, ax, "USCA: the privacy excess against T at fixed ε", study, out, "usca-fixed-epsilon")


def usca_sensitivity(out: Path) -> Path:
    """The sensitivity Δ against T with its intervals, beside γ̂/T through the first point."""
    study = "usca-fixed-epsilon"
    report = analysis(study, "sensitivity-decay")
    t, delta = np.array(report["horizons"]), np.array(report["sensitivity"])
    low, high = np.array(report["sensitivity_ci95"]).T
    fig, ax = _figure()
    ax.errorbar(t, delta, yerr=[delta - low, high - delta], fmt="o", color="C0",
                label=f"measured Δ: slope {report['slope']:.3f} [{report['slope_ci95'][0]:.3f}, "
                      f"{report['slope_ci95'][1]:.3f}]")
    g = np.array(report["gamma_over_t"])
    ax.plot(t, delta[0] * g / g[0], color="grey", ls="--",
            label=f"Theorem 4.1's γ̂/T (slope {report['gamma_slope']:.3f}), through the first point")
    ax.set(xscale="log", yscale="log", xlabel="horizon T", ylabel="sensitivity Δ = 2·B_y·sup σ̄²")
    _named_xticks(ax, list(report["horizons"]))
    return _finish(fig, ax, "USCA: the sensitivity against T", study, out, "usca-sensitivity")


def usca_baselines(out: Path) -> Path:
    """USCA against the private feature ridge and the non-private baselines at T = 16 000 (recorded)."""
    recorded = json.loads((DATA / "usca-baselines-recorded.json").read_text(encoding="utf-8"))
    methods = recorded["methods"]
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.35 * len(methods)))
    for index, method in enumerate(methods):
        low, high = method["ci95"]
        ax.errorbar([method["error"]], [index], xerr=[[method["error"] - low], [high - method["error"]]], fmt="o",
                    capsize=3, color="C3" if method["private"] else "C0",
                    label=("private" if method["private"] else "non-private") if index in (0, 3) else None)
        ax.annotate(f"T-slope {method['slope']:.2f}", (high, index), xytext=(6, -3), textcoords="offset points",
                    fontsize=6)
    ax.set_yticks(range(len(methods)), [m["label"] for m in methods], fontsize=7)
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel=f"error rate ER at T = {recorded['horizon']:,} (95% interval)".replace(",", " "))
    ax.set_xlim(right=4 * max(m["ci95"][1] for m in methods))  # room for the slopes' labels
    return _finish(fig, ax, f"USCA against its baselines ({recorded['trials']} trials, recorded)", None, out,
                   "usca-baselines")


# ---------------------------------------------------------------------------------- privacy audits
_KIND_MARKER = {"exact": ("o", "exact loss"), "transcript": ("^", "sup over sampled transcripts"),
                "statistical": (">", "lower bound on ε (confidence 1 − 10⁻⁶)")}


def audited_ratio(case: dict[str, Any]) -> float:
    """What the audit measured over what is claimed: loss/ε, or δ(ε)/δ for an (ε, δ) claim audited exactly."""
    if case["exact_delta"] is not None:
        return float(case["exact_delta"]) / float(case["delta_claimed"])
    return float(case["measured"]) / float(case["epsilon_claimed"])


def privacy_audits(family: str, key: str, title: str) -> Callable[[Path], Path]:
    """A figure of every privacy case of ``family`` (``privacy-<family>.json``): audited / claimed."""

    def draw(out: Path) -> Path:
        cases = json.loads((DATA / f"privacy-{family}.json").read_text(encoding="utf-8"))["cases"]
        fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.27 * len(cases)))
        shown: set[tuple[str, bool]] = set()
        for index, case in enumerate(cases):
            marker, what = _KIND_MARKER[case["kind"]]
            broken = bool(case["negative_control"])
            if case["float_attack_cells"]:
                marker, what = "x", "refuted by its float attack (low-order bits)"
            seen = (case["kind"], broken)
            label = None if seen in shown else f"{what}{' (negative control)' if broken else ''}"
            shown.add(seen)
            ratio = audited_ratio(case)
            ax.plot([max(ratio, 1e-2)], [index], marker, color="C3" if broken else "C0", label=label)
            if ratio < 1e-2:  # drawn at the axis' edge, with its value
                ax.annotate(f"{format_number(ratio)} (off scale)" if ratio else "0 (off scale)", (1e-2, index),
                            xytext=(6, -3), textcoords="offset points", fontsize=6)
        ax.axvline(1.0, color="grey", ls="--", label="the claim (ratio 1)")
        ax.set_yticks(range(len(cases)), [f"{c['algorithm']}: {c['description'][:48]}" for c in cases], fontsize=6)
        ax.invert_yaxis()
        ax.set(xscale="log", xlabel="audited / claimed (loss / ε; δ(ε) / δ for an (ε, δ) claim)")
        return _finish(fig, ax, title, None, out, key)

    draw.__doc__ = f"The privacy contract's audits of {family}: audited over claimed per case."
    return draw


def usca_rate_exponent(out: Path) -> Path:
    """The exponent p of excess ∝ (γ_T/(Tε))^p with its interval, beside the predicted exponents."""
    report = json.loads((DATA / "usca-rate-shape.json").read_text(encoding="utf-8"))
    fig, ax = _figure()
    for index, cut in enumerate(report["cuts"]):
        ax.errorbar([cut["p"]], [index], xerr=[[cut["p"] - cut["ci95"][0]], [cut["ci95"][1] - cut["p"]]], fmt="o",
                    color="C0", label="measured p (95% bootstrap over 4 trials)" if index == 0 else None)
    for value, style, label in ((0.5, ":", "prior art √(γ/(Tε)): p = ½"),
                                (report["log_factor_prediction"], "--", "Theorem 4.1 with its log factor"),
                                (1.0, "-.", "Theorem 4.1 without the log: p = 1")):
        ax.axvline(value, color="grey", ls=style, label=label)
    ax.set_yticks(range(len(report["cuts"])), [f"saturation cut {c['cut']}" for c in report["cuts"]])
    ax.set(xlabel="exponent p of the privacy excess in u = γ̂/(Tε)")
    return _finish(fig, ax, "USCA: the privacy excess's exponent (usca-error-vs-horizon, 4 trials)", None, out,
                   "usca-rate")


FIGURES: dict[str, Callable[[Path], Path]] = {
    "dueling-e1": dueling_regret_vs_horizon,
    "dueling-e2a": dueling_regret_vs_epsilon,
    "dueling-e2b": dueling_excess_vs_arms,
    "dueling-e2c": dueling_excess_vs_horizon,
    "dueling-e3": dueling_horizon_slope,
    "dueling-e4": dueling_dimension_exponent,
    "dueling-comparators": dueling_comparators,
    "bai-figure1": bai_figure1,
    "bai-figure2": bai_figure2,
    "kl-counterexamples": kl_counterexamples,
    "kl-e5": kl_privacy_utility,
    "kl-theorem1": kl_theorem1,
    "kl-theorem2": kl_theorem2,
    "kl-e3": kl_rlhf_label,
    "kl-e4": kl_delta_k,
    "kl-e6": kl_repeated,
    "kl-real-data": kl_real_data,
    "usca-fixed-epsilon": usca_fixed_epsilon,
    "usca-rate": usca_rate_exponent,
    "usca-sensitivity": usca_sensitivity,
    "usca-baselines": usca_baselines,
    "bai-privacy": privacy_audits("dp-bai", "bai-privacy", "DP-BAI family: every privacy case's audit against its claim"),
    "dueling-privacy": privacy_audits("dueling", "dueling-privacy",
                                      "Dueling family: every privacy case's audit against its claim"),
    "usca-privacy": privacy_audits("usca", "usca-privacy", "Kernel family: every privacy case's audit against its claim"),
}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name in argv[1:] or list(FIGURES):
        FIGURES[name](out)


if __name__ == "__main__":
    main(sys.argv[1:])
