"""Checks that a real agent read its removed history back from the proxy's archive (issue 33,
item 5), from the bodies upstream.py recorded for a session of several typed requests.

- The removed request: REQUEST (a follow-up the person typed, not the first request) was in
  an upstream body as the client sent it, and is no longer a message of the final body: a
  compaction removed it.
- The scripted model, reading the removal marker, searched the archive folder its file is in
  for the start of the request its digest names (with the client's shell tool), then read the
  line the search named with the client's own read tool (Claude Code's Read with an offset and
  a limit of 1; Codex's exec running `sed -n`); the tool result in the next body holds REQUEST
  verbatim, and its archived line, read as JSON, is a user message whose text is REQUEST.
- It read the file a cleared output's placeholder names; the tool result holds that file's
  first line verbatim, and the output archived there is the one the client sent before the
  proxy cleared it.

Usage: recall.py RECORD_DIR KIND REQUEST
"""

import json
import os
import sys

# Importing upstream.py from the source tree leaves no __pycache__ there.
sys.dont_write_bytecode = True
from upstream import FOUND, anthropic_turn, outputs_of, outputs_sent, responses_turn

record, kind, request = sys.argv[1:4]


def messages(body):
    """The messages (Anthropic) or input items (Responses) of a body."""
    found = body.get("messages") if kind == "anthropic" else body.get("input")
    return found if isinstance(found, list) else []


def outputs(body):
    """The tool outputs of a body by call id, as upstream.py reads them."""
    turn = anthropic_turn(body) if kind == "anthropic" else responses_turn(messages(body))
    return turn[3]


def typed(body):
    """The text parts of a body's user messages (not tool results): a request the person typed
    is one of them whole while it is in the history, and a marker's digest is never one."""
    return [t for m in messages(body) if m.get("role") == "user" and not outputs_of(m)
            for t in texts(m)]


def archived_lines(text):
    """The JSON objects of a read-back archive file, one a line, the read tool's line numbers
    (`     1\t`, `1→`) left off."""
    found = []
    for line in text.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            found.append(json.loads(line[start:]))
        except ValueError:
            pass
    return found


def texts(message):
    """The text parts of an archived message (Anthropic or Responses), and its content string."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [p.get("text") for p in content or [] if isinstance(p, dict) and "text" in p]


names = sorted(f for f in os.listdir(record) if f.endswith(f"-{kind}.json"))
bodies = [json.load(open(os.path.join(record, n))) for n in names]
sent = [n for n, b in zip(names, bodies) if request in typed(b)]
assert sent, "the removed request never reached upstream as the client sent it"
# Each read back as the next request body holds it, the body the model answers (a later
# compaction may clear it again, as it clears any old output).
read = {}
for at, body in enumerate(bodies):
    for i, o in outputs(body).items():
        if "_recall_" in i and i not in read:
            read[i] = (at, o)
assert any("_recall_span_" in i for i in read), "the scripted model read back no removed request"
first = min(at for i, (at, _) in read.items() if "_recall_span_" in i)
assert request not in typed(bodies[first]), "the request was never removed"
removed = next(at for at in range(first + 1) if at > names.index(sent[0]) and request not in typed(bodies[at]))
spans = {i: o for i, (_, o) in read.items() if "_recall_span" in i}
read_back = "\n".join(spans[i] for i in sorted(spans))
assert request in read_back, "the tool results of the span's file lack the removed request verbatim"
archived = [m for i in sorted(spans) for m in archived_lines(spans[i])]
exact = [m for m in archived if m.get("role") == "user" and request in texts(m)]
assert exact, "no archived line read back is the removed request's message"
holder = next(i for i in sorted(spans) if request in spans[i])
finds = [o for i, (_, o) in read.items() if "_recall_find_" in i]
named = next((m.groups() for f in finds if (m := FOUND.search(f))), ("?", "?"))

cleared = {i: o for i, (_, o) in read.items() if "_recall_cleared" in i}
assert cleared, "the scripted model read no file a cleared output's placeholder names"
result = next(iter(cleared.values()))
lines = archived_lines(result)
assert lines, "the cleared output's file read back holds no archived line"
# The tool output archived, as the client sent it before the proxy cleared it.
restored = {i: o for m in lines for i, o in outputs_of(m).items()}
client = outputs_sent((messages(body) for body in bodies), restored)
assert client and all(client[i] == restored[i] for i in client), \
    "the cleared output read back differs from the one the client sent"
print(f"recall: the request of {len(request)} characters, sent in {len(sent)} bodies, removed from "
      f"{names[removed]} on; read back verbatim in {names[first]} from {named[0]}, line "
      f"{named[1]} (the line the search named; a tool result of {len(spans[holder])} characters); the cleared output of {', '.join(sorted(client))} read back as sent "
      f"({len(result)} characters); {len(bodies)} {kind} bodies")
