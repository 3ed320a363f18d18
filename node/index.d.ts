// Types of the `ctxcompact` Node package (index.js).

/** A conversation: a list of messages, a request body, or the text of a file (body or session log). */
export type Conversation = unknown[] | Record<string, unknown> | string | Uint8Array;

/** A report, as `ctxcompact compact --report` writes it (snake_case, as the command line's JSON). */
export interface Report {
  action: "compacted" | "within_budget" | "cannot_fit" | string;
  format: string;
  tokens_before: number;
  tokens_after: number;
  messages_before: number;
  messages_after: number;
  budget: number;
  features: Features;
  rules: RuleCheck[];
  [key: string]: unknown;
}

/** The measured features of a conversation against its budget, as the report gives them. */
export interface Features {
  messages: number;
  tokens: number;
  average_tokens: number;
  /** Budget ÷ tokens. */
  target_ratio: number;
  severity: "light" | "moderate" | "heavy";
  recent_ratio: number;
  last_messages_ratio: number;
  has_long_messages: boolean;
  has_tool_messages: boolean;
  has_system_messages: boolean;
  tool_token_share: number;
  /** How much the current request refers back, where there are no tool messages. */
  refers_back?: number;
}

/** A conversation rule and whether it matched, as the report gives it. */
export interface RuleCheck {
  number: number;
  description: string;
  matched: boolean;
  strategy: "middle" | "oldest" | "relevant";
  confidence: number;
}

/** The error codes, one per kind of failure. */
export declare const codes: Readonly<{
  /** The conversation is malformed, breaks tool-call pairing, or its format cannot be told (exit 2). */
  input: "ERR_CTXCOMPACT_INPUT";
  /** Even the pinned messages (system, task, last request, last unit) exceed the budget (exit 3). */
  cannotFit: "ERR_CTXCOMPACT_CANNOT_FIT";
  /** An option has an unusable value, conflicts with another, or names an unknown model (exit 2). */
  options: "ERR_CTXCOMPACT_OPTIONS";
  /** A handle `recallRequest` cannot give back: malformed, or named by no compaction of the history (exit 2). */
  recall: "ERR_CTXCOMPACT_RECALL";
}>;

/** Every error ctxcompact throws. */
export declare class CtxcompactError extends Error {
  readonly code:
    | "ERR_CTXCOMPACT_INPUT" | "ERR_CTXCOMPACT_CANNOT_FIT" | "ERR_CTXCOMPACT_OPTIONS"
    | "ERR_CTXCOMPACT_RECALL";
  /** The command line's exit code for the same failure: 2 or 3. */
  readonly exitCode: 2 | 3;
  /** The index into the input's messages, when one message is at fault. */
  readonly messageIndex?: number;
  /** The field path inside it, when one field is at fault. */
  readonly field?: string;
  /** For `ERR_CTXCOMPACT_CANNOT_FIT`: the report of the attempt. */
  readonly report?: Report;
}

export type Format =
  | "auto" | "openai" | "anthropic" | "responses" | "gemini" | "bedrock" | "ai-sdk"
  | "claude-code" | "codex" | "gemini-cli" | "pi";
export type RequestFormat = "openai" | "anthropic" | "responses" | "gemini" | "bedrock";
export type Tokenizer =
  | "o200k" | "cl100k" | "chars" | "llama3" | "qwen2" | "deepseek-v3" | "tekken" | "kimi-k2"
  | "glm4" | "minimax-m2" | "claude-opus" | "claude-sonnet" | "claude-haiku" | "gemini";

/** How the input is read: the command line's `--format`, `--repair` and `--strict`. */
export interface ReadOptions {
  format?: Format;
  repair?: boolean;
  strict?: boolean;
}

/** The model and how tokens are counted. */
export interface ModelOptions {
  /** A model's catalog name: its window, tokenizer and profile. */
  model?: string;
  /** The context window in tokens, instead of the model's (with no budget: its trigger and target). */
  window?: number;
  tokenizer?: Tokenizer;
  /** A model catalog file, instead of the built-in one (`--catalog`). */
  catalog?: string;
  /** A calibration file, as `ctxcompact calibrate --json` writes (`--calibration`). */
  calibration?: string;
}

/** Tool-round trimming: the command line's tool options. */
export interface ToolOptions {
  toolMode?: "clear" | "drop" | "off";
  keepToolRounds?: number;
  excludeTools?: string[] | string;
  clearToolInputs?: boolean;
  clearAtLeast?: number;
  maxToolOutput?: number;
}

/** The options of `compact`: the command line's flags in camelCase. */
export interface CompactOptions extends ReadOptions, ModelOptions, ToolOptions {
  /** The budget in tokens. */
  target?: number;
  /** The budget as a share of the conversation's tokens. */
  ratio?: number;
  /** With a model or a window: compact past this share of it (0.7)… */
  trigger?: number;
  /** …down to this share of it (0.5); an agent loop without it goes as deep as its last 8 calls allow, to 0.2. */
  targetRatio?: number;
  strategy?: "auto" | "middle" | "oldest" | "relevant";
  /** What a removed span leaves: `true`/`"digest"` (default), `"brief"`, `false`/`"none"`. */
  marker?: boolean | "digest" | "brief" | "none";
  digestTokens?: number;
  /** A folder where removed history is kept, named by the markers (`--archive`). */
  archiveDir?: string;
  /** Name a handle in every note without a folder; the adapters keep what each names (issue 53). */
  handles?: boolean;
  /** `"cost"`: choose by the expected input cost under prompt caching (needs `model`). */
  optimize?: "cost" | "efficiency";
  /** Tokens every request carries that the messages do not hold (tool definitions). */
  overhead?: number;
}

export interface Compacted<T> {
  /** The output, in the input's shape: text for text (the command line's bytes), data for data. */
  body: T;
  report: Report;
}

/** Compacts a conversation to a token budget, as `ctxcompact compact` does. Nothing is written on error. */
export declare function compact<T extends Conversation>(
  conversation: T,
  options: CompactOptions,
): Compacted<T extends string | Uint8Array ? string : T>;

/** Trims old tool rounds alone, with no budget, as `ctxcompact trim-tools` does. */
export declare function trimTools<T extends Conversation>(
  conversation: T,
  options?: ReadOptions & ModelOptions & ToolOptions,
): Compacted<T extends string | Uint8Array ? string : T>;

/** What `compact` would do, as `ctxcompact analyze --json` reports it. */
export declare function analyze(conversation: Conversation, options: Omit<CompactOptions, "archiveDir" | "handles">): Report;

/** The recall tool's name, in every framework adapter. */
export declare const RECALL_NAME: "ctxcompact_recall";
/** The recall tool's description, in every framework adapter. */
export declare const RECALL_DESCRIPTION: string;
/** How many bytes of removed history an adapter keeps for its recall tool, unless told (64 MiB). */
export declare const RECALL_MAX_BYTES: number;
/** What an adapter's compactions removed, by handle, in memory, within `maxBytes`: past it, the handles kept longest ago go first. */
export declare class RecallStore {
  constructor(maxBytes?: number);
  readonly maxBytes: number;
  /** UTF-8 bytes of what the handles kept stand for. */
  readonly bytes: number;
  /** Keeps a compaction's `recallable`, newest last. */
  keep(recallable: Record<string, string>): void;
  /** What `handle` stands for, if it is kept. */
  get(handle: string): string | undefined;
}
/** A recall tool's answer from the handles kept: the messages one JSON line each, or a sentence naming a handle it cannot give back. */
export declare function recallFrom(kept: RecallStore | Map<string, string>, handle: string): string;

/** Tokens as `ctxcompact count --json` counts them. */
export declare function count(
  conversation: Conversation,
  options?: ReadOptions & ModelOptions,
): { total: number; messages: number[]; [key: string]: unknown };

/** A problem a provider refuses the conversation for as a request. */
export interface Problem {
  messageIndex: number | null;
  field: string;
  kind:
    | "orphan" | "unanswered" | "misplaced" | "answered_twice" | "duplicate_call_id"
    | "tool_first" | "first_not_user" | "call_in_progress";
  callId: string | null;
  text: string;
}

/** Every problem a provider refuses the conversation for, as `ctxcompact validate` finds them. */
export declare function validate(conversation: Conversation, options?: ReadOptions): Problem[];

/** The options of `compactRequest`. */
export interface RequestOptions extends ToolOptions {
  /** The model the request's path names (Gemini), when the body names none. */
  pathModel?: string;
  /** The agent that sent the body, as the proxy tells it from its headers. */
  client?: "claude-code" | "codex" | "gemini-cli";
  /** The context window for every model, instead of the catalog's (`--window`). */
  window?: number;
  trigger?: number;
  targetRatio?: number;
  strategy?: "auto" | "middle" | "oldest" | "relevant";
  marker?: boolean | "digest" | "brief" | "none";
  digestTokens?: number;
  tokenizer?: Tokenizer;
  catalog?: string;
  calibration?: string;
  /** The proxy's `--archive-dir`. */
  archiveDir?: string;
  /** Name a handle in every note without a folder, for `recallRequest` to give back from the history. */
  handles?: boolean;
}

/** The window, agent and trigger of a request, with the ledger's snake-case keys. */
export interface RequestFacts {
  window: number | null;
  window_source: "flag" | "catalog" | "family" | null;
  client?: "claude-code" | "codex" | "gemini-cli";
  client_by?: string;
  trigger: number | null;
  trigger_reason: string | null;
}

/** How deep a compaction with no target given went, with the ledger's snake-case keys. */
export interface LoopDepth {
  /** Tokens a model call added, at the rate of the recent calls. */
  growth_per_call: number;
  calls_measured: number;
  /** The target chosen, in tokens. */
  target: number;
  /** The calls that fit between the output and the trigger at that rate. */
  room_calls?: number;
  /** Whether the window is too small to keep the recent calls and leave room for as many again. */
  window_short: boolean;
}

/**
 * What to forward for a request body, and why: the proxy ledger's record of the request, its
 * names in camel case (docs/proxy.md, "The ledger"); a field the ledger leaves out when there
 * is nothing to say is absent.
 */
export interface ForwardedRequest {
  /** The bytes to send: the received ones when nothing changed. */
  body: Buffer;
  model: string | null;
  window: number | null;
  windowSource: "flag" | "catalog" | "family" | null;
  client?: "claude-code" | "codex" | "gemini-cli";
  /** What told the agent: a header, a body field, or the caller. */
  clientBy?: string;
  trigger: number | null;
  triggerReason: string | null;
  tokensReceived: number | null;
  tokensForwarded: number | null;
  action: "forwarded" | "compacted" | "failed_open";
  reason: string | null;
  /** When it failed open: the reason's kind. */
  failOpen?:
    | "not_json" | "unreadable" | "no_model" | "unknown_model" | "options" | "invalid"
    | "cannot_fit" | "read_back" | "panicked";
  /** Compactions so far in the conversation. */
  compactions: number | null;
  /** Compactions this call ran: all of them for `compactRequest`, which replays the history whole; for a kept `RequestCompactor`, those after the call its cache resumed from. */
  compactionsRun: number;
  archiveError: string | null;
  /** When compacted: the project instruction files the last compaction pinned. */
  instructionFiles: unknown[];
  /** When compacted: the budget the last compaction compacted to. */
  budget?: number;
  /** When compacted with no target given: how deep the last compaction went. */
  depth?: LoopDepth;
  /** The model no catalog name or family rule reads, when that is why it failed open. */
  unknownModel: string | null;
  /** The window, agent and trigger again, as one object. */
  facts: RequestFacts;
}

/** Decides what to forward for a provider request body, as `ctxcompact proxy` does; never throws for the body. */
export declare function compactRequest(
  body: Uint8Array | string,
  format: RequestFormat,
  options?: RequestOptions,
): ForwardedRequest;

/**
 * What `handle` names, given back from the history of `body` (a later call's body, compacted
 * with `options`): one JSON message a line. Throws `ERR_CTXCOMPACT_RECALL` when it cannot.
 */
export declare function recallRequest(
  body: Uint8Array | string,
  format: RequestFormat,
  handle: string,
  options?: RequestOptions,
): string;

/**
 * `compactRequest` and `recallRequest` for one format and options, kept across calls: the
 * catalog read once, each history resumed from its cache of at most `conversations` (1,024).
 */
export declare class RequestCompactor {
  constructor(format: RequestFormat, options?: RequestOptions, conversations?: number);
  /** What to forward for `body`, as `compactRequest` decides it. */
  compact(body: Uint8Array | string): ForwardedRequest;
  /** What `handle` names in the history of `body`, as `recallRequest` gives it back. */
  recall(body: Uint8Array | string, handle: string): string;
}

/** An agent's conversation across its model calls, compacted past the trigger only. */
export declare class Session<T extends Conversation = unknown[]> {
  /** `options` need a `model`, a `window` or a `target`. */
  constructor(conversation?: T, options?: CompactOptions);
  /** Appends messages (one, or lists) in the session's format. */
  push(...messages: unknown[]): void;
  /** Compacts past the trigger: the report, or `null` when the session only appended. */
  compactIfNeeded(): Report | null;
  /** Records the input size the provider reported for the conversation as it is now. */
  observeUsage(inputTokens: number): void;
  /** The conversation as it would be sent now, in the shape it was given. */
  readonly body: T extends string | Uint8Array ? string : T;
  readonly tokens: number;
  readonly trigger: number;
  readonly compactions: number;
  readonly length: number;
}
