"""The Compaction capability in a real pydantic-ai agent run (Agent, a scripted FunctionModel)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import ctxcompact  # noqa: E402
from ctxcompact.pydantic_ai import Compaction, to_openai  # noqa: E402

WINDOW = 48_000
TRIGGER = 0.7
TOOL_CALLS = 40
SYSTEM = "You are a coding agent. Read the files you need, then answer."
TASK = "Find where the integer overflow happens in this crate."
FINAL = "Read all 40 modules: the overflow is in src/mod7.rs, line 42."


def source(path: str) -> str:
    return "\n".join(f"{path}:{n}: let value_{n} = compute({n}) * factor_{n};" for n in range(80))


def tokens(messages: List[ModelMessage]) -> int:
    return int(ctxcompact.count(to_openai(messages, SYSTEM)[0])["total"])


@dataclasses.dataclass
class Recorder(AbstractCapability[Any]):
    """The outermost capability: what the agent asked each request to send, before any edit."""

    asked: List[List[ModelMessage]] = dataclasses.field(default_factory=list)

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        self.asked.append(list(request_context.messages))
        return request_context


def run(capability: Any) -> Any:
    sent: List[List[ModelMessage]] = []

    def scripted(messages: List[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        assert info.instructions == SYSTEM
        i = len(sent) - 1
        if i < TOOL_CALLS:
            return ModelResponse(parts=[
                TextPart(f"Reading src/mod{i}.rs."),
                ToolCallPart("read_file", {"path": f"src/mod{i}.rs"}, tool_call_id=f"call_{i}"),
            ])
        return ModelResponse(parts=[TextPart(FINAL)])

    recorder = Recorder()
    agent = Agent(FunctionModel(scripted), instructions=SYSTEM,
                  capabilities=[recorder, capability])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Reads a source file of the crate."""
        return source(path)

    result = agent.run_sync(TASK)
    return result, sent, recorder.asked


def assert_pairs_whole(messages: List[ModelMessage]) -> None:
    """Every tool return follows its call and every call has its return."""
    called, answered = set(), set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.tool_call_id)
            if isinstance(part, ToolReturnPart):
                assert part.tool_call_id in called, f"return {part.tool_call_id} without its call"
                answered.add(part.tool_call_id)
    assert called == answered
    assert ctxcompact.validate(to_openai(messages, SYSTEM)[0]) == []


def test_compaction_capability_runs_a_long_pydantic_ai_loop_in_the_window_cache_stable() -> None:
    capability = Compaction(window=WINDOW, trigger=TRIGGER)
    result, sent, asked = run(capability)

    assert result.output == FINAL
    assert len(sent) == TOOL_CALLS + 1
    history = result.all_messages()
    returns = [part for message in history for part in message.parts
               if isinstance(part, ToolReturnPart)]
    assert [part.content for part in returns] == [source(f"src/mod{i}.rs")
                                                  for i in range(TOOL_CALLS)]
    assert tokens(history) > WINDOW, "the run never outgrew the window"

    previous: List[Dict[str, Any]] = []
    compactions = []
    for k, messages in enumerate(sent):
        assert tokens(messages) <= WINDOW, f"request {k} was sent more than the window"
        assert_pairs_whole(messages)
        first = messages[0]
        assert isinstance(first, ModelRequest)
        # The task opens the first request; a compaction's marker may follow it there, where
        # everything between the task and the recent calls was removed.
        prompts = [p.content for p in first.parts if isinstance(p, UserPromptPart)]
        assert prompts[0] == TASK
        assert all(prompt.startswith("[ctxcompact:") for prompt in prompts[1:]), prompts
        now = to_openai(messages)[0]
        if k and now[: len(previous)] != previous:
            compactions.append(k)
            assert tokens(asked[k]) > TRIGGER * WINDOW, f"request {k} compacted under the trigger"
        elif k:
            # What the request adds is what the run added since the previous request.
            added = to_openai(asked[k])[0][len(to_openai(asked[k - 1])[0]):]
            assert now[len(previous):] == added, f"request {k} added other messages"
        previous = now
    assert compactions, "nothing was ever compacted"
    under = [k for k, messages in enumerate(asked) if tokens(messages) <= TRIGGER * WINDOW]
    assert all(a is b for k in under for a, b in zip(sent[k], asked[k]))
    # Past the trigger, every response sent is the run's own object, and every kept part too.
    parts = {id(part) for message in history for part in message.parts}
    for messages in sent:
        for message in messages:
            if isinstance(message, ModelResponse):
                assert any(message is h for h in history)
            for part in message.parts:
                cleared = isinstance(part, ToolReturnPart) and part.content != source(
                    f"src/mod{part.tool_call_id[len('call_'):]}.rs")
                marker = "removed" in str(getattr(part, "content", ""))
                assert id(part) in parts or cleared or marker
    assert capability.last_decision.action == "compacted"
    print(f"\npydantic-ai loop, {TOOL_CALLS} tool calls, window {WINDOW}: compactions at requests "
          f"{compactions}; largest input {max(map(tokens, sent))}, history {tokens(history)}")
