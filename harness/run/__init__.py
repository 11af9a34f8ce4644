"""The run wing: a batch of conversations replayed under policies and models, checked at probes.

`batch` plans and runs a batch (its manifest, resume), `replay` replays one conversation turn
by turn, `calls` makes and records its model calls, `checks` measures each probe against the
chronology's ledger, `judge` adds the optional model-judged checks.
"""
