"""In-process ``ctxcompact.compact`` against langchain-core's ``trim_messages``.

Both sides get the same synthetic agent conversations (1,000 and 10,000 messages, generated
deterministically below), the same budget (half the conversation's tokens) and exact o200k
counts: LangChain gets a per-message tiktoken o200k counter that follows the same OpenAI
counting recipe as ctxcompact (checked against ``ctxcompact.count`` before timing). Runs are
interleaved (ours, theirs, ours, theirs, ...) so both see the same machine load; the median of
each is reported. Also times ``ctxcompact.langchain.trim_messages`` (the drop-in, including
its conversions to and from LangChain messages).

What each timed call does:

- ``ctxcompact.compact(conversation, target=budget)``, on the list of message dicts: reads the
  dicts into Rust, then with the GIL released parses them, checks tool pairing, counts every
  message once with o200k (on up to 2 threads here), trims old tool outputs, plans and applies
  removal with markers, checks the result and renders it; then builds the output list (each
  unchanged message is the input's own dict) and the report dict. Nothing is kept between
  calls but the o200k tables, built once per process before timing (by a first call), as
  tiktoken's encoder is built before timing for the other side.
- langchain-core ``trim_messages(messages, max_tokens=budget, token_counter=counter,
  strategy="last", include_system=True)`` on the same conversation as LangChain messages
  (converted before timing), with ``counter`` counting one message with tiktoken's o200k;
  ``trim_messages`` calls it on each message as often as it needs. No cache on either side.

Both wall time and process CPU time are measured; CPU time adds up ctxcompact's counting
threads, so its CPU speed-up is the one a single core would see.

    python bench/bench_trim.py [--sizes 1000 10000] [--runs 3]

Needs tiktoken and langchain-core. tiktoken's o200k_base file is fetched as tiktoken does, or
read from the copy in the tiktoken-rs crate (cargo's registry) when there is no network; its
hash is checked either way.
"""

import argparse
import glob
import hashlib
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List

import ctxcompact

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"

WORDS = (
    "parse config token budget message render unit round tool call result error value index "
    "field format count strategy middle oldest marker report window model cache prefix test "
    "assert build check path file line column json serde string vector option result iterator "
    "thread lock buffer reader writer stream bytes encode decode trim keep drop clear summary"
).split()
TOOLS = ("read_file", "bash", "grep", "edit_file", "list_dir")


def agent_conversation(size: int, seed: int = 12) -> List[Dict[str, Any]]:
    """A coding agent's session of exactly ``size`` OpenAI messages, the same for one seed.

    A system prompt and a task, then tool rounds (one call, sometimes two in parallel, each
    answered by a tool message of 3 to 60 lines), an assistant summary and a user follow-up
    every dozen rounds, and a last user request.
    """
    rng = random.Random(seed)

    def sentence(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."

    def output(tool: str) -> str:
        lines = rng.randint(3, 60)
        if tool == "read_file":
            return "\n".join(
                f"    let {rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}({rng.randint(0, 999)});"
                for i in range(lines)
            )
        if tool == "grep":
            return "\n".join(
                f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {sentence(6)}"
                for _ in range(lines)
            )
        return "\n".join(sentence(rng.randint(4, 12)) for _ in range(lines))

    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " + sentence(120)},
        {"role": "user", "content": "Fix the failing tests. " + sentence(30)},
    ]
    call = 0
    rounds = 0
    while True:
        calls = 2 if rng.random() < 0.2 else 1
        if len(messages) + 1 + calls + 3 > size:
            break
        tool_calls = []
        for _ in range(calls):
            tool = rng.choice(TOOLS)
            arguments = {"path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.rs"}
            if tool in ("bash", "grep"):
                arguments = {"command": f"{tool} -n {rng.choice(WORDS)} src"}
            tool_calls.append({
                "id": f"call_{call:06d}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(arguments)},
            })
            call += 1
        messages.append({"role": "assistant", "content": sentence(rng.randint(5, 20)),
                         "tool_calls": tool_calls})
        for tc in tool_calls:
            messages.append({"role": "tool", "tool_call_id": tc["id"],
                             "content": output(tc["function"]["name"])})
        rounds += 1
        if rounds % 12 == 0:
            messages.append({"role": "assistant", "content": sentence(rng.randint(20, 60))})
            messages.append({"role": "user", "content": sentence(rng.randint(8, 25))})
    while len(messages) < size - 1:
        messages.append({"role": "assistant" if len(messages) % 2 else "user",
                         "content": sentence(10)})
    messages.append({"role": "user", "content": "Now run the whole test suite. " + sentence(10)})
    return messages


def o200k() -> Any:
    """tiktoken's o200k_base encoding, from its usual source or tiktoken-rs's copy offline."""
    import tiktoken

    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - any download failure: fall back to the local copy
        pass
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    copies = sorted(glob.glob(os.path.join(
        home, "registry", "src", "*", "tiktoken-rs-*", "assets", "o200k_base.tiktoken")))
    if not copies:
        raise RuntimeError(
            "no o200k_base.tiktoken: no network and no tiktoken-rs in cargo's registry"
        )
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    # tiktoken's cache key for a URL; it checks the file's expected SHA-256 when loading.
    shutil.copy(copies[-1], os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    return tiktoken.get_encoding("o200k_base")


ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def langchain_counter(encoding: Any) -> Callable[[Any], int]:
    """A per-message o200k counter for LangChain messages, with ctxcompact's recipe.

    3 tokens a message, its role, its content; 3 more, the name and the arguments for each
    tool call; the call id for a tool result (ctxcompact's ``src/tokens.rs``).
    """

    def tokens(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    from langchain_core.messages import BaseMessage

    # The annotation must be the class itself: trim_messages reads it to call the counter
    # once per message rather than once per list.
    def count(message: BaseMessage) -> int:
        total = 3 + tokens(ROLES[message.type])
        content = message.content
        if isinstance(content, str):
            total += tokens(content)
        else:
            total += sum(tokens(block.get("text", "")) for block in content
                         if isinstance(block, dict))
        for call in getattr(message, "tool_calls", None) or ():
            total += 3 + tokens(call["name"]) + tokens(json.dumps(call["args"]))
        if message.type == "tool":
            total += tokens(message.tool_call_id)
        return total

    return count


def main() -> None:
    from langchain_core.messages import convert_to_messages
    from langchain_core.messages import trim_messages as langchain_trim

    from ctxcompact.langchain import trim_messages as drop_in

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    counter = langchain_counter(o200k())
    print(f"{'messages':>8} {'tokens':>9} {'budget':>9} {'ctxcompact':>11} {'drop-in':>9} "
          f"{'trim_messages':>14} {'speed-up':>9} {'CPU: ours':>10} {'theirs':>10} "
          f"{'speed-up':>9}")
    for size in args.sizes:
        conversation = agent_conversation(size)
        messages = convert_to_messages(conversation)
        counts = ctxcompact.count(conversation)
        ours_each = [counter(m) for m in messages]
        assert ours_each == counts["messages"], "the two sides count differently"
        budget = counts["total"] // 2
        # Warm up: ctxcompact builds its encoders on first use, as tiktoken did above.
        ctxcompact.compact(conversation, target=budget)
        times: Dict[str, List[float]] = {"ours": [], "drop_in": [], "theirs": []}
        cpu: Dict[str, List[float]] = {"ours": [], "theirs": []}
        for _ in range(args.runs):
            start, start_cpu = time.perf_counter(), time.process_time()
            result = ctxcompact.compact(conversation, target=budget)
            times["ours"].append(time.perf_counter() - start)
            cpu["ours"].append(time.process_time() - start_cpu)
            assert result.report["tokens_after"] <= budget

            start, start_cpu = time.perf_counter(), time.process_time()
            trimmed = langchain_trim(messages, max_tokens=budget, token_counter=counter,
                                     strategy="last", include_system=True)
            times["theirs"].append(time.perf_counter() - start)
            cpu["theirs"].append(time.process_time() - start_cpu)
            assert sum(counter(m) for m in trimmed) <= budget

            start = time.perf_counter()
            drop_in(messages, max_tokens=budget)
            times["drop_in"].append(time.perf_counter() - start)
        ours, theirs = statistics.median(times["ours"]), statistics.median(times["theirs"])
        dropin = statistics.median(times["drop_in"])
        ours_cpu, theirs_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["theirs"])
        print(f"{size:>8} {counts['total']:>9} {budget:>9} {ours * 1000:>9.1f}ms "
              f"{dropin * 1000:>7.1f}ms {theirs * 1000:>12.1f}ms {theirs / ours:>8.1f}x "
              f"{ours_cpu * 1000:>8.1f}ms {theirs_cpu * 1000:>8.1f}ms "
              f"{theirs_cpu / ours_cpu:>8.1f}x", flush=True)


if __name__ == "__main__":
    main()
