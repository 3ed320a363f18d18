"""Deterministic compaction of LLM conversation histories, from Python.

ctxcompact removes history from a conversation until it fits a token budget, without calling a
model: it trims old tool outputs first, then removes whole units of history (a tool call never
leaves without its results), keeps the system prompt, the task and recent work, and reports what
it removed and why. The same input and options always give the same output.

Every function takes plain Python data in a format the library reads: a list of message dicts
(OpenAI Chat Completions) or a request body dict (OpenAI ``{"messages": [...]}`` or Anthropic
``{"system": ..., "messages": [...]}``). The data goes to Rust as it is, with no JSON text in
between; the work runs there with the GIL released, so calls from several threads run in
parallel. Results equal the ``ctxcompact`` command line's for the same input and options, as
JSON data. In a result's conversation, every message that came out unchanged is the input's own
object (not a copy), as LangChain's ``trim_messages`` returns its input's messages; the lists
and the body dict holding them are new.

Example::

    import ctxcompact
    body = {"model": "gpt-4o", "messages": messages}
    result = ctxcompact.compact(body, target=8000)
    body = result.conversation          # same shape as the input, within 8000 tokens
    print(result.report["action"], result.report["removed"])
"""

from __future__ import annotations

import inspect
import json
import math
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union, cast

from . import _native

__all__ = [
    "CannotFit",
    "Compacted",
    "Error",
    "InputError",
    "OptionError",
    "RecallError",
    "ForwardedRequest",
    "analyze",
    "compact",
    "compact_request",
    "count",
    "recall_request",
    "trim_tools",
    "validate",
]

#: A conversation: a list of message dicts, or a request body dict holding ``messages``.
Conversation = Union[List[Dict[str, Any]], Dict[str, Any]]

_FORMATS = (
    "auto",
    "openai",
    "anthropic",
    "responses",
    "gemini",
    "bedrock",
    "ai-sdk",
    "claude-code",
    "codex",
    "gemini-cli",
    "pi",
)
# The library's tokenizer names: exact OpenAI encodings, the character estimate, the open-weight
# vocabularies, and the calibrated estimates of model families.
_TOKENIZERS = (
    "o200k",
    "cl100k",
    "chars",
    "llama3",
    "qwen2",
    "deepseek-v3",
    "tekken",
    "kimi-k2",
    "glm4",
    "minimax-m2",
    "claude-opus",
    "claude-sonnet",
    "claude-haiku",
    "gemini",
)
# The API formats a provider request body is in (``compact_request``).
_REQUEST_FORMATS = ("openai", "anthropic", "responses", "gemini", "bedrock")
# The agents whose own compaction point the proxy's trigger goes below (``compact_request``).
_CLIENTS = ("claude-code", "codex", "gemini-cli")
_STRATEGIES = ("auto", "middle", "oldest", "relevant")
_TOOL_MODES = ("clear", "drop", "off")


class Error(ValueError):
    """Every error ctxcompact raises; a ``ValueError``."""


class InputError(Error):
    """The conversation is malformed, breaks tool-call pairing, or its format cannot be told.

    ``message_index`` is the index into the input's ``messages`` (``None`` for a top-level
    problem) and ``field`` the field path inside it (``None`` when no field is at fault).
    """

    def __init__(
        self, message: str, message_index: Optional[int] = None, field: Optional[str] = None
    ) -> None:
        super().__init__(message)
        self.message_index = message_index
        self.field = field


class CannotFit(Error):
    """Even the pinned messages (system, task, last request, last unit) exceed the budget.

    ``report`` is the full report of the attempt, with ``action`` ``"cannot_fit"`` and the
    ``pinned_tokens`` that no removal can go below.
    """

    def __init__(self, message: str, report: Dict[str, Any]) -> None:
        super().__init__(message)
        self.report = report


class OptionError(Error):
    """An option has an unusable value, conflicts with another, or names an unknown model."""


class RecallError(Error):
    """A handle :func:`recall_request` cannot give back: malformed, or named by no compaction
    of the history given (the message names it)."""


class Compacted:
    """The result of :func:`compact` or :func:`trim_tools`.

    ``conversation`` has the input's shape (a list, or a request body dict); ``messages`` is its
    list of messages; ``report`` is the dict the command line writes with ``--report``. The
    lists and the body dict are new; a message that came out unchanged is the input's own
    object, so a change made to it shows in both.
    """

    __slots__ = ("conversation", "report")

    def __init__(self, conversation: Conversation, report: Dict[str, Any]) -> None:
        self.conversation = conversation
        self.report = report

    @property
    def messages(self) -> List[Dict[str, Any]]:
        """The output's list of messages (the conversation itself when it is a list)."""
        if isinstance(self.conversation, list):
            return self.conversation
        return cast(List[Dict[str, Any]], self.conversation["messages"])

    def __repr__(self) -> str:
        """A one-line summary: action, tokens and messages before and after."""
        r = self.report
        return (
            f"Compacted(action={r['action']!r}, tokens {r['tokens_before']} -> "
            f"{r['tokens_after']}, messages {r['messages_before']} -> {r['messages_after']})"
        )


def compact(
    conversation: Conversation,
    *,
    target: Optional[int] = None,
    ratio: Optional[float] = None,
    model: Optional[str] = None,
    trigger: Optional[float] = None,
    target_ratio: Optional[float] = None,
    strategy: str = "auto",
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    marker: Optional[bool] = None,
    format: str = "auto",
    tokenizer: Optional[str] = None,
    catalog: Optional[Union[str, "os.PathLike[str]"]] = None,
    calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
    archive: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Compacted:
    """Compacts a conversation to a token budget, as ``ctxcompact compact`` does.

    The budget is ``target`` tokens, or ``ratio`` of the current total, or — with ``model`` and
    neither of those — the model's window: compact when usage passes ``trigger`` of it (0.7),
    down to ``target_ratio`` of it (0.5). ``strategy`` forces ``"middle"``, ``"oldest"`` or
    ``"relevant"`` removal (``"auto"`` lets the selector choose). Old tool rounds are trimmed
    first: ``tool_mode`` ``"clear"`` empties their results, ``"drop"`` removes them, ``"off"`` keeps
    them; the last ``keep_tool_rounds`` rounds and the tools in ``exclude_tools`` are never
    touched; ``clear_tool_inputs`` also empties cleared calls' arguments; ``clear_at_least``
    trims nothing unless that many tokens are freed; ``max_tool_output`` caps every tool result.
    ``marker=False`` leaves no marker where history was removed (the default leaves one).
    ``format`` is ``"auto"`` or a format name as the CLI spells it (``"openai"``,
    ``"anthropic"``, ``"responses"``, ``"gemini"``, ``"bedrock"``, ``"ai-sdk"``, ``"claude-code"``,
    ``"codex"``, ``"gemini-cli"``, ``"pi"``); ``tokenizer`` (``"o200k"``,
    ``"cl100k"``, ``"chars"``, an open-weight vocabulary such as ``"llama3"`` or ``"qwen2"``, or
    a family's calibrated estimate such as ``"claude-sonnet"``) overrides the model's.
    ``archive`` (a folder, as ``--archive``) keeps each removed span and each message whose
    tool output was cleared there, one JSON message a line, named by the markers and
    placeholders. ``catalog`` (a file of the shape of ``data/models.json``, as ``--catalog``)
    is where models are looked up instead of the built-in catalog; ``calibration`` (what
    ``ctxcompact calibrate --json`` writes, as ``--calibration``) gives the calibrated
    estimators its factors instead of the shipped ones.

    Returns a :class:`Compacted`; a conversation already within budget comes back unchanged.
    Raises :class:`InputError` on bad input, :class:`CannotFit` when even the pinned messages
    exceed the budget, :class:`OptionError` on bad options.
    """
    settings = _budget_settings(target, ratio, model, trigger, target_ratio, format, tokenizer)
    settings.update(_file_settings(catalog, calibration))
    settings.update(
        _removal_settings(
            strategy,
            marker,
            archive,
            _tool_settings(
                tool_mode,
                keep_tool_rounds,
                exclude_tools,
                clear_tool_inputs,
                clear_at_least,
                max_tool_output,
            ),
        )
    )
    output, report = _call(_native.compact, conversation, settings)
    return Compacted(output, report)


def trim_tools(
    conversation: Conversation,
    *,
    model: Optional[str] = None,
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    format: str = "auto",
    tokenizer: Optional[str] = None,
    catalog: Optional[Union[str, "os.PathLike[str]"]] = None,
    calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Compacted:
    """Trims old tool rounds alone, with no budget, as ``ctxcompact trim-tools`` does.

    Meant for every turn of an agent: the tool options are those of :func:`compact`. Returns a
    :class:`Compacted`. Raises :class:`InputError` on bad input, :class:`OptionError` on bad
    options.
    """
    settings = _model_settings(model, format, tokenizer)
    settings.update(_file_settings(catalog, calibration))
    settings.update(
        _tool_settings(
            tool_mode,
            keep_tool_rounds,
            exclude_tools,
            clear_tool_inputs,
            clear_at_least,
            max_tool_output,
        )
    )
    output, report = _call(_native.trim_tools, conversation, settings)
    return Compacted(output, report)


def analyze(
    conversation: Conversation,
    *,
    target: Optional[int] = None,
    ratio: Optional[float] = None,
    model: Optional[str] = None,
    trigger: Optional[float] = None,
    target_ratio: Optional[float] = None,
    strategy: str = "auto",
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    format: str = "auto",
    tokenizer: Optional[str] = None,
    catalog: Optional[Union[str, "os.PathLike[str]"]] = None,
    calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Dict[str, Any]:
    """Reports what :func:`compact` would do, changing nothing, as ``ctxcompact analyze --json``.

    Takes the options of :func:`compact` (but ``marker``) and returns the report dict: features,
    model profile, every rule, the decision and its candidates. A budget too small is reported
    (``action`` ``"cannot_fit"``), not raised. Raises :class:`InputError` on bad input,
    :class:`OptionError` on bad options.
    """
    settings = _budget_settings(target, ratio, model, trigger, target_ratio, format, tokenizer)
    settings.update(_file_settings(catalog, calibration))
    settings.update(_strategy_settings(strategy))
    settings.update(
        _tool_settings(
            tool_mode,
            keep_tool_rounds,
            exclude_tools,
            clear_tool_inputs,
            clear_at_least,
            max_tool_output,
        )
    )
    return cast(Dict[str, Any], _call(_native.analyze, conversation, settings))


def count(
    conversation: Conversation,
    *,
    model: Optional[str] = None,
    tokenizer: Optional[str] = None,
    catalog: Optional[Union[str, "os.PathLike[str]"]] = None,
    calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
    format: str = "auto",
) -> Dict[str, Any]:
    """Counts tokens as ``ctxcompact count --json`` does: ``{"total": N, "messages": [...]}``.

    ``messages`` holds each message's tokens, in order; ``total`` adds the system prompt (for
    Anthropic's top-level ``system``) and the 3 tokens that prime the reply. The tokenizer is
    ``tokenizer``, else the model's, else o200k. Raises :class:`InputError` on bad input,
    :class:`OptionError` on an unknown model or tokenizer.
    """
    settings = _model_settings(model, format, tokenizer)
    settings.update(_file_settings(catalog, calibration))
    return cast(Dict[str, Any], _call(_native.count, conversation, settings))


def validate(conversation: Conversation, *, format: str = "auto") -> List[Dict[str, Any]]:
    """Lists every problem a provider refuses the conversation for as a request, as
    ``ctxcompact validate`` does: tool-call pairing and placement, and a call still in progress
    at the end (which :func:`compact` and the other functions read as session state).

    Each problem is a dict with ``message_index``, ``field``, ``kind`` (``"orphan"``,
    ``"unanswered"``, ``"misplaced"``, ``"answered_twice"``, ``"duplicate_call_id"``,
    ``"tool_first"``, ``"first_not_user"``, ``"call_in_progress"``), ``call_id`` (or ``None``)
    and ``text``. An empty list means the
    conversation is valid. Raises :class:`InputError` when the input cannot be read at all.
    """
    settings = {"format": _choice("format", format, _FORMATS)}
    return cast(List[Dict[str, Any]], _call(_native.validate, conversation, settings))


class ForwardedRequest:
    """The result of :func:`compact_request`: what to send upstream, and why.

    ``body`` is the bytes to forward: the compacted body, or the received bytes themselves when
    nothing changed. ``decision`` is the rest, as a dict, each of its fields also an attribute:
    the proxy ledger's record of the request, with its names (``docs/proxy.md``, "The ledger":
    ``action``, ``reason``, ``fail_open``, ``model``, the window, agent and trigger, the tokens,
    the compactions, ``budget``, ``depth``, …); ``unknown_model``, the model no catalog name or
    family rule reads when that is why it failed open; and ``facts``, the window, agent and
    trigger fields again as one dict. ``action`` is ``"forwarded"`` (under the trigger, byte for
    byte), ``"compacted"`` or ``"failed_open"`` (unreadable, invalid, no window known, cannot
    fit: forwarded unchanged). A name the decision does not hold (a field the ledger leaves out
    when there is nothing to say) reads as ``None``.
    """

    __slots__ = ("body", "decision")

    def __init__(self, body: bytes, decision: Dict[str, Any]) -> None:
        self.body = body
        self.decision = decision

    def __getattr__(self, name: str) -> Any:
        """A field of the decision (``None`` when it does not hold it)."""
        if name.startswith("_") or name in ForwardedRequest.__slots__:
            raise AttributeError(name)
        return self.decision.get(name)

    def __repr__(self) -> str:
        """A one-line summary: action and tokens received and forwarded."""
        return (
            f"ForwardedRequest(action={self.action!r}, tokens {self.tokens_received} -> "
            f"{self.tokens_forwarded})"
        )


def compact_request(
    body: bytes,
    format: str,
    *,
    path_model: Optional[str] = None,
    client: Optional[str] = None,
    window: Optional[int] = None,
    trigger: Optional[float] = None,
    target_ratio: Optional[float] = None,
    strategy: str = "auto",
    tool_mode: str = "clear",
    keep_tool_rounds: int = 3,
    exclude_tools: Iterable[str] = (),
    clear_tool_inputs: bool = False,
    clear_at_least: int = 0,
    max_tool_output: Optional[int] = None,
    marker: Optional[bool] = None,
    tokenizer: Optional[str] = None,
    catalog: Optional[Union[str, "os.PathLike[str]"]] = None,
    calibration: Optional[Union[str, "os.PathLike[str]"]] = None,
    archive: Optional[Union[str, "os.PathLike[str]"]] = None,
    handles: bool = False,
) -> ForwardedRequest:
    """Decides what to forward for a provider request body, as ``ctxcompact proxy`` does.

    ``body`` is the request's bytes as a client sent them; ``format`` its API: ``"openai"``
    (Chat Completions), ``"anthropic"``, ``"responses"``, ``"gemini"`` or ``"bedrock"``;
    ``path_model`` the model the request's path names (Gemini's ``…/models/M:generateContent``)
    when the body names none; ``client`` the agent that sent it (``"claude-code"``,
    ``"codex"``, ``"gemini-cli"``), as the proxy tells it from the request's headers (else the
    body's shape is read for one): unless ``trigger`` is given, the trigger then sits below the
    agent's own compaction point. The model's window comes from the catalog, or ``window`` for
    every model. Past ``trigger`` of the window (0.7) the history is compacted down to what its
    last 8 calls take, between 0.2 and ``target_ratio`` (0.5) of the window (to ``target_ratio``
    exactly when it is given), replayed at its own call boundaries so that between
    compactions the forwarded body only grows at its end; under it the received bytes are
    forwarded as they are. The other options are those of :func:`compact`; ``archive`` is the
    proxy's ``--archive-dir``; ``handles`` makes every note name a handle without a folder, for
    a caller that keeps the history whole and gives back what a handle names with
    :func:`recall_request`. The result equals the bytes the proxy sends upstream for the same
    body and flags, so a gateway or an SDK hook written in Python can do what the proxy does.

    Never raises for the body: what cannot be read or fitted comes back unchanged with
    ``action`` ``"failed_open"``. Raises :class:`OptionError` on bad options.
    """
    # The keyword arguments as given, before any other name is bound here.
    settings = _request_settings(body, format, locals())
    return _RequestCompactor(settings, 0).compact(body)


def recall_request(body: bytes, format: str, handle: str, **options: Any) -> str:
    """What ``handle`` names, given back from the history of ``body``: the messages (or items)
    a compaction of it removed, one JSON message a line, each as the body holds it.

    For a caller that keeps the history whole (an agent framework's state) and compacts what
    each model call sends with :func:`compact_request` and ``handles=True`` (or an
    ``archive``): ``body`` is a later call's body of the same history (the handle was named in
    one sent before it), ``options`` the keywords it was compacted with. The history is
    replayed as :func:`compact_request` replays it, so every compaction an earlier call went
    through is made again; nothing is written. A span may hold an earlier compaction's notes,
    whose handles are recalled the same way.

    Raises :class:`RecallError` for a malformed handle or one no compaction of the history
    names (the message names it), :class:`OptionError` on bad options.
    """
    compactor = _request_compactor(body, format, options, 0)
    if not isinstance(handle, str):
        raise OptionError(f"handle must be a string, not {type(handle).__name__}")
    return compactor.recall(body, handle)


class _RequestCompactor:
    """:func:`compact_request` and :func:`recall_request` for one set of options, kept across
    calls by an adapter: the catalog and calibration are read once, and each history is
    resumed from the last call its cache holds (at most ``conversations`` histories) instead
    of replaying every earlier compaction. The bytes sent are the same."""

    __slots__ = ("_native",)

    def __init__(self, settings: Dict[str, Any], conversations: int) -> None:
        try:
            self._native = _native.RequestCompactor(json.dumps(settings), conversations)
        except _native.NativeError as err:
            raise OptionError(err.args[1]) from None

    def compact(self, body: bytes) -> ForwardedRequest:
        """What to forward for ``body``, as :func:`compact_request` decides it."""
        return ForwardedRequest(*self._native.compact(bytes(body)))

    def recall(self, body: bytes, handle: str) -> str:
        """What ``handle`` names in the history of ``body``, as :func:`recall_request`."""
        try:
            return self._native.recall(bytes(body), handle)
        except _native.NativeError as err:
            raise RecallError(err.args[1]) from None


def _request_compactor(
    body: Any, format: str, options: Dict[str, Any], conversations: int
) -> _RequestCompactor:
    """A request compactor for ``body``'s ``format`` and :func:`compact_request`'s other
    keywords ``options``, type-checked, caching at most ``conversations`` histories."""
    try:
        bound = inspect.signature(compact_request).bind(body, format, **options)
    except TypeError as err:
        raise OptionError(str(err)) from None
    bound.apply_defaults()
    return _RequestCompactor(_request_settings(body, format, bound.arguments), conversations)


def _request_settings(body: Any, format: str, given: Dict[str, Any]) -> Dict[str, Any]:
    """The native settings of :func:`compact_request` and :func:`recall_request`, from their
    keyword arguments (``given``), type-checked."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise OptionError(f"body must be bytes, not {type(body).__name__}")
    settings: Dict[str, Any] = {"format": _choice("format", format, _REQUEST_FORMATS)}
    path_model, client, window = given["path_model"], given["client"], given["window"]
    if path_model is not None:
        if not isinstance(path_model, str):
            raise OptionError(f"path_model must be a string, not {type(path_model).__name__}")
        settings["path_model"] = path_model
    if client is not None:
        settings["client"] = _choice("client", client, _CLIENTS)
    if window is not None:
        settings["window"] = _count("window", window)
    library: Dict[str, Any] = {}
    for name, value in (("trigger", given["trigger"]), ("target_ratio", given["target_ratio"])):
        if value is not None:
            library[name] = _number(name, value)
    if given["tokenizer"] is not None:
        library["tokenizer"] = _choice("tokenizer", given["tokenizer"], _TOKENIZERS)
    library.update(_file_settings(given["catalog"], given["calibration"]))
    library.update(
        _removal_settings(
            given["strategy"],
            given["marker"],
            given["archive"],
            _tool_settings(
                given["tool_mode"],
                given["keep_tool_rounds"],
                given["exclude_tools"],
                given["clear_tool_inputs"],
                given["clear_at_least"],
                given["max_tool_output"],
            ),
        )
    )
    if given["handles"]:
        library["handles"] = _flag("handles", given["handles"])
    settings["library"] = library
    return settings


def _call(function: Callable[[Any, str], Any], conversation: Any, settings: Dict[str, Any]) -> Any:
    """Runs a native function, turning its failures into this module's errors."""
    if not isinstance(conversation, (list, tuple, dict)):
        raise InputError(
            "the conversation must be a list of messages or a request body dict, "
            f"not {type(conversation).__name__}"
        )
    try:
        request = {"format": settings.pop("format"), "library": settings}
        return function(conversation, json.dumps(request))
    except _native.NativeError as err:
        kind, message, message_index, field, report = err.args
        if kind == "cannot_fit":
            raise CannotFit(message, json.loads(report)) from None
        if kind == "options":
            raise OptionError(message) from None
        raise InputError(message, message_index, field) from None


def _budget_settings(
    target: Optional[int],
    ratio: Optional[float],
    model: Optional[str],
    trigger: Optional[float],
    target_ratio: Optional[float],
    format: str,
    tokenizer: Optional[str],
) -> Dict[str, Any]:
    """The settings of a budget, a model, a format and a tokenizer, type-checked."""
    settings = _model_settings(model, format, tokenizer)
    if target is not None:
        settings["target"] = _count("target", target)
    for name, value in (("ratio", ratio), ("trigger", trigger), ("target_ratio", target_ratio)):
        if value is not None:
            settings[name] = _number(name, value)
    return settings


def _removal_settings(
    strategy: str,
    marker: Optional[bool],
    archive: Optional[Union[str, "os.PathLike[str]"]],
    tools: Dict[str, Any],
) -> Dict[str, Any]:
    """The settings of what removal does: the strategy, the marker, the archive folder and the
    tool-trimming settings, type-checked."""
    settings = _strategy_settings(strategy)
    if marker is not None:
        settings["marker"] = "digest" if _flag("marker", marker) else "none"
    if archive is not None:
        if not isinstance(archive, (str, os.PathLike)):
            raise OptionError(f"archive must be a folder path, not {type(archive).__name__}")
        settings["archive"] = os.fspath(archive)
    settings.update(tools)
    return settings


def _file_settings(
    catalog: Optional[Union[str, "os.PathLike[str]"]],
    calibration: Optional[Union[str, "os.PathLike[str]"]],
) -> Dict[str, Any]:
    """The settings of a catalog file and a calibration file, type-checked."""
    settings: Dict[str, Any] = {}
    for name, value in (("catalog", catalog), ("calibration", calibration)):
        if value is not None:
            if not isinstance(value, (str, os.PathLike)):
                raise OptionError(f"{name} must be a file path, not {type(value).__name__}")
            settings[name] = os.fspath(value)
    return settings


def _strategy_settings(strategy: str) -> Dict[str, Any]:
    """The setting of a forced strategy; none for ``"auto"``, the selector's choice."""
    if _choice("strategy", strategy, _STRATEGIES) == "auto":
        return {}
    return {"strategy": strategy}


def _model_settings(model: Optional[str], format: str, tokenizer: Optional[str]) -> Dict[str, Any]:
    """The settings of a model, a format and a tokenizer, type-checked."""
    settings: Dict[str, Any] = {"format": _choice("format", format, _FORMATS)}
    if model is not None:
        if not isinstance(model, str):
            raise OptionError(f"model must be a string, not {type(model).__name__}")
        settings["model"] = model
    if tokenizer is not None:
        settings["tokenizer"] = _choice("tokenizer", tokenizer, _TOKENIZERS)
    return settings


def _tool_settings(
    tool_mode: str,
    keep_tool_rounds: int,
    exclude_tools: Iterable[str],
    clear_tool_inputs: bool,
    clear_at_least: int,
    max_tool_output: Optional[int],
) -> Dict[str, Any]:
    """The tool-trimming settings, type-checked; ``exclude_tools`` may be ``"a,b"`` too."""
    if isinstance(exclude_tools, str):
        # One name or the CLI's comma-separated list, never a string read letter by letter.
        exclude_tools = exclude_tools.split(",")
    names = list(exclude_tools)
    for name in names:
        if not isinstance(name, str):
            raise OptionError(f"exclude_tools must hold tool names, not {type(name).__name__}")
    settings: Dict[str, Any] = {
        "tool_mode": _choice("tool_mode", tool_mode, _TOOL_MODES),
        "keep_tool_rounds": _count("keep_tool_rounds", keep_tool_rounds),
        "exclude_tools": names,
        "clear_tool_inputs": _flag("clear_tool_inputs", clear_tool_inputs),
        "clear_at_least": _count("clear_at_least", clear_at_least),
    }
    if max_tool_output is not None:
        settings["max_tool_output"] = _count("max_tool_output", max_tool_output)
    return settings


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed``, else an :class:`OptionError` naming ``name``."""
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return cast(str, value)


def _count(name: str, value: Any) -> int:
    """``value`` if it is a whole number from 0 to 2**64 - 1, else an :class:`OptionError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{name} must be a whole number of tokens, not {value!r}")
    if value < 0:
        raise OptionError(f"{name} must be 0 or more; got {value}")
    if value >= 2**64:
        raise OptionError(f"{name} is too large: {value}")
    return value


def _number(name: str, value: Any) -> float:
    """``value`` as a float if it is a finite number, else an :class:`OptionError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"{name} must be a number, not {value!r}")
    if not math.isfinite(value):
        raise OptionError(f"{name} must be a finite number; got {value}")
    return float(value)


def _flag(name: str, value: Any) -> bool:
    """``value`` if it is a bool, else an :class:`OptionError`."""
    if not isinstance(value, bool):
        raise OptionError(f"{name} must be True or False, not {value!r}")
    return value

