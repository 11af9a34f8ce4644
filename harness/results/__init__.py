"""The results wing: the on-disk contract of `results/<run-id>/` (results/README.md).

`rows` declares every record type once (the file format follows from it); `records` writes and
reads the files; `views` stores request views and retained states, each message once; `tables`
reads a run back as pandas DataFrames; `rundir` and `locking` claim and hold a run's folder.
"""
