"""Type stubs of ``ctxcompact._native``, the Rust extension (see ``src/lib.rs``).

Every function takes the conversation and the settings as JSON text and releases the GIL while
it runs. Use the functions of ``ctxcompact`` instead: they take Python data and raise
``ctxcompact``'s own errors.
"""

from typing import Tuple

class NativeError(Exception):
    """A failure; ``args`` is ``(kind, message, message_index, field, report_json)``.

    ``kind`` is ``"input"``, ``"cannot_fit"`` or ``"options"``.
    """

def compact(conversation: str, settings: str) -> Tuple[str, str]:
    """Compacts a conversation to its budget: ``(output_json, report_json)``."""

def trim_tools(conversation: str, settings: str) -> Tuple[str, str]:
    """Trims old tool rounds alone: ``(output_json, report_json)``."""

def analyze(conversation: str, settings: str) -> str:
    """What ``compact`` would do: the report's JSON text."""

def count(conversation: str, settings: str) -> str:
    """Each message's tokens and the total, as ``count --json`` prints them."""

def validate(conversation: str, settings: str) -> str:
    """Every pairing and placement problem, as a JSON array."""
