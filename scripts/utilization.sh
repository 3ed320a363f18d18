#!/usr/bin/env bash
# Utilization (tokens after ÷ budget) of `compact` with the defaults over real recordings, per
# ratio: the compactions, their mean utilization, and each output under 0.6 of its budget with
# the steps its report names. Files that cannot fit or are within budget are counted apart.
# Usage: scripts/utilization.sh [BINARY] [RATIO...] (default target/release/ctxcompact, 0.5 0.25);
# the files are the top-level folders of ../shared/corpus (OpenAI format).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-target/release/ctxcompact}"
shift || true
RATIOS=("${@:-0.5 0.25}")
read -r -a RATIOS <<<"${RATIOS[*]}"
CORPUS=../shared/corpus
if [ ! -d "$CORPUS" ]; then
  echo "SKIPPED: $CORPUS not found" >&2
  exit 0
fi
REPORT=$(mktemp)
trap 'rm -f "$REPORT"' EXIT
FILES=$(find "$CORPUS/claude-code-spotter" "$CORPUS/swe-agent" "$CORPUS/tau-bench" \
  -maxdepth 1 -name '*.json' | sort)
for ratio in "${RATIOS[@]}"; do
  rows=$(for f in $FILES; do
    rm -f "$REPORT"
    code=0
    "$BIN" compact "$f" --ratio "$ratio" -q -o /dev/null --report "$REPORT" 2>/dev/null || code=$?
    # Exit 3: the budget cannot be met (no report is written).
    if [ ! -s "$REPORT" ]; then printf '%s\texit %s\n' "$(basename "$f")" "$code"; continue; fi
    jq -r --arg f "$(basename "$f")" \
      '[$f, .action, .budget, .tokens_after, (.steps | join(","))] | @tsv' "$REPORT"
  done)
  awk -F'\t' -v ratio="$ratio" '
    $2 == "compacted" { n++; u = $4 / $3; sum += u; if (u < 0.6) low = low sprintf("  %.3f %s (%s)\n", u, $1, $5) }
    $2 == "cannot_fit" || $2 == "exit 3" { cannot++ }
    $2 ~ /^exit / && $2 != "exit 3" { failed++ }
    $2 == "within_budget" { within++ }
    END {
      printf "ratio %s: %d compacted, mean utilization %.3f, %d under 0.6; %d cannot fit, %d within budget, %d failed\n",
        ratio, n, n ? sum / n : 0, gsub(/\n/, "\n", low), cannot, within, failed
      printf "%s", low
    }' <<<"$rows"
done
