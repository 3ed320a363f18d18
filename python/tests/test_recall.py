"""Each adapter's recall tool in its framework's agent loop (issue 53): the scripted model of
recall_script.py recalls a cleared output and a removed request by the handles the notes name,
and gets them back exactly as the agent's history holds them; nothing is written."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

import pytest

import ctxcompact
from recall_script import (
    FINAL,
    RECALL,
    TURNS,
    next_step,
    read_output,
    recall_id,
    recalled_lines,
)

WINDOW = 24_000


def check(history: List[Dict[str, Any]], convert: Any = list) -> None:
    """The recall tool's results in `history` (OpenAI Chat dicts, the agent's own; `convert`
    turns the recalled lines into them): a cleared output as the read tool gave it, and the
    removed request word for word."""
    lines = convert(recalled_lines(history))
    outputs = {m["tool_call_id"]: m["content"] for m in history if m.get("role") == "tool"}
    # A recalled span holds an earlier compaction's placeholders as they were sent: those name
    # handles of their own; every output recalled whole is the read tool's.
    restored = [m for m in lines if m.get("role") == "tool"
                and not str(m["content"]).startswith("[ctxcompact:")]
    assert restored, "no cleared output was recalled"
    assert all(m["content"] == outputs[m["tool_call_id"]] for m in restored)
    assert {"role": "user", "content": TURNS[1]} in lines, "the removed request was not recalled"


def test_the_recall_tool_answers_bad_handles_with_a_sentence_naming_them() -> None:
    pytest.importorskip("langchain.agents")
    from ctxcompact.langchain import CompactionMiddleware

    tool = CompactionMiddleware(window=WINDOW).tools[0]
    assert tool.name == RECALL
    assert tool.invoke({"handle": "x"}).startswith("ctxcompact recall: no model call")
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    with pytest.raises(ctxcompact.RecallError, match="`zz` is not a ctxcompact handle"):
        ctxcompact.recall_request(body.encode(), "openai", "zz", window=WINDOW, handles=True)
    with pytest.raises(ctxcompact.RecallError, match="000000000000/000000000000"):
        ctxcompact.recall_request(
            body.encode(), "openai", "000000000000/000000000000", window=WINDOW, handles=True
        )


def test_one_adapter_recalls_each_conversation_from_its_own_history() -> None:
    from ctxcompact import _hooks

    settings = _hooks.Settings(None, 8_000, None, None, {})

    def items(task: str, reads: int) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = [
            {"role": "system", "content": "You read files."},
            {"role": "user", "content": task},
        ]
        for i in range(reads):
            call = {"id": f"c{i}", "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"path": f"{i}.txt"})}}
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
            out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{task} line {i} " * 300})
        return out

    body, decision = _hooks.fit(items("alpha task", 20), "openai", settings, model="gpt-4o")
    assert decision.action == "compacted", decision.reason
    handle = re.search(r"handle ([0-9a-f]{12}/[0-9a-f]{12})", json.dumps(body)).group(1)
    # Another conversation's call through the same adapter, after it.
    _hooks.fit(items("beta task", 2), "openai", settings, model="gpt-4o")
    recalled = _hooks.recall(settings, handle)
    assert not recalled.startswith("ctxcompact recall:"), recalled
    assert "alpha task line" in recalled


def test_langchain_middleware_recalls_from_the_agents_state() -> None:
    pytest.importorskip("langchain.agents", reason="the langchain package (1.x) is not installed")
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from ctxcompact.langchain import CompactionMiddleware

    @tool
    def read_file(path: str) -> str:
        """Reads a module of the crate."""
        return read_output(path)

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
            return self

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
            step = next_step(convert_to_openai_messages(messages))
            if step[0] == "read":
                call = {"id": f"read_{step[1]}", "name": "read_file",
                        "args": {"path": f"src/mod{step[1]}.rs"}}
            elif step[0] == "recall":
                call = {"id": recall_id(step[1]), "name": RECALL, "args": {"handle": step[1]}}
            else:
                return ChatResult(generations=[ChatGeneration(message=AIMessage(FINAL))])
            message = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    middleware = CompactionMiddleware(model="gpt-4o", window=WINDOW)
    agent = create_agent(Scripted(), tools=[read_file], system_prompt="You are a coding agent.",
                         middleware=[middleware])
    messages: List[Any] = []
    for turn in TURNS:
        result = agent.invoke({"messages": [*messages, HumanMessage(turn)]},
                              {"recursion_limit": 100})
        messages = result["messages"]
        assert messages[-1].content == FINAL
    check(convert_to_openai_messages(messages))


def responses_to_chat(items: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Responses items as OpenAI Chat dicts, for recall_script.py (reasoning left out)."""
    out: List[Dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append({"role": item["role"], "content": content})
        elif kind == "function_call":
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}}
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
    return out


def test_agents_sdk_filter_recalls_from_the_runs_history() -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from ctxcompact.openai_agents import CompactionFilter

    def as_dicts(items: List[Any]) -> List[Dict[str, Any]]:
        return [i.model_dump(mode="json", exclude_unset=True) if hasattr(i, "model_dump") else i
                for i in items]

    @function_tool
    def read_file(path: str) -> str:
        """Reads a module of the crate.

        Args:
            path: The module's path.
        """
        return read_output(path)

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> ModelResponse:
            items = as_dicts(list(input))
            step = next_step(responses_to_chat(items))
            if step[0] == "final":
                output: List[Any] = [ResponseOutputMessage(
                    id="msg_final", role="assistant", status="completed", type="message",
                    content=[ResponseOutputText(text=FINAL, type="output_text", annotations=[])],
                )]
            else:
                name, call_id, arguments = (
                    ("read_file", f"read_{step[1]}", {"path": f"src/mod{step[1]}.rs"})
                    if step[0] == "read" else (RECALL, recall_id(step[1]), {"handle": step[1]})
                )
                output = [ResponseFunctionToolCall(
                    id=f"fc_{call_id}", call_id=call_id, name=name, type="function_call",
                    arguments=json.dumps(arguments), status="completed",
                )]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    compaction = CompactionFilter(model="gpt-4o", window=WINDOW)
    agent = Agent(name="coder", instructions="You are a coding agent.", model=Scripted(),
                  tools=[read_file, compaction.recall_tool])
    config = RunConfig(call_model_input_filter=compaction, tracing_disabled=True)
    items: List[Any] = []
    for turn in TURNS:
        result = Runner.run_sync(agent, [*items, {"role": "user", "content": turn}],
                                 run_config=config, max_turns=60)
        assert result.final_output == FINAL
        items = result.to_input_list()
    check(responses_to_chat(as_dicts(items)), responses_to_chat)


def test_pydantic_ai_capability_recalls_from_the_runs_messages() -> None:
    pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from ctxcompact.pydantic_ai import Compaction, to_openai

    def scripted(messages: List[Any], info: AgentInfo) -> ModelResponse:
        dicts = to_openai(messages)[0]
        step = next_step(dicts)
        if step[0] == "read":
            return ModelResponse(parts=[ToolCallPart(
                "read_file", {"path": f"src/mod{step[1]}.rs"}, tool_call_id=f"read_{step[1]}")])
        if step[0] == "recall":
            return ModelResponse(parts=[ToolCallPart(
                RECALL, {"handle": step[1]}, tool_call_id=recall_id(step[1]))])
        return ModelResponse(parts=[TextPart(FINAL)])

    capability = Compaction(model="gpt-4o", window=WINDOW)
    agent = Agent(FunctionModel(scripted), instructions="You are a coding agent.",
                  capabilities=[capability])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Reads a module of the crate."""
        return read_output(path)

    history: List[Any] = []
    for turn in TURNS:
        result = agent.run_sync(turn, message_history=history)
        assert result.output == FINAL
        history = result.all_messages()
    check(to_openai(history)[0])
