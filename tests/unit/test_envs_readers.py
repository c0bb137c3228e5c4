"""Readers of logged data: CSV, Parquet and DataFrames, column mapping, public K, clear errors."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits.envs import tables
from dpbandits.envs.logged import MAX_ARMS, LoggedBanditData
from dpbandits.envs.readers import (
    read_action_features,
    read_bandit_statistics,
    read_logged_bandit,
    read_logged_contextual,
    read_preferences,
)


def _csv(tmp_path: Path, text: str | bytes, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _logged(rng: np.random.Generator, n: int = 50, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    return rng.integers(0, k, n), rng.random(n)


def test_csv_parquet_and_dataframe_give_the_same_records(tmp_path: Path, rng: np.random.Generator) -> None:
    actions, rewards = _logged(rng)
    frame = pd.DataFrame({"user": np.arange(actions.size), "arm": actions, "click": rewards, "note": "x"})
    csv_path, parquet_path = tmp_path / "d.csv", tmp_path / "d.parquet"
    frame.to_csv(csv_path, index=False, float_format="%.17g")
    frame.to_parquet(parquet_path)
    for source in (frame, csv_path, parquet_path, str(csv_path)):
        data = read_logged_bandit(source, n_arms=4, action_column="arm", reward_column="click")
        np.testing.assert_array_equal(data.actions, actions)
        np.testing.assert_array_equal(data.rewards, rewards)
        stats = read_bandit_statistics(source, n_arms=4, action_column="arm", reward_column="click")
        np.testing.assert_array_equal(stats.counts, data.counts())
        np.testing.assert_allclose(stats.reward_sums, data.reward_sums(), rtol=1e-12)


def test_statistics_stream_many_blocks_and_many_arms(tmp_path: Path, rng: np.random.Generator,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "BLOCK_BYTES", 64)  # dozens of blocks, each with fewer records than arms
    actions, rewards = _logged(rng, n=400, k=1000)
    path = _csv(tmp_path, "action,reward\n" + "".join(f"{a},{float(r)!r}\n" for a, r in zip(actions, rewards, strict=True)))
    stats = read_bandit_statistics(path, n_arms=1000)
    reference = LoggedBanditData(actions, rewards, 1000)
    np.testing.assert_array_equal(stats.counts, reference.counts())
    np.testing.assert_allclose(stats.reward_sums, reference.reward_sums(), rtol=1e-12)
    assert stats.n_records == 400
    np.testing.assert_array_equal(read_logged_bandit(path, n_arms=1000).actions, actions)


def test_number_of_arms_is_required_and_bounded(tmp_path: Path) -> None:
    path = _csv(tmp_path, "action,reward\n0,1\n100000000,0\n")
    with pytest.raises(TypeError):
        read_logged_bandit(path)  # type: ignore[call-arg]  # K is public input: no default
    with pytest.raises(DataFormatError, match=r"line 3, column 'action': must be an integer arm id in \[0, 2\); "
                                              r"got '100000000'"):
        read_logged_bandit(path, n_arms=2)
    with pytest.raises(InvalidParameterError, match=f"n_arms must be an int <= {MAX_ARMS}; got 1000000000000"):
        read_bandit_statistics(path, n_arms=10**12)
    with pytest.raises(InvalidParameterError, match=f"n_arms must be an int <= {MAX_ARMS}"):
        LoggedBanditData([0], [1.0], 10**12)


def test_action_ids_are_shown_exactly_as_written(tmp_path: Path) -> None:
    path = _csv(tmp_path, "action,reward\n9223372036854775808,1\n")
    with pytest.raises(DataFormatError, match=r"\[0, 5\); got '9223372036854775808'$"):
        read_logged_bandit(path, n_arms=5)
    with pytest.raises(InvalidParameterError, match=r"\[0, 5\); got 1e\+19"):
        LoggedBanditData(np.array([1e19]), [1.0], 5)  # checked before the cast: no wrap to a negative id


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (codecs.BOM_UTF16_LE + "action,reward\n0,1\n".encode("utf-16-le"), "line 1: the file is UTF-16 text"),
        (codecs.BOM_UTF32_LE + "action,reward\n".encode("utf-32-le"), "line 1: the file is UTF-32 text"),
        ("action,reward\n0,1\n".encode("utf-16-le"), "line 1: a NUL byte"),
        (b"action,reward\n0,1\n1,0\n2,caf\xe9\n", r"line 4: not UTF-8 text \(byte 0xe9\)"),
        (b"PAR1....", "this is a Parquet file"),
        (b"action,reward\n0,1\n\xef\xbb\xbf1,0\n", r"line 3: a byte-order mark \(U\+FEFF\) after the start"),
        (b"", "line 1: missing header"),
        (b"\n0,1\n", "line 1: missing header"),
        (b"action,reward,action\n0,1,2\n", "action column 'action' appears 2 times"),
        (b"action,reward\n0,1\n1,0,1\n", "line 3: expected 2 columns as in the header; got 3"),
        (b"action,reward\n0,1\n \n", "line 3: expected 2 columns as in the header; got 1"),
        (b'action,reward,note\n0,1,"open\n1,0,x\n', "line 2: a quoted value runs over a line break"),
        (b"action,reward\n0,1\n1,NA\n", "line 3, column 'reward': cannot read 'NA' as a number"),
        (b"action,reward\n0,1\n1,inf\n", "line 3, column 'reward': must be a finite number; got 'inf'"),
        (b"action,reward\n0,1\n-1,0\n", r"line 3, column 'action': must be an integer arm id in \[0, 3\); got '-1'"),
        (b"action,reward\n0,1\n2.5,0\n", r"line 3, column 'action': must be an integer arm id in \[0, 3\); got '2.5'"),
        (b"action,reward\n0,-0.5\n", r"line 2, column 'reward': must lie in \[0, 1.0\]; got '-0.5'"),
    ],
)
def test_malformed_csv_gives_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(DataFormatError, match=message) as caught:
        read_bandit_statistics(_csv(tmp_path, content), n_arms=3)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("content", "actions", "rewards"),
    [
        (codecs.BOM_UTF8 + b"action,reward\n0,1\n2,0\n", [0, 2], [1.0, 0.0]),  # Excel's UTF-8 BOM
        (b" action , reward \r\n0,1\r\n\r\n2, 0.5\r\n", [0, 2], [1.0, 0.5]),  # CRLF, blanks, an empty line
        (b"reward,action\n1,0\n0,2", [0, 2], [1.0, 0.0]),  # any column order, no final line break
        (b'"action","reward","note"\n"0","1","a,b"\n2.0,1e-1,""\n', [0, 2], [1.0, 0.1]),  # quotes
        (b"action,reward\n", [], []),
        (b"action,reward", [], []),
    ],
)
def test_accepted_csv_variants(tmp_path: Path, content: bytes, actions: list[int], rewards: list[float]) -> None:
    data = read_logged_bandit(_csv(tmp_path, content), n_arms=3)
    assert data.actions.tolist() == actions and data.rewards.tolist() == rewards


def test_dataframe_and_parquet_columns_must_hold_numbers(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"column 'reward' must hold numbers .* got dtype bool"):
        read_logged_bandit(pd.DataFrame({"action": [0, 1], "reward": [True, False]}), n_arms=2)
    with pytest.raises(DataFormatError, match="column 'action' must hold numbers"):
        read_logged_bandit(pd.DataFrame({"action": ["0", "1"], "reward": [1.0, 0.0]}), n_arms=2)
    frame = pd.DataFrame({"action": pd.array([0, None, 1], dtype="Int64"), "reward": [1.0, 0.0, 1.0]},
                         index=["a", "b", "c"])
    with pytest.raises(DataFormatError, match=r"DataFrame: row 1 \(index 'b'\), column 'action': a number is needed"):
        read_logged_bandit(frame, n_arms=2)
    assert read_logged_bandit(frame.drop(index="b"), n_arms=2).actions.tolist() == [0, 1]
    with pytest.raises(DataFormatError, match=r"DataFrame: row 1, column 'reward': must lie in \[0, 1.0\]; got 2.0"):
        read_logged_bandit(pd.DataFrame({"action": [0, 1], "reward": [1.0, 2.0]}), n_arms=2)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"action": pa.array([0, None], pa.int64()), "reward": [1.0, 0.5]}), path)
    with pytest.raises(DataFormatError, match=r"d.parquet: row 1, column 'action': a number is needed"):
        read_logged_bandit(path, n_arms=2)
    pq.write_table(pa.table({"action": [0, 7], "reward": [1.0, 0.5]}), path)
    with pytest.raises(DataFormatError, match=r"d.parquet: row 1, column 'action': .* got 7"):
        read_logged_bandit(path, n_arms=2)
    pq.write_table(pa.table({"action": ["0"], "reward": [1.0]}), path)
    with pytest.raises(DataFormatError, match=r"column 'action' must hold numbers .* got type string"):
        read_logged_bandit(path, n_arms=2)
    with pytest.raises(DataFormatError, match="not a readable Parquet file"):
        read_logged_bandit(_csv(tmp_path, "action,reward\n0,1\n"), n_arms=2, file_format="parquet")
    with pytest.raises(InvalidParameterError, match=r"source must be a path .* or a pandas DataFrame; got list"):
        read_logged_bandit([[0, 1]], n_arms=2)


def test_contextual_preferences_and_action_features(tmp_path: Path, rng: np.random.Generator) -> None:
    phi = rng.standard_normal((30, 3))
    phi /= 2 * np.linalg.norm(phi, axis=1, keepdims=True)
    rewards = rng.random(30)
    frame = pd.DataFrame({"id": range(30), "f_a": phi[:, 0], "f_b": phi[:, 1], "f_c": phi[:, 2], "r": rewards})
    data = read_logged_contextual(frame, feature_columns=["f_a", "f_b", "f_c"], reward_column="r")
    np.testing.assert_array_equal(data.features, phi)
    path = tmp_path / "lin.csv"
    frame.rename(columns={"f_a": "x0", "f_b": "x1", "f_c": "x2", "r": "reward"}).to_csv(path, index=False,
                                                                                     float_format="%.17g")
    np.testing.assert_array_equal(read_logged_contextual(path).features, phi)
    np.testing.assert_array_equal(read_action_features(path), phi)
    labels = rng.integers(0, 2, 30)
    prefs = pd.DataFrame({"z1": phi[:, 1], "z0": phi[:, 0], "label": labels, "prompt": "p"})
    read = read_preferences(prefs)
    np.testing.assert_array_equal(read.feature_differences, phi[:, :2])
    np.testing.assert_array_equal(read.labels, labels)


def test_feature_columns_and_norms_are_checked(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"feature columns 'x\*' must be x0, x1, .* got \['x0', 'x2'\]"):
        read_logged_contextual(_csv(tmp_path, "x0,x2,reward\n0,0,1\n"))
    with pytest.raises(DataFormatError, match=r"line 3, columns x0..x1: Euclidean norm must be <= 1.0; got 1.41"):
        read_logged_contextual(_csv(tmp_path, "x0,x1,reward\n0,0,1\n1,1,0\n"))
    with pytest.raises(DataFormatError, match=r"line 2, column 'label': must be 0 or 1; got '0.5'"):
        read_preferences(_csv(tmp_path, "z0,label\n0.1,0.5\n"))
    with pytest.raises(DataFormatError, match="the reward column 'x0' is also a feature column"):
        read_logged_contextual(_csv(tmp_path, "x0,reward\n0,1\n"), reward_column="x0")
    with pytest.raises(DataFormatError, match="at least one action"):
        read_action_features(_csv(tmp_path, "x0,x1\n"))
    clipped = read_logged_contextual(_csv(tmp_path, "x0,reward\n0.5,3\n"), reward_bound=2.0, clip=True)
    assert clipped.rewards.tolist() == [2.0]


def test_reading_tables_starts_no_native_thread_pool(tmp_path):
    """pyarrow's thread pool, once started, can abort the process at exit (SIGABRT, "terminate called
    without an active exception", about 1 exit in 50 of ``dpbandits account mab``): reading CSV and
    Parquet (including a bad cell, which re-parses it) must not start it."""
    import subprocess
    import sys
    import textwrap

    pq.write_table(pa.table({"a": np.arange(300) % 3, "r": np.linspace(0, 1, 300)}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("a,r\n" + "".join(f"{i % 3},{i / 300}\n" for i in range(300)))
    (tmp_path / "bad.csv").write_text("a,r\n0,0.5\n1,x\n")
    script = textwrap.dedent(f"""
        import os
        import pyarrow.csv, pyarrow.parquet
        from dpbandits.envs.tables import open_table
        before = len(os.listdir("/proc/self/task"))
        base = {str(tmp_path)!r}
        for name in ("t.csv", "t.parquet"):
            list(open_table(base + "/" + name).batches(["a", "r"]))
        try:
            list(open_table(base + "/bad.csv").batches(["a", "r"]))
        except Exception as exc:
            assert "cannot read" in str(exc), exc
        print(len(os.listdir("/proc/self/task")) - before)
    """)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # pyarrow starts one I/O thread for any read; its CPU pool (a thread per core) must stay unstarted
    assert int(done.stdout) <= 1, f"threads started by reading: {done.stdout.strip()}"
