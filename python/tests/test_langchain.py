"""The LangChain adapter keeps tool pairs where langchain-core's trim_messages breaks them."""

from __future__ import annotations

from typing import Any, List

import pytest

import ctxcompact

messages_module = pytest.importorskip(
    "langchain_core.messages", reason="the langchain extra is not installed"
)
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages import trim_messages as langchain_trim  # noqa: E402

from ctxcompact.langchain import trim_messages  # noqa: E402


def agent_session() -> List[BaseMessage]:
    """A coding agent's session: a task, six tool rounds with long calls, a new request."""
    messages: List[BaseMessage] = [
        SystemMessage("You are a coding agent."),
        HumanMessage("Fix the failing test in src/lib.rs", id="task"),
    ]
    for i in range(6):
        messages.append(AIMessage(
            "",
            tool_calls=[{"id": f"call_{i}", "name": "read_file",
                         "args": {"path": f"src/file{i}.rs", "why": "checking " * 120}}],
            id=f"ai-{i}",
        ))
        messages.append(ToolMessage("fn main() {}\n" * 40, tool_call_id=f"call_{i}",
                                    id=f"tool-{i}"))
    messages.append(AIMessage("Found the bug in file5.", id="answer"))
    messages.append(HumanMessage("Now run the tests", id="request"))
    return messages


def orphans(messages: List[BaseMessage]) -> List[str]:
    """Tool messages whose call is not in an earlier kept AI message."""
    called: set = set()
    found = []
    for message in messages:
        if isinstance(message, AIMessage):
            called.update(call["id"] for call in message.tool_calls)
        if isinstance(message, ToolMessage) and message.tool_call_id not in called:
            found.append(message.tool_call_id)
    return found


def tokens(messages: List[BaseMessage]) -> int:
    return ctxcompact.count(convert_to_openai_messages(messages))["total"]


def test_langchain_trim_breaks_a_pair_that_the_adapter_keeps() -> None:
    session = agent_session()
    counter = lambda ms: tokens(list(ms))  # noqa: E731 - the same o200k counts on both sides
    # Find a budget at which langchain-core's "last" strategy keeps a result but not its call.
    broken = None
    for budget in range(200, tokens(session), 25):
        kept = langchain_trim(session, max_tokens=budget, token_counter=counter, strategy="last")
        if orphans(kept):
            broken = budget
            break
    assert broken is not None, "langchain-core's trim_messages kept every pair"

    ours = trim_messages(session, max_tokens=broken)
    assert orphans(ours) == []
    assert tokens(ours) <= broken
    assert ctxcompact.validate(convert_to_openai_messages(ours)) == []
    # Pinned: the system prompt and the current request survive, as the same objects.
    assert ours[0] is session[0]
    assert ours[-1] is session[-1]
    assert any("removed" in str(m.content) for m in ours), "no marker for the removed span"
    assert len(ours) < len(session)


def test_adapter_takes_langchain_keywords_and_returns_input_objects_when_within_budget() -> None:
    session = agent_session()
    kept = trim_messages(session, max_tokens=100_000, strategy="last",
                         token_counter=len, include_system=True, start_on="human")
    assert len(kept) == len(session)
    assert all(a is b for a, b in zip(kept, session))
    with pytest.raises(ctxcompact.OptionError, match="middle"):
        trim_messages(session, max_tokens=500, strategy="middle", token_counter=len)
    with pytest.raises(ctxcompact.CannotFit):
        trim_messages(session, max_tokens=10)


def test_adapter_accepts_message_like_tuples(tmp_path: Any) -> None:
    kept = trim_messages([("system", "Be brief."), ("human", "hi"), ("ai", "hello " * 300),
                          ("human", "bye")], max_tokens=60)
    assert [type(m).__name__ for m in kept][0] == "SystemMessage"
    assert kept[-1].content == "bye"
    assert tokens(kept) <= 60


def test_counting_messages_keeps_whole_tool_rounds_where_langchain_keeps_a_result_alone() -> None:
    # See: #39 — langchain-core returns [ToolMessage, AIMessage] here.
    session: List[BaseMessage] = [
        SystemMessage("sys"),
        HumanMessage("task"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "ls", "args": {}}]),
        ToolMessage("out", tool_call_id="c1"),
        AIMessage("done"),
    ]
    assert [m.type for m in langchain_trim(session, max_tokens=2, token_counter=len)] == [
        "tool",
        "ai",
    ]
    kept = trim_messages(session, max_tokens=2, token_counter=len)
    assert kept == [session[-1]] and kept[0] is session[-1]
    kept = trim_messages(session, max_tokens=3, token_counter=len)
    assert [m is o for m, o in zip(kept, session[2:])] == [True, True, True]
    # strategy="first" stops before a round that does not fit whole, and allow_partial never
    # cuts a tool message or a call.
    kept = trim_messages(session, max_tokens=3, token_counter=len, strategy="first",
                         allow_partial=True)
    assert [m.type for m in kept] == ["system", "human"]
    assert orphans(trim_messages(agent_session(), max_tokens=7, token_counter=len)) == []


def test_the_runnable_form_trims_what_it_is_invoked_with() -> None:
    session = agent_session()
    trimmer = trim_messages(max_tokens=5, token_counter=len, strategy="last")
    assert trimmer.invoke(session) == trim_messages(session, max_tokens=5, token_counter=len)
    assert len(trimmer.invoke(session)) <= 5
    engine = trim_messages(max_tokens=1500)
    assert tokens(engine.invoke(session)) <= 1500


def test_bad_token_counters_raise_value_errors_as_langchain_does() -> None:
    with pytest.raises(ValueError, match="Invalid token_counter shortcut 'words'"):
        trim_messages(agent_session(), max_tokens=5, token_counter="words")
    with pytest.raises(ValueError, match="expected to be a model"):
        trim_messages(agent_session(), max_tokens=5, token_counter=3)
    with pytest.raises(ctxcompact.InputError, match="unknown call id `nope`"):
        trim_messages([HumanMessage("hi"), ToolMessage("x", tool_call_id="nope")],
                      max_tokens=5, token_counter=len)
