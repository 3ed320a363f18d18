"""A scripted provider for the real-client tests of `ctxcompact proxy` (issue 22).

Serves Anthropic Messages, OpenAI Chat Completions, OpenAI Responses and Gemini on 127.0.0.1,
as JSON or SSE as each request asks, and records every request body it receives in --record
DIR.

A request that offers a file-reading or shell tool is driven as an agent session: until
--tool-calls reads are done (numbered by the ids of the results the history holds, which a
compaction does not renumber), the answer is one more tool call reading one of the large files
in --workdir; then the answer is the final text --final. Any other request (titles,
quota checks) gets a short text answer.

A request whose last typed request names a range (`part files 11 to 20`) is one turn of a
session of several: the answer is a read of the next file of that range not read yet (the
tool-call ids carry the file's number, so that the count survives a compaction removing the
turn's first rounds), then the final text. When that request also says `ctxcompact archive`
(issue 33), the scripted model then reads back what the proxy took out, with the client's own
tools, as a model reading the notes would: the file a cleared output's placeholder names;
then a search of the marker's archive folder for the start of the removed request its digest
names, and a read of the line the search names. recall.py checks what those reads returned.
A session whose requests offer `ctxcompact mcp`'s recall tool (`mcp__ctxcompact__recall`) ends,
after its reads, with a call of it on the handle the first cleared output's placeholder names
(Claude Code: loaded with ToolSearch first; Codex: from a code-mode `exec` script), issue 53;
mcp_recall.py checks its result.
Past --max-requests requests, a session's answer is the final text (a bound on a loop).

Usage: upstream.py --port-file FILE --record DIR --workdir DIR [--tool-calls N] [--final TEXT]
                   [--max-requests N]
"""

import argparse
import itertools
import json
import os
import re
import shlex
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
COUNTER = itertools.count()
LOCK = threading.Lock()


def record(kind, body, path):
    """Records a body (and its path, in `paths.log`); returns its number, which makes every
    answer's ids unique (Claude Code merges answers that share a message id into one
    message)."""
    with LOCK:
        n = next(COUNTER)
        with open(os.path.join(ARGS.record, "paths.log"), "a") as f:
            f.write(f"{n:04d} {kind} {path}\n")
    with open(os.path.join(ARGS.record, f"{n:04d}-{kind}.json"), "wb") as f:
        f.write(body)
    return n


def next_file(n):
    files = sorted(f for f in os.listdir(ARGS.workdir) if f.startswith("part") and f.endswith(".txt"))
    return os.path.join(ARGS.workdir, files[n % len(files)])


USAGE_ANTHROPIC = {"input_tokens": 1000, "cache_read_input_tokens": 0,
                   "cache_creation_input_tokens": 0, "output_tokens": 20}


PART_RANGE = re.compile(r"part files (\d+) to (\d+)")
RECALL_WORDS = "ctxcompact archive"
# A removal marker's archive line, and a cleared output's placeholder (src/note.rs).
SPAN_FILE = re.compile(r"\[ctxcompact: archived in (/[^\s,\]]+\.jsonl), lines? 1\b")
CLEARED_FILE = re.compile(r"\[ctxcompact: output of [^\]]*? cleared [^\]]*?archived in (/[^\s,\]]+\.jsonl), line 1[;\]]")
# A search's first match: `PATH:LINE:`.
FOUND = re.compile(r"^(/[^:\n]+\.jsonl):(\d+):", re.M)
# Tool-call ids: what the call is, then the number of the request answered (unique: Claude Code
# drops a call whose id it has seen, and a compaction may remove the calls before).
READ_ID = re.compile(r"_p(\d+)_\d+$")
# The characters of a request's short form searched for: the digest keeps at least its start.
HEAD_CHARS = 40


# A generic read's call id: its number in the session (`toolu_0012`, `call_0012`).
GENERIC_ID = re.compile(r"^(?:toolu|call)_(\d{4})$")


def reads_done(result_ids):
    """How many generic reads the session has done: one past the highest number the ids of its
    results carry, else their count. A compaction may remove earlier rounds: a count would
    then fall, and the next call would repeat an id the client has already seen."""
    numbers = [int(m.group(1)) for i in result_ids for m in [GENERIC_ID.match(i or "")] if m]
    return max(max(numbers) + 1, len(result_ids)) if numbers else len(result_ids)


def text_of(content):
    """The text of a tool result's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def outputs_of(message):
    """The tool outputs a message (Anthropic or Responses, as sent or archived) carries, by
    call id."""
    if message.get("type") in ("function_call_output", "custom_tool_call_output"):
        return {message.get("call_id"): message.get("output")}
    return {p.get("tool_use_id"): p.get("content") for p in message.get("content") or []
            if isinstance(p, dict) and p.get("type") == "tool_result"}


def outputs_sent(item_lists, ids):
    """The tool outputs of the call ids `ids`, as the client first sent them, from the items
    (messages or input items) of its bodies in order."""
    sent = {}
    for items in item_lists:
        sent.update({i: o for m in items for i, o in outputs_of(m).items()
                     if i in ids and i not in sent})
    return sent


def digest_request(notes):
    """The start of the newest removed request a marker's digest names (`Requests (N):`, one
    `» ` line each, oldest first), or None."""
    found, inside = None, False
    for line in notes.splitlines():
        if line.startswith("Requests ("):
            inside = True
        elif inside and line.startswith("» "):
            found = line[2:].split(" … ")[0][:HEAD_CHARS]
        else:
            inside = False
    return found


def turn_step(typed, notes, calls, outputs):
    """The next step of a turn of a session of several typed requests, or None when no typed
    request names a range. `typed` are the texts of the user's messages (not tool results),
    `notes` all user text outside tool results (where a marker is), `calls` the (id, target:
    path or command) of the tool calls in order, `outputs` each call's result text by id. The
    current request is the last typed text naming a range (the agents' own notes name none).

    Returns ("read", key, path, line or None for the whole file), ("find", key, command) or
    ("final",). After the reads, the recall a person asks for (issue 33) goes as a model
    reading the notes would: read the file the first cleared output's placeholder names; then
    search the conversation's archive folder (the marker's file's) for the start of the removed
    request the marker's digest names (a JSON line holding it as a string), and read the line
    the search names."""
    current = next((t for t in reversed(typed) if PART_RANGE.search(t)), None)
    if current is None:
        return None
    first, last = (int(x) for x in PART_RANGE.findall(current)[-1])
    keys = [i for i, _ in calls]
    read = [int(m.group(1)) for i in keys if (m := READ_ID.search(i))]
    following = max([first - 1, *read]) + 1
    # A recall call in the history says the reads are done, though a compaction removed them.
    if following <= last and not any("_recall_" in i for i in keys):
        return ("read", f"p{following:02d}", os.path.join(ARGS.workdir, f"part{following:02d}.txt"), None)
    if RECALL_WORDS not in current:
        return ("final",)
    if not any("_recall_" in i for i in keys):
        named = CLEARED_FILE.findall("\n".join(outputs.values()))
        if named:
            return ("read", "recall_cleared", named[0], None)
    if any("_recall_span_" in i for i in keys):
        return ("final",)
    finds = [i for i in keys if "_recall_find_" in i and i in outputs]
    if finds:
        found = FOUND.search(outputs[finds[-1]])
        return ("read", "recall_span", found.group(1), int(found.group(2))) if found else ("final",)
    named, head = SPAN_FILE.findall(notes), digest_request(notes)
    if not (named and head):
        return ("final",)
    pattern = shlex.quote(f'"{head}')
    folder = shlex.quote(os.path.dirname(named[0]))
    return ("find", "recall_find", f"grep -n -F -- {pattern} {folder}/*.jsonl | cut -c 1-300")


def anthropic_turn(body):
    """The typed texts, notes, calls and outputs of an Anthropic body, for `turn_step`."""
    typed, notes, calls, outputs = [], [], [], {}
    for m in body.get("messages", []):
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        if m.get("role") == "user":
            notes += texts
            if texts and not any(b.get("type") == "tool_result" for b in blocks):
                typed.append("\n".join(texts))
        for b in blocks:
            if b.get("type") == "tool_use":
                tool_input = b.get("input") or {}
                calls.append((b.get("id", ""), tool_input.get("file_path") or tool_input.get("command", "")))
            if b.get("type") == "tool_result":
                outputs[b.get("tool_use_id", "")] = text_of(b.get("content"))
    return typed, "\n".join(notes), calls, outputs


def anthropic_step(step, n):
    """The content blocks and stop reason of a `turn_step` step: Read (a line of a file: its
    offset and a limit of 1), Bash for a search, the final text."""
    if step[0] == "final":
        return [{"type": "text", "text": ARGS.final}], "end_turn"
    if step[0] == "find":
        tool = {"name": "Bash", "input": {"command": step[2], "description": "Find my earlier request"}}
    else:
        tool = {"name": "Read", "input": {"file_path": step[2]}}
        if step[3] is not None:
            tool["input"].update(offset=step[3], limit=1)
    block = {"type": "tool_use", "id": f"toolu_{step[1]}_{n:04d}", **tool}
    said = "Searching the archive." if step[0] == "find" else f"Reading {os.path.basename(step[2])}."
    return [{"type": "text", "text": said}, block], "tool_use"


def anthropic_answer(body, n):
    """The content blocks and stop reason of the next Anthropic answer (`n`: the request's
    number). opencode's read tool is `read`, taking a `filePath`."""
    names = [t.get("name") for t in body.get("tools") or []]
    if "read" in names:
        results = reads_done([b.get("tool_use_id") for m in body.get("messages", [])
                              if isinstance(m.get("content"), list)
                              for b in m["content"] if b.get("type") == "tool_result"])
        if results >= ARGS.tool_calls:
            return [{"type": "text", "text": ARGS.final}], "end_turn"
        block = {"type": "tool_use", "id": f"toolu_{results:04d}", "name": "read",
                 "input": {"filePath": next_file(results)}}
        return [{"type": "text", "text": f"Reading part {results}."}, block], "tool_use"
    results = reads_done([b.get("tool_use_id") for m in body.get("messages", [])
                          if isinstance(m.get("content"), list)
                          for b in m["content"] if b.get("type") == "tool_result"])
    step = turn_step(*anthropic_turn(body)) if "Read" in names and "Bash" in names else None
    if step:
        return anthropic_step(("final",) if n >= ARGS.max_requests else step, n)
    if "Read" in names and results < ARGS.tool_calls:
        if results % 5 == 4 and "Bash" in names:
            tool = {"name": "Bash", "input": {"command": f"wc -c {next_file(results)}",
                                               "description": "Count the bytes"}}
        else:
            tool = {"name": "Read", "input": {"file_path": next_file(results)}}
        block = {"type": "tool_use", "id": f"toolu_{results:04d}", **tool}
        return [{"type": "text", "text": f"Reading part {results}."}, block], "tool_use"
    block = anthropic_recall(names, anthropic_turn(body)[3], json.dumps(body), n)
    if block is not None:
        return [{"type": "text", "text": "Recalling a cleared output."}, block], "tool_use"
    if "Read" in names:
        return [{"type": "text", "text": ARGS.final}], "end_turn"
    return [{"type": "text", "text": "scripted"}], "end_turn"


# The recall tool of `ctxcompact mcp` as Claude Code and Codex name an MCP server's tool (issue
# 53), the prefix of the server's tools, and the handle a note names (src/note.rs).
MCP_RECALL = "mcp__ctxcompact__recall"
MCP_SERVER = "mcp__ctxcompact"
HANDLE = re.compile(r"; handle ([0-9a-f]{12}/[0-9a-f]{12})[;\]]")


def mcp_recall(outputs, text):
    """Once the reads are done, when the session's request names `ctxcompact mcp`'s tools (in
    `text`) and has not called its recall tool: the handle the first cleared output's
    placeholder names (issue 53), else None."""
    if MCP_SERVER not in text or any("_mcprecall_" in i for i in outputs):
        return None
    cleared = [HANDLE.search(o) for o in outputs.values() if o.startswith("[ctxcompact: output of ")]
    return next((m.group(1) for m in cleared if m), None)


def anthropic_recall(names, outputs, text, n):
    """The call of `ctxcompact mcp`'s recall tool (`mcp_recall`) as Claude Code's model makes
    it: Claude Code defers an MCP server's tools (its request names them and offers ToolSearch),
    so the tool is loaded first, as its prompt says, with ToolSearch's `select:` query."""
    handle = mcp_recall(outputs, text)
    if handle is None:
        return None
    if MCP_RECALL in names:
        return {"type": "tool_use", "id": f"toolu_mcprecall_{n:04d}", "name": MCP_RECALL,
                "input": {"handle": handle}}
    if "ToolSearch" in names and not any("_toolsearch_" in i for i in outputs):
        return {"type": "tool_use", "id": f"toolu_toolsearch_{n:04d}", "name": "ToolSearch",
                "input": {"query": f"select:{MCP_RECALL}", "max_results": 1}}
    return None


def sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" if "type" in e
                   else f"data: {json.dumps(e)}\n\n" for e in events).encode()


def anthropic_stream(body, blocks, stop, n):
    model = body.get("model", "claude")
    events = [{"type": "message_start", "message": {
        "id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": dict(USAGE_ANTHROPIC, output_tokens=1)}}]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i,
                           "content_block": {"type": "text", "text": ""}})
            events.append({"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            events.append({"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {"output_tokens": 20}})
    events.append({"type": "message_stop"})
    return sse(events)


SHELL_TOOLS = ("shell_command", "exec_command", "shell", "local_shell")


def responses_tools(body, items):
    """The names of the tools a Responses request offers: top-level `tools`, and those of
    Codex's `additional_tools` input items (code mode), namespaces opened."""
    def names(tools):
        for tool in tools or []:
            if tool.get("type") == "namespace":
                yield from names(tool.get("tools"))
            else:
                yield tool.get("name")
    found = list(names(body.get("tools")))
    for item in items:
        if item.get("type") == "additional_tools":
            found += names(item.get("tools"))
    return found


def responses_items(body, n):
    """The output items of the next Responses answer. Codex in code mode offers one freeform
    `exec` tool (JavaScript calling nested tools): the call is a `custom_tool_call` whose
    script reads the file with `tools.exec_command`."""
    items = body.get("input") if isinstance(body.get("input"), list) else []
    names = responses_tools(body, items)
    shell = "exec" if "exec" in names else next((n for n in SHELL_TOOLS if n in names), None)
    results = reads_done([i.get("call_id") for i in items
                          if i.get("type") in ("function_call_output", "custom_tool_call_output")])
    step = turn_step(*responses_turn(items)) if shell == "exec" else None
    if step and step[0] != "final" and n < ARGS.max_requests:
        if step[0] == "find":
            return [exec_call(f"{step[1]}_{n:04d}", step[2])]
        command = f"cat {step[2]}" if step[3] is None else f"sed -n {step[3]}p {step[2]}"
        budget = 40000 if step[1].startswith("recall_") else None
        return [exec_call(f"{step[1]}_{n:04d}", command, budget)]
    if step:
        return [responses_message(ARGS.final, n)]
    # Codex's code mode calls an MCP server's (deferred) tool on its `tools` object.
    handle = mcp_recall(responses_turn(items)[3], json.dumps(body)) if shell == "exec" else None
    if handle is not None and results >= ARGS.tool_calls:
        script = (f"const r = await tools.{MCP_RECALL}({{handle: {json.dumps(handle)}}});\n"
                  "text(r.content.map((c) => c.text).join(\"\"));")
        return [{"type": "custom_tool_call", "id": f"ctc_mcprecall_{n:04d}",
                 "call_id": f"call_mcprecall_{n:04d}", "name": "exec", "input": script,
                 "status": "completed"}]
    if shell and results < ARGS.tool_calls:
        path = next_file(results)
        if shell == "exec":
            return [exec_call(f"{results:04d}", f"cat {path}")]
        if shell == "exec_command":
            arguments = {"cmd": f"cat {path}"}
        elif shell == "shell_command":
            arguments = {"command": f"cat {path}"}
        else:
            arguments = {"command": ["bash", "-lc", f"cat {path}"]}
        return [{"type": "function_call", "id": f"fc_{results:04d}", "call_id": f"call_{results:04d}",
                 "name": shell, "arguments": json.dumps(arguments), "status": "completed"}]
    return [responses_message(ARGS.final if shell else "scripted", n)]


def exec_call(call_id, command, budget=None):
    """A Codex code-mode call: a script running `command` through `tools.exec_command`. With a
    token budget (an archive read back, which may be over the 10,000 tokens `exec` and
    `exec_command` return by default), the script asks for it, as their descriptions say."""
    if budget is None:
        script = f"const r = await tools.exec_command({{cmd: {json.dumps(command)}}});\ntext(r.output);"
    else:
        script = (f"// @exec: {{\"max_output_tokens\": {budget}}}\nconst r = await tools.exec_command("
                  f"{{cmd: {json.dumps(command)}, max_output_tokens: {budget}}});\ntext(r.output);")
    return {"type": "custom_tool_call", "id": f"ctc_{call_id}", "call_id": f"call_{call_id}",
            "name": "exec", "input": script, "status": "completed"}


def responses_message(text, n):
    return {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def responses_turn(items):
    """The typed texts, notes, calls and outputs of a Responses input, for `turn_step`: Codex's
    code-mode calls, each a script whose `exec_command` runs the command it names."""
    typed, calls, outputs = [], [], {}
    for item in items:
        # A message item may leave out its type (the proxy's marker does).
        if item.get("type", "message") == "message" and item.get("role") == "user":
            typed.append(text_of(item.get("content")))
        if item.get("type") == "custom_tool_call":
            found = re.search(r'cmd: ("(?:[^"\\]|\\.)*")', item.get("input", ""))
            calls.append((item.get("call_id", ""), json.loads(found.group(1)) if found else ""))
        if item.get("type") == "custom_tool_call_output":
            outputs[item.get("call_id", "")] = text_of(item.get("output"))
    return typed, "\n".join(typed), calls, outputs


RESPONSES_USAGE = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0},
                   "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                   "total_tokens": 1020}


def responses_stream(body, items, n):
    response = {"id": f"resp_{n:04d}", "object": "response", "created_at": 0, "status": "in_progress",
                "model": body.get("model", "gpt"), "output": []}
    events = [{"type": "response.created", "sequence_number": 0, "response": response}]
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            empty = dict(item, status="in_progress", content=[])
            events += [
                {"type": "response.output_item.added", "output_index": index, "item": empty},
                {"type": "response.content_part.added", "item_id": item["id"], "output_index": index,
                 "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}},
                {"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                 "content_index": 0, "delta": text},
                {"type": "response.output_text.done", "item_id": item["id"], "output_index": index,
                 "content_index": 0, "text": text},
                {"type": "response.content_part.done", "item_id": item["id"], "output_index": index,
                 "content_index": 0, "part": item["content"][0]},
            ]
        else:
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    done = dict(response, status="completed", output=items, usage=RESPONSES_USAGE)
    events.append({"type": "response.completed", "response": done})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return sse(events)


def schema_value(schema):
    """A value that satisfies a JSON schema (Gemini's OBJECT / STRING / … spelling or the
    lower-case one): what a JSON-mode call (Gemini CLI's routing classifier) gets back."""
    kind = str(schema.get("type", "object")).lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: schema_value(properties[name]) for name in properties}
    if kind == "array":
        return []
    if kind == "integer":
        # Gemini CLI's routing score runs from 1 to 100 (checked by the client, not the schema).
        return schema.get("minimum", 1)
    if kind == "number":
        # Its loop check's confidence that the session is stuck: none.
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "scripted"


def gemini_answer(body):
    """The parts of the next Gemini answer: a JSON-mode call gets a value of its schema; a
    request offering `read_file` is driven as an agent session; anything else gets text."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None or config.get("responseMimeType") == "application/json":
        return [{"text": json.dumps(schema_value(schema or {}))}]
    names = [d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    results = sum(1 for c in body.get("contents", []) for p in c.get("parts") or []
                  if "functionResponse" in p)
    if "read_file" in names and results < ARGS.tool_calls:
        return [{"text": f"Reading part {results}."},
                {"functionCall": {"name": "read_file", "args": {"file_path": next_file(results)}}}]
    if "read_file" in names:
        return [{"text": ARGS.final}]
    return [{"text": "scripted"}]


def gemini_response(body, path, n):
    model = path.split("/models/", 1)[-1].split(":", 1)[0]
    return {"candidates": [{"content": {"role": "model", "parts": gemini_answer(body)},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 20,
                              "totalTokenCount": 1020},
            "modelVersion": model, "responseId": f"resp_{n:04d}"}


def chat_answer(body):
    """The message and finish reason of the next Chat Completions answer: a request offering
    `read_file` (Qwen Code) is driven as an agent session; anything else gets text."""
    names = [(t.get("function") or {}).get("name") for t in body.get("tools") or []]
    if "read_file" not in names:
        return {"role": "assistant", "content": "scripted"}, "stop"
    results = reads_done([m.get("tool_call_id") for m in body.get("messages", [])
                          if m.get("role") == "tool"])
    if results >= ARGS.tool_calls:
        return {"role": "assistant", "content": ARGS.final}, "stop"
    call = {"id": f"call_{results:04d}", "type": "function", "function": {
        "name": "read_file", "arguments": json.dumps({"file_path": next_file(results)})}}
    return {"role": "assistant", "content": f"Reading part {results}.", "tool_calls": [call]}, "tool_calls"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, content_type, payload):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        if self.headers.get("upgrade", "").lower() == "websocket":
            # A provider without the WebSocket transport: Codex falls back to HTTPS at once.
            record("websocket", b"{}", self.path)
            return self.reply(426, "application/json", b'{"error": "upgrade refused"}')
        self.reply(200, "application/json", json.dumps({"object": "list", "data": []}).encode())

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        path = self.path.split("?")[0]
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        stream = body.get("stream") is True
        if path == "/v1/messages":
            n = record("anthropic", raw, self.path)
            blocks, stop = anthropic_answer(body, n)
            if stream:
                return self.reply(200, "text/event-stream", anthropic_stream(body, blocks, stop, n))
            message = {"id": f"msg_{n:04d}", "type": "message", "role": "assistant",
                       "model": body.get("model"), "content": blocks, "stop_reason": stop,
                       "stop_sequence": None, "usage": USAGE_ANTHROPIC}
            return self.reply(200, "application/json", json.dumps(message).encode())
        if path == "/v1/responses":
            n = record("responses", raw, self.path)
            items = responses_items(body, n)
            if stream:
                return self.reply(200, "text/event-stream", responses_stream(body, items, n))
            done = {"id": f"resp_{n:04d}", "object": "response", "created_at": 0, "status": "completed",
                    "model": body.get("model"), "output": items, "usage": RESPONSES_USAGE}
            return self.reply(200, "application/json", json.dumps(done).encode())
        if path == "/v1/chat/completions":
            record("openai", raw, self.path)
            usage = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
            message, finish = chat_answer(body)
            if stream:
                delta = dict(message, tool_calls=[dict(c, index=i) for i, c in enumerate(message["tool_calls"])]) \
                    if "tool_calls" in message else message
                chunks = [{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                          {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                           "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}]
                payload = sse(chunks) + b"data: [DONE]\n\n"
                return self.reply(200, "text/event-stream", payload)
            completion = {"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model"),
                          "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                          "usage": usage}
            return self.reply(200, "application/json", json.dumps(completion).encode())
        if path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
            n = record("gemini", raw, self.path)
            response = gemini_response(body, path, n)
            if path.endswith(":streamGenerateContent"):
                return self.reply(200, "text/event-stream", sse([response]))
            return self.reply(200, "application/json", json.dumps(response).encode())
        self.reply(200, "application/json", b"{}")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--workdir", default=".")
    parser.add_argument("--tool-calls", type=int, default=42)
    parser.add_argument("--final", default="SCRIPTED-FINAL-ANSWER")
    # A bound on a session's length: past this many requests, every answer is the final text.
    parser.add_argument("--max-requests", type=int, default=300)
    ARGS = parser.parse_args()
    os.makedirs(ARGS.record, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
