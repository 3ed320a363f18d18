#!/usr/bin/env bash
# Whole-process figures for the README's "Speed" section (issue #14), as medians of runs
# interleaved in one go, so that a busy machine slows every side alike:
#   1. `ctxcompact compact --ratio 0.5` against `ctxcompact count` on the same file, wall time,
#      in both formats: the largest OpenAI and Anthropic data files and a generated 10,000-message
#      agent conversation written in each format;
#   2. the whole `compact` process against LangChain's `trim_messages` call alone (o200k
#      per-message counter, tiktoken's encoder built beforehand) at 1,000 and 10,000 messages;
#   3. peak memory (`/usr/bin/time -v`) of `count` and `compact` at 10,000 messages.
# Usage: scripts/process-bench.sh [RUNS] (default 7). Needs python3 with venv; the first run
# makes a venv under target/process-bench/ with the pinned packages below.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${1:-7}"
WORK=target/process-bench
VENV="$WORK/venv"
PINNED=(langchain-core==1.8.3 tiktoken==0.14.0)

cargo build --release --quiet
if ! "$VENV/bin/python" -c 'import langchain_core, tiktoken' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "${PINNED[@]}"
fi

# Python's tiktoken downloads its tables; give it tiktoken-rs's copy of the same file instead,
# under the cache name tiktoken looks for (the SHA-1 of the download address; tiktoken checks
# the file's SHA-256 against the published one).
TIKTOKEN_RS=$(cargo metadata --format-version 1 --locked | "$VENV/bin/python" -c '
import json, os, sys
meta = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in meta["packages"] if p["name"] == "tiktoken-rs"))')
export TIKTOKEN_CACHE_DIR="$WORK/tiktoken-cache"
mkdir -p "$TIKTOKEN_CACHE_DIR"
ADDRESS="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
cp "$TIKTOKEN_RS/assets/o200k_base.tiktoken" \
  "$TIKTOKEN_CACHE_DIR/$(printf %s "$ADDRESS" | sha1sum | cut -d' ' -f1)"

"$VENV/bin/python" - "$RUNS" "$WORK" <<'PY'
"""Generator, timing and report; every figure is a median over interleaved runs."""
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import time

RUNS, WORK = int(sys.argv[1]), sys.argv[2]
BIN = "target/release/ctxcompact"

WORDS = ("the parser returns an error when the ledger file holds a line without a date so we "
         "check each field before we build the entry and report the line number fix retry "
         "queue index cache value output build test module function struct trait impl").split()


def words(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def code(rng, lines):
    out = []
    for i in range(lines):
        name = rng.choice(WORDS)
        out.append(rng.choice([
            f"    let {name}_{i} = parse_{name}(&input[{i}..])?;",
            f"fn {name}_{i}(value: &str) -> Result<u32, Error> {{",
            f"    // {words(rng, 4, 12)}",
            f"    assert_eq!({name}.len(), {rng.randint(0, 999)});",
            "}",
            f"src/{name}.rs:{rng.randint(1, 400)}:{rng.randint(1, 80)}: warning: unused `{name}`",
        ]))
    return "\n".join(out)


def conversation(messages, seed=14):
    """A deterministic agent session of exactly `messages` OpenAI messages (about 1.5 KB each)."""
    rng = random.Random(seed)
    out = [{"role": "system", "content": "You are a coding agent. " + words(rng, 40, 80)}]
    call = 0
    while len(out) < messages - 1:
        left = messages - 1 - len(out)
        if left >= 1 and rng.random() < 0.15:
            out.append({"role": "user", "content": words(rng, 10, 60)})
        elif left >= 3:
            n = min(rng.randint(1, 3), left - 1)
            ids = [f"call_{call + k}" for k in range(n)]
            call += n
            out.append({"role": "assistant", "content": words(rng, 0, 25) or None,
                        "tool_calls": [{"id": i, "type": "function", "function": {
                            "name": rng.choice(["read_file", "run", "grep"]),
                            "arguments": json.dumps({"path": f"src/{rng.choice(WORDS)}.rs"})}}
                            for i in ids]})
            for i in ids:
                out.append({"role": "tool", "tool_call_id": i,
                            "content": code(rng, rng.randint(10, 70))})
        else:
            out.append({"role": "assistant", "content": words(rng, 20, 120)})
    out.insert(1, {"role": "user", "content": "Fix the ledger parser: " + words(rng, 10, 30)})
    return out


def to_anthropic(messages):
    """The same session in Anthropic's format: tool results ride in user messages."""
    system, out = messages[0]["content"], []
    for m in messages[1:]:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"],
                     "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": json.loads(c["function"]["arguments"])}
                       for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
        elif out and out[-1]["role"] == m["role"]:
            previous = out[-1]["content"]
            if isinstance(previous, str):
                previous = [{"type": "text", "text": previous}]
            out[-1]["content"] = previous + [{"type": "text", "text": m["content"]}]
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": system, "messages": out}


def write(name, value):
    path = f"{WORK}/{name}"
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args):
    """Wall and CPU seconds (user + system, every thread) of one whole process."""
    start, cpu = time.perf_counter(), children_cpu()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, children_cpu() - cpu


def wall(args):
    return timed(args)[0]


def compact_args(path):
    return [BIN, "compact", path, "--ratio", "0.5", "-o", "/dev/null", "--report", "/dev/null"]


def count_args(path):
    return [BIN, "count", path]


def peak_kb(args):
    run = subprocess.run(["/usr/bin/time", "-v", *args], check=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))


sessions = {n: conversation(n) for n in (1_000, 10_000)}
files = {
    "openai data (openai-coding-rust-2000.json)": "data/conversations/openai-coding-rust-2000.json",
    "anthropic data (anthropic-coding-rust-800.json)":
        "data/conversations/anthropic-coding-rust-800.json",
    "generated 10k, openai": write("openai-10000.json", {"model": "gpt-4o",
                                                          "messages": sessions[10_000]}),
    "generated 10k, anthropic": write("anthropic-10000.json", to_anthropic(sessions[10_000])),
}
openai_1k = write("openai-1000.json", {"model": "gpt-4o", "messages": sessions[1_000]})

print(f"## compact --ratio 0.5 against count, whole process (median of {RUNS} paired runs)\n")
print("| file | MB | count s | compact s | compact ÷ count | count CPU s | compact CPU s |")
print("|---|---:|---:|---:|---:|---:|---:|")
for label, path in files.items():
    wall(count_args(path))  # warm the page cache
    counts, compacts = [], []
    for run in range(RUNS):
        pair = [(counts, count_args(path)), (compacts, compact_args(path))]
        for times, args in (pair if run % 2 == 0 else pair[::-1]):
            times.append(timed(args))
    size = len(open(path, "rb").read()) / 1e6
    c, k = statistics.median(t[0] for t in counts), statistics.median(t[0] for t in compacts)
    ratios = statistics.median(b[0] / a[0] for a, b in zip(counts, compacts))
    cc, kc = statistics.median(t[1] for t in counts), statistics.median(t[1] for t in compacts)
    print(f"| {label} | {size:.1f} | {c:.3f} | {k:.3f} | {ratios:.2f} | {cc:.3f} | {kc:.3f} |")

# LangChain: the trim_messages call alone, with an o200k per-message counter.
import tiktoken
from langchain_core.messages import (AIMessage, BaseMessage, HumanMessage, SystemMessage,
                                     ToolMessage, trim_messages)

encoding = tiktoken.get_encoding("o200k_base")


def count_message(message: BaseMessage) -> int:
    """OpenAI's recipe: 3 per message, the content, and each tool call's name and arguments."""
    content = message.content if isinstance(message.content, str) else json.dumps(message.content)
    tokens = 3 + len(encoding.encode_ordinary(content))
    for call in getattr(message, "tool_calls", None) or []:
        tokens += 3 + len(encoding.encode_ordinary(call["name"]))
        tokens += len(encoding.encode_ordinary(json.dumps(call["args"])))
    return tokens


def langchain(messages):
    out = []
    for m in messages:
        if m["role"] == "system":
            out.append(SystemMessage(m["content"]))
        elif m["role"] == "user":
            out.append(HumanMessage(m["content"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
        else:
            calls = [{"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"]),
                      "id": c["id"]} for c in m.get("tool_calls", [])]
            out.append(AIMessage(m["content"] or "", tool_calls=calls))
    return out


print(f"\n## whole ctxcompact process against LangChain trim_messages (median of {RUNS} "
      "interleaved runs; CPU = user + system seconds)\n")
print("| messages | MB | ctxcompact compact s | trim_messages call s | speed-up | "
      "ctxcompact CPU s | trim_messages CPU s | CPU speed-up |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
paths = {1_000: openai_1k, 10_000: files["generated 10k, openai"]}
for n, messages in sessions.items():
    lc = langchain(messages)
    budget = sum(count_message(m) for m in lc) // 2
    ours, theirs = [], []
    for run in range(RUNS):
        def trim():
            start, cpu = time.perf_counter(), time.process_time()
            trim_messages(lc, max_tokens=budget, token_counter=count_message, strategy="last",
                          include_system=True, start_on="human", allow_partial=False)
            return time.perf_counter() - start, time.process_time() - cpu
        steps = [(ours, lambda: timed(compact_args(paths[n]))), (theirs, trim)]
        for times, step in (steps if run % 2 == 0 else steps[::-1]):
            times.append(step())
    size = len(open(paths[n], "rb").read()) / 1e6
    a, b = statistics.median(t[0] for t in ours), statistics.median(t[0] for t in theirs)
    ca, cb = statistics.median(t[1] for t in ours), statistics.median(t[1] for t in theirs)
    print(f"| {n:,} | {size:.1f} | {a:.3f} | {b:.3f} | {b / a:.1f}× | {ca:.3f} | {cb:.3f} | "
          f"{cb / ca:.1f}× |")

print("\n## peak memory at 10,000 messages (`/usr/bin/time -v`)\n")
print("| file | MB | count peak MB | compact peak MB |")
print("|---|---:|---:|---:|")
for label in ("generated 10k, openai", "generated 10k, anthropic"):
    path = files[label]
    size = len(open(path, "rb").read()) / 1e6
    print(f"| {label} | {size:.1f} | {peak_kb(count_args(path)) / 1024:.0f} | "
          f"{peak_kb(compact_args(path)) / 1024:.0f} |")
PY
