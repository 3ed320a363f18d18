"""Recorded sessions replayed call by call through `ctxcompact proxy` with the official SDKs
(issue 22): a Claude Code session with the `anthropic` SDK, an OpenAI Chat and a Codex
(Responses) session with the `openai` SDK, each with --window 32000 against the scripted
provider, which answers every call.

For each: every upstream body is valid and within the window; the bodies the proxy forwarded
are byte for byte what the SDK sent (captured by an httpx event hook); the calls whose upstream
body is not an append of the previous one are the ledger's compactions; and a fresh proxy given
the last request sends the same bytes.
Usage: replay.py CTXCOMPACT UPSTREAM_ORIGIN RECORD_DIR WORK_DIR
"""

import copy
import json
import os
import subprocess
import sys
import time

import anthropic
import urllib.request
import openai

ctxcompact, upstream, record, work = sys.argv[1:5]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
corpus = os.path.join(root, "..", "shared", "corpus", "raw")
WINDOW = 32000


def start_proxy(name):
    ledger = os.path.join(work, f"{name}.jsonl")
    proc = subprocess.Popen([ctxcompact, "proxy", "--listen", "127.0.0.1:0", "--window", str(WINDOW),
                             "--ledger", ledger, "--anthropic-upstream", upstream,
                             "--openai-upstream", upstream], stderr=subprocess.PIPE, text=True)
    address = proc.stderr.readline().strip().rsplit("http://", 1)[1]
    return proc, address, ledger


def api_body(path, fmt):
    """The recording as one API request body, through `ctxcompact compact` at a budget it is
    within (which writes it unchanged)."""
    out = os.path.join(work, os.path.basename(path) + ".json")
    subprocess.run([ctxcompact, "compact", path, "--format", fmt, "--target", "1000000000", "-o", out,
                    "--quiet"], check=True)
    return json.load(open(out))


def calls(items):
    """Where each call's answer starts: each run of assistant items."""
    def assistant(item):
        return item.get("role") == "assistant" or item.get("type") in (
            "function_call", "custom_tool_call", "reasoning", "local_shell_call", "web_search_call")
    return [i for i in range(1, len(items)) if assistant(items[i]) and not assistant(items[i - 1])]


def unmarked(value):
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def is_append(previous, following, key):
    previous, following = unmarked(previous), unmarked(following)
    before, after = previous.pop(key), following.pop(key)
    previous.pop("stream", None)
    following.pop("stream", None)
    return previous == following and after[:len(before)] == before


def replay(name, kind, key, send, bodies_of_calls):
    sent = []

    def hook(request):
        if request.method == "POST":
            sent.append(request.read())

    proc, address, ledger = start_proxy(name)
    before = set(os.listdir(record))
    try:
        # The SDKs' own HTTP client, with a hook that keeps each request body as sent.
        http = anthropic.DefaultHttpxClient(event_hooks={"request": [hook]})
        for n, request in enumerate(bodies_of_calls):
            send(f"http://{address}", http, request, n % 2 == 1)
        time.sleep(0.3)
    finally:
        proc.kill()
    received = [open(os.path.join(record, f), "rb").read()
                for f in sorted(set(os.listdir(record)) - before) if f.endswith(f"-{kind}.json")]
    lines = [json.loads(l) for l in open(ledger)]
    assert len(received) == len(sent) == len(lines), (len(received), len(sent), len(lines))
    non_appends = 0
    for n, (body, line) in enumerate(zip(received, lines)):
        path = os.path.join(work, "body.json")
        open(path, "wb").write(body)
        subprocess.run([ctxcompact, "validate", "--format", kind, path], check=True, capture_output=True)
        assert line["action"] in ("forwarded", "compacted"), line
        assert line["tokens_forwarded"] <= WINDOW, line
        if line["action"] == "forwarded":
            assert body == sent[n], f"{name} call {n}: not byte for byte"
        if n and not is_append(json.loads(received[n - 1]), json.loads(body), key):
            non_appends += 1
    compactions = lines[-1]["compactions"]
    assert compactions >= 1 and non_appends == compactions, (non_appends, compactions)
    # A fresh proxy, given the last request alone, sends the same bytes.
    proc, address, _ = start_proxy(name + "-fresh")
    try:
        before = set(os.listdir(record))
        request = urllib.request.Request(f"http://{address}{lines[-1]['path']}", data=sent[-1],
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request) as response:
            assert response.status == 200
        time.sleep(0.2)
        new = sorted(set(os.listdir(record)) - before)
        assert open(os.path.join(record, new[0]), "rb").read() == received[-1], "a fresh proxy sent other bytes"
    finally:
        proc.kill()
    print(f"{name}: {len(sent)} calls, {compactions} compactions = non-append calls, "
          f"{sum(l['action'] == 'forwarded' for l in lines)} forwarded byte for byte, fresh proxy identical")


def claude_code():
    path = os.path.join(corpus, "claude-code", "entireio-cli__9f_d2fc39aa5f_0_full.jsonl")
    if not os.path.exists(path):
        print(f"SKIPPED replay of {path}: not found")
        return
    body = api_body(path, "claude-code")
    messages = body["messages"]
    requests = [messages[:end] for end in calls(messages)]

    def send(base, http, prefix, stream):
        client = anthropic.Anthropic(base_url=base, api_key="sk-ant-dummy", http_client=http, max_retries=0)
        kwargs = dict(model="claude-sonnet-4-5", max_tokens=1024, messages=prefix)
        if body.get("system"):
            kwargs["system"] = body["system"]
        if stream:
            with client.messages.stream(**kwargs) as s:
                assert "".join(s.text_stream) == "scripted"
        else:
            assert client.messages.create(**kwargs).content[0].text == "scripted"

    replay("claude-code", "anthropic", "messages", send, requests)


def openai_chat():
    body = json.load(open(os.path.join(root, "data", "conversations", "openai-coding-python-500.json")))
    messages = body["messages"] if isinstance(body, dict) else body
    requests = [messages[:end] for end in calls(messages)][:120]

    def send(base, http, prefix, stream):
        client = openai.OpenAI(base_url=base + "/v1", api_key="sk-dummy", http_client=http, max_retries=0)
        if stream:
            chunks = client.chat.completions.create(model="gpt-4o", messages=prefix, stream=True)
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "scripted"
        else:
            reply = client.chat.completions.create(model="gpt-4o", messages=prefix)
            assert reply.choices[0].message.content == "scripted"

    replay("openai-chat", "openai", "messages", send, requests)


def codex():
    path = os.path.join(corpus, "codex",
                        "AcidicSoil-codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl")
    if not os.path.exists(path):
        print(f"SKIPPED replay of {path}: not found")
        return
    body = api_body(path, "codex")
    items = body["input"]
    requests = [items[:end] for end in calls(items)]

    def send(base, http, prefix, stream):
        client = openai.OpenAI(base_url=base + "/v1", api_key="sk-dummy", http_client=http, max_retries=0)
        kwargs = dict(model="gpt-5", input=copy.deepcopy(prefix), store=False)
        if body.get("instructions"):
            kwargs["instructions"] = body["instructions"]
        if stream:
            with client.responses.stream(**kwargs) as s:
                assert "".join(e.delta for e in s if e.type == "response.output_text.delta") == "scripted"
        else:
            assert client.responses.create(**kwargs).output_text == "scripted"

    replay("codex", "responses", "input", send, requests)


claude_code()
openai_chat()
codex()
