// compact(), trimTools(), analyze(), count() and validate() give what the command line gives on
// the same file and options: the same bytes for a file's text, the same data for its data, the
// same report, and an error whose exitCode is the command line's.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, describe, it } from "node:test";

import * as ctxcompact from "../index.js";
import { CONVERSATIONS, CORPUS, filesUnder, runCli } from "./helpers.js";

const scratch = mkdtempSync(join(tmpdir(), "ctxcompact-node-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

// (flags, the same options): budgets from tokens, ratios and model windows, forced strategies,
// every tool mode and tool option, another tokenizer, no marker.
const OPTION_SETS = [
  [["--ratio", "0.5"], { ratio: 0.5 }],
  [["--target", "2000", "--strategy", "middle"], { target: 2000, strategy: "middle" }],
  [["--ratio", "0.3", "--strategy", "oldest", "--no-marker"], { ratio: 0.3, strategy: "oldest", marker: false }],
  [["--model", "gpt-4"], { model: "gpt-4" }],
  [["--model", "local", "--trigger", "0.5", "--target-ratio", "0.3"], { model: "local", trigger: 0.5, targetRatio: 0.3 }],
  [
    ["--ratio", "0.6", "--tool-mode", "drop", "--keep-tool-rounds", "1", "--exclude-tools", "bash,read_file", "--clear-tool-inputs"],
    { ratio: 0.6, toolMode: "drop", keepToolRounds: 1, excludeTools: ["bash", "read_file"], clearToolInputs: true },
  ],
  [
    ["--ratio", "0.5", "--tokenizer", "cl100k", "--max-tool-output", "100", "--clear-at-least", "50", "--tool-mode", "off"],
    { ratio: 0.5, tokenizer: "cl100k", maxToolOutput: 100, clearAtLeast: 50, toolMode: "off" },
  ],
];

/**
 * Compacts `path` by the command line and by compact() on its text; for JSON, also on its data
 * (against the command line on the data's JSON text: JavaScript writes `7.0` as `7`).
 */
function assertSameAsCli(path, flags, options) {
  const text = readFileSync(path, "utf8");
  const cases = [[path, text]];
  if (path.endsWith(".json")) {
    const data = JSON.parse(text);
    const dataPath = join(scratch, "data.json");
    writeFileSync(dataPath, JSON.stringify(data));
    cases.push([dataPath, data]);
  }
  for (const [file, input] of cases) {
    const reportPath = join(scratch, "report.json");
    rmSync(reportPath, { force: true });
    const cli = runCli(["compact", file, ...flags, "--report", reportPath, "--quiet"]);
    if (cli.code !== 0) {
      assert.throws(
        () => ctxcompact.compact(input, options),
        (err) => {
          assert.ok(err instanceof ctxcompact.CtxcompactError, err);
          assert.equal(err.exitCode, cli.code, `${err.message} / ${cli.stderr}`);
          if (cli.code === 3) assert.equal(err.report.action, "cannot_fit");
          return true;
        },
      );
      continue;
    }
    const result = ctxcompact.compact(input, options);
    if (typeof input === "string") {
      assert.equal(result.body, cli.stdout, "the same bytes as the command line");
    } else {
      assert.deepStrictEqual(result.body, JSON.parse(cli.stdout));
    }
    assert.deepStrictEqual(result.report, JSON.parse(readFileSync(reportPath, "utf8")));
  }
}

describe("compact() equals `ctxcompact compact`", () => {
  it("has the bundled conversations", () => {
    assert.ok(CONVERSATIONS.length >= 20, "data/conversations is missing");
  });
  for (const path of CONVERSATIONS) {
    it(`on ${basename(path)}, under every option set`, () => {
      for (const [flags, options] of OPTION_SETS) assertSameAsCli(path, flags, options);
    });
  }
});

describe("compact() equals `ctxcompact compact` on the corpus's recordings", () => {
  const recordings = filesUnder(CORPUS, [".json", ".jsonl"]).filter(
    (path) => !path.endsWith("index.json") && !path.endsWith("provenance.json"),
  );
  it("finds the corpus", (t) => {
    if (recordings.length === 0) t.skip(`no corpus at ${CORPUS}: its recordings are not compared`);
  });
  for (const path of recordings) {
    it(`on ${path.slice(CORPUS.length + 1)}`, () => {
      assertSameAsCli(path, ["--ratio", "0.5"], { ratio: 0.5 });
      assertSameAsCli(path, ["--model", "gpt-4o", "--target", "4000"], { model: "gpt-4o", target: 4000 });
    });
  }
});

describe("analyze(), count(), validate() and trimTools() equal the command line", () => {
  for (const path of CONVERSATIONS) {
    it(`on ${basename(path)}`, () => {
      const body = JSON.parse(readFileSync(path, "utf8"));
      let cli = runCli(["analyze", path, "--ratio", "0.4", "--json"]);
      assert.equal(cli.code, 0, cli.stderr);
      assert.deepStrictEqual(ctxcompact.analyze(body, { ratio: 0.4 }), JSON.parse(cli.stdout));
      for (const tokenizer of ["o200k", "cl100k", "llama3", "claude-sonnet"]) {
        cli = runCli(["count", path, "--tokenizer", tokenizer, "--json"]);
        assert.equal(cli.code, 0, cli.stderr);
        assert.deepStrictEqual(ctxcompact.count(body, { tokenizer }), JSON.parse(cli.stdout));
      }
      assert.equal(runCli(["validate", path]).code, 0);
      assert.deepStrictEqual(ctxcompact.validate(body), []);
      const reportPath = join(scratch, "trim-report.json");
      cli = runCli(["trim-tools", path, "--keep-tool-rounds", "2", "--report", reportPath, "--quiet"]);
      assert.equal(cli.code, 0, cli.stderr);
      const trimmed = ctxcompact.trimTools(readFileSync(path, "utf8"), { keepToolRounds: 2 });
      assert.equal(trimmed.body, cli.stdout);
      assert.deepStrictEqual(trimmed.report, JSON.parse(readFileSync(reportPath, "utf8")));
    });
  }
});

describe("compact() is deterministic", () => {
  it("gives the same bytes twice and leaves its input alone", () => {
    const body = JSON.parse(readFileSync(CONVERSATIONS.at(-1), "utf8"));
    const before = JSON.stringify(body);
    const first = ctxcompact.compact(body, { ratio: 0.5 });
    const second = ctxcompact.compact(body, { ratio: 0.5 });
    assert.equal(JSON.stringify(first.body), JSON.stringify(second.body));
    assert.equal(JSON.stringify(body), before);
    assert.ok(first.report.tokens_after <= first.report.budget);
  });
});
