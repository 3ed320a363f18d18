"""pydantic-ai: a capability that compacts what each model request sends.

::

    from pydantic_ai import Agent
    from ctxcompact.pydantic_ai import Compaction

    agent = Agent("openai:gpt-4o", capabilities=[Compaction()])

Before every model request (the capability's ``before_model_request``) the request's messages
— ``ModelRequest`` and ``ModelResponse``, with ``ToolCallPart`` and ``ToolReturnPart`` paired
by ``tool_call_id`` — are read as an OpenAI Chat body (the instructions in front and the
tools' definitions counted) and go through :func:`ctxcompact.compact_request`, as
``ctxcompact proxy`` decides. Under the trigger they go as they are; past it, the history is
compacted to the target, a tool call never without its return. Between compactions what is
sent only grows at its end, so the provider's prompt cache keeps hitting. Only this request's
messages change (``dataclasses.replace(request_context, messages=...)``): the run's history
(``ctx.messages``, ``result.all_messages()``) keeps every message.

The messages sent are pydantic-ai's own: a message left whole is the very object that went in;
one that lost some parts (a removed tool round beside a kept prompt) is a copy holding the
others, each the same part object; a cleared tool return is a copy of its part with the
placeholder as content; the marker standing for removed history is a ``ModelRequest`` with one
``UserPromptPart``. Parts ctxcompact does not read (instruction and capability deltas and the
like) stay in their message.

Needs the ``pydantic-ai`` extra: ``pip install "ctxcompact[pydantic-ai]"``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

try:
    from pydantic_ai import Tool
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        UserPromptPart,
    )
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'ctxcompact.pydantic_ai needs pydantic-ai: pip install "ctxcompact[pydantic-ai]"'
    ) from err

from . import _hooks

__all__ = ["Compaction", "to_openai"]

# The response parts that call a tool whose return comes back in a later request.
_CALL_KINDS = ("tool-call", "tool-search-call", "capability-load-call")
# Where an OpenAI message came from: (message index, part index), the part ``None`` for a
# response (one assistant message) and the message ``-1`` for the instructions.
Origin = Tuple[int, Optional[int]]


def to_openai(
    messages: List[ModelMessage], instructions: Optional[str] = None
) -> Tuple[List[Dict[str, Any]], List[Origin]]:
    """pydantic-ai messages as OpenAI Chat messages, and where each came from.

    A request's system prompts, user prompts and tool returns are a message each; a response is
    one assistant message (its text, thinking and other parts as text, its tool calls as
    ``tool_calls``). A tool return whose call is in no earlier response reads as user text, so
    that a history starting mid-round is still read. Parts of other kinds are not sent.
    """
    dicts: List[Dict[str, Any]] = []
    origins: List[Origin] = []
    if instructions:
        dicts.append({"role": "system", "content": instructions})
        origins.append((-1, None))
    called = set()
    for m, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            texts: List[str] = []
            calls: List[Dict[str, Any]] = []
            for part in message.parts:
                if part.part_kind in _CALL_KINDS and getattr(part, "tool_call_id", None):
                    called.add(part.tool_call_id)
                    calls.append({
                        "id": part.tool_call_id,
                        "type": "function",
                        "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                    })
                elif isinstance(part, (TextPart, ThinkingPart)):
                    texts.append(part.content)
                else:
                    texts.append(_text(part))
            assistant: Dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
            if calls:
                assistant["tool_calls"] = calls
            dicts.append(assistant)
            origins.append((m, None))
            continue
        for p, part in enumerate(message.parts):
            converted = _request_part(part, called)
            if converted is not None:
                dicts.append(converted)
                origins.append((m, p))
    return dicts, origins


def _request_part(part: Any, called: set) -> Optional[Dict[str, Any]]:
    """One request part as an OpenAI message, ``None`` for a part of a kind not sent."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _text(part.content)}
    call_id = getattr(part, "tool_call_id", None)
    if call_id is None or not part.part_kind.endswith(("-return", "-prompt", "-feedback")):
        return None
    if hasattr(part, "model_response_str"):
        content = part.model_response_str()
    elif hasattr(part, "model_response"):
        content = part.model_response()
    else:
        content = _text(getattr(part, "content", ""))
    if call_id in called:
        return {"role": "tool", "tool_call_id": call_id, "content": content}
    return {"role": "user", "content": content}


def _text(content: Any) -> str:
    """Content as text: strings as they are, other items named by their type."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(_text(item) for item in content)
    if hasattr(content, "content") and isinstance(content.content, str):
        return content.content
    return f"[{type(content).__name__}]"


def _from_openai(
    messages: List[ModelMessage],
    dicts: List[Dict[str, Any]],
    origins: List[Origin],
    output: List[Dict[str, Any]],
) -> List[ModelMessage]:
    """The compacted OpenAI messages as pydantic-ai messages, the originals wherever they are
    unchanged (see the module's docs)."""
    found = _hooks.match(dicts, output)
    returns: Dict[str, Origin] = {}
    responses: Dict[str, int] = {}
    for (m, p), converted in zip(origins, dicts):
        if converted["role"] == "tool":
            returns[converted["tool_call_id"]] = (m, p)
        for call in converted.get("tool_calls", ()):
            responses[call["id"]] = m
    # Each output message as (message index or None for a new message, the part or message).
    entries: List[Tuple[Optional[int], Any]] = []
    for item, index in zip(output, found):
        if index is not None:
            m, p = origins[index]
            if m >= 0:
                entries.append((m, messages[m] if p is None else messages[m].parts[p]))
        elif item["role"] == "tool" and item.get("tool_call_id") in returns:
            m, p = returns[item["tool_call_id"]]
            assert p is not None
            part = messages[m].parts[p]
            entries.append((m, dataclasses.replace(part, content=item["content"])))
        elif item["role"] == "assistant" and item.get("tool_calls"):
            m = responses[item["tool_calls"][0]["id"]]
            entries.append((m, _with_arguments(messages[m], item["tool_calls"])))
        else:
            part_type = SystemPromptPart if item["role"] == "system" else UserPromptPart
            entries.append((None, ModelRequest(parts=[part_type(content=_text(item["content"]))])))
    return _assemble(messages, origins, entries)


def _with_arguments(response: Any, calls: List[Dict[str, Any]]) -> Any:
    """``response`` with its tool calls' arguments as ``calls`` has them (cleared inputs)."""
    arguments = {call["id"]: call["function"]["arguments"] for call in calls}
    parts = [
        dataclasses.replace(part, args=arguments[part.tool_call_id])
        if isinstance(part, ToolCallPart) and part.tool_call_id in arguments
        and arguments[part.tool_call_id] != part.args_as_json_str()
        else part
        for part in response.parts
    ]
    if all(a is b for a, b in zip(parts, response.parts)):
        return response
    return dataclasses.replace(response, parts=parts)


def _assemble(
    messages: List[ModelMessage],
    origins: List[Origin],
    entries: List[Tuple[Optional[int], Any]],
) -> List[ModelMessage]:
    """Messages from ``entries``: consecutive parts of one request make one request (the
    original when every part it sends is there unchanged); a message none of whose parts is
    sent stays where it was."""
    groups: List[Tuple[Optional[int], List[Any]]] = []
    for m, item in entries:
        if m is not None and groups and groups[-1][0] == m:
            groups[-1][1].append(item)
        else:
            groups.append((m, [item]))
    sent = {m for m, _ in origins}
    unsent = [m for m in range(len(messages)) if m not in sent]
    result: List[ModelMessage] = []
    for m, items in groups:
        while m is not None and unsent and unsent[0] < m:
            result.append(messages[unsent.pop(0)])
        if m is None or isinstance(messages[m], ModelResponse):
            result.extend(items)
        else:
            result.append(_request(messages[m], [p for n, p in origins if n == m], items))
    result.extend(messages[m] for m in unsent)
    return result


def _request(original: Any, read: List[Optional[int]], items: List[Any]) -> Any:
    """``original`` holding only ``items`` of the parts it sends, and every part not sent."""
    if len(items) == len(read) and all(
        item is original.parts[p] for item, p in zip(items, read) if p is not None
    ):
        return original
    placed = [(_place(original, item), item) for item in items]
    placed += [(p, part) for p, part in enumerate(original.parts) if p not in read]
    return dataclasses.replace(original, parts=[part for _, part in sorted(placed, key=_first)])


def _first(pair: Tuple[int, Any]) -> int:
    return pair[0]


def _place(original: Any, part: Any) -> int:
    """Where a part of a rebuilt request goes: its place in the original request (a cleared
    copy takes the place of the part it replaces)."""
    for p, candidate in enumerate(original.parts):
        if candidate is part:
            return p
    call_id = getattr(part, "tool_call_id", None)
    for p, candidate in enumerate(original.parts):
        if call_id is not None and getattr(candidate, "tool_call_id", None) == call_id:
            return p
    return len(original.parts)


@dataclass
class Compaction(AbstractCapability[Any]):
    """A pydantic-ai capability compacting the messages of each model request.

    Under ``trigger`` of the model's window (0.7) a request's messages go as they are; past it,
    the history is compacted down to what its last 8 calls take, between 0.2 and
    ``target_ratio`` (0.5) of the window (to ``target_ratio`` exactly when given). The window comes from the
    model's name (looked up in ctxcompact's catalog) unless ``model`` names another or
    ``window`` gives it. ``options`` are :func:`ctxcompact.compact_request`'s other keywords
    (``tool_mode``, ``keep_tool_rounds``, ``exclude_tools``, ``tokenizer``, ``archive``, …).
    ``last_decision`` is the last request's :class:`ctxcompact.ForwardedRequest`.

    Every marker and placeholder names a handle, and the capability registers a
    ``ctxcompact_recall`` tool with the agent (``get_toolset``): it gives back what a handle
    names, exactly as the run's messages held it, from the last model request's messages;
    nothing is written.
    """

    model: Optional[str] = None
    window: Optional[int] = None
    trigger: Optional[float] = None
    target_ratio: Optional[float] = None
    options: Dict[str, Any] = field(default_factory=dict)
    last_decision: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        self._settings = _hooks.Settings(
            self.model, self.window, self.trigger, self.target_ratio, dict(self.options)
        )

    def get_toolset(self) -> Any:
        """The recall tool, as a toolset of its own."""
        settings = self._settings

        def recall(handle: str) -> str:
            return _hooks.recall(settings, handle)

        tool = Tool(recall, name=_hooks.RECALL_NAME, description=_hooks.RECALL_DESCRIPTION)
        return FunctionToolset([tool])

    @classmethod
    def get_serialization_name(cls) -> Optional[str]:
        """Not spec-serializable (its options are Python values)."""
        return None

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        """The request context with its messages compacted past the trigger."""
        messages = list(request_context.messages)
        dicts, origins = to_openai(messages, _instructions(request_context))
        body, self.last_decision = _hooks.fit(
            dicts,
            "openai",
            self._settings,
            model=_model_name(request_context.model),
            envelope=_tools(request_context),
        )
        if body is None:
            return request_context
        compacted = _from_openai(messages, dicts, origins, body["messages"])
        return dataclasses.replace(request_context, messages=compacted)


def _instructions(request_context: Any) -> Optional[str]:
    """The request's instructions, counted in front of its messages."""
    parameters = getattr(request_context, "model_request_parameters", None)
    parts = getattr(parameters, "instruction_parts", None) or []
    text = "\n\n".join(part.content for part in parts if getattr(part, "content", None))
    return text or None


def _tools(request_context: Any) -> Dict[str, Any]:
    """The request's tool definitions as an OpenAI body's ``tools``, counted with the messages."""
    parameters = getattr(request_context, "model_request_parameters", None)
    definitions = [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.parameters_json_schema,
            },
        }
        for tool in [
            *getattr(parameters, "function_tools", ()),
            *getattr(parameters, "output_tools", ()),
        ]
    ]
    return {"tools": definitions} if definitions else {}


def _model_name(model: Any) -> Optional[str]:
    """The name a pydantic-ai model carries (``model_name``), if any."""
    name = getattr(model, "model_name", None)
    return name if isinstance(name, str) and name else None
