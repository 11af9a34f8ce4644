"""The prompt a rubric expectation is judged through, chosen by the item's benchmark.

A rubric of a chronology written by hand is judged through the harness's own prompt
(`harness.run.judge.RUBRIC_PROMPT`, after its system instructions). An imported benchmark item
is judged as its benchmark judges it, so that the scores the report computes from the verdicts
are the benchmark's (harness.report.benchmarks):

- **LongMemEval** (`source.dataset` starting `longmemeval`): `get_anscheck_prompt` of
  src/evaluation/evaluate_qa.py (github.com/xiaowu0162/LongMemEval, MIT License, Copyright (c)
  2024 Di Wu). The importer writes the prompt's head as the rubric (the question type's
  instructions, the question, the correct answer; harness.importing.longmemeval `judge_rubric`);
  the template here adds the model's response and the closing question, the abstention one for
  an item whose id holds `_abs`, as upstream decides. One user message, no system message, no
  structured output; the verdict is upstream's: YES when `yes` is anywhere in the reply, in any
  case, else NO.
- **MultiChallenge** (`source.dataset` `multichallenge`): `JUDGE_PROMPT` of src/evaluator.py
  (github.com/ekwinox117/multi-challenge), the response and the item's TARGET_QUESTION (the
  rubric) filled in, one user message, with upstream's structured output (`reasoning`, then
  `verdict` YES or NO); the verdict is the JSON's `verdict`, else the last YES or NO word of the
  reply (upstream asks for the reasoning first); neither: unusable.

Each prompt's SHA-256 (of its system message and template) is recorded in the manifest of a run
with a judge (`judge_prompts`), and the report names it beside the scores.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.base import json_bounded
from harness.chronology import Source
from harness.results.rows import JUDGE_UNUSABLE, LONGMEMEVAL_PROMPTS, MULTICHALLENGE_PROMPTS
from harness.run.judge import RUBRIC_INSTRUCTIONS, RUBRIC_PROMPT, RUBRIC_SCHEMA, parse_rubric_verdict

__all__ = ["HARNESS", "JudgePrompt", "PROMPTS", "prompt_for", "recorded_prompts"]


@dataclass(frozen=True)
class JudgePrompt:
    """How a rubric is asked: the template (`{question}`, `{answer}`, `{rubric}`), the system
    message before it (None: the prompt is the one message, as the benchmark sends it), the
    structured output asked for (None: plain text), and how the reply becomes judged cells."""

    name: str
    template: str
    system: str | None
    schema: Mapping[str, Any] | None
    read: Callable[[str, str], dict[str, Any]]  # (reply, the rubric's passing verdict) -> cells
    origin: str  # where its words come from

    @property
    def sha256(self) -> str:
        """The SHA-256 of what is sent besides the filled fields: system message and template."""
        return hashlib.sha256(json.dumps([self.system, self.template]).encode("utf-8")).hexdigest()


def yes_anywhere(text: str, passes: str) -> dict[str, Any]:
    """LongMemEval's reading (evaluate_qa.py: `label = 'yes' in eval_response.lower()`)."""
    word = "YES" if "yes" in text.lower() else "NO"
    return {"judged_in_answer": word == passes.upper(), "judge_note": f"verdict {word}"}


_LAST_WORD = re.compile(r"\b(YES|NO)\b", re.IGNORECASE)


def reasoned_verdict(text: str, passes: str) -> dict[str, Any]:
    """MultiChallenge's reply: the JSON `verdict`, else the last YES or NO of the reasoning."""
    try:
        reply = json_bounded.loads(text, what="the judge's reply")
    except ValueError:  # not JSON, or beyond the bounds: the reasoning's last word decides
        reply = None
    verdict = reply.get("verdict") if isinstance(reply, dict) else None
    if isinstance(verdict, str) and verdict.strip().upper() in ("YES", "NO"):
        word = verdict.strip().upper()
    else:
        words = _LAST_WORD.findall(text)
        if not words:
            shown = " ".join(text.split())[:80]
            return {"judged_in_answer": None, "judge_note": f"{JUDGE_UNUSABLE}: no verdict word in {shown!r}"}
        word = words[-1].upper()
    return {"judged_in_answer": word == passes.upper(), "judge_note": f"verdict {word}"}


HARNESS = JudgePrompt(
    "harness", RUBRIC_PROMPT, RUBRIC_INSTRUCTIONS, RUBRIC_SCHEMA, parse_rubric_verdict, "harness.run.judge"
)

_LONGMEMEVAL = "LongMemEval src/evaluation/evaluate_qa.py get_anscheck_prompt (MIT License, (c) 2024 Di Wu)"
LONGMEMEVAL = JudgePrompt(
    LONGMEMEVAL_PROMPTS[0],
    "{rubric}\n\nModel Response: {answer}\n\nIs the model response correct? Answer yes or no only.",
    None,
    None,
    yes_anywhere,
    _LONGMEMEVAL,
)
LONGMEMEVAL_ABSTENTION = JudgePrompt(
    LONGMEMEVAL_PROMPTS[1],
    "{rubric}\n\nModel Response: {answer}\n\nDoes the model correctly identify the question as unanswerable? "
    "Answer yes or no only.",
    None,
    None,
    yes_anywhere,
    _LONGMEMEVAL,
)
MULTICHALLENGE = JudgePrompt(
    MULTICHALLENGE_PROMPTS[0],
    "You are tasked with evaluating a model response to see if it meets a specific criteria.\n"
    "The criteria will always be YES/NO evaluation.\n\n"
    "The model response is as follows:\n<MODEL_RESPONSE>\n{answer}\n</MODEL_RESPONSE>\n\n"
    "The criteria that the model response must meet is as follows. Be VERY STRICT!:\n"
    "<CRITERIA>\n{rubric}\n</CRITERIA>\n\n"
    'Print your reasoning followed by your verdict, either "YES" or "NO".',
    None,
    {  # upstream's JudgeResponse (src/evaluator.py), as a JSON Schema
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "verdict": {"type": "string", "enum": ["YES", "NO"]}},
        "required": ["reasoning", "verdict"],
        "additionalProperties": False,
    },
    reasoned_verdict,
    "MultiChallenge src/evaluator.py JUDGE_PROMPT (github.com/ekwinox117/multi-challenge)",
)

PROMPTS = {p.name: p for p in (HARNESS, LONGMEMEVAL, LONGMEMEVAL_ABSTENTION, MULTICHALLENGE)}


def prompt_for(source: Source | None) -> JudgePrompt:
    """The prompt an item's rubrics are judged through: its benchmark's, else the harness's."""
    if source is None:
        return HARNESS
    if source.dataset.startswith("longmemeval"):
        # upstream: get_anscheck_prompt(..., abstention='_abs' in entry['question_id'])
        return LONGMEMEVAL_ABSTENTION if "_abs" in source.item_id else LONGMEMEVAL
    if source.dataset == "multichallenge":
        return MULTICHALLENGE
    return HARNESS


def recorded_prompts(sources: list[Source | None]) -> dict[str, str]:
    """name -> SHA-256 of each prompt these chronologies' rubrics are judged through (the manifest's
    `judge_prompts`)."""
    used = {prompt_for(s).name: prompt_for(s) for s in sources}
    return {name: used[name].sha256 for name in sorted(used)}
