//! `ctxcompact mcp`: a Model Context Protocol server over standard input and output, with two
//! tools over an archive folder (`ctxcompact::recall`): `recall` gives back what a handle
//! names, `search` finds archived messages by their words.
//!
//! The transport is MCP's stdio one: one JSON-RPC 2.0 message a line. Both eras of the
//! protocol are served: the `initialize` handshake (revisions 2024-11-05 to 2025-11-25, which
//! the agent CLIs speak) and the per-request envelope of 2026-07-28 (`server/discover`, a
//! result type on every result). The server keeps no state between requests, so the eras
//! differ only in what a result carries.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use serde_json::{Value, json};

/// Serve the archive to an agent over the Model Context Protocol (stdio): a `recall` tool
/// that gives back the messages a marker's or placeholder's handle names, byte for byte, and
/// a `search` tool over the archived messages' words.
///
/// Configure it in the agent as a local (stdio) server whose command is `ctxcompact mcp`; see
/// `ctxcompact proxy --print-env` for each agent's line.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The archive folder [default: the proxy's, `$XDG_CACHE_HOME/ctxcompact/archive`, else
    /// `~/.cache/ctxcompact/archive`].
    #[arg(long, value_name = "DIR")]
    pub(crate) archive_dir: Option<PathBuf>,
}

/// The revisions of the `initialize` handshake served, oldest first.
const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The revisions of the per-request envelope served.
const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// JSON-RPC's error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
/// MCP's code for a revision the server does not serve.
const UNSUPPORTED_VERSION: i64 = -32022;

/// Search hits returned at most.
const SEARCH_LIMIT: usize = 20;

/// What the server tells the model about itself.
const INSTRUCTIONS: &str = "ctxcompact removes old messages and tool outputs from long \
    conversations and archives them. A marker or placeholder starting `[ctxcompact:` names a \
    handle (`handle 3fa2c1d0e9ab/7c1b2e3f4a5d`): call `recall` with it to get back what was \
    removed, exactly; call `search` to find removed messages by their words.";

/// Serves requests from standard input until it closes.
pub(crate) fn run(args: &McpArgs) -> Result<()> {
    let dir = crate::archive_dir::given_or_default(args.archive_dir.as_ref())
        .context("no archive folder: pass --archive-dir DIR")?;
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = answer(&dir, &line) {
            writeln!(stdout, "{reply}").context("cannot write standard output")?;
            stdout.flush().context("cannot write standard output")?;
        }
    }
    Ok(())
}

/// The reply to one line: a response to a request, none to a notification or a response.
fn answer(dir: &Path, line: &str) -> Option<Value> {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(err) => return Some(error(&Value::Null, PARSE_ERROR, &err.to_string(), None)),
    };
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response to a request this server never sends, or no JSON-RPC at all.
        return message.get("id").is_none().then(|| {
            error(
                &Value::Null,
                INVALID_REQUEST,
                "not a JSON-RPC request",
                None,
            )
        });
    };
    let id = message.get("id")?;
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => Ok(initialize(&params)),
        "server/discover" => discover(&params),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({
            "tools": tools(),
            "cacheScope": "private",
            "ttlMs": 0,
        })),
        "tools/call" => call(dir, &params),
        "resources/list" => Ok(json!({"resources": [], "cacheScope": "private", "ttlMs": 0})),
        "prompts/list" => Ok(json!({"prompts": [], "cacheScope": "private", "ttlMs": 0})),
        other => Err((METHOD_NOT_FOUND, format!("no method `{other}`"), None)),
    };
    Some(match result {
        Ok(mut result) => {
            result["resultType"] = json!("complete");
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        }
        Err((code, text, data)) => error(id, code, &text, data),
    })
}

/// A JSON-RPC error response.
fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// What a failed method answers: its code, message and data.
type RpcError = (i64, String, Option<Value>);

/// The server's name and version.
fn server_info() -> Value {
    json!({"name": "ctxcompact", "version": env!("CARGO_PKG_VERSION")})
}

/// The handshake: the client's revision when served, else the newest served.
fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| HANDSHAKE_VERSIONS.contains(v))
        .unwrap_or(HANDSHAKE_VERSIONS[HANDSHAKE_VERSIONS.len() - 1]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// `server/discover` (2026-07-28): the revisions served, unless the request's envelope names
/// one that is not.
fn discover(params: &Value) -> Result<Value, RpcError> {
    let asked = params
        .pointer("/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    if let Some(version) = asked.filter(|v| !MODERN_VERSIONS.contains(v)) {
        let supported: Vec<&str> = HANDSHAKE_VERSIONS
            .iter()
            .chain(&MODERN_VERSIONS)
            .copied()
            .collect();
        return Err((
            UNSUPPORTED_VERSION,
            format!("protocol revision {version} is not served"),
            Some(json!({"supported": supported, "requested": version})),
        ));
    }
    Ok(json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": {"tools": {"listChanged": false}},
        "instructions": INSTRUCTIONS,
        "cacheScope": "private",
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
    }))
}

/// The two tools.
fn tools() -> Value {
    json!([
        {
            "name": "recall",
            "title": "Recall removed history",
            "description": "Give back the messages or tool output that ctxcompact removed from \
                this conversation, exactly as they were sent: one JSON message a line. Pass the \
                handle its marker or placeholder names (`handle 3fa2c1d0e9ab/7c1b2e3f4a5d`).",
            "inputSchema": {
                "type": "object",
                "properties": {"handle": {
                    "type": "string",
                    "description": "The handle a ctxcompact note names: <conversation>/<file>."
                }},
                "required": ["handle"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        },
        {
            "name": "search",
            "title": "Search removed history",
            "description": "Find messages and tool outputs that ctxcompact removed, by words \
                they hold (all of them, case aside): each hit names the handle to recall.",
            "inputSchema": {
                "type": "object",
                "properties": {"words": {
                    "type": "string",
                    "description": "Words or a phrase the removed message holds."
                }},
                "required": ["words"],
            },
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
        },
    ])
}

/// `tools/call`: a tool's answer as text; a failure of the tool (a bad handle, a missing file)
/// is a result with `isError`, so that the model reads why.
fn call(dir: &Path, params: &Value) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    let argument = |key: &str| {
        arguments.get(key).and_then(Value::as_str).ok_or_else(|| {
            let text = format!("tool `{name}` takes a string argument `{key}`");
            (INVALID_PARAMS, text, None)
        })
    };
    let answer = match name {
        "recall" => ctxcompact::recall::recall(dir, argument("handle")?),
        "search" => ctxcompact::recall::search(dir, argument("words")?, SEARCH_LIMIT).map(
            |(hits, found)| match found {
                0 => "no archived message holds all of these words".to_string(),
                _ => ctxcompact::recall::describe(&hits, found),
            },
        ),
        other => return Err((INVALID_PARAMS, format!("no tool `{other}`"), None)),
    };
    let (text, is_error) = match answer {
        Ok(text) => (text, false),
        Err(err) => (err.to_string(), true),
    };
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
}

/// The lines that configure `ctxcompact mcp` over the archive folder `dir` in each agent, as
/// shell comments (`proxy --print-env`); a line saying there is none without a folder.
pub(crate) fn config_lines(dir: Option<&Path>) -> String {
    let Some(dir) = dir else {
        return "# No archive (--no-archive): nothing to recall.\n".to_string();
    };
    let dir = dir.display();
    format!(
        "# Recall what compactions removed: `ctxcompact mcp` over this proxy's archive, {dir}\n\
         #   Claude Code: claude mcp add ctxcompact -- ctxcompact mcp --archive-dir '{dir}'\n\
         #   Codex:       codex mcp add ctxcompact -- ctxcompact mcp --archive-dir '{dir}'\n\
         #   Gemini CLI:  in ~/.gemini/settings.json, \"mcpServers\": {{\"ctxcompact\": {{\"command\": \"ctxcompact\", \"args\": [\"mcp\", \"--archive-dir\", \"{dir}\"]}}}}\n\
         #   opencode:    in opencode.json, \"mcp\": {{\"ctxcompact\": {{\"type\": \"local\", \"command\": [\"ctxcompact\", \"mcp\", \"--archive-dir\", \"{dir}\"]}}}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(line: &str) -> Value {
        answer(Path::new("/nonexistent-ctxcompact-archive"), line).unwrap()
    }

    #[test]
    fn bad_requests_are_errors_and_bad_handles_are_tool_errors() {
        assert_eq!(ask("{oops")["error"]["code"], PARSE_ERROR);
        assert_eq!(
            ask(r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#)["error"]["code"],
            METHOD_NOT_FOUND
        );
        let init = ask(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        let discover = ask(
            r#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2031-01-01"}}}"#,
        );
        assert_eq!(discover["error"]["code"], UNSUPPORTED_VERSION);
        assert!(
            answer(
                Path::new("/x"),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
            )
            .is_none()
        );
        let bad = ask(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"recall","arguments":{"handle":"../etc"}}}"#,
        );
        assert_eq!(bad["result"]["isError"], true);
        let text = bad["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("`../etc` is not a ctxcompact handle"),
            "{text}"
        );
        let empty = ask(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search","arguments":{"words":"x"}}}"#,
        );
        let text = empty["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("is empty"), "{text}");
        let missing = ask(
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall","arguments":{}}}"#,
        );
        assert_eq!(missing["error"]["code"], INVALID_PARAMS);
    }
}
