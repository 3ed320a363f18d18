// Compiled by test/types.test.js with `tsc --noEmit`: the hand-written types describe the
// package as it is used.
import { generateText, stepCountIs, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { createAgent } from "langchain";
import { HumanMessage } from "@langchain/core/messages";
import {
  analyze, codes, compact, compactRequest, count, CtxcompactError, recallRequest, RequestCompactor,
  Session, trimTools, validate, type Report, type RequestFacts,
} from "ctxcompact";
import { compaction, compactModelMessages, prepareStep } from "ctxcompact/ai-sdk";
import { compactLangChainMessages, ctxcompactMiddleware } from "ctxcompact/langchain";

const messages = [{ role: "user", content: "hi" }];
const result = compact(messages, { ratio: 0.5, toolMode: "clear", excludeTools: ["bash"] });
const body: { role: string; content: string }[] = result.body;
const text: string = compact("[]", { target: 100 }).body;
const report: Report = result.report;
const tokens: number = count(messages, { tokenizer: "o200k" }).total;
const problems = validate(messages).map((p) => `${p.kind} ${p.messageIndex ?? "-"} ${p.text}`);
const analyzed: Report = analyze(messages, { model: "gpt-4o" });
trimTools(messages, { keepToolRounds: 2 });
const forwarded = compactRequest(Buffer.from("{}"), "openai", { window: 1000 });
const bytes: Buffer = forwarded.body;
const failedOpen: string | undefined = forwarded.failOpen;
const ran: number = forwarded.compactionsRun;
const facts: RequestFacts = forwarded.facts;
const kept = new RequestCompactor("openai", { window: 1000, handles: true }, 32);
const keptWindow: number | null = kept.compact("{}").window;
try {
  const lines: string = recallRequest("{}", "openai", "000000000000/000000000000", { window: 1000 });
  console.log(lines, kept.recall(Buffer.from("{}"), "000000000000/000000000000"));
} catch (err) {
  if (err instanceof CtxcompactError && err.code === codes.recall) console.log(err.message);
}
try {
  compact(messages, { target: 1 });
} catch (err) {
  if (err instanceof CtxcompactError && err.code === codes.cannotFit) console.log(err.report?.pinned_tokens);
}
const session = new Session(messages, { window: 8000 });
session.push({ role: "assistant", content: "hello" });
const compacted: Report | null = session.compactIfNeeded();

const model = new MockLanguageModelV4();
await generateText({
  model,
  messages: [] as ModelMessage[],
  stopWhen: stepCountIs(5),
  prepareStep: prepareStep({ window: 16_000, onCompaction: (r, step) => console.log(r.action, step) }),
});
const loop = compaction({ window: 16_000, handles: true });
await generateText({
  model,
  messages: [] as ModelMessage[],
  tools: { [loop.recallName]: loop.recallTool },
  prepareStep: loop.prepareStep,
});
const recallable: Record<string, string> = compactModelMessages([], { window: 1000 }).recallable;
const modelMessages: ModelMessage[] = compactModelMessages([], { window: 1000, instructions: "Be brief." }).messages;
const agent = createAgent({ model: "openai:gpt-4o", tools: [], middleware: [ctxcompactMiddleware({ model: "gpt-4o" })] });
compactLangChainMessages([new HumanMessage("hi")], { target: 100, systemPrompt: "Be brief." });

console.log(body, text, report, tokens, problems, analyzed, bytes, facts, keptWindow, compacted, modelMessages, agent, recallable);
