"""The `reference` model: an offline, deterministic literal reader. It qualifies no model.

It exists so a run needs no network and gives the same answer every time; its answers show
what a policy put in front of the model, not what any real model would make of it:

- **answer**: reads only its request view (`request.messages`). It knows the latest
  `key=value` per allowed key that it can see, and answers a permission question
  ("Can I restart ...?") with `No — "<the visible prohibition>"` if and only if a message
  in its view forbids the action, else `Yes — nothing in my context forbids it.`
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
from harness.facts import ALLOWED_KEYS, Candidate, parse_declarations, reference_writer_output
from harness.messages import Message
from harness.models import CallRequest, Completion

_KEYS = "|".join(ALLOWED_KEYS)

# A declaration anywhere in a message; the lookbehind keeps `my-module=x` from counting.
DECLARATION_RE = re.compile(rf'(?<![\w-])({_KEYS})\s*=\s*([^;\n"|]+)')

# A summary line that is one declaration, as the summarizer itself writes them.
DECLARATION_LINE_RE = re.compile(rf"^({_KEYS})=(.+)$")

# "Can I restart ...", "is it ok to restart ...", "am I allowed to restart ..." at a line start.
# A few filler words may sit before the verb ("Can I please restart"): the verb is the action.
PERMISSION_RE = re.compile(
    r"^[ \t]*(?:(?:can|may|could|should)\s+(?:I|we)|is\s+it\s+ok(?:ay)?\s+to|am\s+I\s+allowed\s+to)"
    r"\s+(?:(?:please|just|also|now|safely)\s+)*(?P<verb>[A-Za-z]+)",
    re.IGNORECASE | re.MULTILINE,
)

NEGATION_RE = re.compile(
    r"\b(?:never|not|no|don['’]t|do\s+not|must\s+not|mustn['’]t|cannot|can['’]t"
    r"|forbidden|prohibited)\b",
    re.IGNORECASE,
)

# Segments are sentence-ish pieces; the separators never belong to a quoted prohibition.
SEGMENT_RE = re.compile(r"[^.;!?\n]+")

WH_QUESTION_RE = re.compile(r"^(?:what|which|where|who|when|how|why)\b", re.IGNORECASE)

# Blank lines separate an injected facts block from the user's own text.
PARAGRAPH_SPLIT_RE = re.compile(r"\n[ \t]*\n")

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
            return Completion(text=summarize(request))
        if request.kind == "writer":
            return Completion(text=write(request))
        raise ModelError(
            f"reference: unknown call kind {request.kind!r} (expected answer, summarizer or writer)"
        )


# --- answer -------------------------------------------------------------------------------


def answer(messages: Sequence[Message]) -> str:
    """The literal reader's answer to the last user message of `messages`."""
    current = _last_user_index(messages)
    if current is None:
        return NOTHING
    declared = visible_declarations(messages)
    content = messages[current].content
    permission = _last_permission_question(content)
    if permission is not None:
        return _permission_answer(messages, current, permission)
    question = question_text(content)
    if question.endswith("?") or WH_QUESTION_RE.match(question):
        return _key_answer(question, declared)
    return NOTED


def _last_user_index(messages: Sequence[Message]) -> int | None:
    indexes = [i for i, m in enumerate(messages) if m.role == "user"]
    return indexes[-1] if indexes else None


def _last_permission_question(content: str) -> re.Match[str] | None:
    # The last one: a facts block prepended to the message comes before the user's own text.
    matches = list(PERMISSION_RE.finditer(content))
    return matches[-1] if matches else None


def visible_declarations(messages: Sequence[Message]) -> dict[str, str]:
    """Latest value per key over all messages, in order of the key's first appearance."""
    declared: dict[str, str] = {}
    for message in messages:
        for match in DECLARATION_RE.finditer(message.content):
            # A sentence's full stop is not part of the value (the reader's own "key=value." answers).
            value = match.group(2).strip().rstrip(".").rstrip()
            if value:
                declared[match.group(1)] = value
    return declared


def question_text(content: str) -> str:
    """The user's own text: the last paragraph, so a prepended facts block is left out."""
    paragraphs = [p.strip() for p in PARAGRAPH_SPLIT_RE.split(content) if p.strip()]
    return paragraphs[-1] if paragraphs else ""


def _permission_answer(messages: Sequence[Message], current: int, question: re.Match[str]) -> str:
    content = messages[current].content
    line_end = content.find("\n", question.end())
    excluded = (question.start(), len(content) if line_end < 0 else line_end)
    found = find_prohibition(messages, question.group("verb"), current, excluded)
    return YES if found is None else f'No — "{found}"'


def find_prohibition(
    messages: Sequence[Message], verb: str, current: int, excluded: tuple[int, int]
) -> str | None:
    """The first segment (message order) that negates `verb`, outside the question line."""
    verb_re = re.compile(rf"\b{re.escape(_stem(verb))}\w*", re.IGNORECASE)
    for index, message in enumerate(messages):
        for segment in SEGMENT_RE.finditer(message.content):
            if index == current and excluded[0] <= segment.start() < excluded[1]:
                continue  # the question itself is not a prohibition, whatever words it uses
            text = segment.group()
            if NEGATION_RE.search(text) and verb_re.search(text):
                return text.strip().removeprefix("- ")  # a facts-block line, without its bullet
    return None


def _stem(verb: str) -> str:
    """`restart` -> `restart`, `delete` -> `delet` (so `deleting` matches too)."""
    verb = verb.lower()
    return verb[:-1] if len(verb) > 3 and verb.endswith("e") else verb


def _key_answer(question: str, declared: dict[str, str]) -> str:
    keys = mentioned_keys(question)
    if keys:
        parts = [f"{k}={declared[k]}" if k in declared else f"no {k} in my context" for k in keys]
        return "; ".join(parts) + "."
    if declared:
        return "My context declares: " + "; ".join(f"{k}={v}" for k, v in declared.items()) + "."
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
