"""``compact_request`` sends what ``ctxcompact proxy`` sends upstream, byte for byte.

The recorded sessions of ``tests/proxy.rs`` (a Claude Code log and a Codex rollout from
``../shared/corpus/raw``, an OpenAI Chat conversation of ``data/``) are replayed call by call
through a real proxy in front of a scripted upstream on 127.0.0.1; every body the upstream
receives must equal ``compact_request``'s for the same body and flags.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

import ctxcompact

from conftest import ROOT

CORPUS_RAW = ROOT.parent / "shared" / "corpus" / "raw"
WINDOW = 32000

# (file, its format for the CLI, the API format, the request path, the model)
SESSIONS = [
    (
        CORPUS_RAW / "claude-code" / "entireio-cli__9f_d2fc39aa5f_0_full.jsonl",
        "claude-code",
        "anthropic",
        "/v1/messages?beta=true",
        "claude-sonnet-4-5",
    ),
    (
        CORPUS_RAW
        / "codex"
        / "AcidicSoil-codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        "codex",
        "responses",
        "/v1/responses",
        "gpt-5",
    ),
    (
        ROOT / "data" / "conversations" / "openai-coding-python-500.json",
        "openai",
        "openai",
        "/v1/chat/completions",
        "gpt-4o",
    ),
]


class Upstream(http.server.ThreadingHTTPServer):
    """A scripted provider: records every body and answers a small JSON object."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Recorder)
        self.bodies: List[bytes] = []
        self.lock = threading.Lock()


class Recorder(http.server.BaseHTTPRequestHandler):
    server: Upstream

    def do_POST(self) -> None:  # noqa: N802 (the handler's name)
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with self.server.lock:
            self.server.bodies.append(body)
        answer = b'{"id": "scripted", "usage": {"input_tokens": 1, "output_tokens": 7}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def api_body(cli: Path, path: Path, log_format: str) -> Dict[str, Any]:
    """The session read as the agent sent it, in its API format (`trim-tools --tool-mode off`)."""
    done = subprocess.run(
        [str(cli), "trim-tools", "--tool-mode", "off", "--format", log_format, str(path)],
        capture_output=True,
        check=True,
    )
    return json.loads(done.stdout)


def call_ends(messages: List[Dict[str, Any]], api: str, limit: int) -> List[int]:
    """Where each call's answer starts: the first message of each run of the model's messages."""

    def is_model(message: Dict[str, Any]) -> bool:
        if api == "responses":
            return message.get("role") == "assistant" or message.get("type") in (
                "function_call",
                "reasoning",
                "custom_tool_call",
            )
        return message.get("role") == "assistant"

    ends = [i for i in range(1, len(messages)) if is_model(messages[i]) and not is_model(messages[i - 1])]
    return ends[:limit]


def request_bodies(
    cli: Path, path: Path, log_format: str, api: str, model: str
) -> Iterator[bytes]:
    """The body of each call of the session, as a client sends it."""
    body = api_body(cli, path, log_format)
    key = "input" if api == "responses" else "messages"
    messages = body[key]
    for n, end in enumerate(call_ends(messages, api, 60)):
        request: Dict[str, Any] = {"model": model}
        request.update({k: v for k, v in body.items() if k not in (key, "model")})
        sent = json.loads(json.dumps(messages[:end]))
        if api == "anthropic":
            request["max_tokens"] = 1024
            content = sent[-1].get("content")
            # Like Claude Code, a breakpoint on the last block of the last message.
            if isinstance(content, list) and content and isinstance(content[-1], dict):
                content[-1]["cache_control"] = {"type": "ephemeral"}
        request[key] = sent
        request["stream"] = n % 2 == 1
        yield json.dumps(request).encode()


def start_proxy(
    cli: Path, origin: str, archive: Path, ledger: Path
) -> Tuple[subprocess.Popen[bytes], str]:
    """A proxy on an ephemeral port of 127.0.0.1 in front of `origin`, archiving in `archive`
    (its default is the user's cache folder) and writing its ledger to `ledger`, and its
    address."""
    proxy = subprocess.Popen(
        [
            str(cli),
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--window",
            str(WINDOW),
            "--anthropic-upstream",
            origin,
            "--openai-upstream",
            origin,
            "--archive-dir",
            str(archive),
            "--ledger",
            str(ledger),
        ],
        stderr=subprocess.PIPE,
    )
    assert proxy.stderr is not None
    line = proxy.stderr.readline().decode()
    assert "listening on " in line, line
    return proxy, line.strip().rsplit("listening on ", 1)[1]


def post(address: str, path: str, body: bytes) -> None:
    request = urllib.request.Request(
        address + path,
        data=body,
        headers={"Content-Type": "application/json", "x-api-key": "dummy"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200


# The ledger's fields of the request's exchange, not of its decision.
EXCHANGE = {"time", "method", "path", "status", "proxy_ms", "usage", "cost_usd", "response"}
# The decision's fields the ledger does not write, and those it leaves out when empty.
DECISION_ONLY = {"unknown_model", "facts", "archive_error", "instruction_files"}


def assert_ledger_record(decision: Dict[str, Any], line: Dict[str, Any], call: int) -> None:
    """`decision` is the ledger line's record of the decision: every field of it, the same
    values (but `compactions_run`: the proxy resumes from its cache what a call replays whole),
    and only the fields the ledger does not write besides."""
    recorded = {k: v for k, v in line.items() if k not in EXCHANGE}
    assert set(decision) - set(recorded) <= DECISION_ONLY, f"call {call}"
    for key, value in recorded.items():
        if key != "compactions_run":
            assert decision[key] == value, f"call {call}: {key}"
    assert decision["compactions_run"] >= recorded["compactions_run"], f"call {call}"
    assert decision["facts"] == {k: v for k, v in recorded.items() if k in decision["facts"]}


@pytest.mark.parametrize("session", SESSIONS, ids=[s[1] for s in SESSIONS])
def test_compact_request_equals_the_proxys_upstream_bytes(
    cli: Path, session: Any, tmp_path: Path
) -> None:
    path, log_format, api, request_path, model = session
    if not path.is_file():
        pytest.skip(f"SKIPPED: {path} not found")
    upstream = Upstream()
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    proxy: Optional[subprocess.Popen[bytes]] = None
    try:
        # Both archive in one folder (the proxy does by default), so the notes name the same files.
        archive = tmp_path / "archive"
        ledger = tmp_path / "ledger.jsonl"
        proxy, address = start_proxy(
            cli, f"http://127.0.0.1:{upstream.server_address[1]}", archive, ledger
        )
        bodies = list(request_bodies(cli, path, log_format, api, model))
        assert len(bodies) >= 10
        decisions = []
        for body in bodies:
            post(address, request_path, body)
            forwarded = ctxcompact.compact_request(body, api, window=WINDOW, archive=archive)
            decisions.append(forwarded.decision)
            assert upstream.bodies[-1] == forwarded.body, f"call {len(decisions) - 1}: {forwarded}"
        assert "compacted" in [decision["action"] for decision in decisions]
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)
        upstream.shutdown()
        upstream.server_close()
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert len(lines) == len(decisions)
    for call, (decision, line) in enumerate(zip(decisions, lines)):
        assert_ledger_record(decision, line, call)


def test_a_body_under_the_trigger_is_forwarded_as_it_came() -> None:
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    forwarded = ctxcompact.compact_request(body.encode(), "openai")
    assert (forwarded.action, forwarded.body) == ("forwarded", body.encode())
    assert forwarded.tokens_received == forwarded.tokens_forwarded


def test_what_cannot_be_read_fails_open_unchanged() -> None:
    for body, reason, kind in [
        (b"not json", "the body is not JSON", "not_json"),
        (b'{"model": "gpt-4o"}', "no `messages` list", "unreadable"),
        (b'{"model": "no-such-model-9", "messages": []}', "no window is known", "unknown_model"),
    ]:
        forwarded = ctxcompact.compact_request(body, "openai")
        assert forwarded.action == "failed_open"
        assert forwarded.body == body
        assert reason in (forwarded.reason or ""), forwarded.reason
        assert forwarded.fail_open == kind
    assert forwarded.unknown_model == "no-such-model-9"
    assert (forwarded.archive_error, forwarded.instruction_files) == (None, [])


def test_bad_options_are_option_errors() -> None:
    with pytest.raises(ctxcompact.OptionError, match="format must be one of"):
        ctxcompact.compact_request(b"{}", "claude-code")
    with pytest.raises(ctxcompact.OptionError, match="above the trigger"):
        ctxcompact.compact_request(b"{}", "openai", trigger=0.4, target_ratio=0.6)
    with pytest.raises(ctxcompact.OptionError, match="body must be bytes"):
        ctxcompact.compact_request("{}", "openai")  # type: ignore[arg-type]
