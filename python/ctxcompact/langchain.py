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

import json
from bisect import bisect_left
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

    The output keeps the input's order, so each output message is matched to the first equal
    input message after the previous match; unmatched ones are converted anew.
    """
    positions: Dict[str, List[int]] = {}
    for index, message in enumerate(dicts):
        positions.setdefault(_key(message), []).append(index)
    kept: List[BaseMessage] = []
    after = 0
    for message in output:
        candidates = positions.get(_key(message), [])
        at = bisect_left(candidates, after)
        if at < len(candidates):
            index = candidates[at]
            kept.append(originals[index])
            after = index + 1
        else:
            kept.extend(convert_to_messages([message]))
    return kept


def _key(message: Dict[str, Any]) -> str:
    """A message's identity for matching: its JSON with sorted keys."""
    return json.dumps(message, sort_keys=True)
