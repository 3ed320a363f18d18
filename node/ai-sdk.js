// Compaction inside the Vercel AI SDK's tool loops: a `prepareStep` for generateText and
// streamText.
//
// The messages a `prepareStep` returns become the loop's history for the steps after it, so
// the compaction acts only past the trigger (70% of the window by default) and brings the
// history down to what its last 8 calls take (20% to 50% of the window): the steps that follow append to what it returned, under
// the trigger, and pass through untouched until the history crosses it again. ModelMessages
// are read and written by the library's `ai-sdk` format; every message the compaction keeps
// is returned as the very object the loop gave.

import { compactMessages, CtxcompactError, codes } from "./index.js";

/**
 * Compacts a ModelMessage list as `compact()` does: `{ messages, report }`. `instructions`
 * (the system prompt sent beside the messages) is counted, pinned and not returned.
 */
export function compactModelMessages(messages, options = {}) {
  const { instructions, ...rest } = options;
  const system = instructionsText(instructions);
  const list = system === null ? messages : [{ role: "system", content: system }, ...messages];
  const result = compactMessages(list, { ...rest, format: "ai-sdk" });
  if (result.report.action === "within_budget") {
    return { messages, report: result.report };
  }
  if (system === null) return { messages: result.messages, report: result.report };
  // The instructions are a system message, pinned: they come out first, unchanged.
  if (result.unchanged[0] !== 0) {
    throw new CtxcompactError(codes.input, "the instructions did not come through the compaction unchanged");
  }
  return { messages: result.messages.slice(1), report: result.report };
}

/**
 * A `prepareStep` for `generateText` and `streamText` that compacts the loop's messages past
 * the trigger. `options` are those of `compact()` (a `model` or a `window`, `trigger`,
 * `targetRatio`, the tool options, `overhead` for the tokens the tool definitions add to every
 * call…) and `onCompaction(report, stepNumber)`, called after each compaction.
 */
export function prepareStep(options = {}) {
  const { onCompaction, ...rest } = options;
  return ({ messages, instructions, stepNumber }) => {
    const { messages: compacted, report } = compactModelMessages(messages, { ...rest, instructions });
    if (report.action === "within_budget") return undefined;
    onCompaction?.(report, stepNumber);
    return { messages: compacted };
  };
}

/** The text of the loop's instructions, or `null` when there are none. */
function instructionsText(instructions) {
  if (instructions === undefined || instructions === null) return null;
  if (typeof instructions === "string") return instructions;
  const list = Array.isArray(instructions) ? instructions : [instructions];
  return list.map((m) => (typeof m === "string" ? m : m.content)).join("\n");
}
