"""Fuzz suite (hypothesis) over the CSV reader of logged data: no traceback, no silent coercion.

Two properties, each on a few hundred small files and random block sizes (so records straddle the
pieces the reader parses):

1. Files built from a grammar of valid and invalid cells (with BOMs, CRLF, empty lines, quoted extra
   columns): when every cell is valid the reader returns exactly the values written; otherwise it
   raises one :class:`DataFormatError` naming a line that holds a bad cell, and a column bad there.
2. Arbitrary short texts over a CSV-ish alphabet: the reader either raises a :class:`DataFormatError`
   or returns exactly what Python's ``csv`` module and ``float`` read from the same text.

CI runs a fixed (derandomised) set of examples in a few seconds. A deeper, random run::

    DPBANDITS_FUZZ_EXAMPLES=5000 python -m pytest tests/unit/test_envs_readers_fuzz.py
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbandits._core.errors import DataFormatError
from dpbandits.envs import tables
from dpbandits.envs.readers import read_bandit_statistics, read_logged_bandit

K = 5
BOUND = 1.0
DEEP = int(os.environ.get("DPBANDITS_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=DEEP or 200, derandomize=not DEEP, deadline=None, database=None)


@contextmanager
def _block_bytes(size: int) -> Iterator[None]:
    saved = tables.BLOCK_BYTES
    tables.BLOCK_BYTES = size
    try:
        yield
    finally:
        tables.BLOCK_BYTES = saved


_FOLDER = TemporaryDirectory()  # one folder for every example: hypothesis does not mix with tmp_path


def _read(content: bytes, block: int) -> tuple[np.ndarray, np.ndarray]:
    with _block_bytes(block):
        path = Path(_FOLDER.name) / "logged.csv"
        path.write_bytes(content)
        data = read_logged_bandit(path, n_arms=K, reward_bound=BOUND)
        stats = read_bandit_statistics(path, n_arms=K, reward_bound=BOUND)
        np.testing.assert_array_equal(stats.counts, data.counts())  # the streaming path agrees
        return data.actions, data.rewards


# ------------------------------------------------------------------ 1. a grammar of cells
def _valid_action() -> st.SearchStrategy[tuple[str, float]]:
    forms = ("{}", " {} ", "{}.0", "+{}", "{}e0", "0{}")
    return st.tuples(st.integers(0, K - 1), st.sampled_from(forms)).map(lambda p: (p[1].format(p[0]), p[0]))


def _valid_reward() -> st.SearchStrategy[tuple[str, float]]:
    value = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.25]), st.floats(0.0, BOUND))
    return st.tuples(value, st.sampled_from(("{!r}", " {!r}", "{!r} "))).map(lambda p: (p[1].format(p[0]), p[0]))


INVALID_ACTIONS = ["", " ", "abc", "nan", "inf", "-1", str(K), "99999999999", "0.5", "1e400", "0x1", "1_0", "NA",
                   "9223372036854775808", "1,"]
INVALID_REWARDS = ["", "x", "-0.5", "1.5", "nan", "-inf", "1e400", "NA", "0..1"]
NOTES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from([",", '"', " "]),
                max_size=6)


@st.composite
def logged_csv(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, float]], dict[int, set[str]]]:
    """(file bytes, the records if valid, {line: bad columns})."""
    columns = draw(st.permutations(["action", "reward", *draw(st.sampled_from([[], ["note"], ["note", "id"]]))]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    header = ",".join(f" {name}" if draw(st.booleans()) else name for name in columns)
    lines = [header]
    records: list[tuple[int, float]] = []
    bad: dict[int, set[str]] = {}
    for _ in range(draw(st.integers(0, 12))):
        while draw(st.integers(0, 5)) == 0:
            lines.append("")  # empty lines are skipped, and still counted
        cells: dict[str, str] = {}
        line_number = len(lines) + 1
        if draw(st.integers(0, 9)) == 0:
            cells["action"] = draw(st.sampled_from(INVALID_ACTIONS))
            bad.setdefault(line_number, set()).add("action")
            action = -1
        else:
            cells["action"], action = draw(_valid_action())
        if draw(st.integers(0, 9)) == 0:
            cells["reward"] = draw(st.sampled_from(INVALID_REWARDS))
            bad.setdefault(line_number, set()).add("reward")
            reward = -1.0
        else:
            cells["reward"], reward = draw(_valid_reward())
        if "," in cells["action"]:  # "1," adds a field: the whole line is malformed
            bad[line_number] = {"action", "reward", "line"}
        lines.append(",".join(cells[name] if name in cells else _quote(draw(NOTES)) for name in columns))
        records.append((int(action), float(reward)))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    bom = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return bom + text.encode("utf-8"), records, bad


def _quote(text: str) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([text])
    return out.getvalue()


@FUZZ
@given(case=logged_csv(), block=st.integers(8, 256))
@pytest.mark.slow
def test_grammar_files_are_read_exactly_or_refused_at_a_bad_line(
    case: tuple[bytes, list[tuple[int, float]], dict[int, set[str]]], block: int
) -> None:
    content, records, bad = case
    try:
        actions, rewards = _read(content, block)
    except DataFormatError as exc:
        message = str(exc)
        assert bad, f"a valid file was refused: {message}\n{content!r}"
        assert "\n" not in message
        found = re.search(r": line (\d+)(?:, column '(\w+)')?", message)
        assert found is not None, message
        line, column = int(found.group(1)), found.group(2)
        assert line in bad, f"{message} names a line without a bad cell; bad lines {sorted(bad)}\n{content!r}"
        assert column is None or column in bad[line] or "line" in bad[line], message
        return
    assert not bad, f"bad cells on lines {sorted(bad)} were accepted\n{content!r}"
    assert actions.tolist() == [a for a, _ in records]
    assert rewards.tolist() == [r for _, r in records]


# ------------------------------------------------------------------ 2. arbitrary text
def _oracle(content: bytes) -> tuple[list[int], list[float]]:
    """Python's csv module and float() over the same text (header first, empty lines skipped)."""
    rows = [row for row in csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")) if row]
    header = [name.strip() for name in rows[0]]
    j_action, j_reward = header.index("action"), header.index("reward")
    actions = [float(row[j_action]) for row in rows[1:]]
    assert all(a.is_integer() for a in actions)
    return [int(a) for a in actions], [float(row[j_reward]) for row in rows[1:]]


ALPHABET = st.sampled_from([*'0123456789.,-+eE \n\r"a', "\ufeff", "action", "reward", "nan", "\xe9"])


@FUZZ
@given(body=st.lists(ALPHABET, max_size=40).map("".join), header=st.sampled_from(["action,reward\n", "reward,action\n", ""]),
       encoding=st.sampled_from(["utf-8", "utf-8", "latin-1", "utf-16"]), block=st.integers(8, 64))
def test_arbitrary_text_is_read_as_python_reads_it_or_refused(body: str, header: str, encoding: str,
                                                              block: int) -> None:
    try:
        content = (header + body).encode(encoding)
    except UnicodeEncodeError:
        return
    try:
        actions, rewards = _read(content, block)
    except DataFormatError as exc:
        assert "\n" not in str(exc)
        return
    oracle_actions, oracle_rewards = _oracle(content)
    assert actions.tolist() == oracle_actions and rewards.tolist() == oracle_rewards
    assert all(0 <= a < K for a in oracle_actions) and all(0.0 <= r <= BOUND for r in oracle_rewards)
