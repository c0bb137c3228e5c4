"""The ``dpbandits account`` command on small CSV files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dpbandits.algorithms.offline import KLMABPolicy
from dpbandits.cli import app
from dpbandits.envs.readers import read_logged_bandit

runner = CliRunner()


def _write(path: Path, header: str, rows: np.ndarray) -> Path:
    path.write_text(header + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in rows) + "\n")
    return path


@pytest.fixture
def mab_csv(tmp_path: Path, rng: np.random.Generator) -> Path:
    actions = np.repeat(np.arange(3), 40)
    rewards = (rng.random(actions.size) < np.array([0.2, 0.5, 0.8])[actions]).astype(float)
    return _write(tmp_path / "mab.csv", "action,reward", np.column_stack([actions, rewards]))


def test_account_mab_json_matches_the_library(mab_csv: Path) -> None:
    result = runner.invoke(app, ["account", "mab", "--data", str(mab_csv), "--n-arms", "3", "--eta", "0.2",
                                 "--beta0", "0.5", "--k", "2", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert {"epsilon0", "epsilon", "delta", "variant", "unit", "probabilities"} <= set(out)
    policy = KLMABPolicy(3, eta=0.2, beta0=0.5).fit(read_logged_bandit(mab_csv, n_arms=3))
    assert out["epsilon0"] == pytest.approx(policy.guarantee().epsilon)
    approx = policy.guarantee(kind="approx", k=2)
    assert out["epsilon"] == pytest.approx(approx.epsilon) and out["delta"] == pytest.approx(approx.delta)
    np.testing.assert_allclose(out["probabilities"], policy.probabilities())
    assert out["variant"] == "corrected" and out["unit"] == "one logged record (arm, reward)"


def test_account_paper_variant_reports_the_warning(mab_csv: Path) -> None:
    result = runner.invoke(app, ["account", "mab", "--data", str(mab_csv), "--n-arms", "3", "--eta", "0.2",
                                 "--k", "2", "--variant", "paper", "--json"])
    assert result.exit_code == 0, result.output
    assert "known to be invalid" in json.loads(result.output)["warnings"][0]


def test_account_linear_and_rlhf(tmp_path: Path, rng: np.random.Generator) -> None:
    phi = rng.standard_normal((80, 2))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    linear = _write(tmp_path / "lin.csv", "x0,x1,reward", np.column_stack([phi, rng.random(80)]))
    actions = _write(tmp_path / "act.csv", "x0,x1", np.array([[1.0, 0.0], [0.0, 1.0]]))
    result = runner.invoke(app, ["account", "linear", "--data", str(linear), "--actions", str(actions), "--json"])
    assert result.exit_code == 0, result.output
    assert math.isfinite(json.loads(result.output)["epsilon0"])
    prefs = _write(tmp_path / "pref.csv", "z0,z1,label",
                   np.column_stack([phi[:40] - phi[40:], rng.integers(0, 2, 40)]))
    result = runner.invoke(app, ["account", "rlhf", "--data", str(prefs), "--actions", str(actions),
                                 "--lambda", "1", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["unit"].startswith("one preference label") and len(out["probabilities"]) == 2


def test_account_tight_prints_the_loss_found_and_the_factor(tmp_path: Path, rng: np.random.Generator) -> None:
    """--variant tight (linear, rlhf): the certified value, with the worst neighbour's loss beside it."""
    from dpbandits.algorithms.offline import KLLinearPolicy

    phi = rng.standard_normal((60, 2))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    rewards = rng.random(60)
    linear = _write(tmp_path / "lin.csv", "x0,x1,reward", np.column_stack([phi, rewards]))
    candidates = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    actions = _write(tmp_path / "act.csv", "x0,x1", candidates)
    base = ["account", "linear", "--data", str(linear), "--actions", str(actions), "--json"]
    tight = json.loads(runner.invoke(app, [*base, "--variant", "tight"]).output)
    refined = json.loads(runner.invoke(app, [*base, "--variant", "refined"]).output)
    policy = KLLinearPolicy(eta=1.0, beta0=1.0, ridge=2.0).fit(phi, rewards)
    assert tight["epsilon0"] == pytest.approx(policy.guarantee(candidates, variant="tight").epsilon)
    assert tight["epsilon0"] <= refined["epsilon0"] and tight["per_instance"]
    assert "a neighbour reaches" in tight["reference_pure"] and "of the exact loss" in tight["reference_pure"]
    result = runner.invoke(app, [*base, "--variant", "tight", "--scope", "domain", "--min-eigenvalue", "2",
                                 "--max-records", "100"])
    assert result.exit_code == 1 and "variant='tight' is the certified per-instance loss" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("action,reward\n0,1\n1,abc\n", "line 3, column 'reward': cannot read 'abc' as a number"),
        ("action,reward\n0,1\n1,1.5\n", "line 3, column 'reward': must lie in [0, 1.0]; got '1.5'"),
        ("action,reward\n0.5,1\n", "line 2, column 'action': must be an integer arm id in [0, 3); got '0.5'"),
        ("arm,reward\n0,1\n", "action column 'action' is missing; the columns are ['arm', 'reward']"),
        ("action,reward\n0,1,2\n", "line 2: expected 2 columns as in the header; got 3"),
        ("action,reward\n0,\n", "line 2, column 'reward': a number is needed (the cell is empty); got ''"),
        ("action,reward\n0,nan\n", "line 2, column 'reward': must be a finite number; got 'nan'"),
        # an empty line is skipped, and still counted in the line numbers
        ("action,reward\n0,1\n\n7,0\n", "line 4, column 'action': must be an integer arm id in [0, 3); got '7'"),
    ],
)
def test_malformed_files_name_the_line_and_column(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "3"])
    assert result.exit_code == 1
    assert message in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_number_of_arms_is_public_input(tmp_path: Path) -> None:
    path = tmp_path / "mab.csv"
    path.write_text("action,reward\n0,1\n0,0\n\n1,1\n1,0.5\n\n\n")  # empty lines are not records
    result = runner.invoke(app, ["account", "mab", "--data", str(path)])
    assert result.exit_code == 1 and "--n-arms K or --arm-ids" in result.output
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["probabilities"]) == 2
    # a third arm without data is never sampled and makes the pure guarantee infinite
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "3", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["probabilities"][2] == 0.0 and out["epsilon0"] == "inf" and "<= 1" in out["reason"]
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "1"])
    assert result.exit_code == 1 and "line 5, column 'action': must be an integer arm id in [0, 1); got '1'" in result.output
    path.write_text("action,reward\n")
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "2"])
    assert result.exit_code == 1 and "holds no records (a header only)" in result.output


def test_account_mab_refuses_without_a_public_action_space(mab_csv: Path) -> None:
    """Regression (issue 12, defect 2): the action set was inferred from the data (max action + 1)."""
    result = runner.invoke(app, ["account", "mab", "--data", str(mab_csv), "--json"])
    assert result.exit_code == 1
    assert "--n-arms K or --arm-ids" in result.output and "never inferred from the data" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    both = runner.invoke(app, ["account", "mab", "--data", str(mab_csv), "--n-arms", "3", "--arm-ids", "0,1,2"])
    assert both.exit_code == 1 and "exactly one of" in both.output


def test_account_mab_with_public_arm_ids(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("action,reward\n7,1\n7,0\n7,1\n3,0\n3,0\n3,1\n")
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--arm-ids", "3,7,12", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert len(out["probabilities"]) == 3 and out["probabilities"][2] == 0.0  # arm 12: public, no data
    assert out["epsilon0"] == "inf"
    policy = KLMABPolicy(3, eta=1.0).fit([1, 1, 1, 0, 0, 0], [1, 0, 1, 0, 0, 1])
    np.testing.assert_allclose(out["probabilities"], policy.probabilities())
    bad = runner.invoke(app, ["account", "mab", "--data", str(path), "--arm-ids", "3,12"])
    assert bad.exit_code == 1 and "holds arm id 7, which is not one of --arm-ids [3, 12]" in bad.output
    for ids in ("3,x", "3,3", "-1,2"):
        out = runner.invoke(app, ["account", "mab", "--data", str(path), "--arm-ids", ids])
        assert out.exit_code == 1 and "--arm-ids must be a comma-separated list" in out.output


def test_account_scope_and_tight_variant(mab_csv: Path, tmp_path: Path, rng: np.random.Generator) -> None:
    base = ["account", "mab", "--data", str(mab_csv), "--n-arms", "3", "--eta", "0.2", "--beta0", "0.5"]
    tight = json.loads(runner.invoke(app, [*base, "--variant", "tight", "--json"]).output)
    policy = KLMABPolicy(3, eta=0.2, beta0=0.5).fit(read_logged_bandit(mab_csv, n_arms=3))
    assert tight["epsilon0"] == pytest.approx(policy.guarantee(variant="tight").epsilon)
    assert tight["per_instance"] and "NOT a worst-case" in tight["guarantee"]
    domain = runner.invoke(app, [*base, "--scope", "domain", "--min-count", "30", "--variant", "tight", "--json"])
    assert domain.exit_code == 0, domain.output
    out = json.loads(domain.output)
    assert not out["per_instance"] and out["scope"] == "domain"
    assert out["epsilon0"] == pytest.approx(KLMABPolicy(3, eta=0.2, beta0=0.5, min_count=30).fit(
        read_logged_bandit(mab_csv, n_arms=3)).guarantee(scope="domain", variant="tight").epsilon)
    table = runner.invoke(app, [*base, "--scope", "domain", "--min-count", "30"])
    assert table.exit_code == 0 and "declared domain" in table.output
    outside = runner.invoke(app, [*base, "--scope", "domain", "--min-count", "41"])
    assert outside.exit_code == 1 and "min_count = 41" in outside.output
    missing = runner.invoke(app, [*base, "--scope", "domain"])
    assert missing.exit_code == 1 and "min_count" in missing.output
    approx = runner.invoke(app, [*base, "--scope", "domain", "--min-count", "30", "--k", "2"])
    assert approx.exit_code == 1 and "pure guarantees only" in approx.output
    phi = rng.standard_normal((80, 2))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    linear = _write(tmp_path / "lin.csv", "x0,x1,reward", np.column_stack([phi, rng.random(80)]))
    actions = _write(tmp_path / "act.csv", "x0,x1", np.array([[1.0, 0.0], [0.0, 1.0]]))
    result = runner.invoke(app, ["account", "linear", "--data", str(linear), "--actions", str(actions), "--scope",
                                 "domain", "--min-eigenvalue", "20", "--max-records", "100", "--json"])
    assert result.exit_code == 0, result.output
    assert not json.loads(result.output)["per_instance"]



def test_account_reads_parquet_and_a_csv_with_extra_columns(tmp_path: Path, rng: np.random.Generator) -> None:
    import pandas as pd

    frame = pd.DataFrame({"user": np.arange(90), "arm": np.repeat([2, 0, 1], 30), "clicked": rng.integers(0, 2, 90),
                          "comment": "a, quoted text"})
    frame.to_parquet(tmp_path / "logged.parquet")
    frame.to_csv(tmp_path / "logged.csv", index=False)
    outputs = []
    for name in ("logged.parquet", "logged.csv"):
        result = runner.invoke(app, ["account", "mab", "--data", str(tmp_path / name), "--n-arms", "3",
                                     "--action-col", "arm", "--reward-col", "clicked", "--json"])
        assert result.exit_code == 0, result.output
        outputs.append(json.loads(result.output))
    assert outputs[0] == outputs[1]
    expected = KLMABPolicy(3, eta=1.0, beta0=1.0).fit(frame["arm"].to_numpy(), frame["clicked"].to_numpy())
    np.testing.assert_allclose(outputs[0]["probabilities"], expected.probabilities())
    result = runner.invoke(app, ["account", "mab", "--data", str(tmp_path / "logged.csv"), "--n-arms", "3"])
    assert result.exit_code == 1 and "action column 'action' is missing" in result.output


def test_account_linear_with_named_feature_columns(tmp_path: Path, rng: np.random.Generator) -> None:
    phi = rng.standard_normal((40, 2))
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)
    data = _write(tmp_path / "lin.csv", "id,f1,f2,gain", np.column_stack([np.arange(40), phi, rng.random(40)]))
    actions = _write(tmp_path / "act.csv", "x0,x1", np.array([[1.0, 0.0], [0.0, 1.0]]))
    result = runner.invoke(app, ["account", "linear", "--data", str(data), "--actions", str(actions),
                                 "--feature-cols", "f1,f2", "--reward-col", "gain", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["probabilities"]) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--n-arms", "1000000000000"], "--n-arms must be an int <= 10000000; got 1000000000000"),
        (["--n-arms", "0"], "--n-arms must be an int >= 1; got 0"),
        (["--n-arms", "3", "--n0", "nan"], "--n0 must be a finite float > 0; got nan"),
        (["--n-arms", "3", "--n0", "-1"], "--n0 must be a finite float > 0; got -1.0"),
        (["--n-arms", "3", "--k", "0"], "--k must be a finite float > 0; got 0.0"),
        (["--n-arms", "3", "--n0", "2", "--k", "2"], "give one of --n0 and --k, not both"),
        (["--n-arms", "3", "--eta", "nan"], "--eta must be a finite float > 0; got nan"),
        (["--n-arms", "3", "--beta0", "-1"], "--beta0 must lie in [0.0, inf); got -1.0"),
        (["--n-arms", "3", "--reward-bound", "inf"], "--reward-bound must be a finite float > 0; got inf"),
        (["--n-arms", "3", "--lambda0", "2"], "--lambda0 does not apply to mab"),
        (["--n-arms", "3", "--format", "xlsx"], "--format must be one of ['csv', 'parquet']; got 'xlsx'"),
    ],
)
def test_options_are_validated_up_front_under_their_own_names(mab_csv: Path, options: list[str],
                                                              message: str) -> None:
    result = runner.invoke(app, ["account", "mab", "--data", str(mab_csv), *options])
    assert result.exit_code == 1 and message in result.output, result.output
    assert result.output.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xef\xbb\xbfaction,reward\n0,1\n", None),  # Excel's UTF-8 byte-order mark is accepted
        ("action,reward\n0,1\n".encode("utf-16"), "line 1: the file is UTF-16 text; save it as UTF-8"),
        (b"action,reward\n0,1\n1,\xff\n", "line 3: not UTF-8 text (byte 0xff); save the file as UTF-8"),
        (b"action,reward\n9223372036854775808,1\n",
         "line 2, column 'action': must be an integer arm id in [0, 3); got '9223372036854775808'"),
    ],
)
def test_encodings_and_huge_action_ids(tmp_path: Path, content: bytes, message: str | None) -> None:
    path = tmp_path / "logged.csv"
    path.write_bytes(content)
    result = runner.invoke(app, ["account", "mab", "--data", str(path), "--n-arms", "3", "--json"])
    if message is None:
        assert result.exit_code == 0, result.output
        assert len(json.loads(result.output)["probabilities"]) == 3
    else:
        assert result.exit_code == 1 and message in result.output and result.output.count("\n") == 1
