"""The `reference` model: an offline, deterministic literal reader. It qualifies no model.

It exists so a run needs no network and gives the same answer every time; its answers show
what a policy put in front of the model, not what any real model would make of it:

- **answer**: reads only its request view (`request.messages`). It knows the latest
  declaration per allowed key that it can see (read by `harness.declarations`, the reader the
  fact store and the checks use), and answers a permission request ("Can I restart ...?",
  found by the rules of `harness.questions`) with `No — "<the clause that forbids it>"` if and
  only if a clause of its view holds a negation and the action's verb, else
  `Yes — nothing in my context forbids it.` Another question is answered with the
  declarations of the keys it names (all it sees when it names none); anything else `Noted.`
- **summarizer**: returns the turn's scripted summary verbatim, else a lossy, deterministic
  merge of the previous summary and the user's side of the exchange.
- **writer**: returns the turn's scripted candidates, else candidates built from the explicit
  declarations of the user's text (`harness.facts.reference_writer_output`).

It never reports usage: `Completion.usage` is always None (`unknown`, never 0).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.chronology import UserTurn
from harness.errors import ModelError
from harness.declarations import ALLOWED_KEYS, parse_declarations
from harness.facts import Candidate, reference_writer_output
from harness.messages import Message
from harness.models import CallRequest, Completion
from harness.questions import clauses, permission_request, question

# A summary line that is one declaration, as the summarizer itself writes them.
DECLARATION_LINE_RE = re.compile(rf"^({'|'.join(ALLOWED_KEYS)})=(.+)$")

NEGATION_RE = re.compile(
    r"\b(?:never|not|no|don['’]t|do\s+not|must\s+not|mustn['’]t|cannot|can['’]t"
    r"|forbidden|prohibited)\b",
    re.IGNORECASE,
)

YES = "Yes — nothing in my context forbids it."
NOTHING = "Nothing in my context answers that."
NOTED = "Noted."
STATEMENT_LINES_KEPT = 4  # older statement lines fall out of the summary: that is its loss


class ReferenceModel:
    """The embedded default model: deterministic, offline, and qualifying no model."""

    name = "reference"

    def complete(self, request: CallRequest) -> Completion:
        """Answer one call; usage is always None because nothing was reported."""
        if request.kind == "answer":
            return Completion(text=answer(request.messages))
        if request.kind == "summarizer":
            return Completion(text=summarize(request), scripted=request.turn.summary is not None)
        if request.kind == "writer":
            return Completion(text=write(request), scripted=request.turn.writer is not None)
        raise ModelError(
            f"reference: unknown call kind {request.kind!r} (expected answer, summarizer or writer)"
        )


# --- answer -------------------------------------------------------------------------------


def answer(messages: Sequence[Message]) -> str:
    """The literal reader's answer to the last user message of `messages`."""
    current = _last_user_index(messages)
    if current is None:
        return NOTHING
    offset, own = own_text(messages[current])
    permission = permission_request(own)
    if permission is not None:
        asked = (offset + permission.sentence.start, offset + permission.sentence.end)
        found = find_prohibition(messages, permission.verb, current, asked)
        return YES if found is None else f'No — "{found}"'
    asked_about = question(own)
    if asked_about is not None:
        return _key_answer(asked_about.text, visible_declarations(messages))
    return NOTED


def _last_user_index(messages: Sequence[Message]) -> int | None:
    indexes = [i for i, m in enumerate(messages) if m.role == "user"]
    return indexes[-1] if indexes else None


def own_text(message: Message) -> tuple[int, str]:
    """The user's own words in a message, and where they start: in bounded-facts' message
    mode the facts block is prepended (separated by a blank line), and it asks nothing."""
    if message.origin == "facts+current":
        start = message.content.find("\n\n")
        if start >= 0:
            return start + 2, message.content[start + 2 :]
    return 0, message.content


def visible_declarations(messages: Sequence[Message]) -> dict[str, str]:
    """Latest value per key over every message of the view, read by the one reader of
    declarations (`harness.declarations`), in order of each key's first appearance."""
    declared: dict[str, str] = {}
    for message in messages:
        for key, declaration in parse_declarations(message.content).items():
            declared[key] = declaration.value
    return declared


def find_prohibition(
    messages: Sequence[Message], verb: str, current: int, asked: tuple[int, int]
) -> str | None:
    """The first clause (message order) that negates `verb`, outside the question itself."""
    verb_re = re.compile(rf"\b{re.escape(_stem(verb))}\w*", re.IGNORECASE)
    for index, message in enumerate(messages):
        for clause in clauses(message.content):
            if index == current and asked[0] <= clause.start < asked[1]:
                continue  # the question itself is not a prohibition, whatever words it uses
            if NEGATION_RE.search(clause.text) and verb_re.search(clause.text):
                return clause.text.rstrip(".!?…")  # quoted without its closing mark
    return None


def _stem(verb: str) -> str:
    """`restart` -> `restart`, `delete` -> `delet` (so `deleting` matches too)."""
    verb = verb.lower()
    return verb[:-1] if len(verb) > 3 and verb.endswith("e") else verb


def _key_answer(question: str, declared: dict[str, str]) -> str:
    # Declarations are written as whole segments, so the reader reads its own answers back
    # exactly as it read them (in a later turn's history).
    keys = mentioned_keys(question)
    if keys:
        return "; ".join(f"{k}={declared[k]}" if k in declared else f"no {k} in my context" for k in keys)
    if declared:
        return "My context declares:\n" + "; ".join(f"{k}={v}" for k, v in declared.items())
    return NOTHING


def mentioned_keys(question: str) -> list[str]:
    """Allowed keys named in the question as whole words (plurals too), in order of appearance."""
    found: list[tuple[int, str]] = []
    for key in ALLOWED_KEYS:
        match = re.search(rf"\b{_plural_pattern(key)}\b", question, re.IGNORECASE)
        if match:
            found.append((match.start(), key))
    return [key for _, key in sorted(found)]


def _plural_pattern(key: str) -> str:
    # Only `priority` among the allowed keys has an irregular plural (`priorities`).
    if key.endswith("y"):
        return f"{key[:-1]}(?:y|ies)"
    return f"{key}s?"


# --- summarizer ----------------------------------------------------------------------------


def summarize(request: CallRequest) -> str:
    """The scripted summary verbatim ("" included), else the deterministic lossy merge."""
    if request.turn.summary is not None:
        return request.turn.summary
    if request.exchange is None:
        raise ModelError("reference summarizer: the request carries no exchange to summarize")
    user_text, _answer = request.exchange  # the answer is generated text, never summarized
    previous = [line.strip() for line in (request.previous_summary or "").splitlines() if line.strip()]
    return merge_summary(previous + new_summary_lines(user_text))


def new_summary_lines(user_text: str) -> list[str]:
    """What the user's text adds: its declarations, else the statement itself; a question is
    noted as asked (so a session that opens with a question still gets a summary)."""
    declarations = parse_declarations(user_text)
    if declarations:
        return [f"{d.key}={d.value}" for d in declarations.values()]
    collapsed = " ".join(user_text.split())
    if collapsed.endswith("?"):
        return [f"The user asked: {collapsed}"]
    return [collapsed] if collapsed else []


def merge_summary(lines: Sequence[str]) -> str:
    """Declarations deduplicated by key (value replaced in place), then the last 4 statements."""
    declarations: dict[str, str] = {}
    statements: list[str] = []
    for line in lines:
        match = DECLARATION_LINE_RE.match(line)
        if match:
            declarations[match.group(1)] = line  # re-assigning keeps the first position
        else:
            statements.append(line)
    return "\n".join([*declarations.values(), *statements[-STATEMENT_LINES_KEPT:]])


# --- writer --------------------------------------------------------------------------------


def write(request: CallRequest) -> str:
    """The writer JSON for the user's text, or for the candidates the turn scripts."""
    if request.user_text is None:
        raise ModelError("reference writer: the request carries no user_text to extract from")
    return reference_writer_output(request.user_text, scripted_candidates(request.turn))


def scripted_candidates(turn: UserTurn) -> list[Candidate] | None:
    """The turn's scripted writer output; None when nothing is scripted."""
    return None if turn.writer is None else list(turn.writer)
