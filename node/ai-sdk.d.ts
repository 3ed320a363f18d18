// Types of `ctxcompact/ai-sdk` (ai-sdk.js).

import type { ModelMessage, PrepareStepFunction, Tool, ToolSet } from "ai";
import type { CompactOptions, Report } from "./index.js";

/** The options of the adapter: those of `compact()`, and the system prompt sent beside the messages. */
export interface ModelMessageOptions extends CompactOptions {
  /** The loop's instructions (system prompt): counted and pinned, not returned. */
  instructions?: string | { role: "system"; content: string } | Array<string | { role: "system"; content: string }>;
}

/** Compacts a ModelMessage list: every message kept is the very object given. */
export declare function compactModelMessages(
  messages: ModelMessage[],
  options: ModelMessageOptions,
): { messages: ModelMessage[]; report: Report; recallable: Record<string, string> };

/**
 * A loop's compaction: its `prepareStep`, and the recall tool that gives back by handle what it
 * removed. `TOOLS` is the loop's tool set, which holds the recall tool (so any by default).
 */
export declare function compaction<TOOLS extends ToolSet = any>(
  options: CompactOptions & { onCompaction?: (report: Report, stepNumber: number) => void; recallMaxBytes?: number },
): { prepareStep: PrepareStepFunction<TOOLS>; recallTool: Tool<{ handle: string }, string>; recallName: "ctxcompact_recall" };

/** A `prepareStep` for `generateText` and `streamText` that compacts the loop's messages past the trigger. */
export declare function prepareStep<TOOLS extends ToolSet = ToolSet>(
  options: CompactOptions & { onCompaction?: (report: Report, stepNumber: number) => void },
): PrepareStepFunction<TOOLS>;
