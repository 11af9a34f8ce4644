"""The run wing: a batch of conversations replayed under policies and models, checked at probes.

What runs is stated once: `options` (each setting declared once, `SETTINGS`, and the settings as
a user gives them, `RunOptions`), `spec` (`build` checks
them into a `RunSpec`), `manifest` (the spec recorded in `manifest.json`, and restored for
`--resume`). `batch` runs a spec into a results folder on an `executor` (threads), in the order
`dispatch` gives; `replay` replays one conversation turn by turn, `calls` makes and records its
model calls, `checks` measures each probe against the chronology's ledger, `judge` adds the
optional model-judged checks; `events` are the protocols a display implements. `batchfile`
reads a batch file, `resume` checks the options given beside `--resume`, `shards` and `merge`
split a batch over machines and put it back together.
"""
