"""CompactionMiddleware in a real LangChain 1.x agent loop (create_agent, a scripted model),
side by side with LangChain's ContextEditingMiddleware(ClearToolUsesEdit()) at the same trigger."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, List

import pytest

pytest.importorskip("langchain.agents", reason="the langchain package (1.x) is not installed")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import (  # noqa: E402
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.tools import tool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402

import ctxcompact  # noqa: E402
from ctxcompact.langchain import CompactionMiddleware  # noqa: E402

WINDOW = 48_000
TRIGGER = 0.7
TOOL_CALLS = 60
FINAL = "Read all 60 modules: the overflow is in src/mod7.rs, line 42."
SYSTEM = "You are a coding agent. Read the files you need, then answer."
TASK = "Find where the integer overflow happens in this crate."


def read_file_of(lines: int) -> Any:
    """A read_file tool whose every file has `lines` lines."""

    @tool
    def read_file(path: str) -> str:
        """Reads a source file of the crate."""
        return "\n".join(
            f"{path}:{n}: let value_{n} = compute({n}) * factor_{n};" for n in range(lines)
        )

    return read_file


read_file = read_file_of(60)


class ScriptedModel(GenericFakeChatModel):
    """A chat model that calls read_file TOOL_CALLS times, one file a call, then answers; it
    records what each call was sent."""

    sent: List[List[BaseMessage]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: List[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted_model(calls: int = TOOL_CALLS) -> ScriptedModel:
    script: List[Any] = [
        AIMessage(
            "",
            tool_calls=[{"id": f"call_{i}", "name": "read_file",
                         "args": {"path": f"src/mod{i}.rs"}}],
        )
        for i in range(calls)
    ]
    script.append(AIMessage(FINAL))
    return ScriptedModel(messages=iter(script), sent=[])


class Recorder(AgentMiddleware):  # type: ignore[misc]
    """The outermost middleware: what the agent asked each call to send, before any edit."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: List[List[BaseMessage]] = []

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.asked.append([request.system_message, *request.messages])
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self.asked.append([request.system_message, *request.messages])
        return await handler(request)


def as_dicts(messages: List[BaseMessage]) -> List[Dict[str, Any]]:
    return convert_to_openai_messages(messages)


def tokens(messages: List[BaseMessage]) -> int:
    return int(ctxcompact.count(as_dicts(messages))["total"])


def run(middleware: AgentMiddleware, *, asynchronous: bool = False, reader: Any = read_file,
        calls: int = TOOL_CALLS) -> Any:
    model = scripted_model(calls)
    recorder = Recorder()
    agent = create_agent(model, tools=[reader], system_prompt=SYSTEM,
                         middleware=[recorder, middleware])
    state = {"messages": [HumanMessage(TASK)]}
    config = {"recursion_limit": 4 * calls}
    if asynchronous:
        result = asyncio.run(agent.ainvoke(state, config))
    else:
        result = agent.invoke(state, config)
    return result, model.sent, recorder.asked


def tool_tokens(tools: List[Any]) -> int:
    """The tokens the tools' definitions add to a call, as the middleware counts them."""
    definitions = [convert_to_openai_tool(t) for t in tools]
    with_tools = ctxcompact.count({"messages": [], "tools": definitions})["total"]
    return int(with_tools) - int(ctxcompact.count({"messages": []})["total"])


def breaks(sent: List[List[BaseMessage]]) -> List[int]:
    """The calls whose input is not the previous call's input with messages added at its end."""
    found = []
    for k in range(1, len(sent)):
        before, now = as_dicts(sent[k - 1]), as_dicts(sent[k])
        if now[: len(before)] != before:
            found.append(k)
    return found


def assert_pairs_whole(messages: List[BaseMessage]) -> None:
    """Every tool result follows its call, and every call before the end has its result."""
    called: Dict[str, int] = {}
    answered = set()
    for message in messages:
        if isinstance(message, AIMessage):
            called.update((call["id"], 0) for call in message.tool_calls)
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in called, f"result {message.tool_call_id} without call"
            answered.add(message.tool_call_id)
    assert set(called) == answered, f"calls without results: {set(called) - answered}"
    assert ctxcompact.validate(as_dicts(messages)) == []


def test_compaction_middleware_runs_a_long_agent_loop_within_the_window_and_cache_stable() -> None:
    middleware = CompactionMiddleware(window=WINDOW, trigger=TRIGGER)
    result, sent, asked = run(middleware)

    assert len(sent) == TOOL_CALLS + 1
    assert result["messages"][-1].content == FINAL
    # The agent's own history is whole: every call and every full tool output, in order.
    history = result["messages"]
    assert len(history) == 2 + 2 * TOOL_CALLS
    outputs = [m for m in history if isinstance(m, ToolMessage)]
    assert [m.content for m in outputs] == [
        read_file.invoke({"path": f"src/mod{i}.rs"}) for i in range(TOOL_CALLS)
    ]
    assert max(tokens(asked[-1]), tokens(history)) > WINDOW, "the loop never outgrew the window"

    for k, messages in enumerate(sent):
        assert tokens(messages) <= WINDOW, f"call {k} was sent more than the window"
        assert_pairs_whole(messages)
        assert messages[0].content == SYSTEM and messages[1].content == TASK
    compactions = breaks(sent)
    assert compactions, "nothing was ever compacted"
    # The trigger counts the tools' definitions too: read_file and the middleware's recall tool.
    trigger = TRIGGER * WINDOW - tool_tokens([read_file, *middleware.tools])
    for k in compactions:
        assert tokens(asked[k]) > trigger, f"call {k} was compacted under the trigger"
    # Between compactions, what a call adds is what the agent added since the previous call.
    for k in range(1, len(sent)):
        if k not in compactions:
            added = as_dicts(asked[k])[len(asked[k - 1]):]
            assert as_dicts(sent[k])[len(sent[k - 1]):] == added, f"call {k} added other messages"
    # Under the trigger the messages go as the agent asked, the very objects.
    first = next(k for k, asked_k in enumerate(asked) if tokens(asked_k) > trigger)
    assert all(a is b for k in range(first) for a, b in zip(sent[k], asked[k]))
    assert middleware.last_decision.action == "compacted"
    print(f"\nLangChain loop, {TOOL_CALLS} tool calls, window {WINDOW}: compactions at calls "
          f"{compactions}; largest input {max(map(tokens, sent))}, history {tokens(history)}")

    # The same loop run asynchronously (awrap_model_call) sends the same messages.
    _, sent_async, _ = run(CompactionMiddleware(window=WINDOW, trigger=TRIGGER),
                           asynchronous=True)
    assert [as_dicts(m) for m in sent_async] == [as_dicts(m) for m in sent]


def test_compaction_breaks_the_prompt_cache_a_fifth_as_often_as_clear_tool_uses() -> None:
    trigger_tokens = int(TRIGGER * WINDOW)
    editing = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger=trigger_tokens)],
        token_counter=lambda messages: tokens([m for m in messages if m is not None]),
    )
    _, theirs, _ = run(editing)
    _, ours, _ = run(CompactionMiddleware(window=WINDOW, trigger=TRIGGER))
    their_breaks, our_breaks = breaks(theirs), breaks(ours)
    print(
        f"\nLangChain loop, {TOOL_CALLS} tool calls, window {WINDOW}, trigger {trigger_tokens}: "
        f"calls not extending the previous input: ctxcompact {len(our_breaks)} {our_breaks}, "
        f"ClearToolUsesEdit {len(their_breaks)}; largest input: ctxcompact "
        f"{max(map(tokens, ours))}, ClearToolUsesEdit {max(map(tokens, theirs))}"
    )
    assert their_breaks, "ClearToolUsesEdit never cleared"
    assert 5 * len(our_breaks) <= len(their_breaks)
    assert max(map(tokens, ours)) <= WINDOW


@pytest.mark.parametrize("lines, share", [(20, 0.02), (40, 0.04)])
def test_a_loop_of_results_of_2_and_4_pct_of_the_window_rewrites_a_fifth_as_often(
    lines: int, share: float
) -> None:
    # 40 reads into a window of 20,000 tokens, each result about `share` of it: the depth the
    # loop's traffic allows leaves room for many reads between two compactions.
    window, calls = 20_000, 40
    reader = read_file_of(lines)
    result = tokens([ToolMessage(reader.invoke({"path": "src/mod1.rs"}), tool_call_id="x")])
    assert abs(result / window - share) < 0.005, result
    trigger_tokens = int(TRIGGER * window)
    editing = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(trigger=trigger_tokens)],
        token_counter=lambda messages: tokens([m for m in messages if m is not None]),
    )
    _, theirs, _ = run(editing, reader=reader, calls=calls)
    history, ours, _ = run(CompactionMiddleware(window=window, trigger=TRIGGER), reader=reader,
                           calls=calls)
    their_breaks, our_breaks = breaks(theirs), breaks(ours)
    print(f"\nresults of {result} tokens: ctxcompact {len(our_breaks)} rewrites, "
          f"ClearToolUsesEdit {len(their_breaks)}")
    assert our_breaks and their_breaks
    assert 5 * len(our_breaks) <= len(their_breaks)
    for messages in ours:
        assert tokens(messages) <= window
        assert_pairs_whole(messages)
    assert len(history["messages"]) == 2 + 2 * calls, "the agent's own history is whole"
