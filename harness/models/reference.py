"""The `reference` model: an offline, deterministic literal reader. It qualifies no model.

It exists so a run needs no network and gives the same answer every time; its answers show
what a policy put in front of the model, not what any real model would make of it:

- **answer**: reads only its request view (`request.messages`). It knows the latest
  declaration per key that it can see (read by `harness.chronology.declarations`, the reader the
  fact store and the checks use, for the chronology's key set, `request.turn.keys`), and answers a permission request ("Can I restart ...?",
  found by the rules of `harness.chronology.questions`) with `No — "<the clause that forbids it>"` if and
  only if a clause of its view holds a negation and the action's verb, else
  `Yes — nothing in my context forbids it.` Another question is answered with the
  declarations of the keys it names (all it sees when it names none); anything else `Noted.`
- **any other role** (a policy's extra call): the output the chronology scripts for that
  role at this turn (`summary:`, `writer:`; see `UserTurn.scripted_reply`), marked scripted;
  else the deterministic reply the policy gave with the call (`CallRequest.reference`); else
  the call fails, naming the role. The built-in summarizer and fact writer are in
  `policies/summary.py` and `policies/bounded_facts.py`, beside their prompts.

It states its `capabilities` (deterministic, cannot judge, `reader: literal`), which the manifest's
`model_settings` records: the report reads that to say what it cannot answer. It never reports usage: `Completion.usage` is always None (`unknown`, never 0). Its text is
valid Unicode: a lone surrogate in a policy's deterministic reply (a plug-in's) becomes U+FFFD,
and the completion's notes say so (`harness.base.text.valid_unicode`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from harness.base.capabilities import LITERAL, Capabilities
from harness.base.errors import ModelError
from harness.base.messages import Message
from harness.base.text import valid_unicode
from harness.chronology.declarations import ALLOWED_KEYS, key_name, parse_declarations
from harness.chronology.questions import NEGATION_RE, clauses, permission_request, question
from harness.models import CallRequest, Completion

YES = "Yes — nothing in my context forbids it."
NOTHING = "Nothing in my context answers that."
NOTED = "Noted."


class ReferenceModel:
    """The embedded default model: deterministic, offline, and qualifying no model."""

    name = "reference"
    # Recorded in the manifest's `model_settings` (harness.run.batch): `reader: literal` lets a
    # report, built from results alone, say which questions it cannot answer (any not a permission
    # request nor about a declared key: a benchmark's own questions).
    capabilities = Capabilities(deterministic=True, can_judge=False, reader=LITERAL)

    def complete(self, request: CallRequest) -> Completion:
        """Answer one call; usage is always None because nothing was reported."""
        completion = self._complete(request)
        text, replaced = valid_unicode(completion.text)
        if not replaced:
            return completion
        halves = f"{replaced} lone surrogate{'s' if replaced != 1 else ''}"
        note = f"the reply held {halves} (halves of UTF-16 pairs: not valid Unicode); each was replaced by U+FFFD"
        return replace(completion, text=text, notes=(*completion.notes, note))

    def _complete(self, request: CallRequest) -> Completion:
        if request.kind == "answer":
            return Completion(text=answer(request.messages, request.turn.keys))
        scripted = request.turn.scripted_reply(request.kind)
        if scripted is not None:
            return Completion(text=scripted, scripted=True)
        if request.reference is not None:
            reply = request.reference(request)  # text, or a Completion with an emulated provider's usage
            return reply if isinstance(reply, Completion) else Completion(text=reply)
        raise ModelError(
            f"reference: no deterministic reply for a {request.kind!r} call; the policy making it "
            "must pass one (`aux.call(..., reference=...)`), or map the role to another model "
            f"with --model-role {request.kind}=MODEL"
        )


# --- answer -------------------------------------------------------------------------------


def answer(messages: Sequence[Message], keys: Collection[str] = ALLOWED_KEYS) -> str:
    """The literal reader's answer to the last user message of `messages`; `keys` is the
    chronology's key set, what a `key=value` segment of the view declares."""
    current = last_user_index(messages)
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
        return key_answer(asked_about.text, visible_declarations(messages, keys), keys)
    return NOTED


def last_user_index(messages: Sequence[Message]) -> int | None:
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


def visible_declarations(messages: Sequence[Message], keys: Collection[str] = ALLOWED_KEYS) -> dict[str, str]:
    """Latest value per key of `keys` over every message of the view, read by the one reader of
    declarations (`harness.chronology.declarations`), in order of each key's first appearance."""
    return {key: stated[-1][1] for key, stated in declaration_history(messages, keys).items()}


def declaration_history(
    messages: Sequence[Message], keys: Collection[str] = ALLOWED_KEYS
) -> dict[str, list[tuple[int, str]]]:
    """Every value declared per key of `keys`, as (index of the message, value) in message
    order; keys in order of first appearance."""
    stated: dict[str, list[tuple[int, str]]] = {}
    for index, message in enumerate(messages):
        for key, declaration in parse_declarations(message.content, keys).items():
            stated.setdefault(key, []).append((index, declaration.value))
    return stated


def find_prohibition(messages: Sequence[Message], verb: str, current: int, asked: tuple[int, int]) -> str | None:
    """The first clause (message order) that negates `verb`, outside the question itself."""
    found = prohibition_at(messages, verb, current, asked)
    return None if found is None else found[1]


def prohibition_at(
    messages: Sequence[Message], verb: str, current: int, asked: tuple[int, int]
) -> tuple[int, str] | None:
    """`find_prohibition`'s clause with the index of the message holding it."""
    verb = verb.lower()  # its stem: `restart` -> `restart`, `delete` -> `delet` (so `deleting` matches too)
    stem = verb[:-1] if len(verb) > 3 and verb.endswith("e") else verb
    verb_re = re.compile(rf"\b{re.escape(stem)}\w*", re.IGNORECASE)
    for index, message in enumerate(messages):
        for clause in clauses(message.content):
            if index == current and asked[0] <= clause.start < asked[1]:
                continue  # the question itself is not a prohibition, whatever words it uses
            if NEGATION_RE.search(clause.text) and verb_re.search(clause.text):
                return index, clause.text.rstrip(".!?…")  # quoted without its closing mark
    return None


def key_answer(question: str, declared: dict[str, str], keys: Collection[str]) -> str:
    # Declarations are written as whole segments, so the reader reads its own answers back
    # exactly as it read them (in a later turn's history).
    named = mentioned_keys(question, keys)
    if named:
        return "; ".join(f"{k}={declared[k]}" if k in declared else f"no {k} in my context" for k in named)
    if declared:
        return "My context declares:\n" + "; ".join(f"{k}={v}" for k, v in declared.items())
    return NOTHING


def mentioned_keys(question: str, keys: Collection[str] = ALLOWED_KEYS) -> list[str]:
    """Keys of `keys` named in the question as whole words (plurals too), in order of appearance."""
    found: list[tuple[int, str]] = []
    for key in keys:
        match = key_name(key).search(question)
        if match:
            found.append((match.start(), key))
    return [key for _, key in sorted(found)]
