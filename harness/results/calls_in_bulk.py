"""An annex to harness.results.tables: calls.jsonl of a large batch read by DuckDB's parallel
JSON reader, into the frame the line reader (`tables.read_keys`) gives.

What it buys: DuckDB parses in C on every core and makes Python objects only of the values
kept. On the calls.jsonl of benchmarks/report_scale.py (1.37 GB, 926,520 calls, a million probe
rows) it reads the report's columns in half the CPU time of the line reader (4.2 against 8.4 s)
and a quarter of its wall time on two shared cores (5.4 against 20 s); the whole report without
charts takes 24 s instead of 49 s (14.8 against 18.3 CPU s). Its import and buffers raise the
reading's own peak by about 230 MB (the whole report's by about 30 MB), so a file under
`BULK_BYTES` (every ordinary batch: the shipped library's is 1.6 MB) is read line by line and
DuckDB is not imported. A file DuckDB cannot read exactly as the line reader reads it (a torn
line, a line that is no JSON record, a value of another type than its field's) goes to the line
reader.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.results.tables import Only, read_keys, value_kind

BULK_BYTES = 256 << 20  # from this size on, DuckDB; below it, the line reader


def read_calls(path: Path, keys: Sequence[str], drop: str | None = None, only: Only | None = None) -> pd.DataFrame:
    """`tables.read_keys`: by DuckDB from `BULK_BYTES` on (`read_keys_in_bulk`), else, or where
    DuckDB cannot read the file exactly, line by line. The same frame either way."""
    if path.exists() and path.stat().st_size >= BULK_BYTES:
        found = read_keys_in_bulk(path, keys, only)
        if found is not None:
            return found
    return read_keys(path, keys, drop, only)


def read_keys_in_bulk(path: Path, keys: Sequence[str], only: Only | None = None) -> pd.DataFrame | None:
    """`read_keys` of harness.results.tables, by DuckDB; None when the file ends in a torn line, holds a line that is no
    JSON record, or a value of another JSON type than its column's (the line reader keeps those
    as read, or skips them), so that both readers give the same frame. Names come back
    categorical (DuckDB's enums), so no Python string is made per row for them.

    DuckDB keeps each value as JSON text, written back in one canonical form (`"answ\\u0065r"`
    comes back `"answer"`, `1.50` as `1.5`). Names, flags and whole numbers repeat, so their
    types are checked on their distinct texts, in Python (`fits`), not value by value; a text
    (`response`, `error`) is checked per row by its first character."""
    with path.open("rb") as handle:
        handle.seek(-1, 2)
        if handle.read(1) != b"\n":
            return None
    try:
        import duckdb  # a parallel JSON reader in C: calls.jsonl of a large batch is gigabytes
    except ImportError:
        return None
    import orjson  # the distinct texts of names, as the line reader decodes them

    only = only or {}
    wanted = list(dict.fromkeys([*keys, *(other for other, _ in only.values())]))
    columns = "{" + ", ".join(f"'{sql_text(k)}': 'JSON'" for k in wanted) + "}"
    try:
        with duckdb.connect() as connection:
            connection.execute("SET enable_progress_bar = false")  # no bar of its own on the user's stderr
            connection.execute(
                f"CREATE TEMP TABLE records AS SELECT {', '.join(quoted(k) for k in wanted)} "
                f"FROM read_json('{sql_text(str(path))}', format='newline_delimited', columns={columns})"
            )
            texts: dict[str, list[str]] = {}  # key -> its distinct JSON texts (null left out)
            for key in wanted:
                if value_kind(key) in ("category", "bool", "int") or key in {o for o, _ in only.values()}:
                    query = f"SELECT DISTINCT {quoted(key)}::VARCHAR FROM records WHERE {quoted(key)} IS NOT NULL"
                    texts[key] = sorted(str(v) for (v,) in connection.execute(query).fetchall())
                    if value_kind(key) in ("category", "bool", "int") and not all(
                        fits(value_kind(key), t) for t in texts[key]
                    ):
                        return None
            where = {}  # key -> the condition under which it is read (only)
            for key, (other, value) in only.items():
                chosen = [t for t in texts[other] if t.startswith('"') and orjson.loads(t) == value]
                where[key] = f"{quoted(other)}::VARCHAR IN ({literals(chosen)})" if chosen else "false"
            odd = [
                f"({quoted(k)} IS NOT NULL AND NOT starts_with({quoted(k)}::VARCHAR, '\"')"
                + (f" AND {where[k]})" if k in where else ")")
                for k in keys
                if value_kind(k) == "str"
            ]
            if odd and connection.execute(f"SELECT bool_or({' OR '.join(odd)}) FROM records").fetchone()[0]:
                return None
            chosen, names = [], {}
            for n, key in enumerate(keys):
                kind, column = value_kind(key), quoted(key)
                if kind == "category":  # codes of the distinct texts: no Python string per row
                    names[key] = [orjson.loads(t) for t in texts[key]]
                    connection.execute(f"CREATE TYPE texts{n} AS ENUM ({literals(texts[key])})")
                    value = f"enum_code({column}::VARCHAR::texts{n})"
                else:
                    cast = {"str": "->>'$'", "bool": "::BOOLEAN", "int": "::BIGINT"}.get(kind, "")
                    value = f"{column}{cast}"
                chosen.append(f"CASE WHEN {where[key]} THEN {value} END" if key in where else value)
            listed = ", ".join(f"{value} AS {quoted(key)}" for value, key in zip(chosen, keys, strict=True))
            fetched = connection.execute(f"SELECT {listed} FROM records").fetchnumpy()
    except duckdb.Error:
        return None
    return pd.DataFrame({k: bulk_column(k, fetched[k], names.get(k, [])) for k in keys}, copy=False)


def fits(kind: str, text: str) -> bool:
    """Whether a value's JSON text (as DuckDB writes it back) is of its column's JSON type, as
    the line reader types it: a string; true or false; an integer DuckDB reads as one (within
    64 bits, signed or not: a wider one or a decimal point makes a float there)."""
    if kind == "category":
        return text.startswith('"')
    if kind == "bool":
        return text in ("true", "false")
    return INTEGER.fullmatch(text) is not None and -(2**63) <= int(text) < 2**64


INTEGER = re.compile(r"-?[0-9]+")


def quoted(key: str) -> str:
    """A key as an SQL identifier."""
    return '"' + key.replace('"', '""') + '"'


def literals(texts: Sequence[str]) -> str:
    """Texts as a list of SQL string literals."""
    return ", ".join(f"'{sql_text(t)}'" for t in texts)


def sql_text(text: str) -> str:
    """`text` inside an SQL string literal."""
    return text.replace("'", "''")


def bulk_column(key: str, fetched: np.ndarray, names: list[str]) -> Any:
    """One key's column as DuckDB gave it (NumPy, masked where NULL; a category as positions in
    `names`, its distinct values in DuckDB's order), typed as `typed_values` types it."""
    missing = np.ma.getmaskarray(fetched)
    values = np.ma.getdata(fetched)
    kind = value_kind(key)
    if kind == "bool":
        return pd.arrays.BooleanArray(values.astype(bool), missing)
    if kind == "int":
        return pd.arrays.IntegerArray(values.astype(np.int64), missing)
    if kind == "category":  # categories as pd.Categorical sorts them; codes mapped from DuckDB's order
        if not names:
            return pd.Categorical([None] * len(values))
        categories = pd.Categorical(names).categories
        # Codes widened before the missing ones become -1: DuckDB gives the smallest unsigned type
        # (uint8 under 256 names), where -1 was 255 (NumPy 2.4) or an error (2.5).
        codes = np.append(categories.get_indexer(names), -1)[np.where(missing, -1, values.astype(np.int64))]
        return pd.Categorical.from_codes(codes, categories)
    plain = np.where(missing, None, values).astype(object)
    if kind == "raw" and not missing.all():
        import orjson

        plain = [None if v is None else orjson.loads(v) for v in plain]
    return pd.array(plain, dtype=object)
