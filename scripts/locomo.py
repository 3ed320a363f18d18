#!/usr/bin/env python3
"""Measures whether `compact` keeps what a chat's current question refers back to (issue 57).

LoCoMo (snap-research/locomo, ACL 2024) holds ten long two-person conversations whose
questions name the turns that answer them. Its data states no license, so it stays out of this
repository: pass its files as arguments (the repository's `data/locomo10.json`, a list of
conversations, or the per-conversation files of `data/locomo10.zip`, `26.json` …).

Each question of categories 1-4 becomes one OpenAI body: a system line, every turn as a message
"[session date] Name: text" (the conversation's first speaker as `user`, the other as
`assistant`), then the question as the last user message. The body is compacted with
`compact --ratio R`; the question counts as kept when every turn its evidence names is still a
message of the output, whole. The baseline keeps the newest turns that fit the same budget
(the system line and the question first, counted by `count --json`).

Usage: scripts/locomo.py FILE... [--bin PATH] [--ratio R ...] [--only 26,30,41,42 | --except ...]
       [--strategy S] [--jobs N]
Prints, per ratio, each category's kept share for ctxcompact and for newest-first.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

SYSTEM = "You are a helpful assistant. Answer the last question from the conversation above."
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def conversations(paths):
    """(sample id, conversation, qa) for every conversation in the given files."""
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, list):
            for item in data:
                sample = str(item["sample_id"]).removeprefix("conv-")
                yield sample, item["conversation"], item["qa"]
        else:
            sample = os.path.splitext(os.path.basename(path))[0]
            yield sample, data, data["qa"]


def turns(conversation):
    """Each turn as (dia_id, role, message text), in session order."""
    first = conversation["speaker_a"]
    sessions = sorted(
        (int(k.split("_")[1]), k)
        for k, v in conversation.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
    )
    out = []
    for number, key in sessions:
        date = conversation.get(f"{key}_date_time", "")
        for turn in conversation[key]:
            role = "user" if turn["speaker"] == first else "assistant"
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            out.append((turn["dia_id"], role, text))
    return out


def evidence_ids(qa):
    """The dia_ids a question's evidence names (some entries hold several, or stray blanks)."""
    ids = []
    for entry in qa.get("evidence", []):
        ids += re.findall(r"D\d+:\d+", entry)
    return ids


def run(binary, args, stdin=None):
    done = subprocess.run([binary, *args], input=stdin, capture_output=True, check=False)
    if done.returncode not in (0,):
        raise SystemExit(f"{binary} {' '.join(args)}: exit {done.returncode}: {done.stderr.decode()}")
    return done.stdout


def content(message):
    c = message.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def measure(binary, body, texts, needed, ratios, strategy):
    """For each ratio: (ctxcompact kept all evidence, newest-first kept all evidence)."""
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "in.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(body, f)
        counts = json.loads(run(binary, ["count", path, "--json"]))
        per_message = counts["messages"]
        results = {}
        for ratio in ratios:
            out = os.path.join(work, "out.json")
            report_path = os.path.join(work, "report.json")
            args = ["compact", path, "--ratio", str(ratio), "-o", out, "--report", report_path]
            if strategy:
                args += ["--strategy", strategy]
            run(binary, [*args, "--quiet"])
            with open(report_path, encoding="utf-8") as f:
                report = json.load(f)
            with open(out, encoding="utf-8") as f:
                kept = {content(m) for m in json.load(f)["messages"]}
            ours = all(texts[i] in kept for i in needed)
            # Newest first: the system line and the question, then turns from the newest back.
            room = report["budget"] - (counts["total"] - sum(per_message))
            room -= per_message[0] + per_message[-1]
            newest = set()
            for i in range(len(per_message) - 2, 0, -1):
                if per_message[i] > room:
                    break
                room -= per_message[i]
                newest.add(i)
            results[ratio] = (ours, all(i in newest for i in needed))
        return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--bin", default="target/release/ctxcompact")
    parser.add_argument("--ratio", type=float, action="append")
    parser.add_argument("--only", help="sample ids to measure, comma-separated")
    parser.add_argument("--except", dest="skip", help="sample ids to leave out")
    parser.add_argument("--strategy")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--misses", help="write the questions ctxcompact missed here")
    args = parser.parse_args()
    ratios = args.ratio or [0.5, 0.25]
    only = set(args.only.split(",")) if args.only else None
    skip = set(args.skip.split(",")) if args.skip else set()
    jobs = []
    for sample, conversation, qas in conversations(args.files):
        if (only and sample not in only) or sample in skip:
            continue
        history = turns(conversation)
        index = {dia: i + 1 for i, (dia, _, _) in enumerate(history)}
        messages = [{"role": "system", "content": SYSTEM}]
        messages += [{"role": role, "content": text} for _, role, text in history]
        for qa in qas:
            if qa.get("category") not in CATEGORIES:
                continue
            needed = [index[d] for d in evidence_ids(qa) if d in index]
            if not needed:
                continue
            body = {"messages": messages + [{"role": "user", "content": qa["question"]}]}
            texts = [content(m) for m in body["messages"]]
            jobs.append((sample, qa, body, texts, needed))
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(
            pool.map(lambda j: measure(args.bin, j[2], j[3], j[4], ratios, args.strategy), jobs)
        )
    misses = []
    for ratio in ratios:
        tally = defaultdict(lambda: [0, 0, 0])
        for (sample, qa, *_), result in zip(jobs, results):
            ours, newest = result[ratio]
            for key in (qa["category"], "all"):
                tally[key][0] += 1
                tally[key][1] += ours
                tally[key][2] += newest
            if not ours:
                misses.append({"ratio": ratio, "sample": sample, "question": qa["question"],
                               "evidence": evidence_ids(qa), "category": qa["category"]})
        print(f"ratio {ratio}: questions, ctxcompact %, newest-first %")
        for key in [1, 2, 3, 4, "all"]:
            n, ours, newest = tally[key]
            if n:
                name = CATEGORIES.get(key, "all")
                print(f"  {name:12} {n:5}  {100 * ours / n:5.1f}  {100 * newest / n:5.1f}")
    if args.misses:
        with open(args.misses, "w", encoding="utf-8") as f:
            json.dump(misses, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
