#!/usr/bin/env bash
# Real clients through `ctxcompact proxy` (issues 22 and 31), each against the scripted provider
# in upstream.py on 127.0.0.1 ephemeral ports, started and stopped here:
#   1. the official `anthropic` and `openai` Python SDKs (pinned), streaming and not;
#   2. Claude Code, 3. Codex and 4. Gemini CLI (npm, pinned), each run as docs/proxy.md says, with
#      its default model and no provider entry, through a session of 42 tool calls reading
#      large files; the proxy has no --window (the catalog gives each model's) and a --trigger
#      small enough to compact within the session.
# Every upstream body must be valid and within the window the ledger names, no request may
# fail open, and the CLIs' sessions must compact at least twice. `replay` replays recorded
# sessions call by call with the SDKs (replay.py).
# The sessions' project folder holds a CLAUDE.md, AGENTS.md and GEMINI.md: every body sent
# compacted must hold its rule verbatim (pinned.py, issue 33 item 1). `recall` runs Claude Code
# and Codex through three typed requests with --archive-dir: the second is removed, and the
# scripted model reads it back verbatim from the archive with the client's own read tool, and a
# cleared output too (recall.py, issue 33 item 5). The proxy's `GET /metrics`, read by
# prometheus-client's parser, must equal its ledger (metrics.py, issue 55). `wrap` runs six
# agents (npm and PyPI, pinned) as `ctxcompact wrap -- AGENT …` in one-shot mode: each reaches
# the scripted provider through the proxy in wrap's process, compacts, exits 0, leaves the
# proxy's port closed and the user's own settings files unchanged (issue 55).
# `mcp-sdk` drives `ctxcompact mcp` with the official MCP Python SDK (mcp_sdk.py); `mcp-claude`
# and `mcp-codex` run Claude Code and Codex through the proxy with `ctxcompact mcp` configured,
# the scripted model recalling a cleared output by its handle (mcp_recall.py), issue 53.
# Usage: tests/clients/run.sh [sdk|replay|claude|codex|codex-low-target|gemini|mcp-sdk|mcp-claude|
# mcp-codex|recall|wrap]... (default: all eleven).
# Needs python3 and npm; CTXCOMPACT names the binary (default target/release/ctxcompact).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/clients"
ctxcompact="${CTXCOMPACT:-$root/target/release/ctxcompact}"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(sdk replay claude codex codex-low-target gemini mcp-sdk mcp-claude mcp-codex recall wrap)
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check anthropic==2.15.0 openai==3.57.0 \
  prometheus-client==0.26.0 mcp==2.3.0
py="$work/venv/bin/python"

# Waits for a file to appear (a port number written by the one who listens), 30 s at most.
wait_for() {
  for _ in $(seq 300); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "clients: $1 never appeared" >&2
  return 1
}

# Starts the scripted provider of step $1; sets $origin, $ledger, $record.
upstream() {
  local name="$1"
  record="$work/$name/record" ledger="$work/$name/ledger.jsonl"
  mkdir -p "$work/$name/files" "$record" "$work/$name/home"
  # 30 large files for the agents to read (about 1,800 tokens each).
  for i in $(seq -w 1 30); do
    for j in $(seq 1 60); do echo "part $i line $j: the quick brown fox jumps over the lazy dog $i$j"; done \
      > "$work/$name/files/part$i.txt"
  done
  # The project's instruction files, each agent's own (issue 33, item 1).
  for file in CLAUDE.md AGENTS.md GEMINI.md; do echo "$rule" > "$work/$name/files/$file"; done
  "$py" "$here/upstream.py" --port-file "$work/$name/upstream.port" --record "$record" \
    --workdir "$work/$name/files" --tool-calls 42 &
  pids+=($!)
  wait_for "$work/$name/upstream.port"
  origin="http://127.0.0.1:$(cat "$work/$name/upstream.port")"
}

# Starts the scripted provider and a proxy in front of it (with the proxy flags after the
# name); sets $proxy, $ledger, $record.
start() {
  local name="$1"
  shift
  upstream "$name"
  XDG_CACHE_HOME="$work/$name/cache" "$ctxcompact" proxy --listen 127.0.0.1:0 --ledger "$ledger" --anthropic-upstream "$origin" \
    --openai-upstream "$origin" --gemini-upstream "$origin" "$@" 2> "$work/$name/proxy.err" &
  pids+=($!)
  for _ in $(seq 300); do grep -qs "listening on" "$work/$name/proxy.err" && break; sleep 0.1; done
  proxy="$(sed -n 's/.*listening on //p' "$work/$name/proxy.err")"
  [ -n "$proxy" ] || { echo "clients: the proxy did not start" >&2; cat "$work/$name/proxy.err" >&2; exit 1; }
}

# Installs a pinned npm client once.
install() {
  npm install --silent --prefix "$work/npm" "$1" >/dev/null 2>&1
}

# Writes the user's own settings file $2 (a path in the home folder of step $1): $3.
user_settings() {
  mkdir -p "$(dirname "$work/$1/home/$2")"
  printf '%s\n' "$3" > "$work/$1/home/$2"
}

# Runs `ctxcompact wrap` for step $1 with the proxy flags $2 (words), then the agent's command
# (the arguments after $3), in the step's project folder with HOME at its home folder, whose
# files (the user's own settings) must come out unchanged; every provider's upstream is the
# scripted one. Fails unless the agent exits 0, wrap named it on its start line, the proxy's
# port is closed once wrap has exited, the agent printed the answer $3 names (its first word)
# and check.py passes with the rest of $3 (the window, the compactions at least, the kind).
wrap_session() {
  local name="$1" flags="$2" final window minimum kind home="$work/$1/home"
  read -r final window minimum kind <<< "$3"
  shift 3
  (cd "$home" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$work/$name/settings.sha256"
  # shellcheck disable=SC2086 # the flags are words
  out="$(cd "$work/$name/files" && HOME="$home" timeout 600 "$ctxcompact" wrap --ledger "$ledger" \
    --upstream "$origin" $flags -- "$@" < /dev/null 2> "$work/$name/stderr")" \
    || { echo "clients: wrap $name exited $?" >&2; tail -40 "$work/$name/stderr" >&2; exit 1; }
  grep "^ctxcompact wrap: " "$work/$name/stderr"
  local port
  port="$(sed -n 's/^ctxcompact wrap: .* through the proxy on 127\.0\.0\.1:\([0-9]*\) via .*/\1/p' "$work/$name/stderr")"
  [ -n "$port" ] || { echo "clients: wrap $name printed no start line" >&2; exit 1; }
  if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
    echo "clients: the proxy of wrap $name still listens on $port" >&2
    exit 1
  fi
  (cd "$home" && sha256sum --quiet -c "$work/$name/settings.sha256") \
    || { echo "clients: wrap $name changed the user's settings" >&2; exit 1; }
  echo "$name: $out" | tail -2
  grep -q "$final" <<< "$out"
  "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" "$window" "$minimum" "$kind"
}

# The line docs/proxy.md (README.md for `wrap`) gives for a client, which the step runs (with
# the proxy's address for the page's 127.0.0.1:8787): fails when the page no longer says it.
documented_line() {
  local page="$1" line="$2"
  grep -qF -- "$line" "$root/$page" || { echo "clients: $page lacks \`$line\`" >&2; exit 1; }
}

task="Read every part file here, then summarise them."
# The rule of the project's instruction files, which every body sent compacted must hold.
rule="Project rule CTX-4417: never edit a part file, and always name the part files you read."
# The recall step's session (upstream.py reads the range of each turn's request). The second
# request pastes review notes (about 3,000 tokens), as a person does, so that once it is old,
# clearing old tool outputs alone no longer meets the budget and it is removed whole.
first_turn="Read part files 01 to 10 here, then summarise them."
second_turn="Now read part files 11 to 20 and check them against my review notes. Never rename a part file.$(
  for i in $(seq 1 150); do printf ' Note %d: part %02d keeps its 60 lines, and line %d still says the fox is quick.' "$i" "$(( (i - 1) % 30 + 1 ))" "$i"; done)"
third_turn="Read part files 21 to 30, then quote word for word, from the ctxcompact archive, what I asked in my request before this one."

# Runs Claude Code as docs/proxy.md says through the proxy of step $1, with the prompt $2 and
# the flags after it (`--continue`: the person's next turn), the tools $claude_tools allowed
# (default: Read, Bash, Write); sets $out.
claude_session() {
  local name="$1" prompt="$2"
  shift 2
  install @anthropic-ai/claude-code@2.1.328
  documented_line docs/proxy.md "ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude "
  out="$(cd "$work/$name/files" && HOME="$work/$name/home" ANTHROPIC_API_KEY=sk-ant-dummy \
    DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    ANTHROPIC_BASE_URL="$proxy" timeout 600 "$work/npm/node_modules/.bin/claude" \
      -p "$prompt" "$@" --allowedTools "${claude_tools:-Read,Bash,Write}" < /dev/null 2> "$work/$name/stderr")" \
    || { tail -40 "$work/$name/stderr" >&2; exit 1; }
  echo "claude: $out" | tail -3
  grep -q SCRIPTED-FINAL-ANSWER <<< "$out"
}

# Runs Codex as docs/proxy.md says through the proxy of step $1, `codex exec` with the arguments
# after it (`resume --last …`: the person's next turn); sets $out and $started.
codex_session() {
  local name="$1"
  shift
  install @openai/codex@0.169.0
  documented_line docs/proxy.md 'codex -c openai_base_url="http://127.0.0.1:8787/v1" '
  # The user's own settings for a run without prompts; no provider entry, no model; without
  # the plugin and app features, which reach github.com and chatgpt.com at start-up (`git
  # ls-remote https://github.com/openai/plugins.git`, DNS lookups of api.github.com and
  # chatgpt.com, seen with strace).
  printf 'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n\n[features]\nplugins = false\nremote_plugin = false\napps = false\n' \
    > "$work/$name/home/config.toml"
  started="$(date +%s.%N)"
  out="$(cd "$work/$name/files" && CODEX_HOME="$work/$name/home" OPENAI_API_KEY=sk-dummy \
    timeout 600 "$work/npm/node_modules/.bin/codex" -c openai_base_url="$proxy/v1" \
      exec "$@" < /dev/null 2> "$work/$name/stderr")" \
    || { tail -40 "$work/$name/stderr" >&2; exit 1; }
  echo "codex: $out" | tail -3
  grep -q SCRIPTED-FINAL-ANSWER <<< "$out"
}

for step in "${steps[@]}"; do
  case "$step" in
    sdk)
      start sdk --window 8000
      "$py" "$here/sdk.py" "$proxy"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 8000 2 anthropic openai responses
      "$py" "$here/metrics.py" "$proxy" "$ledger"
      ;;
    replay)
      start replay --window 32000
      "$py" "$here/replay.py" "$ctxcompact" "http://127.0.0.1:$(cat "$work/replay/upstream.port")" \
        "$record" "$work/replay"
      ;;
    claude)
      # claude-opus-5-5 (1,000,000 tokens): compact past 40,000, down to 25,000.
      start claude --trigger 0.04 --target-ratio 0.025
      claude_session claude "$task"
      [ -z "${CAPTURE:-}" ] || cp "$record"/*.json "$ledger" "$CAPTURE/"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 1000000 2 anthropic
      "$py" "$here/pinned.py" "$ctxcompact" "$record" "$ledger" anthropic CLAUDE.md "$rule"
      "$py" "$here/metrics.py" "$proxy" "$ledger"
      ;;
    codex)
      # gpt-6.1-sol (272,000 tokens): compact past 40,800, down to 27,200.
      start codex --trigger 0.15 --target-ratio 0.1
      codex_session codex --skip-git-repo-check "$task"
      # Its WebSocket upgrade was refused by the proxy (426) and never reached upstream.
      grep -q '"status":426' "$ledger" || { echo "clients: no 426 for Codex's upgrade" >&2; exit 1; }
      ! grep -q websocket "$record/paths.log" || { echo "clients: an upgrade reached upstream" >&2; exit 1; }
      "$py" -c 'import os, sys; d = sys.argv[1]; f = min(x for x in os.listdir(d) if x.endswith("-responses.json"))
print("codex: first model request %.2f s after start" % (os.path.getmtime(os.path.join(d, f)) - float(sys.argv[2])))' \
        "$record" "$started"
      [ -z "${CAPTURE:-}" ] || cp "$record"/*.json "$ledger" "$CAPTURE/"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 272000 2 responses
      "$py" "$here/pinned.py" "$ctxcompact" "$record" "$ledger" responses AGENTS.md "$rule"
      "$py" "$here/metrics.py" "$proxy" "$ledger"
      ;;
    codex-low-target)
      # Issue 41: a target below the agent's own part. Codex's instructions, tools and AGENTS.md
      # come to about 14,700 tokens, over this target (13,600): a compaction must still leave
      # room under the trigger (27,200), so that the calls after it only append.
      start codex-low-target --trigger 0.1 --target-ratio 0.05
      codex_session codex-low-target --skip-git-repo-check "$task"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 272000 2 responses
      "$py" "$here/rewrites.py" "$ledger"
      ;;
    gemini)
      # The Gemini models (1,048,576 tokens): compact past 31,457, down to 20,971.
      start gemini --trigger 0.03 --target-ratio 0.02
      install @google/gemini-cli@0.61.0
      documented_line docs/proxy.md "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787 gemini "
      # API-key auth, as --print-env says; -p runs in a folder trusted by the environment; no
      # usage statistics (on by default: they would go to Google).
      mkdir -p "$work/gemini/home/.gemini"
      echo '{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}' \
        > "$work/gemini/home/.gemini/settings.json"
      out="$(cd "$work/gemini/files" && HOME="$work/gemini/home" GEMINI_API_KEY=dummy \
        GEMINI_CLI_TRUST_WORKSPACE=true GOOGLE_GEMINI_BASE_URL="$proxy" \
        timeout 600 "$work/npm/node_modules/.bin/gemini" -p "$task" < /dev/null 2> "$work/gemini/stderr")" \
        || { tail -40 "$work/gemini/stderr" >&2; exit 1; }
      echo "gemini: $out" | tail -3
      grep -q SCRIPTED-FINAL-ANSWER <<< "$out"
      # Its routing classifier (a JSON-schema call) reached upstream and its answer was used.
      grep -q ':generateContent' "$record/paths.log"
      ! grep -q 'Routing\].*failed' "$work/gemini/stderr" \
        || { grep 'Routing\]' "$work/gemini/stderr" >&2; exit 1; }
      [ -z "${CAPTURE:-}" ] || cp "$record"/*.json "$ledger" "$CAPTURE/"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 1048576 2 gemini
      "$py" "$here/pinned.py" "$ctxcompact" "$record" "$ledger" gemini GEMINI.md "$rule"
      "$py" "$here/metrics.py" "$proxy" "$ledger"
      ;;
    mcp-sdk)
      # Issue 53: `ctxcompact mcp` through the official MCP Python SDK, both protocol eras:
      # every handle `compact --archive` names recalled byte-exact, a removed request found by
      # a phrase of it; over a corpus recording (said and skipped when ../shared/corpus lacks
      # it) and a bundled conversation, which removes a person's request.
      "$py" "$here/mcp_sdk.py" "$ctxcompact" \
        "$root/../shared/corpus/claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.json" \
        "$root/data/conversations/openai-coding-python-500.json"
      ;;
    mcp-claude)
      # Issue 53: Claude Code through the proxy archiving by default (its own cache folder), with
      # `ctxcompact mcp` over the default folder configured by --mcp-config; after the session's
      # reads the scripted model calls mcp__ctxcompact__recall with the handle a cleared output's
      # placeholder names, and the next body's tool result holds that output as sent.
      start mcp-claude --trigger 0.04 --target-ratio 0.025
      mcp_config="$(printf '{"mcpServers": {"ctxcompact": {"command": "%s", "args": ["mcp"], "env": {"XDG_CACHE_HOME": "%s"}}}}' \
        "$ctxcompact" "$work/mcp-claude/cache")"
      claude_tools="Read,Bash,Write,mcp__ctxcompact__recall" claude_session mcp-claude "$task" \
        --mcp-config "$mcp_config" --strict-mcp-config
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 1000000 2 anthropic
      "$py" "$here/mcp_recall.py" "$record" anthropic
      ;;
    mcp-codex)
      # The same for Codex, its MCP server configured with -c mcp_servers.ctxcompact.….
      start mcp-codex --trigger 0.15 --target-ratio 0.1
      codex_session mcp-codex -c "mcp_servers.ctxcompact.command=\"$ctxcompact\"" \
        -c 'mcp_servers.ctxcompact.args=["mcp"]' \
        -c "mcp_servers.ctxcompact.env={XDG_CACHE_HOME=\"$work/mcp-codex/cache\"}" \
        --skip-git-repo-check "$task"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 272000 2 responses
      "$py" "$here/mcp_recall.py" "$record" responses
      ;;
    recall)
      # Issue 33, item 5: the agent reads its removed history back. A session of three typed
      # requests, each run as the person's next turn (Claude Code `-p --continue`, Codex `exec
      # resume --last`): the proxy archives what it removes (--archive-dir) and removes the
      # second request; after the third one's reads, the scripted model reads the file a
      # cleared output's placeholder names, searches the marker's archive folder for the start
      # of the request the digest names (`grep -n`, the client's shell tool) and reads the line
      # the search names with the client's own read tool (Claude Code's Read with an offset,
      # Codex's exec running `sed -n`). recall.py checks the tool results: the removed request
      # verbatim, the cleared output as sent.
      start recall-claude --trigger 0.04 --target-ratio 0.02 --archive-dir "$work/recall-claude/archive"
      claude_session recall-claude "$first_turn"
      claude_session recall-claude "$second_turn" --continue
      claude_session recall-claude "$third_turn" --continue
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 1000000 2 anthropic
      "$py" "$here/recall.py" "$record" anthropic "$second_turn"
      "$py" "$here/pinned.py" "$ctxcompact" "$record" "$ledger" anthropic CLAUDE.md "$rule"
      start recall-codex --trigger 0.12 --target-ratio 0.075 --archive-dir "$work/recall-codex/archive"
      codex_session recall-codex --skip-git-repo-check "$first_turn"
      codex_session recall-codex resume --last --skip-git-repo-check "$second_turn"
      codex_session recall-codex resume --last --skip-git-repo-check "$third_turn"
      "$py" "$here/check.py" "$ctxcompact" "$record" "$ledger" 272000 2 responses
      "$py" "$here/recall.py" "$record" responses "$second_turn"
      "$py" "$here/pinned.py" "$ctxcompact" "$record" "$ledger" responses AGENTS.md "$rule"
      ;;
    wrap)
      # Issue 55: the six agents as their users install them, each one-shot through
      # `ctxcompact wrap -- AGENT …`, pointed at the proxy by its preset alone (no base URL
      # given by hand), against its own scripted provider; the same checks as above, plus the
      # agent's exit status, the proxy's port closed and the user's settings unchanged.
      install @anthropic-ai/claude-code@2.1.328
      install @openai/codex@0.169.0
      install @google/gemini-cli@0.61.0
      install opencode-ai@1.18.33
      install @qwen-code/qwen-code@0.24.4
      python3 -m venv "$work/aider-venv"
      "$work/aider-venv/bin/pip" install --quiet --disable-pip-version-check aider-chat==0.86.2
      bin="$work/npm/node_modules/.bin"
      documented_line README.md "cargo run --release -- wrap -- claude "

      upstream wrap-claude
      user_settings wrap-claude .claude/settings.json '{"includeCoAuthoredBy": false}'
      ANTHROPIC_API_KEY=sk-ant-dummy DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 wrap_session wrap-claude "--trigger 0.04 --target-ratio 0.025" \
        "SCRIPTED-FINAL-ANSWER 1000000 2 anthropic" "$bin/claude" -p "$task" --allowedTools "Read,Bash,Write"

      upstream wrap-codex
      user_settings wrap-codex .codex/config.toml "$(printf 'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n\n[features]\nplugins = false\nremote_plugin = false\napps = false')"
      OPENAI_API_KEY=sk-dummy wrap_session wrap-codex "--trigger 0.15 --target-ratio 0.1" \
        "SCRIPTED-FINAL-ANSWER 272000 2 responses" "$bin/codex" exec --skip-git-repo-check "$task"
      # The agent's own failure comes back as its exit status: Codex refuses an unknown flag
      # with 2, which wrap returns (its own usage errors never start the agent).
      status=0
      (cd "$work/wrap-codex/files" && HOME="$work/wrap-codex/home" OPENAI_API_KEY=sk-dummy timeout 60 \
        "$ctxcompact" wrap --ledger "$ledger" --upstream "$origin" -- "$bin/codex" exec --no-such-flag \
        < /dev/null > /dev/null 2> "$work/wrap-codex/stderr") || status=$?
      [ "$status" = 2 ] && grep -q "no-such-flag" "$work/wrap-codex/stderr" \
        || { echo "clients: wrap returned $status for Codex's usage error" >&2; exit 1; }

      upstream wrap-gemini
      # API-key sign-in selected in the user's settings, as Gemini CLI's -p needs (wrap cannot
      # select it without editing them); no usage statistics.
      user_settings wrap-gemini .gemini/settings.json \
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": false}}'
      GEMINI_API_KEY=dummy GEMINI_CLI_TRUST_WORKSPACE=true wrap_session wrap-gemini \
        "--trigger 0.03 --target-ratio 0.02" "SCRIPTED-FINAL-ANSWER 1048576 2 gemini" "$bin/gemini" -p "$task"

      upstream wrap-opencode
      # claude-sonnet-4-5 (200,000 tokens): compact past 40,000. Its models list from the
      # release, not models.dev; its package installs sent to a closed local port (it goes on
      # without them), so that nothing leaves 127.0.0.1.
      user_settings wrap-opencode .config/opencode/opencode.json \
        '{"$schema": "https://opencode.ai/config.json", "autoupdate": false}'
      ANTHROPIC_API_KEY=sk-ant-dummy OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
        OPENCODE_DISABLE_DEFAULT_PLUGINS=1 npm_config_registry=http://127.0.0.1:9/ \
        wrap_session wrap-opencode "--trigger 0.2 --target-ratio 0.12" "SCRIPTED-FINAL-ANSWER 200000 2 anthropic" \
        "$bin/opencode" run -m anthropic/claude-sonnet-4-5 "$task"

      upstream wrap-qwen
      # qwen3-coder-plus (262,144 tokens) over OpenAI Chat Completions: compact past 39,321.
      # The settings as Qwen Code writes them back (it adds its format's `$version` to a file
      # without one, wrapped or not).
      user_settings wrap-qwen .qwen/settings.json "$(printf '{\n  "ui": {\n    "hideTips": true\n  },\n  "$version": 4\n}')"
      OPENAI_API_KEY=sk-dummy OPENAI_MODEL=qwen3-coder-plus QWEN_CODE_SUPPRESS_YOLO_WARNING=1 \
        wrap_session wrap-qwen "--trigger 0.15 --target-ratio 0.1" "SCRIPTED-FINAL-ANSWER 262144 2 openai" \
        "$bin/qwen" -p "$task" --yolo

      upstream wrap-aider
      # aider calls no tools: its one-shot request carries the chat it restores from the
      # project's history file (30 earlier exchanges quoting the part files, about 39,000
      # tokens), which it may not summarise itself; gpt-4o (128,000 tokens) compacts past 12,800.
      user_settings wrap-aider .aider.conf.yml "dark-mode: true"
      for i in $(seq -w 1 30); do
        printf '#### Summarise part%s.txt for me.\n\nHere is part %s, line by line:\n\n' "$i" "$i"
        cat "$work/wrap-aider/files/part$i.txt"
        echo
      done > "$work/wrap-aider/files/.aider.chat.history.md"
      OPENAI_API_KEY=sk-dummy LITELLM_LOCAL_MODEL_COST_MAP=True wrap_session wrap-aider \
        "--trigger 0.1 --target-ratio 0.05" "scripted 128000 1 openai" "$work/aider-venv/bin/aider" --model gpt-4o \
        --message "Now summarise all the parts you read." --restore-chat-history \
        --max-chat-history-tokens 1000000 --yes-always --no-git --no-check-update --analytics-disable \
        --no-show-model-warnings --no-pretty --no-stream
      ;;
    *) echo "clients: unknown step $step" >&2; exit 2 ;;
  esac
  echo "clients: $step passed"
done
echo "clients: ${#steps[@]} passed, 0 failed"
