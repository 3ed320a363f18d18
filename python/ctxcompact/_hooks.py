"""What the framework adapters share: one model call's history through :func:`compact_request`.

An adapter turns the messages of one model call into provider-format items (OpenAI Chat
messages or Responses items), and :func:`fit` decides what to send as ``ctxcompact proxy``
does: under the trigger the items as they are; past it, the history compacted down to the
target, replayed at its own call boundaries so that between compactions what is sent only
grows at its end. The decision is a function of the items alone, so an agent's state is never
touched and the provider's prompt cache keeps hitting; the adapter's kept request compactor
(:meth:`Settings.compactor`) resumes each replay where the conversation's last call left it. :func:`match` then tells which output
item is which input item, so that an adapter hands back its framework's own objects for every
item that came out unchanged.

Every note names a handle (``handles=True`` unless given otherwise), and each adapter offers a
recall tool in its framework's form, answered by :func:`recall` from the last call's items of
each conversation the adapter served lately — the agent's history whole, as its state holds it:
nothing is written anywhere.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import (
    ForwardedRequest,
    OptionError,
    RecallError,
    _request_compactor,
    _RequestCompactor,
    compact_request,
)

# Each request format's key for the list of items in a body.
_ITEMS_KEY = {"openai": "messages", "responses": "input"}

#: How many conversations an adapter keeps the last model call of, for its recall tool, and
#: the replay of, for its next call: one adapter may serve several at once (a server's
#: agents), each recalled from its own history.
RECALL_CONVERSATIONS = 32


class Settings:
    """What an adapter was given: the model (or its window), the trigger, the target, options.

    ``model`` names the model for the catalog's window and tokenizer when the framework's own
    model object names none (or to override it); ``window`` is the context window in tokens
    for every model; ``trigger`` and ``target_ratio`` are fractions of it (0.7 and 0.5 unless
    given). ``options`` are :func:`ctxcompact.compact_request`'s other keywords.
    """

    __slots__ = (
        "model",
        "window",
        "trigger",
        "target_ratio",
        "options",
        "_calls",
        "_compactors",
        "_lock",
    )

    def __init__(
        self,
        model: Optional[str],
        window: Optional[int],
        trigger: Optional[float],
        target_ratio: Optional[float],
        options: Dict[str, Any],
    ) -> None:
        if model is not None and not isinstance(model, str):
            raise OptionError(f"model must be a string, not {type(model).__name__}")
        for name in options:
            if name in ("body", "format", "path_model", "client"):
                raise OptionError(f"{name} is set by the adapter, not by its caller")
        # What is removed stays recallable from the agent's state: every note names a handle.
        options = {"handles": True, **options}
        self.model = model
        self.window = window
        self.trigger = trigger
        self.target_ratio = target_ratio
        self.options = options
        # Of each conversation served lately (by its first item), the last model call's body
        # (the agent's whole history then) and format, newest last: what the recall tool
        # answers from. Calls of concurrent conversations may come from several threads.
        self._calls: "OrderedDict[str, Tuple[bytes, str]]" = OrderedDict()
        # A request compactor per request format, made at its first call and kept, so that each
        # call resumes its conversation from the compactor's cache instead of replaying it.
        self._compactors: Dict[str, _RequestCompactor] = {}
        self._lock = threading.Lock()
        # Check the options once, on an empty request, so that a mistake shows at construction.
        compact_request(
            b'{"messages": []}',
            "openai",
            window=window,
            trigger=trigger,
            target_ratio=target_ratio,
            **options,
        )

    def remember(self, conversation: str, body: bytes, format: str) -> None:
        """Keeps ``body`` as the last call of ``conversation`` (:func:`_conversation_key`),
        and the last calls of at most :data:`RECALL_CONVERSATIONS` conversations."""
        with self._lock:
            self._calls.pop(conversation, None)
            self._calls[conversation] = (body, format)
            while len(self._calls) > RECALL_CONVERSATIONS:
                self._calls.popitem(last=False)

    def compactor(self, format: str) -> _RequestCompactor:
        """The request compactor of ``format``, caching the histories of at most
        :data:`RECALL_CONVERSATIONS` conversations."""
        with self._lock:
            if format not in self._compactors:
                options = {
                    "window": self.window,
                    "trigger": self.trigger,
                    "target_ratio": self.target_ratio,
                    **self.options,
                }
                self._compactors[format] = _request_compactor(
                    b"", format, options, RECALL_CONVERSATIONS
                )
            return self._compactors[format]

    def last_calls(self) -> List[Tuple[bytes, str]]:
        """The last call of each conversation kept, newest first."""
        with self._lock:
            return list(reversed(self._calls.values()))


def fit(
    items: Sequence[Any],
    format: str,
    settings: Settings,
    *,
    model: Optional[str] = None,
    envelope: Optional[Dict[str, Any]] = None,
) -> Tuple[Optional[Dict[str, Any]], ForwardedRequest]:
    """What to send for one model call: ``(body, decision)``, the body a dict holding the items
    under ``"messages"`` (``"openai"``) or ``"input"`` (``"responses"``).

    ``items`` are JSON-ready dicts in ``format`` (``"openai"`` or ``"responses"``); ``model`` the
    name the framework's model object gives (``settings.model`` wins over it); ``envelope`` the
    body's other fields (Responses ``instructions``). The body is ``None`` when the input goes
    as it is: under the trigger, or failed open (no window known, cannot fit), which also
    warns with the decision's ``reason``.
    """
    texts = [json.dumps(item, ensure_ascii=False) for item in items]
    head: Dict[str, Any] = {}
    name = settings.model or model
    if name:
        head["model"] = name
    head.update(envelope or {})
    prefix = json.dumps(head, ensure_ascii=False)[:-1]
    separator = ", " if head else ""
    body = f'{prefix}{separator}"{_ITEMS_KEY[format]}": [{", ".join(texts)}]}}'.encode("utf-8")
    settings.remember(_conversation_key(items, texts), body, format)
    decision = settings.compactor(format).compact(body)
    if decision.action == "failed_open":
        # The call still goes, as it is; say why once, as the proxy's ledger would.
        warnings.warn(
            f"ctxcompact sent a model call as it is: {decision.reason} "
            "(an adapter takes model= or window=)",
            RuntimeWarning,
            stacklevel=3,
        )
    if decision.action != "compacted":
        return None, decision
    return json.loads(decision.body), decision


def _conversation_key(items: Sequence[Any], texts: Sequence[str]) -> str:
    """What tells a conversation from the others an adapter serves: its first item that is not
    a system or developer message (its first request; a system prompt is often the same for
    every conversation of an agent), else its first item."""
    for item, text in zip(items, texts):
        if not (isinstance(item, dict) and item.get("role") in ("system", "developer")):
            return text
    return texts[0] if texts else ""


def match(items: Sequence[Any], output: Sequence[Any]) -> List[Optional[int]]:
    """For each output item, the index of the input item it equals, or ``None`` for a new one.

    The output keeps the input's order (removal, clearing, a marker where history went), so
    each item is looked for after the last one found: the same text twice maps to two inputs.
    """
    positions: Dict[str, List[int]] = {}
    for index, item in enumerate(items):
        positions.setdefault(json.dumps(item, ensure_ascii=False), []).append(index)
    found: List[Optional[int]] = []
    after = -1
    for item in output:
        candidates = positions.get(json.dumps(item, ensure_ascii=False), [])
        index = next((i for i in candidates if i > after), None)
        if index is not None:
            after = index
        found.append(index)
    return found


#: The recall tool's name, in every framework.
RECALL_NAME = "ctxcompact_recall"

#: The recall tool's description, in every framework.
RECALL_DESCRIPTION = (
    "Give back what ctxcompact removed from this conversation to fit the model's window: "
    "the messages or tool output a `[ctxcompact: …]` note stands for, exactly as they were, "
    "one JSON message a line. Pass the handle the note names (`handle 3fa2c1d0e9ab/7c1b2e3f4a5d`)."
)


def recall(settings: Settings, handle: str) -> str:
    """The recall tool's answer: what ``handle`` names, from the history of the last model
    call of a conversation the adapter served (the agent's whole history, compacted with
    ``settings``; the newest first, so one adapter shared by concurrent conversations answers
    each from its own), or a sentence saying why not."""
    calls = settings.last_calls()
    if not calls:
        return "ctxcompact recall: no model call was made yet, so nothing was removed"
    first_error: Optional[RecallError] = None
    for body, format in calls:
        try:
            return settings.compactor(format).recall(body, handle)
        except RecallError as err:
            first_error = first_error or err
    return f"ctxcompact recall: {first_error}"
