//! `ctxcompact proxy` end to end: the real binary between a client and a scripted upstream,
//! both written here over plain sockets on 127.0.0.1 ephemeral ports, each started and stopped
//! by its test (issue 22).
//!
//! Recorded sessions are replayed call by call through the proxy: every upstream body is valid
//! and fits the window, bodies under the trigger reach upstream byte for byte, the calls whose
//! upstream body is not an append of the previous one are the ledger's compactions, and a
//! second proxy sends the same bytes for the last request. Fault tests cover what fail-open
//! promises.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ctxcompact::format::Format;
use ctxcompact::format::{self, ReadOptions};
use ctxcompact::{Conversation, Options, Role};
use serde_json::{Map, Value, json};

/// The longest any single wait in these tests may take.
const PATIENCE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// HTTP over plain sockets: just enough of HTTP/1.1 for a scripted upstream and a client.

/// A request as the upstream received it.
#[derive(Debug, Clone)]
struct Received {
    method: String,
    /// Path and query.
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// Reads one request (or response) head: the first line and the headers; `None` at EOF.
fn read_head(reader: &mut impl BufRead) -> Option<(String, Vec<(String, String)>)> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Some((first.trim_end().to_string(), headers))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Reads a body of `content-length` bytes, or chunked, to its end.
fn read_body(reader: &mut impl BufRead, headers: &[(String, String)]) -> std::io::Result<Vec<u8>> {
    if let Some(length) = header(headers, "content-length") {
        let mut body = vec![0; length.parse().unwrap()];
        reader.read_exact(&mut body)?;
        return Ok(body);
    }
    if header(headers, "transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim(), 16).map_err(std::io::Error::other)?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                return Ok(body);
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Ok(Vec::new())
}

/// What the scripted upstream does with a request: writes a whole response to the stream.
type Script = dyn Fn(&Received, &mut TcpStream) + Send + Sync;

/// A scripted upstream on an ephemeral port, recording every request it receives.
struct Upstream {
    origin: String,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    port: u16,
}

impl Upstream {
    fn start(script: impl Fn(&Received, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        {
            let (received, stop) = (Arc::clone(&received), Arc::clone(&stop));
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (received, script) = (Arc::clone(&received), Arc::clone(&script));
                    thread::spawn(move || serve_upstream(stream, &received, &*script));
                }
            });
        }
        Self {
            origin: format!("http://127.0.0.1:{port}"),
            received,
            stop,
            port,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve_upstream(stream: TcpStream, received: &Mutex<Vec<Received>>, script: &Script) {
    let _ = stream.set_read_timeout(Some(PATIENCE));
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some((first, headers)) = read_head(&mut reader) {
        let mut parts = first.split(' ');
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let Ok(body) = read_body(&mut reader, &headers) else {
            return;
        };
        let request = Received {
            method,
            target,
            headers,
            body,
        };
        received.lock().unwrap().push(request.clone());
        script(&request, &mut writer);
    }
}

/// Writes a whole JSON response.
fn reply_json(stream: &mut TcpStream, status: &str, extra: &[(&str, &str)], body: &Value) {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

/// Writes an SSE response, one chunk per event, `pause` apart; returns whether every event
/// was written (false once the reader went away).
fn reply_sse(stream: &mut TcpStream, events: &[String], pause: Duration) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return false;
    }
    for event in events {
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        if stream
            .write_all(chunk.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return false;
        }
        thread::sleep(pause);
    }
    stream.write_all(b"0\r\n\r\n").is_ok()
}

/// A response as the client read it.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Sends one request with `connection: close` and reads the whole answer.
fn send(addr: &str, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write_request(&mut stream, method, target, headers, body);
    let mut reader = BufReader::new(stream);
    let (first, headers) = read_head(&mut reader).expect("a response head");
    let status = first.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if header(&headers, "content-length").is_some()
        || header(&headers, "transfer-encoding").is_some()
    {
        read_body(&mut reader, &headers).unwrap_or_default()
    } else {
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        rest
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn write_request(
    stream: &mut TcpStream,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nhost: test\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
}

fn post(addr: &str, path: &str, body: &[u8]) -> Answer {
    send(
        addr,
        "POST",
        path,
        &[("content-type", "application/json")],
        body,
    )
}

// ---------------------------------------------------------------------------------------------
// The proxy process.

static LEDGERS: AtomicUsize = AtomicUsize::new(0);

/// A running `ctxcompact proxy`, stopped when dropped.
struct Proxy {
    child: Child,
    addr: String,
    stderr: Arc<Mutex<String>>,
    ledger: PathBuf,
    /// Its `XDG_CACHE_HOME`, which holds its default archive folder.
    cache: PathBuf,
}

impl Proxy {
    /// Starts the proxy with every upstream at `upstream` and `args`, and a cache folder of its
    /// own (its default archive folder is in it).
    fn start(upstream: &str, args: &[&str]) -> Self {
        let n = LEDGERS.fetch_add(1, Ordering::SeqCst);
        let cache =
            std::env::temp_dir().join(format!("ctxcompact-proxy-cache-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        Self::start_with_cache(upstream, args, cache)
    }

    /// [`Proxy::start`] with `cache` as its `XDG_CACHE_HOME` (shared by proxies given the same).
    fn start_with_cache(upstream: &str, args: &[&str], cache: PathBuf) -> Self {
        let n = LEDGERS.fetch_add(1, Ordering::SeqCst);
        let ledger = std::env::temp_dir().join(format!(
            "ctxcompact-proxy-test-{}-{n}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&ledger);
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
            .env("XDG_CACHE_HOME", &cache)
            .arg("proxy")
            .args(["--listen", "127.0.0.1:0"])
            .args(["--anthropic-upstream", upstream])
            .args(["--openai-upstream", upstream])
            .args(["--gemini-upstream", upstream])
            .arg("--ledger")
            .arg(&ledger)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        stderr.read_line(&mut first).unwrap();
        let addr = first
            .trim()
            .rsplit_once("http://")
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .1
            .to_string();
        let log = Arc::new(Mutex::new(first.clone()));
        {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                let mut rest = String::new();
                while stderr.read_line(&mut rest).unwrap_or(0) > 0 {
                    log.lock().unwrap().push_str(&rest);
                    rest.clear();
                }
            });
        }
        Self {
            child,
            addr,
            stderr: log,
            ledger,
            cache,
        }
    }

    /// The ledger's lines, once it holds at least `count` of them.
    fn ledger(&self, count: usize) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = std::fs::read_to_string(&self.ledger).unwrap_or_default();
            let lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            if lines.len() >= count || Instant::now() > deadline {
                assert!(
                    lines.len() >= count,
                    "ledger has {} of {count} lines",
                    lines.len()
                );
                return lines;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// What the proxy wrote to stderr, once it holds `text` (or the patience runs out): the
    /// reading thread may not yet have taken what a request's handling logged.
    fn stderr_holding(&self, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        while !self.stderr.lock().unwrap().contains(text) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.ledger);
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

// ---------------------------------------------------------------------------------------------
// Recorded sessions, call by call.

/// A recorded session in `../shared/corpus/raw`, or `None` (with a visible note) without it.
fn recording(path: &str, format: Format) -> Option<Conversation> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus/raw")
        .join(path);
    if !file.is_file() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED proxy replay test: {} not found",
            file.display()
        );
        return None;
    }
    let bytes = std::fs::read(&file).unwrap();
    let options = ReadOptions {
        format: Some(format),
        ..ReadOptions::default()
    };
    Some(format::parse_with_usage(&bytes, &options).unwrap().0)
}

/// The request body of the call that sends `messages[..end]`.
fn request_body(recording: &Conversation, end: usize, envelope: &Map<String, Value>) -> Vec<u8> {
    let mut messages = recording.messages[..end].to_vec();
    // Like Claude Code, a breakpoint on the last block of the last message.
    if recording.format == Format::Anthropic
        && let Some(last) = messages.last_mut()
    {
        mark_last_block(last);
    }
    let request = Conversation {
        format: recording.format,
        system: recording.system.clone(),
        messages,
        envelope: Some(envelope.clone()),
        lines: Vec::new(),
        repairs: Vec::new(),
    };
    serde_json::to_vec(&format::render(&request)).unwrap()
}

/// Puts `cache_control` on the message's last block, through its wire form.
fn mark_last_block(message: &mut ctxcompact::Message) {
    let wrapper = Conversation {
        format: Format::Anthropic,
        system: None,
        messages: vec![message.clone()],
        envelope: None,
        lines: Vec::new(),
        repairs: Vec::new(),
    };
    let mut value = format::render(&wrapper);
    // Only block content can carry one: a string stays a string, as the client sent it.
    if let Some(Value::Array(blocks)) = value[0].get_mut("content")
        && let Some(Value::Object(block)) = blocks.last_mut()
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    *message = format::parse_value(value, Some(Format::Anthropic))
        .unwrap()
        .messages
        .remove(0);
}

/// The indices where each call's answer starts: each run of assistant messages.
fn calls(recording: &Conversation, limit: usize) -> Vec<usize> {
    let messages = &recording.messages;
    (1..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant && messages[i - 1].role != Role::Assistant)
        .take(limit)
        .collect()
}

/// Drops every `cache_control` in a value.
fn unmarked(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(object) => {
                object.shift_remove("cache_control");
                object.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

/// Whether `next` is `previous` with messages appended (breakpoints aside, which the client
/// itself moves), and every other field the same (but `stream`, which these tests alternate).
fn is_append(previous: &Value, next: &Value, list_key: &str) -> bool {
    let (previous, next) = (unmarked(previous.clone()), unmarked(next.clone()));
    let (Some(before), Some(after)) = (previous[list_key].as_array(), next[list_key].as_array())
    else {
        return false;
    };
    let envelope = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().shift_remove(list_key);
        v.as_object_mut().unwrap().shift_remove("stream");
        v
    };
    envelope(&previous) == envelope(&next)
        && after.len() >= before.len()
        && after[..before.len()] == before[..]
}

/// The answer the scripted upstream gives to a read request: JSON or SSE in the request's
/// provider's shape, with usage.
fn scripted_answer(request: &Received, stream: &mut TcpStream) {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let streamed = body["stream"].as_bool() == Some(true);
    let path = request.target.split('?').next().unwrap_or_default();
    match (path, streamed) {
        ("/v1/messages", false) => reply_json(
            stream,
            "200 OK",
            &[],
            &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": "scripted"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "cache_read_input_tokens": 2000,
                          "cache_creation_input_tokens": 50, "output_tokens": 7}}),
        ),
        ("/v1/messages", true) => {
            let events = [
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 50, "output_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "scripted"}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
                json!({"type": "message_stop"}),
            ];
            let events: Vec<String> = events
                .iter()
                .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
                .collect();
            reply_sse(stream, &events, Duration::ZERO);
        }
        ("/v1/chat/completions", false) => reply_json(
            stream,
            "200 OK",
            &[],
            &json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": "scripted"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 7,
                          "prompt_tokens_details": {"cached_tokens": 800}}}),
        ),
        ("/v1/chat/completions", true) => {
            let events = [
                json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "scripted"}}]}),
                json!({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 7}}),
            ];
            let mut events: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            events.push("data: [DONE]\n\n".into());
            reply_sse(stream, &events, Duration::ZERO);
        }
        ("/v1/responses", false) => reply_json(
            stream,
            "200 OK",
            &[],
            &json!({"id": "resp_1", "object": "response", "status": "completed",
                "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "scripted"}]}],
                "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 600}, "output_tokens": 7}}),
        ),
        ("/v1/responses", true) => {
            let done = json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": [],
                "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 600}, "output_tokens": 7}}});
            let events = vec![
                format!(
                    "event: response.output_text.delta\ndata: {}\n\n",
                    json!({"type": "response.output_text.delta", "delta": "scripted"})
                ),
                format!("event: response.completed\ndata: {done}\n\n"),
            ];
            reply_sse(stream, &events, Duration::ZERO);
        }
        _ => reply_json(stream, "200 OK", &[], &json!({"ok": true, "path": path})),
    }
}

/// Replays `recording` call by call through a proxy with `--window 32000` and checks the
/// promises of issue 22's first "done when".
fn replay_through_proxy(recording: &Conversation, path: &str, model: &str, limit: usize) {
    const WINDOW: usize = 32_000;
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "32000"]);
    let list_key = recording.format.list_key();
    let tools = json!([{"name": "Read", "description": "Reads a file.",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]);
    let calls = calls(recording, limit);
    assert!(calls.len() >= 10, "{} calls", calls.len());
    let mut sent = Vec::new();
    for (n, &end) in calls.iter().enumerate() {
        let mut envelope = Map::new();
        envelope.insert("model".into(), json!(model));
        if recording.format == Format::Anthropic {
            envelope.insert("max_tokens".into(), json!(1024));
            envelope.insert("tools".into(), tools.clone());
        }
        envelope.insert("stream".into(), json!(n % 2 == 1));
        let body = request_body(recording, end, &envelope);
        let answer = post(&proxy.addr, path, &body);
        assert_eq!(
            answer.status,
            200,
            "call {n}: {}",
            String::from_utf8_lossy(&answer.body)
        );
        assert!(
            String::from_utf8_lossy(&answer.body).contains("scripted"),
            "call {n}"
        );
        sent.push(body);
    }
    let received = upstream.received();
    let ledger = proxy.ledger(calls.len());
    assert_eq!(received.len(), calls.len());
    let mut options = Options::for_model(model).unwrap();
    options.profile.context_window = WINDOW;
    let mut non_appends = 0;
    for (n, (request, line)) in received.iter().zip(&ledger).enumerate() {
        let conversation = format::parse(&request.body, Some(recording.format)).unwrap();
        let problems = ctxcompact::validate(&conversation);
        assert!(problems.is_empty(), "call {n}: {}", problems[0]);
        let value = request.json();
        let tokens = options.count_body(&conversation).total();
        assert!(tokens <= WINDOW, "call {n}: {tokens} tokens");
        assert!(
            ctxcompact_breakpoints(&value) <= 4,
            "call {n}: more than 4 breakpoints"
        );
        match line["action"].as_str().unwrap() {
            "forwarded" => assert!(request.body == sent[n], "call {n}: not byte for byte"),
            "compacted" => {
                assert!(line["tokens_forwarded"].as_u64() < line["tokens_received"].as_u64());
            }
            other => panic!("call {n}: {other}: {}", line["reason"]),
        }
        // The client's breakpoint on its last message survives compaction.
        let sent_value: Value = serde_json::from_slice(&sent[n]).unwrap();
        let last_marked =
            |v: &Value| ctxcompact_breakpoints(v[list_key].as_array().unwrap().last().unwrap());
        assert_eq!(last_marked(&value), last_marked(&sent_value), "call {n}");
        if n > 0 && !is_append(&received[n - 1].json(), &value, list_key) {
            non_appends += 1;
        }
        assert_eq!(line["model"], json!(model));
        assert!(
            line["usage"]["output_tokens"].as_u64() == Some(7),
            "call {n}: {line}"
        );
    }
    let compactions = ledger.last().unwrap()["compactions"].as_u64().unwrap();
    assert!(compactions >= 1, "the session never compacted");
    assert_eq!(non_appends, compactions, "non-append calls vs compactions");
    // A second proxy, given the last request alone, sends the same bytes; so does one that
    // caches nothing, on every call of the session (every request replayed from its start).
    // They share the first one's archive folder, whose paths the notes name.
    let fresh_upstream = Upstream::start(scripted_answer);
    let fresh = Proxy::start_with_cache(
        &fresh_upstream.origin,
        &["--window", "32000"],
        proxy.cache.clone(),
    );
    assert_eq!(post(&fresh.addr, path, sent.last().unwrap()).status, 200);
    assert!(
        fresh_upstream.received()[0].body == received.last().unwrap().body,
        "a fresh proxy sent other bytes"
    );
    let uncached_upstream = Upstream::start(scripted_answer);
    let uncached = Proxy::start_with_cache(
        &uncached_upstream.origin,
        &["--window", "32000", "--cache-entries", "0"],
        proxy.cache.clone(),
    );
    for (n, body) in sent.iter().enumerate().step_by(3) {
        assert_eq!(post(&uncached.addr, path, body).status, 200);
        let last = uncached_upstream.received().pop().unwrap();
        assert!(
            last.body == received[n].body,
            "call {n}: the uncached proxy sent other bytes"
        );
    }
    let stats = send(&proxy.addr, "GET", "/ctxcompact/stats", &[], b"");
    let stats: Value = serde_json::from_slice(&stats.body).unwrap();
    assert_eq!(stats["requests"].as_u64(), Some(calls.len() as u64));
    assert!(stats["compacted"].as_u64() > Some(0), "{stats}");
}

fn ctxcompact_breakpoints(value: &Value) -> usize {
    match value {
        Value::Object(object) => {
            usize::from(object.contains_key("cache_control"))
                + object.values().map(ctxcompact_breakpoints).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(ctxcompact_breakpoints).sum(),
        _ => 0,
    }
}

#[test]
fn a_claude_code_session_replays_through_the_proxy_cache_stable() {
    let Some(recording) = recording(
        "claude-code/entireio-cli__9f_d2fc39aa5f_0_full.jsonl",
        Format::ClaudeCode,
    ) else {
        return;
    };
    replay_through_proxy(
        &recording,
        "/v1/messages?beta=true",
        "claude-sonnet-4-5",
        200,
    );
}

#[test]
fn a_codex_session_replays_through_the_proxy_as_responses() {
    let Some(recording) = recording(
        "codex/AcidicSoil-codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        Format::Codex,
    ) else {
        return;
    };
    replay_through_proxy(&recording, "/v1/responses", "gpt-5", 200);
}

#[test]
fn an_openai_chat_session_replays_through_the_proxy() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/conversations/openai-coding-python-500.json");
    let recording = format::parse(&std::fs::read(file).unwrap(), Some(Format::OpenAi)).unwrap();
    replay_through_proxy(&recording, "/v1/chat/completions", "gpt-4o", 120);
}

// ---------------------------------------------------------------------------------------------
// Faults: each answered as fail-open says, no crash, no hang.

/// A body over the trigger of a 1,000-token window, in OpenAI Chat format.
fn big_chat_body() -> Vec<u8> {
    let mut messages = vec![json!({"role": "user", "content": "read the files"})];
    for i in 0..20 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "line of output ".repeat(60)}));
    }
    messages.push(json!({"role": "user", "content": "now summarise"}));
    serde_json::to_vec(&json!({"model": "gpt-4o", "messages": messages})).unwrap()
}

#[test]
fn malformed_and_broken_bodies_fail_open_unchanged() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let malformed = b"{\"model\": \"gpt-4o\", \"messages\": [".to_vec();
    assert_eq!(
        post(&proxy.addr, "/v1/chat/completions", &malformed).status,
        200
    );
    let mut broken: Value = serde_json::from_slice(&big_chat_body()).unwrap();
    broken["messages"][2]["tool_call_id"] = json!("nobody");
    let broken = serde_json::to_vec(&broken).unwrap();
    assert_eq!(
        post(&proxy.addr, "/v1/chat/completions", &broken).status,
        200
    );
    let good = big_chat_body();
    assert_eq!(post(&proxy.addr, "/v1/chat/completions", &good).status, 200);
    // Under the trigger a broken body needs no compaction: forwarded as received.
    let small = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "nobody", "content": "1"}]});
    let small = serde_json::to_vec(&small).unwrap();
    assert_eq!(
        post(&proxy.addr, "/v1/chat/completions", &small).status,
        200
    );
    let received = upstream.received();
    assert!(received[3].body == small);
    assert!(received[0].body == malformed);
    assert!(received[1].body == broken);
    assert!(
        received[2].body.len() < good.len(),
        "the valid body was compacted"
    );
    let ledger = proxy.ledger(3);
    assert_eq!(ledger[0]["action"], "failed_open");
    assert!(
        ledger[0]["reason"].as_str().unwrap().contains("not JSON"),
        "{}",
        ledger[0]
    );
    assert_eq!(ledger[1]["action"], "failed_open");
    assert!(
        ledger[1]["reason"].as_str().unwrap().contains("invalid"),
        "{}",
        ledger[1]
    );
    assert_eq!(ledger[2]["action"], "compacted");
    let ledger = proxy.ledger(4);
    assert_eq!(ledger[3]["action"], "forwarded");
    assert!(
        ledger[3]["reason"].as_str().unwrap().contains("invalid"),
        "{}",
        ledger[3]
    );
    // No message text in the ledger.
    let text = std::fs::read_to_string(&proxy.ledger).unwrap();
    assert!(!text.contains("line of output") && !text.contains("summarise"));
}

#[test]
fn upstream_errors_reach_the_client_unchanged() {
    let upstream = Upstream::start(|request, stream| {
        if request.target.contains("limited") {
            reply_json(
                stream,
                "429 Too Many Requests",
                &[("retry-after", "17")],
                &json!({"type": "error", "error": {"type": "rate_limit_error"}}),
            );
        } else {
            reply_json(
                stream,
                "500 Internal Server Error",
                &[],
                &json!({"type": "error", "error": {"type": "api_error"}}),
            );
        }
    });
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let body = br#"{"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}"#;
    let failed = post(&proxy.addr, "/v1/messages", body);
    assert_eq!(failed.status, 500);
    assert!(String::from_utf8_lossy(&failed.body).contains("api_error"));
    let limited = post(&proxy.addr, "/v1/messages?limited=1", body);
    assert_eq!(limited.status, 429);
    assert_eq!(header(&limited.headers, "retry-after"), Some("17"));
    assert!(String::from_utf8_lossy(&limited.body).contains("rate_limit_error"));
    let ledger = proxy.ledger(2);
    assert_eq!(ledger[0]["status"], 500);
    assert_eq!(ledger[1]["status"], 429);
}

#[test]
fn an_upstream_closing_mid_stream_breaks_the_stream_and_the_proxy_goes_on() {
    let upstream = Upstream::start(|request, stream| {
        if request.target.contains("break") {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let event = "event: message_start\ndata: {}\n\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(format!("{:x}\r\n{event}\r\n", event.len()).as_bytes());
            let _ = stream.flush();
            let _ = stream.shutdown(Shutdown::Both);
        } else {
            scripted_answer(request, stream);
        }
    });
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let body = br#"{"model": "claude-sonnet-4-5", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "hi"}]}"#;
    let mut stream = TcpStream::connect(&proxy.addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write_request(&mut stream, "POST", "/v1/messages?break=1", &[], body);
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got);
    assert!(got.contains("message_start"), "{got}");
    assert!(!got.ends_with("0\r\n\r\n"), "the break must show: {got}");
    // The proxy still serves.
    assert_eq!(post(&proxy.addr, "/v1/messages", body).status, 200);
    let ledger = proxy.ledger(2);
    assert_eq!(ledger[0]["response"], "upstream_broke");
    assert_eq!(ledger[1]["response"], "complete");
}

#[test]
fn a_client_leaving_mid_stream_cancels_the_upstream_request() {
    let finished = Arc::new(Mutex::new(None));
    let upstream = {
        let finished = Arc::clone(&finished);
        Upstream::start(move |_, stream| {
            let events: Vec<String> = (0..300)
                .map(|i| format!("event: ping\ndata: {{\"n\": {i}}}\n\n"))
                .collect();
            let all = reply_sse(stream, &events, Duration::from_millis(20));
            *finished.lock().unwrap() = Some(all);
        })
    };
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let body = br#"{"model": "claude-sonnet-4-5", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "hi"}]}"#;
    let mut stream = TcpStream::connect(&proxy.addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write_request(&mut stream, "POST", "/v1/messages", &[], body);
    let mut first = [0; 256];
    let n = stream.read(&mut first).unwrap();
    assert!(n > 0);
    drop(stream);
    // The upstream stream would take 6 s; it must stop writing well before.
    let deadline = Instant::now() + Duration::from_secs(5);
    while finished.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "upstream was not cancelled");
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(*finished.lock().unwrap(), Some(false));
    assert_eq!(proxy.ledger(1)[0]["response"], "client_gone");
}

#[test]
fn a_body_over_the_cap_streams_through_untouched() {
    let upstream = Upstream::start(|request, stream| {
        reply_json(
            stream,
            "200 OK",
            &[],
            &json!({"length": request.body.len()}),
        );
    });
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    // 100 MB of a valid-looking body: past the 64 MB default cap.
    let mut body = br#"{"model": "gpt-4o", "messages": [{"role": "user", "content": ""#.to_vec();
    body.resize(100 << 20, b'a');
    body.extend_from_slice(br#""}]}"#);
    let answer = post(&proxy.addr, "/v1/chat/completions", &body);
    assert_eq!(answer.status, 200);
    let received = upstream.received();
    assert!(received[0].body == body, "the body changed on its way");
    let ledger = proxy.ledger(1);
    assert_eq!(ledger[0]["action"], "passthrough");
    assert!(ledger[0]["reason"].as_str().unwrap().contains("--max-body"));
}

#[test]
fn two_hundred_concurrent_clients_are_all_answered() {
    let upstream = Upstream::start(|request, stream| {
        thread::sleep(Duration::from_millis(50));
        scripted_answer(request, stream);
    });
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let body = Arc::new(big_chat_body());
    let addr = Arc::new(proxy.addr.clone());
    let clients: Vec<_> = (0..200)
        .map(|_| {
            let (body, addr) = (Arc::clone(&body), Arc::clone(&addr));
            thread::spawn(move || post(&addr, "/v1/chat/completions", &body).status)
        })
        .collect();
    for client in clients {
        assert_eq!(client.join().unwrap(), 200);
    }
    let ledger = proxy.ledger(200);
    assert!(ledger.iter().all(|l| l["action"] == "compacted"));
    // Every one of them sent the same bytes upstream.
    let received = upstream.received();
    assert!(received.windows(2).all(|w| w[0].body == w[1].body));
}

#[test]
fn credentials_go_upstream_untouched_and_nowhere_else() {
    const SECRET: &str = "sk-ant-SECRET-do-not-log-4242";
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let credentials = [
        ("x-api-key", SECRET),
        ("authorization", "Bearer sk-ant-SECRET-do-not-log-4242"),
        ("x-goog-api-key", SECRET),
        ("cookie", "session=sk-ant-SECRET-do-not-log-4242"),
    ];
    for path in [
        "/v1/messages".to_string(),
        format!("/v1beta/models/gemini-2.5-pro:generateContent?key={SECRET}"),
        "/v1/models".to_string(),
    ] {
        let body = if path.contains("gemini") {
            br#"{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}"#.to_vec()
        } else {
            br#"{"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}"#.to_vec()
        };
        send(&proxy.addr, "POST", &path, &credentials, &body);
    }
    // A malformed body, whose error could echo what it was given.
    send(
        &proxy.addr,
        "POST",
        "/v1/messages",
        &credentials,
        SECRET.as_bytes(),
    );
    let received = upstream.received();
    assert_eq!(received.len(), 4);
    for request in &received {
        assert_eq!(request.header("x-api-key"), Some(SECRET));
        assert_eq!(request.header("authorization"), Some(credentials[1].1));
        assert_eq!(request.header("cookie"), Some(credentials[3].1));
    }
    assert!(received[1].target.ends_with(&format!("?key={SECRET}")));
    // Another path, passed through with its method.
    assert_eq!(
        (received[2].method.as_str(), received[2].target.as_str()),
        ("POST", "/v1/models")
    );
    proxy.ledger(4);
    let ledger = std::fs::read_to_string(&proxy.ledger).unwrap();
    assert!(!ledger.contains("SECRET"), "{ledger}");
    assert!(!proxy.stderr.lock().unwrap().contains("SECRET"));
}

#[test]
fn a_catalog_or_calibration_file_it_cannot_read_is_named_before_it_listens() {
    let dir = std::env::temp_dir().join(format!("ctxcompact-proxy-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("calibration.json");
    std::fs::write(&bad, "{}").unwrap();
    for (flag, file, words) in [
        (
            "--catalog",
            dir.join("absent.json"),
            "absent.json: model catalog: cannot read",
        ),
        (
            "--calibration",
            bad.clone(),
            "calibration.json: calibration: not of the shape",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
            .args(["proxy", "--listen", "127.0.0.1:0", flag])
            .arg(&file)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(words), "{flag}: {stderr}");
        assert!(!stderr.contains("listening"), "{flag}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_non_loopback_listen_address_needs_allow_remote() {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["proxy", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--allow-remote"));
    let env = Command::new(env!("CARGO_BIN_EXE_ctxcompact"))
        .args(["proxy", "--print-env"])
        .env("XDG_CACHE_HOME", "/cache")
        .output()
        .unwrap();
    let env = String::from_utf8(env.stdout).unwrap();
    assert!(
        env.contains("export ANTHROPIC_BASE_URL=http://127.0.0.1:8787\n"),
        "{env}"
    );
    assert!(
        env.contains("export OPENAI_BASE_URL=http://127.0.0.1:8787/v1\n"),
        "{env}"
    );
    // Codex 0.169 ignores OPENAI_BASE_URL: its built-in provider reads `openai_base_url`.
    assert!(
        env.contains("codex -c openai_base_url=\"http://127.0.0.1:8787/v1\""),
        "{env}"
    );
    assert!(
        env.contains("export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787\n"),
        "{env}"
    );
    assert!(
        env.contains("\"selectedType\": \"gemini-api-key\""),
        "{env}"
    );
    // Each agent's line for the recall server over the default archive (issue 53).
    for line in [
        "claude mcp add ctxcompact -- ctxcompact mcp --archive-dir '/cache/ctxcompact/archive'",
        "codex mcp add ctxcompact -- ctxcompact mcp --archive-dir '/cache/ctxcompact/archive'",
        "\"mcpServers\": {\"ctxcompact\": {\"command\": \"ctxcompact\", \"args\": [\"mcp\", \"--archive-dir\", \"/cache/ctxcompact/archive\"]}}",
        "\"mcp\": {\"ctxcompact\": {\"type\": \"local\", \"command\": [\"ctxcompact\", \"mcp\", \"--archive-dir\", \"/cache/ctxcompact/archive\"]}}",
    ] {
        assert!(env.contains(line), "{line}\n{env}");
    }
}

/// Request bodies the pinned Claude Code (2.1.328) and Codex (0.169.0) sent through the proxy
/// to the scripted provider of `tests/clients` (captured by `CAPTURE=DIR tests/clients/run.sh`);
/// `codex-…-code-mode-…`: Codex's default shape (its tools in an `additional_tools` item, a
/// freeform `exec` call, a `configuration_update`), sent with `-c openai_base_url=…`.
#[test]
fn captured_client_bodies_read_validate_and_round_trip_byte_for_byte() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proxy");
    let mut seen = 0;
    for entry in std::fs::read_dir(fixtures).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let format = if name.starts_with("claude-code") {
            Format::Anthropic
        } else {
            Format::Responses
        };
        let bytes = std::fs::read(&path).unwrap();
        let conversation = format::parse(&bytes, None).unwrap();
        assert_eq!(conversation.format, format, "{name}");
        let problems = ctxcompact::validate(&conversation);
        assert!(problems.is_empty(), "{name}: {}", problems[0]);
        let rendered = serde_json::to_vec(&format::render(&conversation)).unwrap();
        assert!(rendered == bytes, "{name}: not byte for byte");
        seen += 1;
    }
    assert_eq!(seen, 6);
}

#[test]
fn a_gemini_body_past_the_trigger_is_compacted_and_stays_gemini() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "read the files"}]})];
    for i in 0..20 {
        contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"n": i}}}]}));
        contents.push(
            json!({"role": "user", "parts": [{"functionResponse": {"name": "read",
            "response": {"output": "line of output ".repeat(60)}}}]}),
        );
    }
    contents.push(json!({"role": "user", "parts": [{"text": "now summarise"}]}));
    let body = serde_json::to_vec(&json!({"contents": contents,
        "systemInstruction": {"parts": [{"text": "be brief"}]}}))
    .unwrap();
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    assert_eq!(post(&proxy.addr, path, &body).status, 200);
    let received = &upstream.received()[0];
    assert_eq!(received.target, path);
    assert!(received.body.len() < body.len());
    let conversation = format::parse(&received.body, Some(Format::Gemini)).unwrap();
    assert!(ctxcompact::validate(&conversation).is_empty());
    let line = &proxy.ledger(1)[0];
    assert_eq!(line["action"], "compacted");
    assert_eq!(line["model"], "gemini-2.5-pro");
}

#[test]
fn a_client_slow_to_send_its_headers_is_cut_off() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--header-timeout", "1"]);
    let mut stream = TcpStream::connect(&proxy.addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
        .write_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(10), "{waited:?}");
    assert!(upstream.received().is_empty());
}

/// Codex opens its Responses WebSocket first; the proxy answers 426, which makes Codex fall
/// back to HTTPS at once, and forwards nothing upstream. See: #31
#[test]
fn a_websocket_upgrade_is_refused_with_426_and_never_reaches_upstream() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &[]);
    let answer = send(
        &proxy.addr,
        "GET",
        "/v1/responses",
        &[
            ("upgrade", "websocket"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-version", "13"),
            ("openai-beta", "responses_websockets=2026-02-06"),
            ("authorization", "Bearer sk-secret"),
        ],
        b"",
    );
    assert_eq!(answer.status, 426);
    assert_eq!(header(&answer.headers, "upgrade"), Some("HTTP/1.1"));
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WebSocket")
    );
    let line = &proxy.ledger(1)[0];
    assert_eq!(line["status"], 426);
    assert_eq!(line["action"], "passthrough");
    // The same path without the upgrade goes upstream.
    let plain = send(&proxy.addr, "GET", "/v1/responses", &[], b"");
    assert_ne!(plain.status, 426);
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    assert!(received[0].header("upgrade").is_none());
}

/// Codex's default body (code mode) past the trigger: its `additional_tools` item and its
/// `configuration_update` go upstream whole, each custom call with its output. See: #31
#[test]
fn a_codex_code_mode_body_compacts_with_its_tools_and_settings_kept() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proxy");
    let captured = std::fs::read(fixtures.join("codex-0.169.0-code-mode-call-01.json")).unwrap();
    let mut body: Value = serde_json::from_slice(&captured).unwrap();
    let lines = "part 7: the quick brown fox jumps over the lazy dog\n".repeat(120);
    let items = body["input"].as_array_mut().unwrap();
    for n in 0..24 {
        let call_id = format!("call_{n}");
        items.push(json!({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "exec",
            "input": format!("const r = await tools.exec_command({{cmd: \"cat part{n}.txt\"}});\ntext(r.output);")}));
        items.push(json!({"type": "custom_tool_call_output", "call_id": call_id,
            "output": [{"type": "input_text", "text": "Script completed\nOutput:\n"}, {"type": "input_text", "text": lines}]}));
    }
    let settings = |value: &Value| -> Vec<Value> {
        value["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("additional_tools" | "configuration_update")
                )
            })
            .cloned()
            .collect()
    };
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "40000"]);
    let answer = post(
        &proxy.addr,
        "/v1/responses",
        &serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(answer.status, 200);
    let line = &proxy.ledger(1)[0];
    assert_eq!(line["action"], "compacted", "{line}");
    assert!(
        line["tokens_forwarded"].as_u64().unwrap() <= 40_000,
        "{line}"
    );
    let sent = upstream.received()[0].json();
    assert_eq!(settings(&sent), settings(&body));
    assert_eq!(sent["input"][0], body["input"][0], "the tools stay first");
    for key in [
        "reasoning",
        "client_metadata",
        "include",
        "prompt_cache_key",
    ] {
        assert_eq!(sent[key], body[key], "{key}");
    }
    let conversation = format::parse(&upstream.received()[0].body, None).unwrap();
    assert!(ctxcompact::validate(&conversation).is_empty());
    assert!(sent["input"].as_array().unwrap().len() < body["input"].as_array().unwrap().len());
}

#[test]
fn a_current_claude_code_body_compacts_with_its_system_message_and_fields_kept() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "8000"]);
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "fix the test"}]}),
        json!({"role": "system", "content": "<env>cwd: /repo</env>"}),
    ];
    for i in 0..30 {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "", "signature": "c2ln"},
            {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Read", "input": {"file_path": format!("a{i}.rs")}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{i}"), "content": format!("file {i} {}", "x ".repeat(400))}]}));
    }
    let fields = json!({"metadata": {"user_id": "{\"session_id\":\"5e2b\"}"},
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"}});
    let mut body = json!({"model": "claude-sonnet-4-5", "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "messages": messages});
    for (key, value) in fields.as_object().unwrap() {
        body[key] = value.clone();
    }
    let bytes = serde_json::to_vec(&body).unwrap();
    assert_eq!(
        post(&proxy.addr, "/v1/messages?beta=true", &bytes).status,
        200
    );
    let sent = upstream.received()[0].json();
    let line = &proxy.ledger(1)[0];
    assert_eq!(line["action"], "compacted");
    assert!(line["tokens_forwarded"].as_u64().unwrap() <= 8000, "{line}");
    assert_eq!(
        sent["messages"][1], body["messages"][1],
        "the system message stays"
    );
    assert_eq!(sent["system"], body["system"]);
    for (key, value) in fields.as_object().unwrap() {
        assert_eq!(&sent[key], value, "{key}");
    }
    let conversation =
        format::parse(&upstream.received()[0].body, Some(Format::Anthropic)).unwrap();
    assert!(ctxcompact::validate(&conversation).is_empty());
}

/// The archive files the notes of `messages` name, read from disk (those that exist).
fn named_files(messages: &[Value]) -> std::collections::BTreeMap<String, String> {
    messages
        .iter()
        .flat_map(crate::archive::named_paths)
        .filter_map(|path| Some((path.clone(), std::fs::read_to_string(&path).ok()?)))
        .collect()
}

// See: #26
#[test]
fn archive_dir_archives_what_the_proxy_removes_and_a_write_failure_fails_nothing() {
    let dir = std::env::temp_dir().join(format!("ctxcompact-proxy-archive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let archive = dir.join("archive");
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(
        &upstream.origin,
        &[
            "--window",
            "1000",
            "--archive-dir",
            archive.to_str().unwrap(),
        ],
    );
    let body = big_chat_body();
    assert_eq!(post(&proxy.addr, "/v1/chat/completions", &body).status, 200);
    let sent: Value = serde_json::from_slice(&upstream.received()[0].body).unwrap();
    let sent = sent["messages"].as_array().unwrap().clone();
    let files = named_files(&sent);
    assert!(
        !files.is_empty(),
        "the forwarded body names no archive file"
    );
    assert!(
        files
            .keys()
            .all(|p| p.starts_with(archive.to_str().unwrap()))
    );
    // Every compaction of the replay is archived: expanding the notes until none is left
    // gives back the body the client sent.
    let mut back = sent;
    loop {
        let files = named_files(&back);
        let next = crate::archive::reassemble(&back, &files);
        if next == back {
            break;
        }
        back = next;
    }
    let received: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(&back, received["messages"].as_array().unwrap());
    assert!(proxy.ledger(1)[0].get("archive_error").is_none());

    // An archive folder that cannot be made: the request is compacted and forwarded all the
    // same, and the ledger says why nothing was archived.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(
        &upstream.origin,
        &[
            "--window",
            "1000",
            "--archive-dir",
            blocked.to_str().unwrap(),
        ],
    );
    assert_eq!(post(&proxy.addr, "/v1/chat/completions", &body).status, 200);
    assert!(upstream.received()[0].body.len() < body.len());
    let ledger = proxy.ledger(1);
    assert_eq!(ledger[0]["action"], "compacted");
    assert!(ledger[0]["archive_error"].is_string(), "{}", ledger[0]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The archive files under `dir` (any depth), by path relative to it, with their content.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let mut files = std::collections::BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let name = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

/// A body like [`big_chat_body`] whose outputs and task say `tag`, so that its archive files
/// are its own.
fn tagged_chat_body(tag: usize) -> Vec<u8> {
    let mut body: Value = serde_json::from_slice(&big_chat_body()).unwrap();
    body["messages"][0]["content"] = json!(format!("read the files of part {tag}"));
    for message in body["messages"].as_array_mut().unwrap() {
        if message["role"] == "tool" {
            message["content"] = json!(format!("{tag} {}", "line of output ".repeat(60)));
        }
    }
    serde_json::to_vec(&body).unwrap()
}

// See: #53
#[test]
fn the_proxy_archives_by_default_in_the_users_cache_folder_and_notes_name_handles() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let body = big_chat_body();
    assert_eq!(post(&proxy.addr, "/v1/chat/completions", &body).status, 200);
    let dir = proxy.cache.join("ctxcompact").join("archive");
    let sent: Value = serde_json::from_slice(&upstream.received()[0].body).unwrap();
    let sent = sent["messages"].as_array().unwrap().clone();
    let named = named_files(&sent);
    assert!(
        !named.is_empty(),
        "the forwarded body names no archive file"
    );
    let text = serde_json::to_string(&sent).unwrap();
    for path in named.keys() {
        let path = Path::new(path);
        assert!(path.starts_with(&dir), "{}", path.display());
        // The handle is the file's content address: its folder's name and its own.
        let handle = path.strip_prefix(&dir).unwrap().with_extension("");
        let handle = handle.to_string_lossy();
        assert!(text.contains(&format!("; handle {handle}]")), "{handle}");
        let back = ctxcompact::recall::recall(&dir, &handle).unwrap();
        assert_eq!(&back, &named[&path.to_string_lossy().into_owned()]);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        for path in named.keys() {
            let path = Path::new(path);
            assert_eq!(mode(path), 0o600, "{}", path.display());
            assert_eq!(mode(path.parent().unwrap()), 0o700);
        }
    }

    // --no-archive: nothing written, no note names a file.
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000", "--no-archive"]);
    assert_eq!(post(&proxy.addr, "/v1/chat/completions", &body).status, 200);
    assert_eq!(proxy.ledger(1)[0]["action"], "compacted");
    let sent: Value = serde_json::from_slice(&upstream.received()[0].body).unwrap();
    assert!(named_files(sent["messages"].as_array().unwrap()).is_empty());
    assert!(!proxy.cache.exists());
}

// See: #53
#[test]
fn proxies_sharing_the_default_archive_send_the_same_bytes_and_write_the_same_files() {
    let cache = std::env::temp_dir().join(format!(
        "ctxcompact-proxy-shared-cache-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&cache);
    let upstream = Upstream::start(scripted_answer);
    let first = Proxy::start_with_cache(&upstream.origin, &["--window", "1000"], cache.clone());
    let second = Proxy::start_with_cache(&upstream.origin, &["--window", "1000"], cache.clone());
    let body = big_chat_body();
    assert_eq!(post(&first.addr, "/v1/chat/completions", &body).status, 200);
    let files = files_under(&cache);
    assert!(!files.is_empty());
    assert_eq!(
        post(&second.addr, "/v1/chat/completions", &body).status,
        200
    );
    let received = upstream.received();
    assert_eq!(received[0].body, received[1].body);
    assert_eq!(
        files_under(&cache),
        files,
        "the second proxy wrote other files"
    );
    drop((first, second));
    let _ = std::fs::remove_dir_all(&cache);
}

// See: #53
#[test]
fn the_archive_stays_under_its_size_bound_and_a_write_failure_is_counted() {
    let upstream = Upstream::start(scripted_answer);
    let bound: u64 = 40_000;
    let proxy = Proxy::start(
        &upstream.origin,
        &[
            "--window",
            "1000",
            "--archive-max-bytes",
            &bound.to_string(),
        ],
    );
    let dir = proxy.cache.join("ctxcompact").join("archive");
    let mut largest = 0;
    let mut written = std::collections::BTreeSet::new();
    // Bounded: 30 conversations, one after the other, each archiving files of its own.
    for tag in 0..30 {
        let body = tagged_chat_body(tag);
        assert_eq!(post(&proxy.addr, "/v1/chat/completions", &body).status, 200);
        let files = files_under(&dir);
        written.extend(files.keys().cloned());
        let held: usize = files.values().map(String::len).sum();
        largest = largest.max(held);
        assert!(held as u64 <= bound, "{held} bytes after request {tag}");
    }
    // Files were removed, the least recently used first: the last conversation's are kept.
    assert!(
        written.len() > files_under(&dir).len(),
        "nothing was removed"
    );
    let sent: Value = serde_json::from_slice(&upstream.received()[29].body).unwrap();
    let named = named_files(sent["messages"].as_array().unwrap());
    assert!(
        !named.is_empty(),
        "the last request's archive files were removed"
    );
    // Then 40 more from 4 clients at once: the bound holds once they are answered.
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let addr = proxy.addr.clone();
            thread::spawn(move || {
                for tag in (100 + 10 * client)..(110 + 10 * client) {
                    let body = tagged_chat_body(tag);
                    assert_eq!(post(&addr, "/v1/chat/completions", &body).status, 200);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let held: usize = files_under(&dir).values().map(String::len).sum();
    assert!(
        held as u64 <= bound,
        "{held} bytes after the concurrent requests"
    );
    let ledger = proxy.ledger(70);
    assert!(ledger.iter().all(|line| line["action"] == "compacted"));
    assert!(
        ledger
            .iter()
            .all(|line| line.get("archive_error").is_none())
    );
    assert!(
        largest as u64 > bound / 2,
        "the bound was never approached: {largest}"
    );

    // A cache folder that cannot be made: the request is compacted all the same, the failure
    // is logged and counted.
    let blocked = std::env::temp_dir().join(format!(
        "ctxcompact-proxy-blocked-cache-{}",
        std::process::id()
    ));
    std::fs::write(&blocked, "not a folder").unwrap();
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start_with_cache(&upstream.origin, &["--window", "1000"], blocked.clone());
    assert_eq!(
        post(&proxy.addr, "/v1/chat/completions", &big_chat_body()).status,
        200
    );
    assert_eq!(proxy.ledger(1)[0]["action"], "compacted");
    let stats = send(&proxy.addr, "GET", "/ctxcompact/stats", &[], b"");
    let stats: Value = serde_json::from_slice(&stats.body).unwrap();
    assert_eq!(stats["archive_errors"], 1, "{stats}");
    let log = proxy.stderr_holding("cannot archive removed history");
    assert!(log.contains("cannot archive removed history"), "{log}");
    drop(proxy);
    let _ = std::fs::remove_file(&blocked);
}

// ---------------------------------------------------------------------------------------------
// Model names and agents (issue 31).

/// A request body in `format` for `model`: a task, `rounds` tool rounds whose outputs are a few
/// hundred words each, and a last request.
fn tool_body(format: Format, model: &str, rounds: usize) -> Vec<u8> {
    let output = |i: usize| format!("line {i} of the file: some words of output ").repeat(40);
    let body = match format {
        Format::Anthropic => {
            let mut messages = vec![json!({"role": "user", "content": "read the files"})];
            for i in 0..rounds {
                messages.push(json!({"role": "assistant", "content": [{"type": "tool_use",
                    "id": format!("t{i}"), "name": "read", "input": {"n": i}}]}));
                messages.push(json!({"role": "user", "content": [{"type": "tool_result",
                    "tool_use_id": format!("t{i}"), "content": output(i)}]}));
            }
            messages.push(json!({"role": "user", "content": "now summarise"}));
            json!({"model": model, "max_tokens": 1000, "system": "be brief", "messages": messages})
        }
        Format::Responses => {
            let mut input = vec![json!({"role": "user", "content": "read the files"})];
            for i in 0..rounds {
                input.push(json!({"type": "function_call", "call_id": format!("c{i}"),
                    "name": "read", "arguments": format!("{{\"n\": {i}}}")}));
                input.push(
                    json!({"type": "function_call_output", "call_id": format!("c{i}"),
                    "output": output(i)}),
                );
            }
            input.push(json!({"role": "user", "content": "now summarise"}));
            json!({"model": model, "instructions": "be brief", "input": input})
        }
        _ => {
            let mut contents = vec![json!({"role": "user", "parts": [{"text": "read the files"}]})];
            for i in 0..rounds {
                contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"n": i}}}]}));
                contents.push(
                    json!({"role": "user", "parts": [{"functionResponse": {"name": "read",
                    "response": {"output": output(i)}}}]}),
                );
            }
            contents.push(json!({"role": "user", "parts": [{"text": "now summarise"}]}));
            json!({"contents": contents, "systemInstruction": {"parts": [{"text": "be brief"}]}})
        }
    };
    serde_json::to_vec(&body).unwrap()
}

/// The `tool_body` of the fewest rounds that holds at least `tokens` tokens as the library
/// counts them for `model`.
fn body_of(format: Format, model: &str, tokens: usize) -> Vec<u8> {
    let options = Options::for_model(model).unwrap();
    let count = |body: &[u8]| {
        options
            .count_body(&format::parse(body, Some(format)).unwrap())
            .total()
    };
    let per_round = count(&tool_body(format, model, 2)) - count(&tool_body(format, model, 1));
    let mut rounds = tokens / per_round;
    loop {
        let body = tool_body(format, model, rounds);
        if count(&body) >= tokens {
            return body;
        }
        rounds += 1;
    }
}

/// The ledger line of one request with `headers` through a proxy started with `args`.
fn through_proxy(args: &[&str], path: &str, headers: &[(&str, &str)], body: &[u8]) -> Value {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, args);
    let mut headers = headers.to_vec();
    headers.push(("content-type", "application/json"));
    assert_eq!(send(&proxy.addr, "POST", path, &headers, body).status, 200);
    proxy.ledger(1).remove(0)
}

// See: #31
#[test]
fn the_models_the_agents_send_and_unseen_names_of_their_families_get_a_window() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &[]);
    let cases: [(&str, Format, usize, &str); 11] = [
        ("claude-opus-5-5", Format::Anthropic, 1_000_000, "catalog"),
        (
            "claude-opus-5-7-20270101",
            Format::Anthropic,
            1_000_000,
            "family",
        ),
        (
            "anthropic.claude-sonnet-5-1-v1:0",
            Format::Anthropic,
            1_000_000,
            "family",
        ),
        ("gpt-6.1-sol", Format::Responses, 272_000, "catalog"),
        ("gpt-6.2-codex", Format::Responses, 400_000, "family"),
        (
            "gemini-3.1-pro-preview",
            Format::Gemini,
            1_048_576,
            "catalog",
        ),
        (
            "gemini-3-flash-preview",
            Format::Gemini,
            1_048_576,
            "catalog",
        ),
        ("gemini-3.8-flash", Format::Gemini, 1_048_576, "catalog"),
        (
            "gemini-3.5-flash-lite",
            Format::Gemini,
            1_048_576,
            "catalog",
        ),
        (
            "gemini-4-flash-preview",
            Format::Gemini,
            1_048_576,
            "family",
        ),
        ("gemini-4-flash-lite", Format::Gemini, 1_048_576, "family"),
    ];
    for (model, format, _, _) in cases {
        let path = match format {
            Format::Anthropic => "/v1/messages".to_string(),
            Format::Responses => "/v1/responses".to_string(),
            _ => format!("/v1beta/models/{model}:generateContent"),
        };
        let body = tool_body(format, model, 2);
        assert_eq!(post(&proxy.addr, &path, &body).status, 200, "{model}");
    }
    let ledger = proxy.ledger(cases.len());
    for ((model, _, window, source), line) in cases.iter().zip(&ledger) {
        assert_eq!(line["model"], *model);
        assert_eq!(line["action"], "forwarded", "{line}");
        assert_eq!(
            (&line["window"], &line["window_source"]),
            (&json!(window), &json!(source)),
            "{line}"
        );
    }
}

// See: #31
#[test]
fn a_model_of_no_known_family_fails_open_and_is_named_once_per_process() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &[]);
    for model in ["foo-1", "foo-1", "foo-1", "bar-2"] {
        let body = tool_body(Format::Anthropic, model, 1);
        assert_eq!(post(&proxy.addr, "/v1/messages", &body).status, 200);
    }
    let ledger = proxy.ledger(4);
    for line in &ledger {
        assert_eq!(line["action"], "failed_open", "{line}");
        assert!(
            line["reason"]
                .as_str()
                .unwrap()
                .contains("no window is known"),
            "{line}"
        );
        assert!(line.get("window").is_none_or(Value::is_null), "{line}");
    }
    let stderr = proxy.stderr_holding("`bar-2`");
    let named: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("unknown model"))
        .collect();
    assert_eq!(named.len(), 2, "{stderr}");
    assert!(
        named[0].contains("`foo-1`") && named[1].contains("`bar-2`"),
        "{stderr}"
    );
    assert!(named.iter().all(|l| l.contains("--window")), "{stderr}");
}

/// Claude Code's, Codex's and Gemini CLI's request headers, as the pinned clients send them.
const CLAUDE_CODE: &[(&str, &str)] = &[
    ("user-agent", "claude-cli/2.1.328 (external, cli)"),
    ("x-app", "cli"),
];
const CODEX: &[(&str, &str)] = &[
    ("originator", "codex_cli_rs"),
    ("user-agent", "codex_cli_rs/0.169.0 (Linux; x86_64)"),
];
const GEMINI_CLI: &[(&str, &str)] = &[(
    "user-agent",
    "GeminiCLI/0.61.0/gemini-3.1-pro-preview (linux; x64; terminal)",
)];

// See: #31
#[test]
fn a_recognised_agent_is_compacted_below_its_own_compaction_point() {
    // With a 100,000-token window: Claude Code compacts itself at 67,000, so the proxy at
    // 62,000; Gemini CLI at 50,000, so the proxy at 45,000; both under the 70,000 of the
    // default trigger. A body between the two compacts only when the agent is recognised and
    // --trigger is not given.
    let window = ["--window", "100000"];
    let explicit = ["--window", "100000", "--trigger", "0.7"];
    let claude = body_of(Format::Anthropic, "claude-opus-5-5", 66_000);
    let gemini = body_of(Format::Gemini, "gemini-3.1-pro-preview", 57_000);
    let gemini_path = "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse";
    let line = through_proxy(&window, "/v1/messages", CLAUDE_CODE, &claude);
    assert_eq!(line["action"], "compacted", "{line}");
    assert_eq!(
        (&line["client"], &line["client_by"]),
        (&json!("claude-code"), &json!("user-agent header"))
    );
    assert_eq!(
        (&line["trigger"], &line["window"], &line["window_source"]),
        (&json!(62_000), &json!(100_000), &json!("flag"))
    );
    assert!(
        line["trigger_reason"]
            .as_str()
            .unwrap()
            .contains("window − 33,000 (67000)"),
        "{line}"
    );
    let line = through_proxy(&window, gemini_path, GEMINI_CLI, &gemini);
    assert_eq!(line["action"], "compacted", "{line}");
    assert_eq!(
        (&line["client"], &line["trigger"]),
        (&json!("gemini-cli"), &json!(45_000))
    );
    // --trigger given wins.
    for (path, headers, body) in [
        ("/v1/messages", CLAUDE_CODE, &claude),
        (gemini_path, GEMINI_CLI, &gemini),
    ] {
        let line = through_proxy(&explicit, path, headers, body);
        assert_eq!(
            (&line["action"], &line["trigger"]),
            (&json!("forwarded"), &json!(70_000)),
            "{line}"
        );
        assert!(
            line["trigger_reason"]
                .as_str()
                .unwrap()
                .starts_with("--trigger 0.7 given"),
            "{line}"
        );
    }
    // An agent not recognised keeps 70%.
    for (path, body) in [("/v1/messages", &claude), (gemini_path, &gemini)] {
        let line = through_proxy(&window, path, &[("user-agent", "curl/8")], body);
        assert_eq!(
            (&line["action"], &line["trigger"]),
            (&json!("forwarded"), &json!(70_000)),
            "{line}"
        );
        assert!(line.get("client").is_none(), "{line}");
    }
}

// See: #31
#[test]
fn codex_is_recognised_and_its_ninety_percent_leaves_the_default_trigger_below_it() {
    // Codex compacts itself at 90,000 of 100,000: 85,000 less the margin is above the
    // default 70,000, which stays. A body between the two compacts; with --trigger 0.9 given
    // (above Codex's own point) it does not.
    let body = body_of(Format::Responses, "gpt-6.1-sol", 77_000);
    let line = through_proxy(&["--window", "100000"], "/v1/responses", CODEX, &body);
    assert_eq!(line["action"], "compacted", "{line}");
    assert_eq!(
        (&line["client"], &line["client_by"], &line["trigger"]),
        (&json!("codex"), &json!("originator header"), &json!(70_000))
    );
    let given = ["--window", "100000", "--trigger", "0.9"];
    let line = through_proxy(&given, "/v1/responses", CODEX, &body);
    assert_eq!(
        (&line["action"], &line["trigger"]),
        (&json!("forwarded"), &json!(90_000)),
        "{line}"
    );
    // Codex's body names it when its headers do not.
    let mut shaped: Value = serde_json::from_slice(&body).unwrap();
    shaped["client_metadata"] = json!({"x-codex-window-id": "w:0"});
    let line = through_proxy(
        &["--window", "100000"],
        "/v1/responses",
        &[],
        &serde_json::to_vec(&shaped).unwrap(),
    );
    assert_eq!(
        (&line["client"], &line["client_by"]),
        (&json!("codex"), &json!("body: client_metadata"))
    );
}

// ---------------------------------------------------------------------------------------------
// Metrics (issue 55).

/// The samples of a Prometheus text exposition, by name and labels, after checking its shape:
/// every family announced by `# HELP` then `# TYPE` before its samples, every name prefixed
/// `ctxcompact_`, every counter's name ending in `_total`, every value a number.
fn exposition_samples(text: &str) -> std::collections::BTreeMap<String, f64> {
    let mut samples = std::collections::BTreeMap::new();
    let mut families = std::collections::BTreeMap::<String, String>::new();
    let mut helped = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped = Some(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert_eq!(helped.as_deref(), Some(name), "TYPE without HELP: {line}");
            assert!(name.starts_with("ctxcompact_"), "{name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "{name}");
            }
            families.insert(name.to_string(), kind.to_string());
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let name = series.split('{').next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| {
                    name.strip_suffix(suffix)
                        .filter(|base| families.get(*base).is_some_and(|k| k == "histogram"))
                })
                .unwrap_or(name);
            assert!(
                families.contains_key(family),
                "a sample before its TYPE: {line}"
            );
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
            samples.insert(series.to_string(), value);
        }
    }
    samples
}

#[test]
#[allow(clippy::float_cmp)] // counts and sums of whole tokens, exact in an f64
fn metrics_are_prometheus_text_and_add_up_to_the_ledger() {
    let upstream = Upstream::start(scripted_answer);
    let proxy = Proxy::start(&upstream.origin, &["--window", "1000"]);
    let malformed = b"{\"model\": \"gpt-4o\", \"messages\": [".to_vec();
    let mut broken: Value = serde_json::from_slice(&big_chat_body()).unwrap();
    broken["messages"][2]["tool_call_id"] = json!("nobody");
    let bodies = [
        malformed,
        serde_json::to_vec(&broken).unwrap(),
        big_chat_body(),
    ];
    for body in &bodies {
        assert_eq!(post(&proxy.addr, "/v1/chat/completions", body).status, 200);
    }
    assert_eq!(send(&proxy.addr, "GET", "/v1/models", &[], b"").status, 200);
    let ledger = proxy.ledger(4);
    let answer = send(&proxy.addr, "GET", "/metrics", &[], b"");
    assert_eq!(answer.status, 200);
    assert_eq!(
        header(&answer.headers, "content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let samples = exposition_samples(&String::from_utf8(answer.body).unwrap());
    let sample = |series: &str| {
        *samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in {samples:?}"))
    };
    let count = |action: &str| ledger.iter().filter(|l| l["action"] == action).count() as f64;
    assert_eq!(count("failed_open"), 2.0);
    for (action, api) in [
        ("failed_open", "openai"),
        ("compacted", "openai"),
        ("passthrough", "other"),
    ] {
        let series = format!("ctxcompact_requests_total{{action=\"{action}\",api=\"{api}\"}}");
        assert_eq!(sample(&series), count(action), "{series}");
    }
    assert_eq!(
        sample("ctxcompact_failed_open_total{reason=\"not_json\"}"),
        1.0
    );
    assert_eq!(
        sample("ctxcompact_failed_open_total{reason=\"invalid\"}"),
        1.0
    );
    assert_eq!(ledger[0]["fail_open"], "not_json");
    let sum = |field: &str| {
        ledger
            .iter()
            .map(|l| l[field].as_u64().unwrap_or(0))
            .sum::<u64>() as f64
    };
    assert_eq!(
        sample("ctxcompact_received_tokens_total"),
        sum("tokens_received")
    );
    assert_eq!(
        sample("ctxcompact_forwarded_tokens_total"),
        sum("tokens_forwarded")
    );
    assert_eq!(
        sample("ctxcompact_saved_tokens_total"),
        sum("tokens_received") - sum("tokens_forwarded")
    );
    assert_eq!(
        sample("ctxcompact_compactions_total"),
        sum("compactions_run")
    );
    assert!(sample("ctxcompact_compactions_total") >= 1.0);
    assert_eq!(
        sample("ctxcompact_upstream_responses_total{class=\"2xx\"}"),
        4.0
    );
    assert_eq!(sample("ctxcompact_proxy_added_seconds_count"), 4.0);
    assert_eq!(
        sample("ctxcompact_proxy_added_seconds_bucket{le=\"+Inf\"}"),
        4.0
    );
    let added: f64 = ledger.iter().map(|l| l["proxy_ms"].as_f64().unwrap()).sum();
    assert!((sample("ctxcompact_proxy_added_seconds_sum") - added / 1000.0).abs() < 1e-6);
    // The totals as JSON are the same record's.
    let stats: Value =
        serde_json::from_slice(&send(&proxy.addr, "GET", "/ctxcompact/stats", &[], b"").body)
            .unwrap();
    assert_eq!(stats["requests"], 4);
    assert_eq!(stats["compactions"].as_f64(), Some(sum("compactions_run")));
}
