#!/usr/bin/env bash
# Real clients through `ctxcompact proxy` (issue 22), each against the scripted provider in
# upstream.py on 127.0.0.1 ephemeral ports, started and stopped here:
#   1. the official `anthropic` and `openai` Python SDKs (pinned), streaming and not;
#   2. Claude Code (npm, pinned) in -p mode and 3. Codex (npm, pinned) in exec mode, each driven
#      through a session of 42 tool calls reading large files, with --window 30000.
# Every upstream body must be valid and within the window, and the CLIs' sessions must compact
# at least twice. `replay` replays recorded sessions call by call with the SDKs (replay.py).
# Usage: tests/clients/run.sh [sdk|replay|claude|codex]... (default: all four).
# Needs python3 and npm; CTXCOMPACT names the binary (default target/release/ctxcompact).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/clients"
ctxcompact="${CTXCOMPACT:-$root/target/release/ctxcompact}"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(sdk replay claude codex)
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check anthropic==2.15.0 openai==3.57.0
py="$work/venv/bin/python"

# Waits for a file to appear (a port number written by the one who listens), 30 s at most.
wait_for() {
  for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "clients: $1 never appeared" >&2
  return 1
}

# Starts the scripted provider and a proxy in front of it; sets $proxy, $ledger, $record.
start() {
  local name="$1" window="$2"
  record="$work/$name/record" ledger="$work/$name/ledger.jsonl"
  mkdir -p "$work/$name/files" "$record"
  # 30 large files for the agents to read (about 1,800 tokens each).
  for i in $(seq -w 1 30); do
    for j in $(seq 1 60); do echo "part $i line $j: the quick brown fox jumps over the lazy dog $i$j"; done \
      > "$work/$name/files/part$i.txt"
  done
  "$py" "$here/upstream.py" --port-file "$work/$name/upstream.port" --record "$record" \
    --workdir "$work/$name/files" --tool-calls 42 &
  pids+=($!)
  wait_for "$work/$name/upstream.port"
  local origin="http://127.0.0.1:$(cat "$work/$name/upstream.port")"
  "$ctxcompact" proxy --listen 127.0.0.1:0 --window "$window" --ledger "$ledger" \
    --anthropic-upstream "$origin" --openai-upstream "$origin" 2> "$work/$name/proxy.err" &
  pids+=($!)
  for _ in $(seq 300); do grep -q "listening on" "$work/$name/proxy.err" && break; sleep 0.1; done
  proxy="$(sed -n 's/.*listening on //p' "$work/$name/proxy.err")"
  [ -n "$proxy" ] || { echo "clients: the proxy did not start" >&2; cat "$work/$name/proxy.err" >&2; exit 1; }
}

for step in "${steps[@]}"; do
  case "$step" in
    sdk)
      start sdk 8000
      "$py" "$here/sdk.py" "$proxy"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 8000 2 anthropic openai responses
      ;;
    replay)
      start replay 32000
      "$py" "$here/replay.py" "$ctxcompact" "http://127.0.0.1:$(cat "$work/replay/upstream.port")" \
        "$record" "$work/replay"
      ;;
    claude)
      start claude 30000
      npm install --silent --prefix "$work/npm" @anthropic-ai/claude-code@2.1.328 >/dev/null 2>&1
      out="$(cd "$work/claude/files" && HOME="$work/claude/home" ANTHROPIC_BASE_URL="$proxy" \
        ANTHROPIC_API_KEY=sk-ant-dummy DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
        timeout 600 "$work/npm/node_modules/.bin/claude" -p "Read every part file here, then summarise them." \
          --allowedTools "Read,Bash,Write" --model claude-sonnet-4-5 < /dev/null)"
      echo "claude: $out" | tail -3
      grep -q SCRIPTED-FINAL-ANSWER <<< "$out"
      [ -z "${CAPTURE:-}" ] || cp "$record"/*.json "$ledger" "$CAPTURE/"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 30000 2 anthropic
      ;;
    codex)
      start codex 30000
      npm install --silent --prefix "$work/npm" @openai/codex@0.169.0 >/dev/null 2>&1
      mkdir -p "$work/codex/home"
      cat > "$work/codex/home/config.toml" <<TOML
model = "gpt-5"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.scripted]
name = "scripted"
base_url = "$proxy/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
supports_websockets = false
TOML
      out="$(cd "$work/codex/files" && CODEX_HOME="$work/codex/home" OPENAI_API_KEY=sk-dummy \
        timeout 600 "$work/npm/node_modules/.bin/codex" exec --skip-git-repo-check \
          "Read every part file here, then summarise them." < /dev/null)"
      echo "codex: $out" | tail -3
      grep -q SCRIPTED-FINAL-ANSWER <<< "$out"
      [ -z "${CAPTURE:-}" ] || cp "$record"/*.json "$ledger" "$CAPTURE/"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 30000 2 responses
      ;;
    *) echo "clients: unknown step $step" >&2; exit 2 ;;
  esac
  echo "clients: $step passed"
done
echo "clients: ${#steps[@]} passed, 0 failed"
