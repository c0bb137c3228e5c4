"""Runner and store (serial backend): seed tree, resume, refusal, crash leftovers, manifest, summary."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpbandits._core.errors import StudyError
from dpbandits.algorithms.registry import get_algorithm
from dpbandits.experiments.config import Study
from dpbandits.experiments.progress import LogProgress
from dpbandits.experiments.runner import chunk_seed_sequence, make_tasks, run_study, run_task
from dpbandits.experiments.store import read_manifest


def _study(seed: int, **changes: Any) -> Study:
    data: dict[str, Any] = {
        "name": "unit",
        "seed": seed,
        "trials": 60,
        "chunk_size": 25,
        "environment": {"name": "bernoulli", "means": [0.6, 0.5, 0.45, 0.4]},
        "algorithms": [{"name": "uniform"}, {"name": "sequential-halving", "label": "SH"}],
        "grid": {"budget": [16, 32, 64]},
    }
    data.update(changes)
    return Study.from_mapping(data)


def _values(run_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for path in sorted((run_dir / "cells").glob("*.npz")):
        with np.load(path) as data:
            out[path.stem] = {key: data[key] for key in data.files}
    return out


def test_chunk_seed_is_the_documented_spawn_tree(seed: int) -> None:
    root = np.random.SeedSequence(seed)
    points = root.spawn(5)
    expected = points[3].spawn(4)[2]
    got = chunk_seed_sequence(seed, 3, 2)
    np.testing.assert_array_equal(got.generate_state(8), expected.generate_state(8))
    # fresh objects: asking twice gives the same stream (SeedSequence.spawn is stateful)
    np.testing.assert_array_equal(chunk_seed_sequence(seed, 3, 2).generate_state(8), got.generate_state(8))


def test_run_writes_the_run_directory(tmp_path: Path, seed: int) -> None:
    study = _study(seed)
    result = run_study(study, tmp_path / "run", progress="none", source_text="# the file\n")
    run_dir = tmp_path / "run"
    assert (result.cells_run, result.cells_skipped, result.status) == (6, 0, "complete")
    assert (run_dir / "study.toml").read_text() == "# the file\n"
    assert Study.from_mapping(json.loads((run_dir / "study.json").read_text())).digest() == study.digest()
    manifest = read_manifest(run_dir)
    assert manifest["study_digest"] == study.digest() and manifest["seed"] == seed
    assert manifest["status"] == "complete" and manifest["sessions"][0]["backend"] == "serial"
    assert {"python", "numpy", "dpbandits"} <= set(manifest["versions"])
    assert manifest["started"] and manifest["ended"]
    assert sorted(manifest["cells"]) == [f"p000{p}-a0{a}" for p in range(3) for a in range(2)]
    assert all(entry["status"] == "done" for entry in manifest["cells"].values())
    rows = list(csv.DictReader(io.StringIO((run_dir / "summary.csv").read_text())))
    assert list(rows[0]) == [
        "budget", "algorithm", "n_trials",
        "success_rate", "success_stderr", "success_ci_low", "success_ci_high",
        "simple_regret_mean", "simple_regret_stderr", "simple_regret_ci_low", "simple_regret_ci_high",
    ]
    assert [(r["budget"], r["algorithm"], r["n_trials"]) for r in rows][:2] == [("16", "uniform", "60"), ("16", "SH", "60")]
    values = _values(run_dir)
    assert values["p0002-a01"]["success"].shape == (60,)
    assert float(rows[5]["success_rate"]) == values["p0002-a01"]["success"].mean()


def test_load_trials_returns_the_raw_values(tmp_path: Path, seed: int) -> None:
    from dpbandits.experiments.store import load_trials

    run_study(_study(seed), tmp_path / "run", progress="none")
    loaded = load_trials(tmp_path / "run")
    assert [(cell.point, cell.label) for cell, _ in loaded][:3] == [
        ({"budget": 16}, "uniform"), ({"budget": 16}, "SH"), ({"budget": 32}, "uniform")]
    raw = _values(tmp_path / "run")
    for cell, values in loaded:
        np.testing.assert_array_equal(values["simple_regret"], raw[cell.key]["simple_regret"])
    with pytest.raises(StudyError, match="not a dpbandits run directory"):
        load_trials(tmp_path)


def test_more_trials_append_chunks_and_keep_earlier_numbers(tmp_path: Path, seed: int) -> None:
    short = run_study(_study(seed, trials=50), tmp_path / "a", progress="none")
    longer = run_study(_study(seed, trials=75), tmp_path / "b", progress="none")
    a, b = _values(short.run_dir), _values(longer.run_dir)
    for key in a:
        np.testing.assert_array_equal(a[key]["simple_regret"], b[key]["simple_regret"][:50])


def test_resume_recomputes_only_missing_cells_and_cleans_crash_leftovers(tmp_path: Path, seed: int) -> None:
    study = _study(seed)
    run_dir = tmp_path / "run"
    run_study(study, run_dir, progress="none")
    before = (run_dir / "summary.csv").read_bytes()
    (run_dir / "cells" / "p0001-a00.npz").unlink()
    (run_dir / "cells" / "p0002-a01.npz").write_bytes(b"PK\x03\x04 truncated")  # corrupt: recomputed
    (run_dir / "study.json").unlink()  # as if killed before the study copies were written
    leftover = run_dir / "cells" / ".tmp-999-p0000-a00.npz"
    leftover.write_bytes(b"half written")
    with pytest.raises(StudyError, match="already holds results of this study; pass --resume"):
        run_study(study, run_dir, progress="none")
    result = run_study(study, run_dir, progress="none", resume=True)
    assert (result.cells_run, result.cells_skipped) == (2, 4)
    assert not leftover.exists()
    assert Study.from_mapping(json.loads((run_dir / "study.json").read_text())).digest() == study.digest()
    assert (run_dir / "summary.csv").read_bytes() == before
    assert len(read_manifest(run_dir)["sessions"]) == 2  # the refused attempt records nothing


def test_run_directory_of_another_study_is_refused(tmp_path: Path, seed: int) -> None:
    run_dir = tmp_path / "run"
    run_study(_study(seed), run_dir, progress="none")
    before = (run_dir / "summary.csv").read_bytes()
    with pytest.raises(StudyError, match="holds another study"):
        run_study(_study(seed + 1), run_dir, progress="none", resume=True)
    assert (run_dir / "summary.csv").read_bytes() == before
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(StudyError, match="not empty and holds no dpbandits run"):
        run_study(_study(seed), foreign, progress="none")


def test_malformed_algorithm_output_is_a_clear_error(seed: int) -> None:
    real = get_algorithm("uniform")

    def short_output(env: Any, *, n_trials: int, rng: Any, **params: Any) -> dict[str, np.ndarray]:
        out = real.simulate(env, n_trials=n_trials, rng=rng, **params)
        return {key: value[:-1] for key, value in out.items()}

    study = _study(seed)
    task = dataclasses.replace(make_tasks(study, study.cells()[:1])[0], simulate=short_output)
    with pytest.raises(StudyError, match=r"metric 'success' must be 25 finite values; got shape \(24,\)"):
        run_task(task)


def test_a_proportion_metric_must_be_zero_or_one(seed: int) -> None:
    real = get_algorithm("uniform")

    def halved(env: Any, *, n_trials: int, rng: Any, **params: Any) -> dict[str, np.ndarray]:
        out = dict(real.simulate(env, n_trials=n_trials, rng=rng, **params))
        out["success"] = np.full(n_trials, 0.5)
        return out

    study = _study(seed)
    task = dataclasses.replace(make_tasks(study, study.cells()[:1])[0], simulate=halved)
    assert task.proportion_metrics == ("success",)
    with pytest.raises(StudyError, match=r"metric 'success' is declared a proportion and must be 0/1 per trial; got 0.5"):
        run_task(task)


def test_a_failing_cell_names_itself_and_keeps_finished_cells(tmp_path: Path, seed: int) -> None:
    study = _study(seed, grid={"budget": [16, 5]})  # SH needs budget >= 4·⌈log2 4⌉ = 8
    with pytest.raises(StudyError, match=r"cell p0001-a01 \(SH on bernoulli, grid point \{'budget': 5\}\) failed: "
                                         r"budget must be >= n_arms·⌈log2 n_arms⌉ = 8"):
        run_study(study, tmp_path / "run", progress="none")
    manifest = read_manifest(tmp_path / "run")
    assert manifest["status"] == "failed"
    assert [k for k, v in manifest["cells"].items() if v["status"] == "done"] == ["p0000-a00", "p0000-a01", "p0001-a00"]


def test_log_progress_prints_start_and_end_lines(tmp_path: Path, seed: int) -> None:
    stream = io.StringIO()
    run_study(_study(seed), tmp_path / "run", progress=LogProgress(stream, interval=0.0))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[dpbandits] starting: 6 cells, 360 trials"
    assert lines[-1].startswith("[dpbandits] 6/6 cells, 360/360 trials") and lines[-1].endswith("finished")


def test_a_run_directory_in_use_is_refused(tmp_path: Path, seed: int) -> None:
    from dpbandits.experiments.store import RunStore

    study = _study(seed)
    holder = RunStore.open(tmp_path / "run", study)
    try:
        with pytest.raises(StudyError, match="is in use by another running dpbandits study"):
            run_study(study, tmp_path / "run", progress="none", resume=True)
    finally:
        holder.close()
    result = run_study(study, tmp_path / "run", progress="none", resume=True)
    assert result.status == "complete"


def test_the_end_of_a_run_reads_each_cell_file_at_most_once(tmp_path: Path, seed: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: cells written in this session are summarised from memory; earlier ones read once."""
    from dpbandits.experiments.store import RunStore

    reads: dict[str, int] = {}
    original = RunStore.read_cell

    def counting(self: RunStore, cell: Any) -> Any:
        reads[cell.key] = reads.get(cell.key, 0) + 1
        return original(self, cell)

    monkeypatch.setattr(RunStore, "read_cell", counting)
    study = _study(seed)
    run_study(study, tmp_path / "run", progress="none")
    assert reads == {}  # every cell was written by this session: states, manifest and summary read nothing
    summary = (tmp_path / "run" / "summary.csv").read_text()
    (tmp_path / "run" / "summary.csv").unlink()
    reads.clear()
    run_study(study, tmp_path / "run", progress="none", resume=True)  # a new session: every cell read once
    assert sorted(reads) == sorted(cell.key for cell in study.cells()) and set(reads.values()) == {1}
    assert (tmp_path / "run" / "summary.csv").read_text() == summary


def test_cells_are_written_in_group_commits_and_recorded_only_once_durable(tmp_path: Path, seed: int,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 17: finished cells are written by a background thread, several per directory fsync."""
    import dpbandits.experiments.store as store_module

    groups: list[list[str]] = []
    original = store_module.atomic_write_files

    def recording(files: Any) -> None:
        original(files)
        groups.append([Path(path).name for path, _ in files])

    monkeypatch.setattr(store_module, "atomic_write_files", recording)
    study = _study(seed)
    run_study(study, tmp_path / "run", progress="none")
    cell_groups = [group for group in groups if group[0].endswith(".npz")]
    assert sorted(name for group in cell_groups for name in group) == sorted(
        f"{cell.key}.npz" for cell in study.cells())
    assert not list((tmp_path / "run" / "cells").glob(".tmp-*"))
    # a failed write is the run's error, and no cell it held is recorded as done
    def failing(files: Any) -> None:
        if any(Path(path).suffix == ".npz" for path, _ in files):
            raise StudyError("cannot write the cell: No space left on device")
        original(files)

    monkeypatch.setattr(store_module, "atomic_write_files", failing)
    with pytest.raises(StudyError, match="No space left"):
        run_study(study, tmp_path / "full", progress="none")
    manifest = read_manifest(tmp_path / "full")
    assert manifest["status"] == "failed"
    assert all(entry["status"] == "pending" for entry in manifest["cells"].values())


def test_atomic_write_files_leaves_no_temporary_file_on_failure(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from dpbandits.experiments.store import atomic_write_files

    atomic_write_files([(tmp_path / "a", b"1"), (tmp_path / "b", b"2")])
    assert (tmp_path / "a").read_bytes() == b"1" and (tmp_path / "b").read_bytes() == b"2"
    original = os.replace

    def refuse_second(source: Any, target: Any) -> None:
        if Path(target).name == "d":
            raise OSError(28, "No space left on device")
        original(source, target)

    monkeypatch.setattr(os, "replace", refuse_second)
    with pytest.raises(StudyError, match=r"'.*d'.*No space left on device"):
        atomic_write_files([(tmp_path / "c", b"3"), (tmp_path / "d", b"4"), (tmp_path / "e", b"5")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]  # c complete, d and e never appear
