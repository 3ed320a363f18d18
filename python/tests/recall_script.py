"""The scripted model of the recall tests (issue 53), the same in every framework: a session of
three typed requests, each reading a range of modules; the second pastes review notes, so that
once it is old a compaction removes it whole. After the third one's reads the model recalls,
with the adapter's `ctxcompact_recall` tool, the output a placeholder names and then the removed
request, by the handles the notes name (following the handles a recalled span holds, as a model
would), and answers.

It reads the messages a model call was sent as OpenAI Chat dicts (each test turns its
framework's messages into them) and says the next step: ("read", n), ("recall", handle) or
("final",).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Tuple

TURNS = [
    "Read modules 0 to 11 of the crate, then summarise them.",
    "Now read modules 12 to 23 and check them against my review notes."
    + "".join(f" Note {n}: module {n % 24} keeps its checks, and line {n} is safe." for n in range(160)),
    "Read modules 24 to 35, then recall word for word my request before this one.",
]
FINAL = "SCRIPTED-FINAL-ANSWER"
RANGE = re.compile(r"modules (\d+) to (\d+)")
HANDLE = re.compile(r"handle ([0-9a-f]{12}/[0-9a-f]{12})")
READ_ID = re.compile(r"^read_(\d+)$")
RECALL = "ctxcompact_recall"


def read_output(path: str) -> str:
    """What the read tool gives for a module: 60 lines, about 1,000 tokens."""
    return "\n".join(f"{path}:{n}: let value_{n} = compute({n}) * factor_{n};" for n in range(60))


def text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def next_step(messages: List[Dict[str, Any]]) -> Tuple[Any, ...]:
    typed = [text(m.get("content")) for m in messages if m.get("role") == "user"]
    current = next((t for t in reversed(typed) if RANGE.search(t)), "")
    first, last = (int(x) for x in RANGE.findall(current)[-1])
    calls = [(c["id"], c["function"]["name"]) for m in messages if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []]
    results = {m.get("tool_call_id"): text(m.get("content")) for m in messages
               if m.get("role") == "tool"}
    read = [int(found.group(1)) for i, _ in calls if (found := READ_ID.match(i))]
    following = max([first - 1, *read]) + 1
    recalls = [results[i] for i, name in calls if name == RECALL and i in results]
    if following <= last and not recalls:
        return ("read", following)
    if "recall" not in current:
        return ("final",)
    if not recalls:
        cleared = [HANDLE.search(t) for t in results.values() if t.startswith("[ctxcompact: output of")]
        handles = [found.group(1) for found in cleared if found]
        return ("recall", handles[0]) if handles else ("final",)
    if any(TURNS[1] in t for t in recalls):
        return ("final",)
    asked = {json.loads(c["function"]["arguments"])["handle"] for m in messages
             if m.get("role") == "assistant" for c in m.get("tool_calls") or []
             if c["function"]["name"] == RECALL}
    notes = [t for t in typed if "[ctxcompact:" in t] + recalls[1:]
    named = [h for t in notes for h in HANDLE.findall(t) if h not in asked]
    return ("recall", named[0]) if named and len(recalls) < 8 else ("final",)


def recall_id(handle: str) -> str:
    """The call id of the recall of `handle` (each handle is recalled once)."""
    return "recall_" + handle.replace("/", "_")


def recalled_lines(history: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The messages the recall tool gave back in a history, each line parsed."""
    names = {c["id"]: c["function"]["name"] for m in history if m.get("role") == "assistant"
             for c in m.get("tool_calls") or []}
    lines = []
    for m in history:
        if m.get("role") == "tool" and names.get(m.get("tool_call_id")) == RECALL:
            lines += [json.loads(line) for line in text(m.get("content")).splitlines()
                      if line.startswith("{")]
    return lines
