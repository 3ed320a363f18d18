// Compaction inside the Vercel AI SDK's tool loops: a `prepareStep` for generateText and
// streamText.
//
// The messages a `prepareStep` returns become the loop's history for the steps after it, so
// the compaction acts only past the trigger (70% of the window by default) and brings the
// history down to what its last 8 calls take (20% to 50% of the window): the steps that follow append to what it returned, under
// the trigger, and pass through untouched until the history crosses it again. ModelMessages
// are read and written by the library's `ai-sdk` format; every message the compaction keeps
// is returned as the very object the loop gave.
//
// What a compaction removes leaves the loop's history, so the adapter keeps it: every note names
// a handle, and `compaction()`'s `recallTool` gives back what a handle names from what the
// adapter kept, in memory; nothing is written.

import { jsonSchema, tool } from "ai";

import {
  compactMessages,
  CtxcompactError,
  codes,
  RECALL_DESCRIPTION,
  RECALL_NAME,
  recallFrom,
  RecallStore,
} from "./index.js";

/**
 * Compacts a ModelMessage list as `compact()` does: `{ messages, report }`. `instructions`
 * (the system prompt sent beside the messages) is counted, pinned and not returned.
 */
export function compactModelMessages(messages, options = {}) {
  const { instructions, ...rest } = options;
  const system = instructionsText(instructions);
  const list = system === null ? messages : [{ role: "system", content: system }, ...messages];
  const result = compactMessages(list, { ...rest, format: "ai-sdk" });
  const { report, recallable } = result;
  if (report.action === "within_budget") {
    return { messages, report, recallable };
  }
  if (system === null) return { messages: result.messages, report, recallable };
  // The instructions are a system message, pinned: they come out first, unchanged.
  if (result.unchanged[0] !== 0) {
    throw new CtxcompactError(codes.input, "the instructions did not come through the compaction unchanged");
  }
  return { messages: result.messages.slice(1), report, recallable };
}

/**
 * A loop's compaction: `{ prepareStep, recallTool }`. `prepareStep` (for `generateText` and
 * `streamText`) compacts the loop's messages past the trigger; `options` are those of
 * `compact()` (a `model` or a `window`, `trigger`, `targetRatio`, the tool options, `overhead`
 * for the tokens the tool definitions add to every call…) and `onCompaction(report,
 * stepNumber)`, called after each compaction. Every note names a handle (`handles: true` unless
 * given), and what each compaction removed is kept here (at most `recallMaxBytes`, 64 MiB unless
 * given, the oldest going first): `recallTool`, an AI SDK tool for the
 * loop's `tools` (as `ctxcompact_recall`), gives it back by handle, exactly as the loop held it.
 */
export function compaction(options = {}) {
  const { onCompaction, recallMaxBytes, ...rest } = options;
  const kept = new RecallStore(recallMaxBytes);
  const prepare = ({ messages, instructions, stepNumber }) => {
    const { messages: compacted, report, recallable } =
      compactModelMessages(messages, { handles: true, ...rest, instructions });
    if (report.action === "within_budget") return undefined;
    kept.keep(recallable);
    onCompaction?.(report, stepNumber);
    return { messages: compacted };
  };
  const recallTool = tool({
    description: RECALL_DESCRIPTION,
    inputSchema: jsonSchema({
      type: "object",
      properties: { handle: { type: "string", description: "The handle a `[ctxcompact: …]` note names." } },
      required: ["handle"],
      additionalProperties: false,
    }),
    execute: async ({ handle }) => recallFrom(kept, handle),
  });
  return { prepareStep: prepare, recallTool, recallName: RECALL_NAME };
}

/** `compaction(options).prepareStep`, for a loop that needs no recall tool. */
export function prepareStep(options = {}) {
  return compaction(options).prepareStep;
}

/** The text of the loop's instructions, or `null` when there are none. */
function instructionsText(instructions) {
  if (instructions === undefined || instructions === null) return null;
  if (typeof instructions === "string") return instructions;
  const list = Array.isArray(instructions) ? instructions : [instructions];
  return list.map((m) => (typeof m === "string" ? m : m.content)).join("\n");
}
