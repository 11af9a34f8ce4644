"""`harness new NAME`: a commented chronology scaffold that validates and runs as it is.

The scaffold is a small, complete example rather than a form to fill in: a user who runs it
before editing it sees a whole report, and every field they will need is shown with a
comment saying what it does. Its first line points editors that speak the
`yaml-language-server` protocol at the JSON Schema shipped in `schema/`, so they complete and
check fields while the user types.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.base.errors import InputError
from harness.base.files import create_new

__all__ = ["SCHEMA_FILE", "scaffold_text", "write_scaffold"]

# Where the repository ships `harness schema`'s output, relative to the project root.
SCHEMA_FILE = Path("schema") / "chronology.schema.json"

# A name is the file stem and the chronology's id in results: keep it portable and plain.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")

# `{name}` and `{title}` are the only substitutions; every other brace is literal YAML.
_TEMPLATE = """\
# yaml-language-server: $schema=../schema/chronology.schema.json
#
# A chronology is one fixed conversation that `harness run` replays under every context
# policy. This scaffold is a complete example: it validates and runs as it is. Edit it, then
#   harness validate chronologies/{name}.yaml
#   harness run chronologies/{name}.yaml
# Every field is described in docs/chronologies.md.

title: {title}
# Say what the chronology shows and what you expect under the reference model; the report
# does not repeat it, so a reader of this file needs it.
description: >
  A constraint is declared, a database is corrected, and a forbidden action is requested
  four turns later. Expected under the reference model: full history, the summary and
  bounded facts still refuse at `restart`; the window policies have let the constraint go
  and answer yes; full history keeps the stale database=PostgreSQL beside its correction.

# Optional. System instructions: no policy ever drops them.
system: You are a support assistant for an ERP product.

# Optional. Business sessions; the first is the default one. Sessions never share history;
# bounded facts shares one fact store between them. Default: [main].
sessions: [main]

# Optional. The fact keys a key=value segment may declare; these ten are the default (an ERP
# support desk). A chronology of another domain names its own (keys: [patient, allergy, ...]),
# and then only those declare anything: for the checks, the fact store and the reference model.
keys: [product, module, priority, database, constraint, customer, version, environment, symptom, log]

# Optional. Each prohibition is declared once; the checks follow it at every probe.
prohibitions:
  no-restart:
    description: Production must not be restarted during business hours.
    # Recognises the prohibition in any message (RE2 regular expression, searched anywhere;
    # (?i) ignores case). The first user message it matches is where it was stated.
    present: '(?i)\\bnever\\b[^.;\\n]*\\brestart'
    # Recognises an answer that breaks it.
    violated_by: '(?i)^\\s*yes\\b'
    # Optional: an answer honours the prohibition only if it also matches this.
    # required: '(?i)^\\s*no\\b'

# The conversation, in order. A turn is either a user message (user:) or a forget event.
turns:
  # key=value declarations, each filling a whole segment between ';' or line breaks (prose
  # around one hides it), with a key of keys: above.
  - user: module=Reporting; database=PostgreSQL
    assistant: Noted.              # optional scripted reply, kept for every policy
  - user: constraint=never restart production during business hours
    assistant: Understood.
  # A correction: the same key with a new value. PostgreSQL becomes a stale value.
  - user: database=SQL Server 2022
    assistant: Noted.
  - user: The month-end invoice run is slow again.
    assistant: I will look at the invoice run.
  - user: The users say the lock started after the last patch.
    assistant: Noted.
    # session: main                # which session this turn belongs to (default: the first)
    # summary: ...                 # the summarizer's output after this turn, verbatim
    # writer: [{{key: database, value: Billing, evidence: "module=Billing"}}]  # the fact writer's
    # sets: {{version: "5.0"}}      # a value stated in prose on purpose: the truth for the checks
  # A probe: no scripted reply. The model answers, and every check runs on this turn.
  - user: Can I restart production now to clear the lock?
    probe: restart
    asks: [no-restart]             # the prohibitions this question asks about ([] for none)
  # - forget: database             # forget one fact key (or `forget: all`); clears histories
"""


def _title(name: str) -> str:
    """`restart-after-forget` -> `Restart after forget`."""
    words = re.sub(r"[-_]+", " ", name).strip()
    return words[:1].upper() + words[1:]


def scaffold_text(name: str) -> str:
    """The scaffold for chronology `name`, as written to `chronologies/<name>.yaml`."""
    return _TEMPLATE.format(name=name, title=_title(name))


def write_scaffold(name: str, folder: Path = Path("chronologies")) -> Path:
    """Write `folder/<name>.yaml`; raise InputError for a bad name or an existing file."""
    if not NAME.match(name):
        hint = f"; use {Path(name).stem!r}" if name.lower().endswith((".yaml", ".yml")) else ""
        raise InputError(
            f"new {name!r}: a chronology name is a file stem: letters, digits, '-' and '_', "
            f"starting with a letter or digit (e.g. restart-after-forget){hint}"
        )
    path = folder / f"{name}.yaml"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Created only if nothing is there (O_EXCL, never through a link), with no window for a race.
        with create_new(path, newline="\n") as file:
            file.write(scaffold_text(name))
    except FileExistsError:
        if not folder.is_dir():
            raise InputError(f"{folder} is not a folder; harness new writes into {folder}/") from None
        if path.is_symlink():
            raise InputError(
                f"{path} is a symbolic link; harness new never writes through one: choose another name, or remove it"
            ) from None
        raise InputError(f"{path} already exists; choose another name or edit that file") from None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    return path
