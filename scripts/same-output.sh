#!/usr/bin/env bash
# Checks that two ctxcompact binaries behave identically on every file of data/conversations
# and ../shared/corpus: `compact` (output, report, stderr, exit code), `analyze --json` and
# `count --json`, under a few option sets. Used to prove that a refactor changed no behaviour.
# Usage: scripts/same-output.sh OLD_BINARY NEW_BINARY
# Exits 1 and names each differing case; prints "N passed, N failed" at the end.
set -uo pipefail
cd "$(dirname "$0")/.."

old="${1:?usage: scripts/same-output.sh OLD_BINARY NEW_BINARY}"
new="${2:?usage: scripts/same-output.sh OLD_BINARY NEW_BINARY}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

files=()
while IFS= read -r -d '' file; do files+=("$file"); done < <(
  find data/conversations ../shared/corpus -type f \( -name '*.json' -o -name '*.jsonl' \) \
    ! -name index.json -print0 2>/dev/null | sort -z)
if [ ! -d ../shared/corpus ]; then echo "same-output: SKIPPED ../shared/corpus (absent)"; fi

# Each case: a command line after the file. `compact` writes to an output file and a report.
cases=(
  "compact --ratio 0.5"
  "compact --ratio 0.25 --strategy middle"
  "compact --ratio 0.5 --tool-mode drop --marker brief"
  "compact --model claude-sonnet-4-5 --target 2000"
  "trim-tools --keep-tool-rounds 1"
  "analyze --json"
  "analyze --json --ratio 0.25"
  "count --json"
  "count --json --model claude-sonnet-4-5"
  "validate"
)

run() { # binary, side, file, case words...
  local bin="$1" side="$2" file="$3"
  shift 3
  local dir="$work/$side"
  rm -rf "$dir" && mkdir -p "$dir"
  local extra=()
  case "$1" in compact | trim-tools) extra=(-o "$dir/out" --report "$dir/report") ;; esac
  "$bin" "$@" "$file" "${extra[@]}" >"$dir/stdout" 2>"$dir/stderr" </dev/null
  echo "$?" >"$dir/code"
  # The binary's name appears in messages; it is not behaviour.
  sed -i "s|$bin|ctxcompact|g" "$dir/stderr" "$dir/stdout"
}

passed=0
failed=0
for file in "${files[@]}"; do
  for case in "${cases[@]}"; do
    read -r -a words <<<"$case"
    run "$old" old "$file" "${words[@]}"
    run "$new" new "$file" "${words[@]}"
    if diff -r "$work/old" "$work/new" >/dev/null; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "differs: $file: $case"
    fi
  done
done
echo "same-output: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
