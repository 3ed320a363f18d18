"""Checks that a real agent recalled a cleared tool output through `ctxcompact mcp` (issue 53),
from the bodies upstream.py recorded: the scripted model called the MCP server's recall tool
with the handle a cleared output's placeholder names, and the tool result in the next body
holds that output's message as archived, whose output equals the one the client sent before
the proxy cleared it.

Usage: mcp_recall.py RECORD_DIR KIND
"""

import json
import os
import sys

# Importing upstream.py from the source tree leaves no __pycache__ there.
sys.dont_write_bytecode = True
from upstream import HANDLE, anthropic_turn, outputs_of, outputs_sent, responses_turn, text_of

record, kind = sys.argv[1:3]


def messages(body):
    """The messages (Anthropic) or input items (Responses) of a body."""
    found = body.get("messages") if kind == "anthropic" else body.get("input")
    return found if isinstance(found, list) else []


def turn(body):
    return anthropic_turn(body) if kind == "anthropic" else responses_turn(messages(body))


names = sorted(f for f in os.listdir(record) if f.endswith(f"-{kind}.json"))
bodies = [json.load(open(os.path.join(record, n))) for n in names]
at = next((i for i, b in enumerate(bodies) if any("_mcprecall_" in c for c in turn(b)[3])), None)
assert at is not None, "no body holds the result of a call of ctxcompact mcp's recall tool"
call_id, result = next((c, o) for c, o in turn(bodies[at])[3].items() if "_mcprecall_" in c)
# The body answered with the call named the handle in a cleared output's placeholder.
asked = int(call_id.rsplit("_", 1)[1])
before = max(i for i, n in enumerate(names) if int(n[:4]) <= asked)
handles = {h for o in turn(bodies[before])[3].values() for h in HANDLE.findall(o)}
assert handles, f"{names[before]} names no handle"
# The next body of the session (one holding tool results; not a title or quota check).
following = next(i for i in range(before + 1, len(bodies)) if turn(bodies[i])[3])
assert at == following, f"the recall's result is in {names[at]}, not the next body"
# The recalled file's lines, whole (Codex's `exec` heads its result with lines of its own).
archived = [json.loads(line) for line in text_of(result).splitlines() if line.startswith("{")]
restored = {i: o for m in archived for i, o in outputs_of(m).items()}
assert restored, f"the recall's result holds no tool output: {text_of(result)[:300]}"
sent = outputs_sent((messages(body) for body in bodies), restored)
assert sent and all(sent[i] == restored[i] for i in restored), \
    "the output recalled differs from the one the client sent"
cleared = [i for i in restored if str(turn(bodies[before])[3].get(i, "")).startswith("[ctxcompact:")]
assert cleared, "the output recalled was not cleared in the body that named its handle"
print(f"mcp_recall: {names[before]} named the handle of the cleared output of {cleared[0]}; "
      f"the recall tool's result in {names[at]} holds it as the client sent it "
      f"({len(text_of(result))} characters); {len(bodies)} {kind} bodies")
