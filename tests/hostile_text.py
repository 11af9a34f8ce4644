"""Hostile text, for the tests that nothing outside the harness can drive a terminal or a report.

What an endpoint sends (answers, error reasons), what a chronology's author writes (title,
description, text) and what a chronology file is called all reach `harness show`, `validate`,
the progress lines and the report. `HOSTILE` holds one of everything a terminal obeys or a
markdown page renders; `hostile_run` makes a run where each of those sources carries it, a
loopback server (tests/loopback.py) playing the endpoint.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from click.testing import CliRunner

from harness.cli.commands import main
from tests.loopback import Recorded, Reply, ScriptedServer, chat_completion, error_body

# A screen clear and colours (CSI), a hidden link (OSC 8), a clipboard write (OSC 52), a bell, a
# backspace and a carriage return, the 8-bit CSI; then markup a report must not render.
ESCAPES = "\x1b[2J\x1b[31mred\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07\x1b]52;c;aGVsbG8=\x07\x07\x08\r\x9b1m"
MARKUP = "<img src=x onerror=alert(1)> ![](http://evil.example/i.png) <a href='http://evil.example'>a</a>"
# Code points that break a line for some readers (`str.splitlines`, JavaScript) and not others.
BREAKS = "\u2028\u2029\x85"
HOSTILE = f"{ESCAPES} {MARKUP} {BREAKS} \u202eend"
# The same in a YAML double-quoted scalar (a chronology's title and text).
HOSTILE_YAML = (
    r"\e[2J\e[31mred\e]8;;http://evil.example/\alink\e]8;;\a\e]52;c;aGVsbG8=\a\a\b\r\x9b1m "
    "<img src=x onerror=alert(1)> ![](http://evil.example/i.png) <a href='http://evil.example'>a</a> "
    r"\L\P\N \u202eend"
)
# A chronology file's name: its stem is the chronology's name everywhere.
FILE_NAME = "evil\x1b]52;c;aGVsbG8=\x07\x1b[31mred.yaml"
NAME = FILE_NAME.removesuffix(".yaml")

CHRONOLOGY = f"""\
title: "Title {HOSTILE_YAML}"
description: "Description {HOSTILE_YAML}"
prohibitions:
  p:
    present: never restart
    violated_by: '^Yes'
turns:
  - user: never restart it
  - user: "hello {HOSTILE_YAML}"
  - user: Can I restart?
    probe: answered
  - user: Can I restart now?
    probe: failed
"""


def obeyed(text: str) -> list[str]:
    """The characters of `text` a terminal would obey (controls other than newline, the
    bidirectional override); none may be printed or written into a report."""
    return [c for c in text if c != "\n" and (unicodedata.category(c) in ("Cc", "Cs") or c == "\u202e")]


def hostile_endpoint(request: Recorded) -> Reply:
    """Answers `HOSTILE`; the answer to the last probe fails with `HOSTILE` as its reason."""
    if request.path.endswith("/models"):
        return Reply(body={"object": "list", "data": [{"id": "m"}]})
    last = (request.body or {}).get("messages", [{}])[-1].get("content", "")
    if "restart now" in last:
        return Reply(400, body=error_body(f"bad request {HOSTILE}", 400))
    return Reply(body=chat_completion(f"answer {HOSTILE}"))


def hostile_run(root: Path, *options: str) -> Path:
    """`harness run --live` of the hostile chronology against the hostile endpoint, in `root`
    (the working directory), into `results/hostile` and `reports/hostile.md`; the results folder.
    The run ends with a conversation in error (exit 3): the last probe's call failed."""
    (root / "chronologies").mkdir(exist_ok=True)
    (root / "chronologies" / FILE_NAME).write_text(CHRONOLOGY, encoding="utf-8")
    with ScriptedServer() as server:
        server.default = hostile_endpoint
        command = ["run", f"chronologies/{FILE_NAME}", "--model", "openai:m", "--base-url", server.base_url]
        command += ["--live", "--no-cache"]
        command += ["--max-retries", "0", "--run-id", "hostile", "--quiet", "--no-charts", *options]
        result = CliRunner().invoke(main, command, color=True)
    assert result.exit_code == 3, result.output + repr(result.exception)
    return root / "results" / "hostile"
