"""Python data goes to Rust and back as ``json.dumps`` and ``json.loads`` would take it, and
every message a call leaves unchanged comes back as the input's own object."""

from __future__ import annotations

import enum
import json
from typing import Any, Dict, List

import pytest

import ctxcompact


def agent(rounds: int) -> List[Dict[str, Any]]:
    """A system prompt, a task, ``rounds`` tool rounds with long outputs, a last request."""
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in the parser."},
    ]
    for n in range(rounds):
        call = f"call_{n}"
        messages.append({
            "role": "assistant",
            "content": f"Reading file {n}.",
            "tool_calls": [{
                "id": call,
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{n}.rs"})},
            }],
        })
        messages.append({
            "role": "tool",
            "tool_call_id": call,
            "content": "\n".join(f"line {i} of file {n}: let x = {i};" for i in range(40)),
        })
    messages.append({"role": "user", "content": "Now run the tests."})
    return messages


def test_unchanged_messages_are_the_inputs_own_objects() -> None:
    messages = agent(30)
    total = ctxcompact.count(messages)["total"]
    result = ctxcompact.compact(messages, target=total // 2)
    assert result.report["action"] == "compacted"
    assert result.messages is not messages
    reused = [m for m in result.messages if any(m is original for original in messages)]
    new = [m for m in result.messages if not any(m is original for original in messages)]
    # The system prompt, the task and the last request are kept as they were; cleared results
    # (and any marker) are new dicts, and every reused one still equals what it stood for.
    assert messages[0] in reused and messages[1] in reused and messages[-1] in reused
    assert reused and new
    originals = {m["tool_call_id"]: m for m in messages if m["role"] == "tool"}
    cleared = [m for m in new if m["role"] == "tool"]
    assert cleared and all(m != originals[m["tool_call_id"]] for m in cleared)
    assert json.loads(json.dumps(result.conversation)) == result.conversation


def test_a_body_keeps_its_other_fields_and_gets_new_containers() -> None:
    body = {"model": "gpt-4o", "messages": agent(3), "tools": [{"type": "function"}]}
    result = ctxcompact.compact(body, target=10**9)
    assert result.report["action"] == "within_budget"
    assert result.conversation == body
    assert result.conversation is not body
    assert result.messages is not body["messages"]
    assert all(a is b for a, b in zip(result.messages, body["messages"]))


class Level(enum.IntEnum):
    LOW = 1


def test_python_data_reads_as_json_dumps_writes_it() -> None:
    messages: List[Dict[str, Any]] = agent(2)
    # Fields ctxcompact passes through: keys and values json.dumps turns into JSON text.
    messages[1]["metadata"] = {
        1: "int key",
        2.5: "float key",
        True: "bool key",
        None: "none key",
        "tuple": (1, 2.0, "three"),
        "big": 2**70 + 1,
        "huge": -(10**40) - 7,
        "float": 1e16,
        "tiny": 5e-324,
        "negative": -(2**40),
        "level": Level.LOW,
        "nested": [{"a": [None, False]}],
    }
    result = ctxcompact.compact(messages, target=10**9)
    assert result.conversation == json.loads(json.dumps(messages))
    # Numbers are kept digit for digit, as the library keeps them from JSON text.
    metadata = result.messages[1]["metadata"]
    assert metadata["big"] == 2**70 + 1 and isinstance(metadata["big"], int)
    assert metadata["huge"] == -(10**40) - 7
    assert metadata["float"] == 1e16 and isinstance(metadata["float"], float)
    # A message whose fields read differently from JSON is built anew, the others are reused.
    assert result.messages[1] is not messages[1]
    assert result.messages[0] is messages[0]


def test_an_unchanged_message_holding_a_tuple_comes_back_as_json_gives_it() -> None:
    messages = agent(30)
    messages[1]["metadata"] = {"tags": ("parser", "tests")}
    total = ctxcompact.count(messages)["total"]
    result = ctxcompact.compact(messages, target=total // 2)
    assert result.report["action"] == "compacted"
    # Kept unchanged, but JSON gives a tuple back as a list: a new dict, equal to the JSON.
    task = result.messages[1]
    assert task is not messages[1]
    assert task == json.loads(json.dumps(messages[1]))
    assert result.messages[0] is messages[0] and result.messages[-1] is messages[-1]


def test_what_json_dumps_refuses_is_not_json_data() -> None:
    for bad in ({1, 2}, b"bytes", float("inf"), {(1, 2): "tuple key"}):
        messages = [{"role": "user", "content": "hi", "extra": bad}]
        with pytest.raises(ctxcompact.InputError, match="not JSON data") as caught:
            ctxcompact.count(messages)
        assert caught.value.message_index is None


def test_nesting_deeper_than_json_text_allows_is_not_json_data() -> None:
    def nested(depth: int) -> Any:
        value: Any = "leaf"
        for _ in range(depth):
            value = [value]
        return value

    # The list of messages and the message dict are two levels; serde_json reads 127 in all.
    fine = [{"role": "user", "content": "hi", "extra": nested(125)}]
    assert ctxcompact.count(fine)["messages"]
    deep = [{"role": "user", "content": "hi", "extra": nested(126)}]
    with pytest.raises(ctxcompact.InputError, match="nested deeper"):
        ctxcompact.count(deep)


def test_numbers_come_out_as_the_cli_writes_them(tmp_path: Any, cli: Any) -> None:
    from conftest import run_cli

    messages: List[Dict[str, Any]] = agent(2)
    messages[1]["metadata"] = {"big": 2**70 + 1, "float": 1e16, "tiny": 5e-324, "small": -3}
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    code, stdout, stderr = run_cli(cli, ["compact", str(path), "--target", "1000000000"])
    assert code == 0, stderr
    result = ctxcompact.compact(messages, target=10**9)
    assert result.conversation == json.loads(stdout)
