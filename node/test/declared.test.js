// index.d.ts lists the fields of what the package returns by hand: each result's keys are the
// ones it declares, no more, and every key it declares is returned by some call.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

import * as ctxcompact from "../index.js";

const TYPES = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "index.d.ts"), "utf8")
  .replace(/\/\*[\s\S]*?\*\//g, "")
  .replace(/\/\/.*$/gm, "");

/**
 * The members index.d.ts declares for the interface or class `name`: `required` and `optional`
 * names (a constructor left out), and whether an index signature leaves it `open` to others.
 */
function declared(name) {
  const start = TYPES.search(new RegExp(`export (?:declare )?(?:interface|class) ${name}\\b`));
  assert.ok(start >= 0, `index.d.ts declares ${name}`);
  const members = { required: new Set(), optional: new Set(), open: false };
  let depth = 0;
  for (const line of TYPES.slice(TYPES.indexOf("{", start)).split("\n")) {
    const found = depth === 1 && line.match(/^\s*(?:readonly\s+)?(\w+)(\??)\s*[:(<]/);
    if (depth === 1 && /^\s*\[key: string\]/.test(line)) members.open = true;
    if (found && found[1] !== "constructor") {
      members[found[2] ? "optional" : "required"].add(found[1]);
    }
    for (const c of line) {
      if (c === "{") depth += 1;
      if (c === "}") depth -= 1;
    }
    if (depth === 0) break;
  }
  return members;
}

/** Asserts that each of `results` holds what `name` declares, and, together, all of it. */
function holdsDeclared(name, results) {
  const { required, optional, open } = declared(name);
  const seen = new Set();
  for (const result of results) {
    const keys = Object.keys(result);
    keys.forEach((key) => seen.add(key));
    for (const key of required) assert.ok(keys.includes(key), `${name}.${key} is declared, not returned`);
    if (!open) {
      for (const key of keys) {
        assert.ok(required.has(key) || optional.has(key), `${name}: \`${key}\` is returned, not declared`);
      }
    }
  }
  for (const key of optional) assert.ok(seen.has(key), `${name}.${key} is declared, never returned`);
}

/** An OpenAI Chat history of a task and `rounds` tool rounds with large results. */
function history(rounds) {
  const messages = [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: "Read every file under src/ and summarise them." },
  ];
  for (let i = 0; i < rounds; i += 1) {
    messages.push(
      { role: "assistant", content: null, tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "read_file", arguments: `{"path": "src/f${i}.rs"}` } }] },
      { role: "tool", tool_call_id: `call_${i}`, content: Array.from({ length: 400 }, (_, k) => `line${i}_${k}`).join(" ") },
    );
  }
  return messages;
}

it("compactRequest returns the fields ForwardedRequest declares", () => {
  const body = (rounds) => JSON.stringify({ model: "gpt-4o", messages: history(rounds) });
  const options = { window: 20_000 };
  const results = [
    ctxcompact.compactRequest(body(1), "openai", options),
    ctxcompact.compactRequest(body(40), "openai", { ...options, client: "codex" }),
    ctxcompact.compactRequest("not json", "openai", options),
  ];
  assert.deepEqual(results.map((r) => r.action), ["forwarded", "compacted", "failed_open"]);
  holdsDeclared("ForwardedRequest", results);
});

it("compact, trimTools, analyze and Session return what their types declare", () => {
  const messages = history(30);
  const compacted = ctxcompact.compact(messages, { target: 3_000 });
  const trimmed = ctxcompact.trimTools(messages, {});
  holdsDeclared("Compacted", [compacted, trimmed]);
  const session = new ctxcompact.Session(history(0), { window: 20_000 });
  session.push(history(40).slice(2));
  const report = session.compactIfNeeded();
  assert.equal(report.action, "compacted");
  holdsDeclared("Report", [compacted.report, trimmed.report, ctxcompact.analyze(messages, { target: 3_000 }), report]);
  const members = Object.getOwnPropertyNames(ctxcompact.Session.prototype).filter((name) => name !== "constructor");
  holdsDeclared("Session", [Object.fromEntries(members.map((name) => [name, true]))]);
});
