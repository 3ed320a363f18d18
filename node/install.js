// Builds the addon from source with the machine's cargo and places it beside this file as
// ctxcompact.node: `npm install ./node` runs it, as a dependency or in this folder.
import { spawnSync } from "node:child_process";
import { copyFileSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const built = spawnSync(
  "cargo",
  ["build", "--release", "--locked", "--manifest-path", join(here, "Cargo.toml")],
  { stdio: "inherit" },
);
if (built.error) {
  console.error(`ctxcompact: cannot run cargo (${built.error.message}); Rust is needed to build it`);
  process.exit(1);
}
if (built.status !== 0) {
  process.exit(built.status ?? 1);
}
const library = {
  darwin: "libctxcompact_node.dylib",
  win32: "ctxcompact_node.dll",
}[process.platform] ?? "libctxcompact_node.so";
const targetDir = process.env.CARGO_TARGET_DIR ?? join(here, "target");
// Copied under a temporary name, then renamed: a process loading the addon never sees half a file.
const staged = join(here, "ctxcompact.node.tmp");
copyFileSync(join(targetDir, "release", library), staged);
renameSync(staged, join(here, "ctxcompact.node"));
