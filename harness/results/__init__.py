"""The results wing: the on-disk contract of `results/<run-id>/` (results/README.md).

`rows` declares every record type once (the file format follows from it); `writer` writes the
files and `reader` reads them back; `views` stores request views and retained states, each
message once; `conversations` reads one conversation's records by a plain scan; `tables` reads a
run back as pandas DataFrames; `order` rewrites the files in plan order; `rundir` claims a run's folder
(`harness.base.locking` holds it); `outputs` says where a command may write a file for the user; `digests` are what a folder records of itself as it is written,
and `integrity` checks its records against them. Two annexes speed the report up and give the same results:
`spans` (an index of where each conversation's records lie) and `calls_in_bulk` (calls.jsonl of
a large batch read by DuckDB).
"""
