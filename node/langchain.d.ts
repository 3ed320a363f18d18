// Types of `ctxcompact/langchain` (langchain.js).

import type { BaseMessage } from "@langchain/core/messages";
import type { AgentMiddleware } from "langchain";
import type { CompactOptions, Report } from "./index.js";

/** Compacts LangChain messages: every message kept is the very object given. */
export declare function compactLangChainMessages(
  messages: BaseMessage[],
  options: CompactOptions & { systemPrompt?: string },
): { messages: BaseMessage[]; report: Report; recallable: Record<string, string> };

/**
 * A `createAgent` middleware that compacts what each model call sends, leaving the agent's state
 * whole, and gives the agent a `ctxcompact_recall` tool for what it removed.
 */
export declare function ctxcompactMiddleware(
  options: CompactOptions & { onCompaction?: (report: Report) => void; recallMaxBytes?: number },
): AgentMiddleware;
