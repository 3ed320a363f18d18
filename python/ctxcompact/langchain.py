"""A drop-in for LangChain's ``trim_messages`` that never separates a tool call from its results.

Swap one import::

    # from langchain_core.messages import trim_messages
    from ctxcompact.langchain import trim_messages

    messages = trim_messages(messages, max_tokens=8000)

Messages are converted with langchain-core's own ``convert_to_openai_messages`` and
``convert_to_messages``, compacted by :func:`ctxcompact.compact`, and every message that comes
out unchanged is returned as the very object that went in (its ``id`` and metadata intact);
only messages ctxcompact rewrote (cleared tool results, the marker that stands for removed
history) are new objects. Needs the ``langchain`` extra: ``pip install "ctxcompact[langchain]"``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

try:
    from langchain_core.messages import (
        BaseMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'ctxcompact.langchain needs langchain-core: pip install "ctxcompact[langchain]"'
    ) from err

from . import OptionError, compact

__all__ = ["trim_messages"]

# LangChain's strategies, in ctxcompact's terms: "last" keeps the end, i.e. drops the oldest.
_LANGCHAIN_STRATEGIES = {"last": "oldest"}


def trim_messages(
    messages: Iterable[Any],
    *,
    max_tokens: int,
    model: Optional[str] = None,
    strategy: str = "auto",
    tokenizer: Optional[str] = None,
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    marker: Optional[bool] = None,
    token_counter: Optional[Callable[..., int]] = None,
    include_system: Optional[bool] = None,
    start_on: Any = None,
    end_on: Any = None,
    allow_partial: Optional[bool] = None,
    text_splitter: Any = None,
) -> List[BaseMessage]:
    """Trims LangChain messages to ``max_tokens`` with :func:`ctxcompact.compact`.

    ``messages`` are LangChain messages or anything ``convert_to_messages`` accepts; the
    result is a list of LangChain messages within ``max_tokens`` tokens, counted with
    ``tokenizer`` (else the model's, else o200k) including OpenAI's per-message overheads.
    ``strategy`` is ``"auto"``, ``"middle"`` or ``"oldest"``; LangChain's ``"last"`` means
    ``"oldest"`` (drop the oldest, keep the last). The tool options and ``marker`` are those of
    :func:`ctxcompact.compact`.

    Accepted for drop-in compatibility and not needed: ``token_counter`` (ctxcompact counts
    with its own tokenizer), ``include_system`` (system messages are always kept),
    ``start_on``/``end_on`` (the output always starts and ends on whole turns, with every tool
    result after its call), ``allow_partial`` and ``text_splitter`` (messages are never cut).

    Raises :class:`ctxcompact.CannotFit` when even the system messages, the task, the last
    request and the last turn exceed ``max_tokens``, :class:`ctxcompact.InputError` when the
    messages break tool-call pairing, :class:`ctxcompact.OptionError` on bad options.
    """
    del token_counter, include_system, start_on, end_on, allow_partial, text_splitter
    if strategy == "first":
        raise OptionError(
            'strategy "first" keeps the oldest messages and drops the latest; ctxcompact keeps '
            'the latest: use "auto", "middle" or "oldest"'
        )
    originals: Sequence[BaseMessage] = convert_to_messages(messages)
    dicts: List[Dict[str, Any]] = convert_to_openai_messages(originals)
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
        return list(originals)
    return _reuse_originals(originals, dicts, result.messages)


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
    kept: List[Optional[BaseMessage]] = []
    new: List[Dict[str, Any]] = []
    for message in output:
        index = index_of.get(id(message))
        if index is not None and dicts[index] is message:
            kept.append(originals[index])
        else:
            kept.append(None)
            new.append(message)
    # One conversion for all the new messages, placed where they stand.
    converted = iter(convert_to_messages(new))
    return [message if message is not None else next(converted) for message in kept]
