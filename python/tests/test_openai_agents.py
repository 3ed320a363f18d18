"""CompactionFilter in a real OpenAI Agents SDK run (Runner, a scripted Model subclass)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402

import ctxcompact  # noqa: E402
from ctxcompact.openai_agents import CompactionFilter  # noqa: E402

WINDOW = 48_000
TRIGGER = 0.7
TOOL_CALLS = 40
SYSTEM = "You are a coding agent. Read the files you need, then answer."
TASK = "Find where the integer overflow happens in this crate."
FINAL = "Read all 40 modules: the overflow is in src/mod7.rs, line 42."


def source(path: str) -> str:
    return "\n".join(f"{path}:{n}: let value_{n} = compute({n}) * factor_{n};" for n in range(80))


@function_tool
def read_file(path: str) -> str:
    """Reads a source file of the crate.

    Args:
        path: The file's path.
    """
    return source(path)


class ScriptedModel(Model):
    """Calls read_file TOOL_CALLS times (each call after a reasoning item), then answers;
    records the instructions and input of every call."""

    def __init__(self) -> None:
        self.sent: List[Tuple[Optional[str], List[Any]]] = []

    async def get_response(self, system_instructions: Optional[str], input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:
        self.sent.append((system_instructions, list(input)))
        i = len(self.sent) - 1
        if i < TOOL_CALLS:
            output: List[Any] = [
                ResponseReasoningItem(
                    id=f"rs_{i}", type="reasoning",
                    summary=[Summary(text=f"I should read src/mod{i}.rs next.",
                                     type="summary_text")],
                    encrypted_content=f"gAAAA{i:04d}" + "x" * 200,
                ),
                ResponseFunctionToolCall(
                    id=f"fc_{i}", call_id=f"call_{i}", name="read_file", type="function_call",
                    arguments=json.dumps({"path": f"src/mod{i}.rs"}), status="completed",
                ),
            ]
        else:
            output = [ResponseOutputMessage(
                id="msg_final", role="assistant", status="completed", type="message",
                content=[ResponseOutputText(text=FINAL, type="output_text", annotations=[])],
            )]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model answers whole responses only")


def as_dicts(items: List[Any]) -> List[Dict[str, Any]]:
    return [i.model_dump(mode="json", exclude_unset=True) if hasattr(i, "model_dump") else i
            for i in items]


def tokens(instructions: Optional[str], items: List[Any]) -> int:
    body = {"instructions": instructions, "input": as_dicts(items)}
    return int(ctxcompact.count(body, format="responses")["total"])


def assert_pairs_whole(items: List[Dict[str, Any]]) -> None:
    """Every function_call_output follows its function_call, every call has its output, and
    every reasoning item is followed by a call (its call kept with it)."""
    called, answered = set(), set()
    for k, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            called.add(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in called, f"output {item['call_id']} without its call"
            answered.add(item["call_id"])
        elif kind == "reasoning":
            assert items[k + 1].get("type") == "function_call", "reasoning without its call"
    assert called == answered
    # Each call's reasoning came with it: a call whose reasoning went is not sent.
    for k, item in enumerate(items):
        if item.get("type") == "function_call":
            assert items[k - 1].get("type") == "reasoning", f"{item['call_id']} lost its reasoning"


def test_compaction_filter_runs_a_long_agents_sdk_loop_within_the_window_and_cache_stable() -> None:
    model = ScriptedModel()
    asked: List[Tuple[Optional[str], List[Any]]] = []
    compaction = CompactionFilter(window=WINDOW, trigger=TRIGGER)

    def recorded(data: Any) -> Any:
        asked.append((data.model_data.instructions, list(data.model_data.input)))
        return compaction(data)

    agent = Agent(name="coder", instructions=SYSTEM, model=model, tools=[read_file])
    result = Runner.run_sync(agent, TASK, run_config=RunConfig(call_model_input_filter=recorded,
                                                       tracing_disabled=True),
                             max_turns=TOOL_CALLS + 5)

    assert result.final_output == FINAL
    assert len(model.sent) == TOOL_CALLS + 1
    history = as_dicts(result.to_input_list())
    outputs = [item["output"] for item in history if item.get("type") == "function_call_output"]
    assert outputs == [source(f"src/mod{i}.rs") for i in range(TOOL_CALLS)]
    assert sum(item.get("type") == "reasoning" for item in history) == TOOL_CALLS
    assert tokens(SYSTEM, result.to_input_list()) > WINDOW, "the run never outgrew the window"

    previous: Optional[List[Dict[str, Any]]] = None
    compactions = []
    for k, (instructions, items) in enumerate(model.sent):
        assert instructions == SYSTEM
        assert tokens(instructions, items) <= WINDOW, f"call {k} was sent more than the window"
        sent = as_dicts(items)
        assert_pairs_whole(sent)
        assert sent[0]["content"] == TASK
        if previous is not None and sent[: len(previous)] != previous:
            compactions.append(k)
            assert tokens(*asked[k]) > TRIGGER * WINDOW, f"call {k} compacted under the trigger"
        elif previous is not None:
            # What the call adds is what the run added since the previous call.
            added = as_dicts(asked[k][1])[len(asked[k - 1][1]):]
            assert sent[len(previous):] == added, f"call {k} added other items"
        previous = sent
    assert compactions, "nothing was ever compacted"
    under = [k for k, call in enumerate(asked) if tokens(*call) <= TRIGGER * WINDOW]
    assert all(a is b for k in under for a, b in zip(model.sent[k][1], asked[k][1]))
    print(f"\nAgents SDK loop, {TOOL_CALLS} tool calls, window {WINDOW}: compactions at calls "
          f"{compactions}; largest input {max(tokens(*call) for call in model.sent)}, "
          f"history {tokens(SYSTEM, result.to_input_list())}")
