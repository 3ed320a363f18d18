"""The framework adapters' edges: the window from the model's name, failing open with a
warning, bad options at construction, and pydantic-ai's parts kept through compaction."""

from __future__ import annotations

import json
import warnings
from typing import Any, Dict, List

import pytest

import ctxcompact


def session(rounds: int, lines: int = 80) -> List[Dict[str, Any]]:
    """An OpenAI Chat agent session: a task, then ``rounds`` tool rounds with large results."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "Find the overflow."}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.rs"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}",
                         "content": "\n".join(f"m{i}.rs:{n}: let v = f({n});"
                                               for n in range(lines))})
    return messages


def test_the_agents_sdk_filter_takes_the_window_from_the_agents_model_name() -> None:
    agents = pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    from agents.run_config import CallModelData, ModelInputData

    from ctxcompact.openai_agents import CompactionFilter

    items = [{"role": "user", "content": "hi"}]
    data = ModelInputData(input=items, instructions="Be brief.")
    compaction = CompactionFilter()
    kept = compaction(CallModelData(model_data=data, agent=agents.Agent(name="a", model="gpt-4o"),
                                    context=None))
    assert kept is data
    assert compaction.last_decision.facts["window"] == 128_000
    assert compaction.last_decision.facts["window_source"] == "catalog"

    unknown = agents.Agent(name="a", model="my-local-model")
    with pytest.warns(RuntimeWarning, match="unknown model `my-local-model`"):
        kept = compaction(CallModelData(model_data=data, agent=unknown, context=None))
    assert kept is data
    # A window given serves any model, and the name given wins over the agent's.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CompactionFilter(window=8000)(CallModelData(model_data=data, agent=unknown, context=None))
        named = CompactionFilter(model="gpt-4o")
        named(CallModelData(model_data=data, agent=unknown, context=None))
    assert named.last_decision.facts["window"] == 128_000


def test_adapters_refuse_bad_options_when_built() -> None:
    pytest.importorskip("langchain.agents", reason="the langchain package (1.x) is not installed")
    from ctxcompact.langchain import CompactionMiddleware

    with pytest.raises(ctxcompact.OptionError, match="tool_mode"):
        CompactionMiddleware(window=8000, tool_mode="shred")
    with pytest.raises(ctxcompact.OptionError, match="window"):
        CompactionMiddleware(window=-1)
    with pytest.raises(ctxcompact.OptionError, match="format"):
        CompactionMiddleware(format="anthropic")


def test_pydantic_ai_parts_survive_compaction_in_their_messages() -> None:
    pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from ctxcompact import _hooks
    from ctxcompact.pydantic_ai import _from_openai, to_openai

    messages: List[Any] = [ModelRequest(parts=[SystemPromptPart("Be careful."),
                                               UserPromptPart("Find the overflow.")])]
    for i in range(30):
        messages.append(ModelResponse(parts=[
            TextPart(f"Reading m{i}.rs"),
            ToolCallPart("read_file", {"path": f"m{i}.rs"}, tool_call_id=f"call_{i}")]))
        parts: List[Any] = [ToolReturnPart("read_file", session(1)[-1]["content"] + str(i),
                                           tool_call_id=f"call_{i}")]
        if i == 5:
            parts.append(UserPromptPart("Also check m29.rs, please."))
        messages.append(ModelRequest(parts=parts))
    dicts, origins = to_openai(messages, "You are a coding agent.")
    assert [d["role"] for d in dicts[:4]] == ["system", "system", "user", "assistant"]
    settings = _hooks.Settings(None, 40_000, None, 0.3, {"strategy": "oldest"})
    body, decision = _hooks.fit(dicts, "openai", settings)
    assert body is not None and decision.action == "compacted"
    sent = _from_openai(messages, dicts, origins, body["messages"])

    # The first request whole, the very object; the last rounds the very objects.
    assert sent[0] is messages[0]
    assert all(a is b for a, b in zip(sent[-6:], messages[-6:]))
    # The request whose tool round went keeps its user prompt, the same part object.
    prompt = messages[12].parts[1]
    holding = [m for m in sent if any(p is prompt for p in getattr(m, "parts", ()))]
    assert len(holding) == 1
    request = holding[0]
    # Its tool return was cleared: a copy of the part (name, id, timestamp kept), the message a
    # copy of the request (its timestamp and other fields kept), the prompt the same object.
    assert request is not messages[12] and request.timestamp == messages[12].timestamp
    cleared, kept = request.parts
    assert kept is prompt
    original = messages[12].parts[0]
    assert cleared is not original and cleared.tool_call_id == original.tool_call_id == "call_5"
    assert (cleared.tool_name, cleared.timestamp) == (original.tool_name, original.timestamp)
    assert "cleared" in cleared.content and len(cleared.content) < len(original.content)
    # Every tool return sent is its call's, and no call goes without its return.
    calls = {p.tool_call_id for m in sent for p in m.parts if isinstance(p, ToolCallPart)}
    returns = {p.tool_call_id for m in sent for p in m.parts if isinstance(p, ToolReturnPart)}
    assert calls == returns
    assert ctxcompact.validate(to_openai(sent)[0]) == []
    assert ctxcompact.count(to_openai(sent, "You are a coding agent.")[0])["total"] <= 40_000
    # The request context's messages are replaced; the history list is not touched.
    assert len(messages) == 61


def test_an_adapter_resumes_each_call_from_its_kept_compactor() -> None:
    # See: #56 (an adapter's calls no longer replay every earlier compaction of the history).
    from ctxcompact import _hooks, _native

    settings = _hooks.Settings(None, 20_000, None, None, {})
    history = session(40)
    kept_runs, alone_runs, kept_compactions = 0, 0, []
    for end in range(3, len(history) + 1, 2):
        body = json.dumps({"model": "gpt-4o", "messages": history[:end]}).encode()
        before = _native.pipeline_runs()
        kept = settings.compactor("openai").compact(body)
        kept_runs += _native.pipeline_runs() - before
        before = _native.pipeline_runs()
        alone = ctxcompact.compact_request(body, "openai", window=20_000, handles=True)
        alone_runs += _native.pipeline_runs() - before
        assert kept.body == alone.body, f"call of {end} messages"
        assert kept.compactions == alone.compactions
        assert alone.compactions_run == alone.compactions
        kept_compactions.append(kept.compactions_run)
    # Each compaction of the history ran once through the kept compactor: only the ones its
    # call added; compact_request alone replays them all on every call.
    assert kept_runs == sum(kept_compactions) == alone.compactions >= 2
    assert alone_runs > 2 * kept_runs
