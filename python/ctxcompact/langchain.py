"""LangChain: a ``trim_messages`` that never separates a tool call from its results, and an
agent middleware that compacts what each model call sends.

Swap one import::

    # from langchain_core.messages import trim_messages
    from ctxcompact.langchain import trim_messages

    messages = trim_messages(messages, max_tokens=8000)                        # ctxcompact's counts
    messages = trim_messages(messages, max_tokens=20, token_counter=len)       # LangChain's units
    trimmer = trim_messages(max_tokens=8000, token_counter=model)              # a Runnable

Without ``token_counter`` the messages go through :func:`ctxcompact.compact` (exact counts,
old tool outputs cleared first, the task and the current request pinned, a marker with a
digest where history went). With one — a function of a message list, a function of one
``BaseMessage``, a model (its ``get_num_tokens_from_messages``) or ``"approximate"`` — the
trimming is LangChain's (``strategy``, ``allow_partial``, ``text_splitter``, ``start_on``,
``end_on``, ``include_system`` as langchain-core 1.8 has them, ``max_tokens`` in that counter's
units), made over units instead of messages: an AI message that calls tools and the tool
messages answering it are kept or dropped together, and only a message outside a tool round
is ever cut.

For an agent, :class:`CompactionMiddleware` (LangChain 1.x ``create_agent``) compacts the
messages of each model call past a trigger, leaving the agent's state whole.

Every message that comes out unchanged is the very object that went in (its ``id`` and
metadata intact). Needs the ``langchain`` extra: ``pip install "ctxcompact[langchain]"``.
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Sequence, Union

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        SystemMessage,
        ToolMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableLambda
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'ctxcompact.langchain needs langchain-core: pip install "ctxcompact[langchain]"'
    ) from err

from . import InputError, OptionError, compact, count
from . import _hooks

__all__ = ["trim_messages"]

# LangChain's strategies, in ctxcompact's terms: "last" keeps the end, i.e. drops the oldest.
_LANGCHAIN_STRATEGIES = {"last": "oldest"}
# LangChain's token-counter shortcuts (langchain-core 1.8 has this one).
_SHORTCUTS: Dict[str, Callable[..., int]] = {"approximate": count_tokens_approximately}

MessageTypes = Union[str, type, Sequence[Union[str, type]], None]
ListCounter = Callable[[List[BaseMessage]], int]


def trim_messages(
    messages: Optional[Iterable[Any]] = None,
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: str = "auto",
    allow_partial: bool = False,
    end_on: MessageTypes = None,
    start_on: MessageTypes = None,
    include_system: bool = False,
    text_splitter: Any = None,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    marker: Optional[bool] = None,
) -> Any:
    """Trims LangChain messages to ``max_tokens``, never leaving a tool result without its call.

    With ``messages`` it returns the trimmed list; without, a ``Runnable`` doing the same to
    what it is invoked with (``trimmer | model``), as langchain-core's ``trim_messages`` does.

    Keywords: ``max_tokens`` (required); ``token_counter`` — absent: ctxcompact counts with
    ``tokenizer`` (else ``model``'s, else o200k) and compacts with :func:`ctxcompact.compact`;
    given (a function of a message list or of one ``BaseMessage``, a model, ``"approximate"``):
    LangChain's trimming in that counter's units, over whole tool rounds. ``strategy``:
    ``"auto"``, ``"middle"``, ``"oldest"`` or ``"relevant"`` (ctxcompact's, without
    ``token_counter``), ``"last"`` (keep the end; LangChain's default with ``token_counter``) or
    ``"first"`` (keep the start). ``allow_partial`` cuts the one message at the edge of what
    fits (with ``text_splitter``, else at newlines); ``start_on`` and ``end_on`` name message
    types the result starts and ends on; ``include_system`` keeps a leading system message with
    ``strategy="last"``. Without ``token_counter``, ``"first"`` and ``allow_partial`` use
    LangChain's trimming with ctxcompact's counts; otherwise the system messages are always
    kept. ``model`` and ``tokenizer`` choose ctxcompact's counts; the tool options and
    ``marker`` are those of :func:`ctxcompact.compact`, used without ``token_counter``.

    Raises ``ValueError`` (:class:`ctxcompact.OptionError`) on bad options, as langchain-core
    does for the same ones; :class:`ctxcompact.InputError` when a tool message answers no
    earlier call; and, without ``token_counter``, :class:`ctxcompact.CannotFit` when even the
    system messages, the task, the last request and the last turn exceed ``max_tokens``.
    """
    options: Dict[str, Any] = {
        "max_tokens": max_tokens,
        "token_counter": token_counter,
        "strategy": strategy,
        "allow_partial": allow_partial,
        "end_on": end_on,
        "start_on": start_on,
        "include_system": include_system,
        "text_splitter": text_splitter,
        "model": model,
        "tokenizer": tokenizer,
        "tool_mode": tool_mode,
        "keep_tool_rounds": keep_tool_rounds,
        "exclude_tools": exclude_tools,
        "clear_tool_inputs": clear_tool_inputs,
        "clear_at_least": clear_at_least,
        "max_tool_output": max_tool_output,
        "marker": marker,
    }
    if messages is None:
        return RunnableLambda(partial(_trim, **options), name="trim_messages")
    return _trim(messages, **options)


def _trim(
    messages: Any,
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: str = "auto",
    allow_partial: bool = False,
    end_on: MessageTypes = None,
    start_on: MessageTypes = None,
    include_system: bool = False,
    text_splitter: Any = None,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    marker: Optional[bool] = None,
) -> List[BaseMessage]:
    """:func:`trim_messages` on a list of messages."""
    if start_on and strategy == "first":
        raise OptionError("start_on parameter is only valid with strategy='last'")
    if include_system and strategy == "first":
        raise OptionError("include_system parameter is only valid with strategy='last'")
    originals: List[BaseMessage] = convert_to_messages(messages)
    splitter = _splitter(text_splitter)
    if token_counter is not None or strategy == "first" or allow_partial:
        if strategy == "middle":
            raise OptionError(
                'strategy "middle" is ctxcompact\'s own: leave token_counter and allow_partial out'
            )
        if strategy not in ("first", "last", "auto", "oldest"):
            raise OptionError(
                f"Unrecognized strategy={strategy!r}. Supported strategies are 'last' and 'first'."
            )
        if token_counter is None:
            counter = _ctxcompact_counter(model, tokenizer)
        else:
            counter = _list_counter(token_counter)
        units = _units(originals)
        if strategy == "first":
            return _first(units, max_tokens, counter, splitter, allow_partial, end_on)
        return _last(
            units, max_tokens, counter, splitter, allow_partial, include_system, start_on, end_on
        )
    units = _units(originals)
    if end_on:
        while units and not _is_type(units[-1][-1], end_on):
            units.pop()
    kept = [message for unit in units for message in unit]
    if not kept:
        return []
    dicts: List[Dict[str, Any]] = convert_to_openai_messages(kept)
    result = compact(
        dicts,
        target=max_tokens,
        model=model,
        strategy=_LANGCHAIN_STRATEGIES.get(strategy, strategy),
        tokenizer=tokenizer,
        tool_mode=tool_mode,
        keep_tool_rounds=keep_tool_rounds,
        exclude_tools=exclude_tools,
        clear_tool_inputs=clear_tool_inputs,
        clear_at_least=clear_at_least,
        max_tool_output=max_tool_output,
        marker=marker,
    )
    if result.report["action"] == "within_budget":
        output = list(kept)
    else:
        output = _reuse_originals(kept, dicts, result.messages)
    if start_on:
        output = _start_on(output, start_on)
    return output


def _start_on(messages: List[BaseMessage], types: MessageTypes) -> List[BaseMessage]:
    """``messages`` with the units after the leading system messages dropped up to the first
    unit that starts with one of ``types``."""
    head = 0
    while head < len(messages) and isinstance(messages[head], SystemMessage):
        head += 1
    rest = _units(messages[head:])
    while rest and not _is_type(rest[0][0], types):
        rest.pop(0)
    return messages[:head] + [message for unit in rest for message in unit]


def _units(messages: Sequence[BaseMessage]) -> List[List[BaseMessage]]:
    """The messages grouped into units: one message, or an AI message's tool calls with every
    message up to the last tool message answering them (a tool round).

    Raises :class:`InputError` for a tool message that answers no call of an earlier message.
    """
    caller: Dict[str, int] = {}
    starts: List[int] = []  # the index of the first message of each unit
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            call = caller.get(message.tool_call_id)
            if call is None:
                raise InputError(
                    f"tool result in message {index} refers to unknown call id "
                    f"`{message.tool_call_id}`",
                    index,
                    "tool_call_id",
                )
            # The round runs from its call to here: units that started since merge into it.
            while starts and starts[-1] > call:
                starts.pop()
            continue
        if isinstance(message, AIMessage):
            for tool_call in message.tool_calls:
                if tool_call.get("id"):
                    caller[tool_call["id"]] = index
        starts.append(index)
    bounds = starts + [len(messages)]
    return [list(messages[bounds[i] : bounds[i + 1]]) for i in range(len(starts))]


def _is_type(message: BaseMessage, types: MessageTypes) -> bool:
    """Whether ``message`` is of one of ``types`` (type names such as ``"human"``, or
    classes), as langchain-core reads ``start_on`` and ``end_on``."""
    choices = [types] if isinstance(types, (str, type)) else list(types or ())
    names = [t for t in choices if isinstance(t, str)]
    classes = tuple(t for t in choices if isinstance(t, type))
    return message.type in names or isinstance(message, classes)


def _list_counter(token_counter: Any) -> ListCounter:
    """A function of a message list from any ``token_counter`` langchain-core accepts."""
    counter = token_counter
    if isinstance(token_counter, str):
        if token_counter not in _SHORTCUTS:
            shortcuts = ", ".join(f"'{key}'" for key in _SHORTCUTS)
            raise OptionError(
                f"Invalid token_counter shortcut '{token_counter}'. "
                f"Available shortcuts: {shortcuts}."
            )
        counter = _SHORTCUTS[token_counter]
    if hasattr(counter, "get_num_tokens_from_messages"):
        return counter.get_num_tokens_from_messages  # type: ignore[no-any-return]
    if callable(counter):
        parameters = list(inspect.signature(counter).parameters.values())
        if parameters and parameters[0].annotation in (BaseMessage, "BaseMessage"):
            return lambda messages: sum(counter(message) for message in messages)
        return counter  # type: ignore[no-any-return]
    raise OptionError(
        "'token_counter' expected to be a model that implements "
        "'get_num_tokens_from_messages()' or a function. "
        f"Received object of type {type(counter)}."
    )


def _ctxcompact_counter(model: Optional[str], tokenizer: Optional[str]) -> ListCounter:
    """ctxcompact's count of a message list (the model's tokenizer, else o200k)."""

    def counter(messages: List[BaseMessage]) -> int:
        if not messages:
            return 0
        dicts = convert_to_openai_messages(messages)
        return int(count(dicts, model=model, tokenizer=tokenizer)["total"])

    return counter


def _splitter(text_splitter: Any) -> Callable[[str], List[str]]:
    """A function splitting text into pieces: a ``TextSplitter``'s ``split_text``, the given
    function, or langchain-core's default (at newlines, each kept with its piece)."""
    if hasattr(text_splitter, "split_text"):
        return text_splitter.split_text  # type: ignore[no-any-return]
    if text_splitter:
        return text_splitter  # type: ignore[no-any-return]

    def at_newlines(text: str) -> List[str]:
        pieces = text.split("\n")
        return [piece + "\n" for piece in pieces[:-1]] + pieces[-1:]

    return at_newlines


def _flat(units: Sequence[Sequence[BaseMessage]]) -> List[BaseMessage]:
    return [message for unit in units for message in unit]


def _last(
    units: List[List[BaseMessage]],
    max_tokens: int,
    counter: ListCounter,
    splitter: Callable[[str], List[str]],
    allow_partial: bool,
    include_system: bool,
    start_on: MessageTypes,
    end_on: MessageTypes,
) -> List[BaseMessage]:
    """The last units within ``max_tokens`` (LangChain's ``strategy="last"``)."""
    if end_on:
        while units and not _is_type(units[-1][-1], end_on):
            units.pop()
    system: List[BaseMessage] = []
    if include_system and units and isinstance(units[0][0], SystemMessage):
        system = units.pop(0)
    budget = max_tokens
    if system:
        budget = max(0, max_tokens - counter(system))
    kept = _fill(units[::-1], budget, counter, splitter, allow_partial, start_on, from_end=True)
    return system + kept


def _first(
    units: List[List[BaseMessage]],
    max_tokens: int,
    counter: ListCounter,
    splitter: Callable[[str], List[str]],
    allow_partial: bool,
    end_on: MessageTypes,
) -> List[BaseMessage]:
    """The first units within ``max_tokens`` (LangChain's ``strategy="first"``)."""
    return _fill(units, max_tokens, counter, splitter, allow_partial, end_on, from_end=False)


def _fill(
    order: List[List[BaseMessage]],
    max_tokens: int,
    counter: ListCounter,
    splitter: Callable[[str], List[str]],
    allow_partial: bool,
    edge: MessageTypes,
    from_end: bool,
) -> List[BaseMessage]:
    """As many units of ``order`` (taken from the end when ``from_end``) as fit, the next one
    cut when ``allow_partial`` allows it, then units dropped from the far edge until it is of
    the ``edge`` types. Returns the messages in their original order."""

    def messages_of(units: Sequence[List[BaseMessage]]) -> List[BaseMessage]:
        return _flat(units[::-1] if from_end else units)

    if not order:
        return []
    taken = list(order)
    if counter(messages_of(taken)) > max_tokens:
        # The most units that fit, by the same halving search as langchain-core's.
        low, high = 0, len(order)
        for _ in range(len(order).bit_length()):
            if low >= high:
                break
            middle = (low + high + 1) // 2
            if counter(messages_of(order[:middle])) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        taken = list(order[:low])
        if allow_partial and low < len(order) and _can_cut(order[low]):
            cut = _cut(order[low][0], taken, messages_of, max_tokens, counter, splitter, from_end)
            if cut is not None:
                taken.append([cut])

    def far_edge(unit: List[BaseMessage]) -> BaseMessage:
        return unit[0] if from_end else unit[-1]

    if edge:
        while taken and not _is_type(far_edge(taken[-1]), edge):
            taken.pop()
    return messages_of(taken)


def _can_cut(unit: List[BaseMessage]) -> bool:
    """Whether a unit may be cut: a single message that neither calls a tool nor answers one."""
    if len(unit) != 1 or isinstance(unit[0], ToolMessage):
        return False
    return not (isinstance(unit[0], AIMessage) and unit[0].tool_calls)


def _cut(
    message: BaseMessage,
    taken: List[List[BaseMessage]],
    messages_of: Callable[[Sequence[List[BaseMessage]]], List[BaseMessage]],
    max_tokens: int,
    counter: ListCounter,
    splitter: Callable[[str], List[str]],
    from_end: bool,
) -> Optional[BaseMessage]:
    """The part of ``message`` that still fits beside ``taken``, as langchain-core cuts it:
    whole content blocks first (from the far end), else pieces of its first text. ``None``
    when nothing fits."""

    def with_cut(cut: BaseMessage) -> List[BaseMessage]:
        return messages_of([*taken, [cut]])

    copy = message.model_copy(deep=True)
    if isinstance(copy.content, list):
        blocks = list(copy.content)
        for keep in range(len(blocks) - 1, 0, -1):
            copy.content = blocks[len(blocks) - keep :] if from_end else blocks[:keep]
            if counter(with_cut(copy)) <= max_tokens:
                return copy
        copy.content = blocks
        # As langchain-core: the text cut is the first block's, or the last's from the end.
        text = _first_text(blocks[::-1] if from_end else blocks)
    else:
        text = _first_text(copy.content)
    if not text:
        return None
    pieces = splitter(text)
    if from_end:
        pieces = pieces[::-1]
    base = counter(messages_of(taken))
    low, high = 0, len(pieces)
    for _ in range(len(pieces).bit_length()):
        if low >= high:
            break
        middle = (low + high + 1) // 2
        copy.content = _join(pieces[:middle], from_end)
        if base + counter([copy]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return None
    copy.content = _join(pieces[:low], from_end)
    return copy


def _join(pieces: Sequence[str], from_end: bool) -> str:
    return "".join(pieces[::-1] if from_end else pieces)


def _first_text(content: Any) -> Optional[str]:
    """A message's text, or the first text of its content blocks."""
    if isinstance(content, str):
        return content
    for block in content or ():
        if isinstance(block, str):
            return block
        if isinstance(block, dict) and block.get("type") == "text":
            return block.get("text")  # type: ignore[no-any-return]
    return None


def _reuse_originals(
    originals: Sequence[BaseMessage],
    dicts: Sequence[Dict[str, Any]],
    output: Sequence[Dict[str, Any]],
) -> List[BaseMessage]:
    """The output as LangChain messages: the input's own object for every unchanged message.

    :func:`ctxcompact.compact` returns each message it left unchanged as the very dict it was
    given, so an output dict that is one of ``dicts`` stands for the original at its index;
    the others (cleared results, markers) are converted anew.
    """
    index_of = {id(message): index for index, message in enumerate(dicts)}
    found: List[Optional[int]] = []
    for message in output:
        index = index_of.get(id(message))
        found.append(index if index is not None and dicts[index] is message else None)
    return _rebuild(originals, output, found)


def _rebuild(
    originals: Sequence[BaseMessage],
    output: Sequence[Dict[str, Any]],
    found: Sequence[Optional[int]],
) -> List[BaseMessage]:
    """LangChain messages for ``output``: ``originals[found[i]]`` where an output dict is an
    input message unchanged; a cleared tool result as a copy of its original with the new
    content (its name, id and status kept); any other new dict (a marker) converted."""
    results = {
        message.tool_call_id: message for message in originals if isinstance(message, ToolMessage)
    }
    rebuilt: List[Optional[BaseMessage]] = []
    new: List[Dict[str, Any]] = []
    for message, index in zip(output, found):
        if index is not None:
            rebuilt.append(originals[index])
        elif message.get("role") == "tool" and message.get("tool_call_id") in results:
            original = results[message["tool_call_id"]]
            rebuilt.append(original.model_copy(update={"content": message["content"]}))
        else:
            rebuilt.append(None)
            new.append(message)
    # One conversion for all the new messages, placed where they stand.
    converted = iter(convert_to_messages(new))
    return [message if message is not None else next(converted) for message in rebuilt]


try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field
except ImportError:  # pragma: no cover - langchain-core alone: trim_messages only
    AgentMiddleware = None


if AgentMiddleware is not None:

    class CompactionMiddleware(AgentMiddleware):  # type: ignore[misc, valid-type]
        """A LangChain 1.x agent middleware compacting the messages of each model call.

        ``create_agent(model, tools, middleware=[CompactionMiddleware()])``: before every
        model call, the system message and the messages go through
        :func:`ctxcompact.compact_request` as an OpenAI Chat body, the tools' definitions
        counted with them. Under ``trigger`` of the
        model's window (0.7) they go as they are; past it, the history is compacted down to
        what its last 8 calls take, between 0.2 and ``target_ratio`` (0.5) of the window (to
        ``target_ratio`` exactly when given) — old tool outputs cleared to gists, then whole units removed with
        a marker, a tool call never without its results. The decision is a function of the
        messages alone, replayed at their own call boundaries, so between compactions what the
        model is sent only grows at its end and the provider's prompt cache keeps hitting. Only
        the call's request changes (``handler(request.override(messages=...))``): the agent's
        state keeps every message.

        Every marker and placeholder names a handle, and the middleware gives the agent a
        ``ctxcompact_recall`` tool (``self.tools``): it gives back what a handle names, exactly
        as the agent's state held it, from the last model call's messages; nothing is written.

        The window comes from the model's name (its ``model_name`` or ``model``, looked up in
        ctxcompact's catalog) unless ``model`` names another or ``window`` gives it. Other
        keywords are :func:`ctxcompact.compact_request`'s (``tool_mode``, ``keep_tool_rounds``,
        ``exclude_tools``, ``tokenizer``, ``archive``, …). ``last_decision`` is the last
        call's :class:`ctxcompact.ForwardedRequest` (its ``action``, ``reason``, tokens).
        """

        def __init__(
            self,
            *,
            model: Optional[str] = None,
            window: Optional[int] = None,
            trigger: Optional[float] = None,
            target_ratio: Optional[float] = None,
            **options: Any,
        ) -> None:
            super().__init__()
            self.settings = _hooks.Settings(model, window, trigger, target_ratio, options)
            self.last_decision: Any = None
            settings = self.settings

            def recall(handle: str) -> str:
                return _hooks.recall(settings, handle)

            self.tools = [
                StructuredTool.from_function(
                    func=recall,
                    name=_hooks.RECALL_NAME,
                    description=_hooks.RECALL_DESCRIPTION,
                    args_schema=_RecallArgs,
                )
            ]

        def compact_request(self, request: ModelRequest) -> ModelRequest:
            """The request this middleware sends for ``request``: the same one under the
            trigger, else one whose messages are compacted."""
            system = [request.system_message] if request.system_message is not None else []
            originals: List[BaseMessage] = system + list(request.messages)
            dicts = convert_to_openai_messages(originals)
            body, self.last_decision = _hooks.fit(
                dicts,
                "openai",
                self.settings,
                model=_model_name(request.model),
                envelope=_tools(request.tools),
            )
            if body is None:
                return request
            output = body["messages"]
            messages = _rebuild(originals, output, _hooks.match(dicts, output))
            if system and messages and messages[0] is system[0]:
                return request.override(messages=messages[1:])
            # The system message was rewritten (folded into a marker): send it as a message.
            return request.override(system_message=None, messages=messages)

        def wrap_model_call(self, request: ModelRequest, handler: Callable[[Any], Any]) -> Any:
            """Calls the model with the compacted request."""
            return handler(self.compact_request(request))

        async def awrap_model_call(
            self, request: ModelRequest, handler: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            """Calls the model with the compacted request (async agents)."""
            return await handler(self.compact_request(request))

    __all__ = ["CompactionMiddleware", "trim_messages"]

    class _RecallArgs(BaseModel):
        """The recall tool's argument."""

        handle: str = Field(description="The handle a `[ctxcompact: …]` note names.")

    def _tools(tools: Sequence[Any]) -> Dict[str, Any]:
        """The request's tool definitions as an OpenAI body's ``tools``, counted with the
        messages (a tool that cannot be converted is left out of the count)."""
        definitions = []
        for definition in tools:
            try:
                definitions.append(convert_to_openai_tool(definition))
            except (TypeError, ValueError, NotImplementedError):
                continue
        return {"tools": definitions} if definitions else {}

    def _model_name(model: Any) -> Optional[str]:
        """The model name a LangChain chat model carries, if any."""
        for attribute in ("model_name", "model", "model_id"):
            name = getattr(model, attribute, None)
            if isinstance(name, str) and name:
                return name
        return None
