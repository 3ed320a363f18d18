//! Scratch: not committed.
use ctxcompact::calibrate::SessionLog;
use ctxcompact::{Part, Tokenizer};
use serde_json::{json, Value};

fn unesc(v: &Value, out: &mut String) {
    match v {
        Value::String(t) => { out.push_str(t); out.push('\n'); }
        Value::Array(a) => a.iter().for_each(|x| unesc(x, out)),
        Value::Object(m) => for (k, x) in m { out.push_str(k); out.push('\n'); unesc(x, out); },
        o => { out.push_str(&o.to_string()); out.push('\n'); }
    }
}

fn parts(ps: &[Part], acc: &mut [usize; 8], in_result: bool) {
    // 0 text, 1 call args(unesc), 2 result text, 3 thinking, 4 args as JSON, 5 n calls, 6 n results, 7 images
    let o = Tokenizer::O200k.counter();
    for p in ps {
        match p {
            Part::Text { text, .. } => { let n = o.count_text(text); if in_result { acc[2] += n } else { acc[0] += n } }
            Part::ToolCall { name, arguments, .. } => { let mut s = String::new(); unesc(arguments, &mut s); acc[1] += o.count_text(&s) + o.count_text(name); acc[4] += o.count_text(&arguments.to_string()) + o.count_text(name); acc[5] += 1; }
            Part::ToolResult { content, .. } => { acc[6] += 1; parts(content, acc, true); }
            Part::Opaque(v) => {
                let t = v.get("type").and_then(Value::as_str).unwrap_or("");
                if t == "thinking" { acc[3] += o.count_text(v.get("thinking").and_then(Value::as_str).unwrap_or("")); }
                else if t == "image" || t == "document" { acc[7] += 1; }
            }
        }
    }
}

fn main() {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(log) = SessionLog::read(&path, &bytes) else { eprintln!("skip {path}"); continue };
        if log.usages.is_empty() { continue; }
        let msgs: Vec<Value> = log.conversation.messages.iter().map(|m| {
            let mut acc = [0usize; 8];
            parts(&m.parts, &mut acc, false);
            json!({"role": m.role.as_str(), "acc": acc})
        }).collect();
        let usages: Vec<Value> = log.usages.iter().map(|u| json!({"m": u.message, "t": u.input_tokens, "model": u.model, "line": u.line})).collect();
        println!("{}", json!({"file": path, "msgs": msgs, "usages": usages}));
    }
}
