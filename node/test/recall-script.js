// The scripted model of the recall tests (issue 53), as python/tests/recall_script.py: a session
// of three typed requests, each reading a range of modules; the second pastes review notes, so
// that once it is old a compaction removes it whole. After the third one's reads the model
// recalls, with the adapter's `ctxcompact_recall` tool, the removed request by the handle of the
// note whose digest names it (following an earlier marker a recalled span holds), then the
// output a placeholder names, and answers. (The AI SDK's loop history is the compacted one, so
// a recall's own result is soon cleared in turn: the request goes first.) It reads what a model call was sent as OpenAI Chat-like messages ({ role,
// content, tool_calls: [{ id, name, args }], tool_call_id }), which each test makes from its
// framework's.

export const TURNS = [
  "Read modules 0 to 11 of the crate, then summarise them.",
  "Now read modules 12 to 23 and check them against my review notes." +
    Array.from({ length: 160 }, (_, n) => ` Note ${n}: module ${n % 24} keeps its checks, and line ${n} is safe.`).join(""),
  "Read modules 24 to 35, then recall word for word my request before this one.",
];
export const FINAL = "SCRIPTED-FINAL-ANSWER";
export const RECALL = "ctxcompact_recall";
const RANGE = /modules (\d+) to (\d+)/g;
const HANDLE = /handle ([0-9a-f]{12}\/[0-9a-f]{12})/g;

/** What the read tool gives for a module: 60 lines, about 1,000 tokens. */
export function readOutput(path) {
  return Array.from({ length: 60 }, (_, n) => `${path}:${n}: let value_${n} = compute(${n}) * factor_${n};`).join("\n");
}

/** The call id of a recall step (each handle is recalled once): its kind, then its handle. */
export function recallId([, handle, kind]) {
  return `recall_${kind}_${handle.replace("/", "_")}`;
}

/** The words a note's digest names the removed request by (its start). */
const HEAD = TURNS[1].slice(0, 40);

/**
 * The next step: ["read", n], ["recall", handle, "request" or "output"] or ["final"]. After the reads: the handle of the
 * note whose digest names the removed request (in a marker, or in a span a recall gave back,
 * which may hold an earlier marker), until the request itself comes back; then the handle the
 * first cleared output's placeholder names.
 */
export function nextStep(messages) {
  const typed = messages.filter((m) => m.role === "user").map((m) => m.content);
  const current = [...typed].reverse().find((t) => t.match(RANGE)) ?? "";
  const [first, last] = [...current.matchAll(RANGE)].at(-1).slice(1).map(Number);
  const calls = messages.flatMap((m) => m.tool_calls ?? []);
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]));
  const read = calls.map((c) => /^read_(\d+)$/.exec(c.id)).filter(Boolean).map((found) => Number(found[1]));
  const following = Math.max(first - 1, ...read) + 1;
  const recalled = calls.filter((c) => c.name === RECALL);
  if (following <= last && recalled.length === 0) return ["read", following];
  if (!current.includes("recall") || recalled.length >= 8) return ["final"];
  const asked = new Set(recalled.map((c) => c.args.handle));
  const recalls = recalled.filter((c) => results.has(c.id)).map((c) => results.get(c.id));
  const fresh = (texts) => texts.flatMap((t) => [...t.matchAll(HANDLE)].map((found) => found[1])).filter((h) => !asked.has(h));
  if (!recalls.some((t) => t.includes(JSON.stringify(TURNS[1])))) {
    const lines = [...typed.filter((t) => t.includes("[ctxcompact:")), ...recalls.flatMap((t) => t.split("\n"))];
    const named = fresh(lines.filter((line) => line.includes(HEAD)));
    return named.length > 0 ? ["recall", named[0], "request"] : ["final"];
  }
  if (recalled.some((c) => c.id.startsWith("recall_output_"))) return ["final"];
  const cleared = fresh([...results.values()].filter((t) => t.startsWith("[ctxcompact: output of read_file")));
  return cleared.length > 0 ? ["recall", cleared[0], "output"] : ["final"];
}

/** The JSON lines the recall tool gave back, parsed, from the (id, text) of its results. */
export function recalledLines(results) {
  return results.flatMap((text) => text.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line)));
}
