"""The OpenAI Agents SDK: a ``call_model_input_filter`` that compacts what each model call sends.

::

    from agents import Agent, RunConfig, Runner
    from ctxcompact.openai_agents import CompactionFilter

    config = RunConfig(call_model_input_filter=CompactionFilter())
    result = Runner.run_sync(agent, "Fix the failing test", run_config=config)

Before every model call the SDK hands the filter the call's instructions and input items
(OpenAI Responses items: ``message``, ``function_call`` and ``function_call_output`` paired by
``call_id``, ``reasoning``, …). :func:`ctxcompact.compact_request` decides what to send, as
``ctxcompact proxy`` does for a Responses body: under the trigger the items as they are; past
it, the history compacted to the target, a function call never without its output and a
reasoning item never without the call it led to. Between compactions what is sent only grows
at its end, so the provider's prompt cache keeps hitting. The run's own history (what
``result.to_input_list()`` returns, a session's items) is untouched: only the call's input
changes. Every item that comes out unchanged is the very object that went in.

Every marker and placeholder names a handle, and ``filter.recall_tool`` is a ``function_tool``
(``ctxcompact_recall``) for the agent's tools: it gives back what a handle names, exactly as the
run's history held it, from the last model call's input; nothing is written::

    compaction = CompactionFilter()
    agent = Agent(name="coder", tools=[..., compaction.recall_tool])

Needs the ``openai-agents`` extra: ``pip install "ctxcompact[openai-agents]"``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

try:
    from agents import FunctionTool, function_tool
    from agents.run_config import CallModelData, ModelInputData
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'ctxcompact.openai_agents needs the OpenAI Agents SDK: '
        'pip install "ctxcompact[openai-agents]"'
    ) from err

from . import _hooks

__all__ = ["CompactionFilter"]


class CompactionFilter:
    """A ``RunConfig.call_model_input_filter`` compacting each model call's input items.

    Under ``trigger`` of the model's window (0.7) the input goes as it is; past it, the history
    is compacted down to what its last 8 calls take, between 0.2 and ``target_ratio`` (0.5)
    of the window (to ``target_ratio`` exactly when given). The window comes from the agent's model
    name (looked up in ctxcompact's catalog) unless ``model`` names another or ``window`` gives
    it. Other keywords are :func:`ctxcompact.compact_request`'s (``tool_mode``,
    ``keep_tool_rounds``, ``exclude_tools``, ``tokenizer``, ``archive``, …). ``last_decision``
    is the last call's :class:`ctxcompact.ForwardedRequest`.
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
        self.settings = _hooks.Settings(model, window, trigger, target_ratio, options)
        self.last_decision: Any = None

        def recall(handle: str) -> str:
            return _hooks.recall(self.settings, handle)

        #: The recall tool, for the agent's ``tools``.
        self.recall_tool: FunctionTool = function_tool(
            recall, name_override=_hooks.RECALL_NAME, description_override=_hooks.RECALL_DESCRIPTION
        )

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The call's input, compacted past the trigger (the same object under it)."""
        items = list(data.model_data.input)
        instructions = data.model_data.instructions
        dicts = [_as_dict(item) for item in items]
        envelope: Dict[str, Any] = {}
        if instructions:
            envelope["instructions"] = instructions
        body, self.last_decision = _hooks.fit(
            dicts, "responses", self.settings, model=_model_name(data.agent), envelope=envelope
        )
        if body is None:
            return data.model_data
        output: List[Any] = body["input"]
        found = _hooks.match(dicts, output)
        kept = [items[index] if index is not None else item for item, index in zip(output, found)]
        return ModelInputData(input=kept, instructions=body.get("instructions", instructions))


def _as_dict(item: Any) -> Any:
    """An input item as JSON data: the SDK's items are dicts, or pydantic models."""
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_unset=True)
    return item


def _model_name(agent: Any) -> Optional[str]:
    """The model name an agent carries: its ``model`` string, or its model object's name."""
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None
