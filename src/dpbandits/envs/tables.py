"""Numeric columns of a table (a CSV file, a Parquet file or a pandas DataFrame), read in batches.

One idea: hand the readers of logged data (:mod:`dpbandits.envs.readers`) the columns they ask for
as float64 NumPy batches, and say exactly where a bad value sits — ``data.csv: line 7, column
'reward'`` with the text as written in the file — so that a malformed file gives one clear line and
never a traceback or a silently coerced value.

CSV files are parsed by ``pyarrow.csv`` as a stream of blocks, so reading holds one block at a time
(memory stays a small multiple of the block, not of the file). The rules:

* UTF-8 text (a UTF-8 byte-order mark, as Excel writes, is accepted); UTF-16/32 or any invalid byte
  is refused, naming the line;
* line 1 is the header; names are stripped of surrounding blanks; extra columns are ignored, a
  requested column that is missing or appears twice is an error;
* empty lines are skipped; every other line must have as many fields as the header;
* a requested cell must be a decimal number (``3``, ``0.25``, ``1e-3``; blanks around it are fine);
  an empty cell, ``NA``, text, or a quoted value running over a line break is an error;
* quotes are honoured (``"a,b"`` in an ignored text column); a file with quotes is checked record by
  record with the standard ``csv`` module, which is slower.

Parquet files are read with ``pyarrow.parquet`` batch by batch; DataFrames column by column. Their
columns must hold numbers (integer or float dtypes; booleans, text and missing values are refused).
Row numbers of Parquet files and DataFrames count from 0, as pandas' ``iloc`` does.
"""

from __future__ import annotations

import codecs
import csv
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpbandits._core.errors import DataFormatError, InvalidParameterError
from dpbandits._core.typing import FloatArray

__all__ = ["Table", "open_table", "resolve_columns"]

BLOCK_BYTES = 1 << 20
"""Bytes of CSV text parsed per block (and rows of a Parquet batch: ``BLOCK_BYTES // 16``)."""

HEADER_BYTES = 1 << 20
"""Longest header line accepted (a longer first line is not a header)."""

_PARQUET_SUFFIXES = (".parquet", ".pq")
_UTF16_32_MARKS = {
    codecs.BOM_UTF32_LE: "UTF-32", codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16", codecs.BOM_UTF16_BE: "UTF-16",
}


def _show(text: str) -> str:
    """A cell as the error message shows it (quoted, shortened)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


class Table(ABC):
    """A source of numeric columns; subclasses read CSV, Parquet and DataFrames."""

    label: str
    names: list[str]

    @abstractmethod
    def batches(self, columns: Sequence[str]) -> Iterator[tuple[int, list[FloatArray]]]:
        """Yield ``(first_row, [one float64 array per column])`` in row order."""

    @abstractmethod
    def place(self, row: int) -> str:
        """Where data row ``row`` (from 0) sits, for messages: ``"data.csv: line 7"``, ``"DataFrame: row 5"``."""

    @abstractmethod
    def cell(self, row: int, column: str) -> str:
        """The value of a cell as the message shows it (for CSV, the text as written, quoted)."""

    def error(self, row: int, column: str, constraint: str) -> DataFormatError:
        """A :class:`DataFormatError` naming the place, the column, the constraint and the value found."""
        return DataFormatError(f"{self.place(row)}, column {column!r}: {constraint}; got {self.cell(row, column)}")


def resolve_columns(table: Table, spec: str | Sequence[str], role: str) -> list[str]:
    """Return the column names that ``spec`` asks for, in order.

    Parameters
    ----------
    table : Table
    spec : str or sequence of str
        One name; a pattern ``"x*"`` meaning ``x0, x1, ..., x{d-1}`` (all of them, from 0, no gaps); or
        a list of names.
    role : str
        What the columns are (``"action"``, ``"feature"``), for error messages.
    """
    names = table.names
    if isinstance(spec, str) and spec.endswith("*"):
        prefix = spec[:-1]
        pattern = re.compile(re.escape(prefix) + r"(\d+)")
        found = {name: int(m.group(1)) for name in names if (m := pattern.fullmatch(name))}
        wanted = [f"{prefix}{j}" for j in range(len(found))]
        if not found or sorted(found) != sorted(wanted):
            raise DataFormatError(
                f"{table.label}: {role} columns {spec!r} must be {prefix}0, {prefix}1, ..., {prefix}{{d-1}} "
                f"with d >= 1; got {sorted(found, key=found.__getitem__) or 'none'} among the columns {names}"
            )
        return wanted
    chosen = [spec] if isinstance(spec, str) else list(spec)
    if not chosen or not all(isinstance(name, str) and name for name in chosen):
        raise InvalidParameterError(f"{role} columns must be one or more non-empty names; got {spec!r}")
    for name in chosen:
        count = names.count(name)
        if count != 1:
            problem = "is missing" if count == 0 else f"appears {count} times"
            raise DataFormatError(f"{table.label}: {role} column {name!r} {problem}; the columns are {names}")
    if len(set(chosen)) != len(chosen):
        raise InvalidParameterError(f"{role} columns must be distinct; got {chosen}")
    return chosen


def open_table(source: Any, file_format: str | None = None) -> Table:
    """Open a CSV or Parquet file (a path) or a pandas DataFrame as a :class:`Table`.

    Parameters
    ----------
    source : str, path-like or pandas.DataFrame
    file_format : {"csv", "parquet"}, optional
        For a path; by default ``.parquet``/``.pq`` files are Parquet and others CSV.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if file_format is None:
            file_format = "parquet" if path.suffix.lower() in _PARQUET_SUFFIXES else "csv"
        if file_format == "csv":
            return _CsvTable(path)
        if file_format == "parquet":
            return _ParquetTable(path)
        raise InvalidParameterError(f"file_format must be one of ['csv', 'parquet']; got {file_format!r}")
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _FrameTable(source)
    raise InvalidParameterError(
        f"source must be a path to a CSV or Parquet file or a pandas DataFrame; got {type(source).__name__}"
    )


# ------------------------------------------------------------------------------------------- CSV
@dataclass
class _CsvTable(Table):
    path: Path
    label: str = field(init=False)
    names: list[str] = field(init=False)
    has_quotes: bool = field(init=False, default=False)
    data_offset: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.label = str(self.path)
        self.names = self._check_text_and_read_header()

    def _cannot(self, problem: str) -> DataFormatError:
        return DataFormatError(f"{self.label}: {problem}")

    def _check_text_and_read_header(self) -> list[str]:
        """One pass over the bytes: UTF-8 only (BOM allowed), no NUL; note quotes; return the header."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        line, offset, first, tail = 1, 0, b"", b""
        try:
            with self.path.open("rb") as handle:
                while chunk := handle.read(BLOCK_BYTES):
                    if offset == 0:
                        self._refuse_other_encodings(chunk)
                    nul = chunk.find(b"\x00")
                    if nul >= 0:
                        at = line + chunk.count(b"\n", 0, nul)
                        raise self._cannot(f"line {at}: a NUL byte; save the file as UTF-8 text")
                    try:
                        decoder.decode(chunk)
                    except UnicodeDecodeError as exc:
                        # exc.start < 0 when the bad sequence began in the previous chunk
                        start = max(exc.start, 0)
                        at = line + chunk.count(b"\n", 0, start)
                        raise self._cannot(
                            f"line {at}: not UTF-8 text (byte {chunk[start]:#04x}); save the file as UTF-8"
                        ) from None
                    self.has_quotes = self.has_quotes or b'"' in chunk
                    # U+FEFF is a byte-order mark at the start of the file only; elsewhere pyarrow would drop
                    # it silently at the start of a parsed piece, so it is refused (a 2-byte overlap
                    # finds one that straddles two chunks)
                    mark = (tail + chunk).find(codecs.BOM_UTF8, 3 if offset == 0 else 0)
                    if mark >= 0:
                        at = line + (tail + chunk).count(b"\n", 0, mark) - tail.count(b"\n")
                        raise self._cannot(f"line {at}: a byte-order mark (U+FEFF) after the start of the file")
                    tail = chunk[-2:]
                    if not _ends_a_line(first.removeprefix(codecs.BOM_UTF8)):  # still in line 1
                        first += chunk
                        if len(first) > HEADER_BYTES and not _ends_a_line(first):
                            raise self._cannot(f"line 1: no line break in the first {HEADER_BYTES} bytes; "
                                               "the header must be one line naming the columns")
                    line += chunk.count(b"\n")
                    offset += len(chunk)
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    raise self._cannot(f"line {line}: not UTF-8 text (the file ends inside a character)") from None
        except OSError as exc:
            raise self._cannot(f"cannot read the file ({exc.strerror or exc})") from None
        head = first.removeprefix(codecs.BOM_UTF8)
        end = _ends_a_line(head)
        head = head[:HEADER_BYTES]
        header_line = (head[:end] if end else head).decode("utf-8", errors="replace").rstrip("\r\n")
        self.data_offset = (len(first) - len(head)) + end if end else offset  # where the records start
        if not header_line.strip():
            raise self._cannot("line 1: missing header (the first line must name the columns)")
        return [name.strip() for name in next(csv.reader([header_line]))]

    def _refuse_other_encodings(self, head: bytes) -> None:
        if head.startswith(b"PAR1"):
            raise self._cannot("line 1: this is a Parquet file, not CSV text; read it as Parquet (--format parquet)")
        for mark, encoding in _UTF16_32_MARKS.items():
            if head.startswith(mark):
                raise self._cannot(f"line 1: the file is {encoding} text; save it as UTF-8")

    def batches(self, columns: Sequence[str]) -> Iterator[tuple[int, list[FloatArray]]]:
        import pyarrow as pa
        from pyarrow import csv as pa_csv

        if self.has_quotes:
            self._check_records()  # after this, no record spans lines: blocks may be cut at any line break
        indices = [self.names.index(name) for name in columns]
        internal = [f"c{j}" for j in range(len(self.names))]  # header names may repeat; these do not
        # one thread: a piece is small, and pyarrow's thread pool, once started, can abort the process at
        # exit ("terminate called without an active exception", about 1 exit in 50 measured)
        read_options = pa_csv.ReadOptions(column_names=internal, use_threads=False)
        convert_options = pa_csv.ConvertOptions(
            column_types={internal[j]: pa.float64() for j in indices},
            include_columns=[internal[j] for j in indices],
            null_values=[""], strings_can_be_null=False, quoted_strings_can_be_null=False,
        )
        row = 0
        for block in self._blocks():
            try:
                table = pa_csv.read_csv(pa.BufferReader(block), read_options=read_options, convert_options=convert_options)
            except pa.ArrowInvalid as exc:
                raise self._explain(str(exc), row) from None
            yield row, [self._numbers(table.column(k), row, columns[k]) for k in range(len(columns))]
            row += table.num_rows

    def _blocks(self) -> Iterator[bytes]:
        """The text after the header in pieces of about ``BLOCK_BYTES``, each ending at a line break.

        Parsing piece by piece holds one piece at a time (pyarrow's own streaming reader reads tens of
        blocks ahead); pieces of only line breaks are passed over.
        """
        with self.path.open("rb") as handle:
            handle.seek(self.data_offset)
            carry = b""
            while True:
                chunk = handle.read(BLOCK_BYTES)
                text = carry + chunk
                cut = max(text.rfind(b"\n"), text.rfind(b"\r")) + 1 if chunk else len(text)
                block, carry = text[:cut], text[cut:]
                if block.strip(b"\r\n"):
                    yield block
                if not chunk:
                    return

    def _numbers(self, values: Any, first_row: int, column: str) -> FloatArray:
        if values.null_count:
            blank = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise self.error(first_row + blank, column, "a number is needed (the cell is empty)")
        return np.asarray(_arrow_numbers(values), dtype=np.float64)

    def _explain(self, message: str, first_row: int) -> DataFormatError:
        """Turn pyarrow's message (which names no line) into one that names the line and column."""
        if "Could not skip initial" in message or "Empty CSV" in message:
            return self._cannot("line 1: missing header (the first line must name the columns)")
        conversion = re.search(r"CSV column #(\d+)", message)
        for line, fields in self._records(first_row):
            if len(fields) != len(self.names):
                return self._cannot(f"line {line}: expected {len(self.names)} columns as in the header; "
                                    f"got {len(fields)}")
            if conversion is not None:
                j = int(conversion.group(1))
                if not fields[j].strip():
                    return self._cannot(f"line {line}, column {self.names[j]!r}: a number is needed "
                                        f"(the cell is empty); got {_show(fields[j])}")
                if not _parses_as_float(fields[j]):
                    return self._cannot(f"line {line}, column {self.names[j]!r}: cannot read "
                                        f"{_show(fields[j])} as a number")
        return self._cannot(f"cannot read the file: {message.splitlines()[0]}")  # pragma: no cover - defensive

    def _records(self, first_row: int = 0) -> Iterator[tuple[int, list[str]]]:
        """(line number, fields) of every data record from data row ``first_row`` on; empty lines skipped."""
        with self.path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            next(reader, None)  # the header
            row = 0
            for fields in reader:
                if not fields:
                    continue
                if row >= first_row:
                    yield reader.line_num, fields
                row += 1

    def _check_records(self) -> None:
        """A quoted value must not run over a line break (an unterminated quote would swallow records)."""
        with self.path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            try:
                next(reader, None)
                before = reader.line_num
                for _ in reader:
                    if reader.line_num - before > 1:
                        raise self._cannot(f"line {before + 1}: a quoted value runs over a line break "
                                           "(an unterminated quote?)")
                    before = reader.line_num
            except csv.Error as exc:
                raise self._cannot(f"line {reader.line_num}: {exc}") from None

    def place(self, row: int) -> str:
        for line, _ in self._records(row):
            return f"{self.label}: line {line}"
        return f"{self.label}: record {row}"  # pragma: no cover - defensive

    def cell(self, row: int, column: str) -> str:
        for _, fields in self._records(row):
            return _show(fields[self.names.index(column)].strip())
        return "?"  # pragma: no cover - defensive


def _ends_a_line(text: bytes) -> int:
    r"""Length of the first line of ``text`` with its line break (``\n``, ``\r\n`` or ``\r``); 0 if none."""
    breaks = [i for i in (text.find(b"\n"), text.find(b"\r")) if i >= 0]
    if not breaks:
        return 0
    i = min(breaks)
    return i + 2 if text[i:i + 2] == b"\r\n" else i + 1


def _parses_as_float(cell: str) -> bool:
    """Whether pyarrow's CSV converter reads ``cell`` as a float64 (used to locate its errors)."""
    import pyarrow as pa
    from pyarrow import csv as pa_csv

    try:
        pa_csv.read_csv(pa.BufferReader(b"v\n" + cell.encode() + b"\n"), read_options=pa_csv.ReadOptions(use_threads=False),
                        convert_options=pa_csv.ConvertOptions(column_types={"v": pa.float64()}, null_values=[]))
    except pa.ArrowInvalid:
        return False
    return True


def _arrow_numbers(values: Any) -> np.ndarray:
    """A null-free Arrow array (or chunked array) of integers or floats as a NumPy array, read from its buffers.

    pyarrow's own ``to_numpy`` imports pandas (about 0.3 s, more than reading a small file); the data
    buffer of a fixed-width numeric array without nulls is already the NumPy array, so it is viewed
    (and copied once when the array has several chunks).
    """
    import pyarrow as pa

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    arrow_type = values.type
    kind = "f" if pa.types.is_floating(arrow_type) else ("i" if pa.types.is_signed_integer(arrow_type) else "u")
    dtype = np.dtype(f"{kind}{arrow_type.bit_width // 8}")
    parts = [np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize)
             for chunk in chunks if len(chunk)]
    if not parts:
        return np.empty(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# --------------------------------------------------------------------------------------- Parquet
def _check_arrow_numeric(label: str, name: str, arrow_type: Any) -> None:
    import pyarrow as pa

    if not (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)):
        raise DataFormatError(f"{label}: column {name!r} must hold numbers (integers or floats); got type {arrow_type}")


@dataclass
class _ParquetTable(Table):
    path: Path
    label: str = field(init=False)
    names: list[str] = field(init=False)
    _file: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        import pyarrow as pa
        from pyarrow import parquet as pq

        self.label = str(self.path)
        try:
            self._file = pq.ParquetFile(self.path, pre_buffer=False)  # no I/O thread (see _CsvTable.batches)
        except OSError as exc:
            raise DataFormatError(f"{self.label}: cannot read the file ({exc.strerror or exc})") from None
        except pa.ArrowException as exc:
            raise DataFormatError(f"{self.label}: not a readable Parquet file ({exc})") from None
        self.names = list(self._file.schema_arrow.names)

    def batches(self, columns: Sequence[str]) -> Iterator[tuple[int, list[FloatArray]]]:
        import pyarrow as pa

        schema = self._file.schema_arrow
        for name in columns:
            _check_arrow_numeric(self.label, name, schema.field(name).type)
        row = 0
        try:
            for batch in self._file.iter_batches(batch_size=BLOCK_BYTES // 16, columns=list(columns), use_threads=False):
                arrays = []
                for name in columns:
                    values = batch.column(name)
                    if values.null_count:
                        missing = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
                        raise self.error(row + missing, name, "a number is needed (the value is missing)")
                    arrays.append(_exact_float64(self, row, name, _arrow_numbers(values)))
                yield row, arrays
                row += batch.num_rows
        except pa.ArrowException as exc:
            raise DataFormatError(f"{self.label}: cannot read row {row} on ({exc})") from None

    def place(self, row: int) -> str:
        return f"{self.label}: row {row}"

    def cell(self, row: int, column: str) -> str:
        start = 0
        for batch in self._file.iter_batches(batch_size=BLOCK_BYTES // 16, columns=[column], use_threads=False):
            if start + batch.num_rows > row:
                return repr(batch.column(0)[row - start].as_py())
            start += batch.num_rows
        return "?"  # pragma: no cover - defensive


def _exact_float64(table: Table, first_row: int, column: str, values: np.ndarray) -> FloatArray:
    """``values`` as float64, refusing integers that float64 cannot hold exactly (|v| > 2^53)."""
    if values.dtype.kind in "iu":
        too_large = np.abs(values.astype(np.float64)) > 2.0**53
        if np.any(too_large):
            raise table.error(first_row + int(np.flatnonzero(too_large)[0]), column,
                              "integers must lie within ±2^53 to be read exactly")
    return np.asarray(values, dtype=np.float64)


# ------------------------------------------------------------------------------------- DataFrame
@dataclass
class _FrameTable(Table):
    frame: Any
    label: str = field(init=False, default="DataFrame")
    names: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.names = [str(name) for name in self.frame.columns]

    def batches(self, columns: Sequence[str]) -> Iterator[tuple[int, list[FloatArray]]]:
        import pandas as pd

        arrays = []
        for name in columns:
            series = self.frame.iloc[:, self.names.index(name)]
            if pd.api.types.is_bool_dtype(series.dtype) or not pd.api.types.is_numeric_dtype(series.dtype):
                raise DataFormatError(f"DataFrame: column {name!r} must hold numbers (integers or floats); "
                                      f"got dtype {series.dtype}")
            missing = series.isna().to_numpy()
            if np.any(missing):
                raise self.error(int(np.flatnonzero(missing)[0]), name, "a number is needed (the value is missing)")
            # a nullable pandas dtype (Int64, Float64) converts to its NumPy dtype once no value is missing
            raw = series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", None))
            arrays.append(_exact_float64(self, 0, name, raw))
        yield 0, arrays

    def place(self, row: int) -> str:
        index = self.frame.index[row]
        return f"DataFrame: row {row}" if index == row else f"DataFrame: row {row} (index {index!r})"

    def cell(self, row: int, column: str) -> str:
        value = self.frame.iloc[row, self.names.index(column)]
        return repr(value.item() if hasattr(value, "item") else value)
