"""Type stubs of ``ctxcompact._native``, the Rust extension (see ``src/lib.rs``).

Every function takes the conversation as Python data (read into Rust with no JSON text in
between) and the settings as JSON text, and releases the GIL while the work runs. Use the
functions of ``ctxcompact`` instead: they check the options and raise ``ctxcompact``'s own
errors.
"""

from typing import Any, Dict, List, Tuple

class NativeError(Exception):
    """A failure; ``args`` is ``(kind, message, message_index, field, report_json)``.

    ``kind`` is ``"input"``, ``"cannot_fit"``, ``"options"`` or ``"recall"``.
    """

def compact(conversation: Any, settings: str) -> Tuple[Any, Dict[str, Any]]:
    """Compacts a conversation to its budget: ``(conversation, report)``.

    Messages that come out unchanged are the input's own objects.
    """

def trim_tools(conversation: Any, settings: str) -> Tuple[Any, Dict[str, Any]]:
    """Trims old tool rounds alone: ``(conversation, report)``.

    Messages that come out unchanged are the input's own objects.
    """

def analyze(conversation: Any, settings: str) -> Dict[str, Any]:
    """What ``compact`` would do: the report."""

def count(conversation: Any, settings: str) -> Dict[str, Any]:
    """Each message's tokens and the total, as ``count --json`` prints them."""

def validate(conversation: Any, settings: str) -> List[Dict[str, Any]]:
    """Every pairing and placement problem, as a list of dicts."""

class RequestCompactor:
    """A request compactor kept across calls: the catalog read once, each history resumed
    from its cache of at most ``conversations`` replayed histories."""

    def __init__(self, settings: str, conversations: int) -> None: ...
    def compact(self, body: bytes) -> Tuple[bytes, Dict[str, Any]]:
        """What to forward for a provider request body, as ``ctxcompact proxy`` decides it:
        ``(body, decision)``, ``body`` the received bytes when nothing changed."""
    def recall(self, body: bytes, handle: str) -> str:
        """What ``handle`` names in the history of a provider request body, given back from
        it: one JSON message a line."""

def pipeline_runs() -> int:
    """The pipeline's runs on this thread so far (for the tests: a call runs it once)."""
