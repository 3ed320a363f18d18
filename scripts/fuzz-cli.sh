#!/usr/bin/env bash
# Seeded, time-bounded fuzzing of the ctxcompact CLI (issue 27).
#
# Mutates real inputs (../shared/corpus, its raw logs, data/conversations) structurally (drop,
# duplicate or swap messages, drop a field, respell a number, a string where a tool input
# belongs, stray top-level keys), byte by byte (flip, cut, insert), and in their options
# (budget, model, overhead, tool trimming, forced format), then checks what the CLI promises:
#   crash       exit codes are 0, 2 or 3 only
#   budget      a compacted output counts no more than the budget (`count` with the report's
#               overhead and the same model options)
#   increase    no output counts more tokens than its input
#   invalid     every output is read back and validated (by detection, or the same --format)
#   count       `count` of the output equals the report's tokens_after
#   idempotent  compacting an output again at the report's budget changes nothing; trim-tools
#               on its own output changes nothing
#   forced      a forced format that reads less than half the messages detection reads (an
#               API body forced as a session log reads none) is refused
#   roundtrip   within budget, an API body comes back as read: same keys in the same order,
#               numbers spelled as they were
#
# Usage: scripts/fuzz-cli.sh [SECONDS] [SEED]   (defaults: 180 s, seed 27)
# Needs a release build (cargo build --release) and python3. Prints each failure with the
# case's files kept under $FUZZ_DIR (default: a fresh temporary folder), then a summary; exits
# 1 when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_BUDGET="${1:-180}"
SEED="${2:-27}"
BIN="${CTXCOMPACT:-target/release/ctxcompact}"
[ -x "$BIN" ] || { echo "fuzz-cli: build first: cargo build --release" >&2; exit 2; }
FUZZ_DIR="${FUZZ_DIR:-$(mktemp -d -t ctxcompact-fuzz-XXXXXX)}"
export BIN SEED SECONDS_BUDGET FUZZ_DIR
exec python3 - <<'PY'
import json, os, random, shutil, subprocess, sys, time

BIN, SEED = os.environ["BIN"], int(os.environ["SEED"])
DEADLINE = time.time() + float(os.environ["SECONDS_BUDGET"])
WORK = os.environ["FUZZ_DIR"]
rng = random.Random(SEED)
LOGS = {"claude-code", "codex", "gemini-cli", "pi"}
API = ["openai", "anthropic", "responses", "gemini", "bedrock"]
FORMATS = API + sorted(LOGS)
MODELS = [None, None, "gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro", "GPT-4O", "openai/gpt-4o",
          "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "llama-3.1-8b"]

def sources():
    roots = ["data/conversations", "../shared/corpus"]
    found = []
    for root in roots:
        for folder, _, names in os.walk(root):
            if "/invalid" in folder:
                continue
            for name in names:
                path = os.path.join(folder, name)
                if name.endswith((".json", ".jsonl")) and name not in ("index.json", "provenance.json") \
                        and os.path.getsize(path) < 1_500_000:
                    found.append(path)
    return sorted(found)

def run(args, stdin=None):
    p = subprocess.run([BIN] + args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

def pairs(kv):
    # An OpenAI tool call read without `type` is written with `"type": "function"`, which the
    # API requires (tests/formats.rs pins it): not a changed round trip. A key written twice
    # is read once (the last value, as providers read it): the comparison is skipped.
    keys = [k for k, _ in kv]
    if len(set(keys)) != len(keys):
        raise ValueError("a key written twice")
    if "function" in keys and "id" in keys and "type" in keys and dict(kv)["type"] == "function":
        kv = [(k, v) for k, v in kv if k != "type"]
    return ("obj", kv)

def raw(text):
    """JSON with numbers kept as spelled and keys in order, for byte-faithful comparison."""
    return json.loads(text, parse_float=lambda s: ("num", s), parse_int=lambda s: ("num", s),
                      parse_constant=lambda s: ("num", s), object_pairs_hook=pairs)

def records(text):
    dec, at, out = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at >= len(text):
            return out
        value, at = dec.raw_decode(text, at)
        out.append(value)

NUMBERS = ["1E5", "1e400", "2E-7", "1.50", "-0", "1e+5", "12345678901234567890123"]

def respell(text):
    # Replace a number value after `": ` with another spelling.
    spots = [i for i in range(len(text) - 3) if text[i:i + 2] == ": " and text[i + 2] in "-0123456789"]
    if not spots:
        return text.replace("{", '{"n": %s, ' % rng.choice(NUMBERS), 1)
    i = rng.choice(spots) + 2
    j = i
    while j < len(text) and text[j] in "-+.eE0123456789":
        j += 1
    return text[:i] + rng.choice(NUMBERS) + text[j:]

def lists(doc):
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("messages", "contents", "input"):
            if isinstance(doc.get(key), list):
                return doc[key]
    return None

def walk(value, found):
    if isinstance(value, dict):
        found.append(value)
        for v in value.values():
            walk(v, found)
    elif isinstance(value, list):
        for v in value:
            walk(v, found)

def structural(text):
    try:
        docs = records(text)
    except ValueError:
        return text, "bytes"
    single = len(docs) == 1
    target = docs[0] if single else docs
    items = lists(target) if single else docs
    kind = rng.choice(["drop", "dup", "swap", "field", "string-input", "stray", "role", "number", "none"])
    if kind == "number":
        return respell(text), kind
    if items and kind in ("drop", "dup", "swap") and len(items) > 1:
        i = rng.randrange(len(items))
        if kind == "drop":
            items.pop(i)
        elif kind == "dup":
            items.insert(i, json.loads(json.dumps(items[i])))
        else:
            j = rng.randrange(len(items))
            items[i], items[j] = items[j], items[i]
    elif kind in ("field", "string-input", "role"):
        objects = []
        walk(target, objects)
        if objects:
            o = rng.choice(objects)
            if kind == "field" and o:
                o.pop(rng.choice(list(o)))
            elif kind == "role":
                for m in (items or [])[:3]:
                    if isinstance(m, dict):
                        m.pop("role", None)
            else:
                for obj in objects:
                    for key in ("input", "args"):
                        if isinstance(obj.get(key), dict) and ("name" in obj or "toolUseId" in obj):
                            obj[key] = "a string where the object belongs"
    elif kind == "stray" and single and isinstance(target, dict):
        key = rng.choice(["contents", "system", "input", "messages", "tools", "toolConfig"])
        if key not in target:
            target[key] = rng.choice([[], [{"role": "user", "parts": [{"text": "x"}]}], "text", {}])
    indent = rng.choice([None, 2])
    if single:
        return json.dumps(target, ensure_ascii=False, indent=indent), kind
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), kind

def bytewise(data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if not data:
            break
        op, i = rng.choice(["flip", "cut", "insert"]), rng.randrange(len(data))
        if op == "flip":
            data[i] ^= 1 << rng.randrange(8)
        elif op == "cut":
            del data[i:i + rng.randint(1, 64)]
        else:
            data[i:i] = rng.choice([b"{", b"]", b'"', b",", b"\xff", b"null", b"1E5"])
    return bytes(data)

def model_opts():
    opts = []
    model = rng.choice(MODELS)
    if model:
        opts += ["--model", model]
    if rng.random() < 0.25:
        opts += ["--overhead", str(rng.choice([1, 50, 2000, 100000]))]
    return opts

def budget_opts():
    return rng.choice([["--ratio", str(rng.choice([0.99, 0.9, 0.7, 0.5, 0.3, 0.1, 1]))],
                       ["--target", str(rng.choice([50, 500, 2000, 8000, 40000]))]])

def tool_opts():
    opts = []
    if rng.random() < 0.3:
        opts += ["--tool-mode", rng.choice(["clear", "drop", "off"])]
    if rng.random() < 0.3:
        opts += ["--max-tool-output", str(rng.choice([1, 5, 40, 300]))]
    if rng.random() < 0.2:
        opts += ["--keep-tool-rounds", str(rng.choice([0, 1, 3]))]
    if rng.random() < 0.15:
        opts += ["--clear-tool-inputs"]
    return opts

failures, stats = [], {"cases": 0, "accepted": 0, "refused": 0, "cannot_fit": 0}
reasons = {}

def fail(kind, case, detail):
    keep = os.path.join(WORK, "fail-%03d-%s" % (len(failures), kind))
    shutil.copytree(case, keep, dirs_exist_ok=True)
    failures.append((kind, keep, detail))
    print("FAIL %-10s %s: %s" % (kind, keep, detail[:300]), flush=True)

def total(path, fmt, opts):
    code, out, err = run(["count", path, "--json"] + fmt + opts)
    return json.loads(out)["total"] if code == 0 else None

def check(case, path, orig_text, kind):
    fmt = []
    forced = None
    if rng.random() < 0.2:
        forced = rng.choice(FORMATS)
        fmt = ["--format", forced]
    mopts, bopts, topts = model_opts(), budget_opts(), tool_opts()
    out, rep = os.path.join(case, "out.json"), os.path.join(case, "report.json")
    args = ["compact", path] + fmt + mopts + bopts + topts + ["-o", out, "--report", rep]
    open(os.path.join(case, "args"), "w").write(" ".join(args) + "\n")
    code, _, err = run(args)
    if code not in (0, 2, 3):
        return fail("crash", case, "exit %s: %s" % (code, err))
    if code == 2:
        stats["refused"] += 1
        reason = err.split(": error: ", 1)[-1].split(": ", 1)[-1]
        reason = " ".join(w for w in reason.split()[:6] if not any(c.isdigit() for c in w))
        reasons[reason] = reasons.get(reason, 0) + 1
        return
    if code == 3:
        stats["cannot_fit"] += 1
        return
    stats["accepted"] += 1
    report = json.load(open(rep))
    read_as = report["format"]
    # A forced format that loses most of what detection reads is the wrong one and must be
    # refused (one that reads more is the user settling clues of two formats).
    if forced:
        dcode, dout, _ = run(["count", path, "--json"])
        if dcode == 0:
            detected = len(json.loads(dout)["messages"])
            if report["messages_before"] * 2 < detected:
                fail("forced", case, "--format %s read %d messages, detection %d" %
                     (forced, report["messages_before"], detected))
    # The output reads back (the same --format when one was forced; its API format otherwise).
    back = ["--format", read_as] if forced else []
    vcode, vout, verr = run(["validate", out] + back)
    if vcode != 0:
        return fail("invalid", case, (vout.decode() + verr).strip())
    same = strip_overhead(mopts) + ["--overhead", str(report.get("overhead", 0))]
    counted = total(out, back, same)
    if counted != report["tokens_after"]:
        fail("count", case, "count %s, report tokens_after %s" % (counted, report["tokens_after"]))
    if report["tokens_after"] > report["tokens_before"]:
        fail("increase", case, "%s -> %s" % (report["tokens_before"], report["tokens_after"]))
    if report["action"] == "compacted" and counted is not None and counted > report["budget"]:
        fail("budget", case, "count %s over budget %s" % (counted, report["budget"]))
    # Compacting the output again at the same budget changes nothing.
    again = os.path.join(case, "again.json")
    acode, _, aerr = run(["compact", out] + back + strip_overhead(mopts) +
                         ["--overhead", str(report.get("overhead", 0)), "--target", str(report["budget"])] +
                         topts + ["-o", again])
    if acode != 0:
        fail("idempotent", case, "re-compacting exits %d: %s" % (acode, aerr))
    elif open(again, "rb").read() != open(out, "rb").read() and report["action"] == "within_budget":
        fail("idempotent", case, "an output within budget changed when compacted again")
    # Within budget, an API body comes back as read.
    if report["action"] == "within_budget" and is_body(path, read_as, report["messages_before"]):
        try:
            if raw(orig_text) != raw(open(out, encoding="utf-8").read()):
                fail("roundtrip", case, "within budget, the output differs from the input")
        except ValueError:
            pass
    # trim-tools is idempotent and adds no tokens.
    t1, t2 = os.path.join(case, "t1.json"), os.path.join(case, "t2.json")
    topts2 = topts or ["--max-tool-output", "1"]
    tcode, _, terr = run(["trim-tools", path] + fmt + mopts + topts2 + ["-o", t1, "--report", rep])
    if tcode == 0:
        trep = json.load(open(rep))
        if trep["tokens_after"] > trep["tokens_before"]:
            fail("increase", case, "trim-tools %s -> %s" % (trep["tokens_before"], trep["tokens_after"]))
        tcode2, _, terr2 = run(["trim-tools", t1] + (["--format", read_as] if forced else []) +
                               strip_overhead(mopts) + ["--overhead", str(trep.get("overhead", 0))] +
                               topts2 + ["-o", t2])
        if tcode2 != 0:
            fail("idempotent", case, "trim-tools on its output exits %d: %s" % (tcode2, terr2))
        elif open(t1, "rb").read() != open(t2, "rb").read():
            fail("idempotent", case, "trim-tools changed its own output")

def strip_overhead(opts):
    out, skip = [], False
    for o in opts:
        if skip:
            skip = False
            continue
        if o == "--overhead":
            skip = True
            continue
        out.append(o)
    return out

def is_body(path, fmt, messages):
    # An API body (not a session log read as one): it reads as its API format, forced.
    code, out, _ = run(["count", path, "--json", "--format", fmt])
    return code == 0 and len(json.loads(out)["messages"]) == messages

def records_or_empty(text):
    try:
        return records(text)
    except ValueError:
        return []

files = sources()
if not files:
    print("fuzz-cli: no inputs found", file=sys.stderr)
    sys.exit(2)
print("fuzz-cli: %d inputs, seed %d, work in %s" % (len(files), SEED, WORK), flush=True)
n = 0
while time.time() < DEADLINE:
    n += 1
    source = rng.choice(files)
    data = open(source, "rb").read()
    case = os.path.join(WORK, "case")
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    roll = rng.random()
    if roll < 0.15:
        data, kind = bytewise(data), "bytes"
    elif roll < 0.3:
        kind = "none"
    else:
        text, kind = structural(data.decode("utf-8", "replace"))
        data = text.encode()
    ext = ".jsonl" if source.endswith(".jsonl") else ".json"
    path = os.path.join(case, "input" + ext)
    open(path, "wb").write(data)
    open(os.path.join(case, "source"), "w").write("%s (%s)\n" % (source, kind))
    stats["cases"] += 1
    try:
        check(case, path, data.decode("utf-8", "replace"), kind)
    except subprocess.TimeoutExpired:
        fail("hang", case, "a command ran over 120 s")
by_kind = {}
for kind, _, _ in failures:
    by_kind[kind] = by_kind.get(kind, 0) + 1
print("fuzz-cli: %(cases)d cases (%(accepted)d compacted or within budget, %(refused)d refused, "
      "%(cannot_fit)d cannot fit)" % stats)
top = sorted(reasons.items(), key=lambda kv: -kv[1])[:8]
print("fuzz-cli: most frequent refusals: %s" % "; ".join("%s (%d)" % kv for kv in top))
print("fuzz-cli: failures: %s" % (", ".join("%s %d" % kv for kv in sorted(by_kind.items())) or "none"))
sys.exit(1 if failures else 0)
PY
