//! `ctxcompact wrap -- AGENT`: small shell scripts stand for the agent. Its exit status (or
//! 128 + a signal's number) comes back, a program that is missing or cannot run gets 127 or
//! 126, an agent wrap does not know gets a usage error, the preset's variable or flag reaches
//! the agent, and the proxy's port is closed once `wrap` has exited (issue 55).

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The longest a test waits for `wrap` to exit.
const PATIENCE: Duration = Duration::from_secs(30);

/// A fresh folder for one test, removed with everything in it when dropped.
struct Folder(PathBuf);

impl std::ops::Deref for Folder {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn folder(name: &str) -> Folder {
    let dir = std::env::temp_dir().join(format!(
        "ctxcompact-wrap-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Folder(dir)
}

/// An executable shell script `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `ctxcompact wrap` with `args`, its ledger in `dir` unless given, and the state and cache
/// folders there too (never the user's).
fn wrap(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxcompact"));
    command
        .arg("wrap")
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs `command` to its end, within `PATIENCE`.
fn finish(command: &mut Command) -> Output {
    let mut child = command.spawn().unwrap();
    let deadline = Instant::now() + PATIENCE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("wrap did not exit within {PATIENCE:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The address the agent was given in `file` (a URL), which must no longer accept connections.
fn assert_closed(file: &Path) {
    let url = std::fs::read_to_string(file).unwrap();
    let address = url
        .trim()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    assert!(address.starts_with("127.0.0.1:"), "{url}");
    assert!(
        TcpStream::connect(&address).is_err(),
        "the proxy still listens on {address}"
    );
}

#[test]
fn the_agents_exit_status_comes_back_and_the_proxy_is_gone() {
    let dir = folder("status");
    let agent = script(
        &dir,
        "agent",
        &format!("echo \"$AGENT_URL\" > {}/url\nexit 3", dir.display()),
    );
    let output = finish(wrap(&dir).args(["--env", "AGENT_URL", "--"]).arg(&agent));
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].contains("via AGENT_URL; ledger "), "{stderr}");
    assert!(
        lines[0].contains("state/ctxcompact/ledger.jsonl"),
        "{stderr}"
    );
    assert_eq!(
        lines[1],
        "ctxcompact wrap: requests 0, compactions 0, tokens saved 0"
    );
    assert_closed(&dir.join("url"));
}

#[test]
fn an_agent_killed_by_a_signal_gives_128_plus_its_number() {
    let dir = folder("killed");
    let agent = script(
        &dir,
        "agent",
        &format!("echo \"$AGENT_URL\" > {}/url\nkill -TERM $$", dir.display()),
    );
    let output = finish(wrap(&dir).args(["--env", "AGENT_URL", "--"]).arg(&agent));
    assert_eq!(output.status.code(), Some(128 + 15));
    assert_closed(&dir.join("url"));
}

#[test]
fn a_signal_sent_to_wrap_reaches_the_agent() {
    let dir = folder("forward");
    let ready = dir.join("ready");
    let agent = script(
        &dir,
        "agent",
        &format!(
            "trap 'exit 7' TERM\necho \"$AGENT_URL\" > {}\nwhile :; do sleep 0.05; done",
            ready.display()
        ),
    );
    let mut child = wrap(&dir)
        .args(["--env", "AGENT_URL", "--"])
        .arg(&agent)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !std::fs::read_to_string(&ready).is_ok_and(|url| url.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the agent never started");
        thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "wrap did not exit");
        thread::sleep(Duration::from_millis(20));
    }
    // The agent's own answer to the signal, not wrap's death by it.
    assert_eq!(child.wait().unwrap().code(), Some(7));
    assert_closed(&ready);
}

#[test]
fn a_program_missing_or_not_executable_gets_127_or_126() {
    let dir = folder("missing");
    let missing = finish(
        wrap(&dir)
            .args(["--env", "X", "--"])
            .arg(dir.join("nothing")),
    );
    assert_eq!(missing.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("nothing: cannot run it"), "{stderr}");
    let text = dir.join("text");
    std::fs::write(&text, "not a program").unwrap();
    let not_executable = finish(wrap(&dir).args(["--env", "X", "--"]).arg(&text));
    assert_eq!(not_executable.status.code(), Some(126));
}

#[test]
fn an_agent_wrap_does_not_know_is_a_usage_error_naming_the_presets_and_flags() {
    let dir = folder("unknown");
    let agent = script(&dir, "my-agent", "exit 0");
    let output = finish(wrap(&dir).arg("--").arg(&agent));
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for named in [
        "claude",
        "codex",
        "gemini",
        "opencode",
        "qwen",
        "aider",
        "--env",
        "--upstream",
    ] {
        assert!(stderr.contains(named), "{named} in {stderr}");
    }
    assert!(!dir.join("state").exists(), "nothing is written");
}

#[test]
fn a_preset_is_known_by_its_file_name_and_its_variable_or_flag_reaches_the_agent() {
    let dir = folder("presets");
    let claude = script(
        &dir,
        "claude-2.1",
        &format!("echo \"$ANTHROPIC_BASE_URL\" > {}/url", dir.display()),
    );
    let output = finish(wrap(&dir).arg("--").arg(&claude));
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Claude Code through the proxy"), "{stderr}");
    assert_closed(&dir.join("url"));
    let codex = script(
        &dir,
        "codex",
        &format!("echo \"$@\" > {}/args", dir.display()),
    );
    let output = finish(wrap(&dir).arg("--").arg(&codex).args(["exec", "hi"]));
    assert!(output.status.success());
    let args = std::fs::read_to_string(dir.join("args")).unwrap();
    assert!(
        args.starts_with("-c openai_base_url=\"http://127.0.0.1:")
            && args.ends_with("/v1\" exec hi\n"),
        "{args}"
    );
}

#[test]
fn a_request_of_the_agent_goes_through_the_proxy_to_the_upstream_given() {
    let dir = folder("request");
    // The upstream: a listener answering one request with a small JSON body.
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", upstream.local_addr().unwrap());
    let answered = thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        let (stream, _) = upstream.accept().unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        let mut stream = stream;
        let body = "{\"ok\": true}";
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        first
    });
    // The agent: one GET through the proxy, by bash's own sockets.
    let agent = dir.join("agent");
    std::fs::write(
        &agent,
        "#!/bin/bash\nhostport=${AGENT_URL#http://}\nexec 3<>/dev/tcp/${hostport%:*}/${hostport#*:}\nprintf 'GET /v1/models HTTP/1.1\\r\\nhost: x\\r\\nconnection: close\\r\\n\\r\\n' >&3\ncat <&3\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ledger = dir.join("ledger.jsonl");
    let output = finish(
        wrap(&dir)
            .args(["--env", "AGENT_URL", "--upstream", &origin, "--ledger"])
            .arg(&ledger)
            .arg("--")
            .arg(&agent),
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("{\"ok\": true}"));
    assert_eq!(answered.join().unwrap(), "GET /v1/models HTTP/1.1\r\n");
    let lines = std::fs::read_to_string(&ledger).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"path\":\"/v1/models\""), "{lines}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.ends_with("requests 1, compactions 0, tokens saved 0\n"),
        "{stderr}"
    );
}
