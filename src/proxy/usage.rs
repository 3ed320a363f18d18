//! The usage a provider reports for a call, read from its response as the bytes stream by:
//! Anthropic's, OpenAI Chat's, Responses' and Gemini's shapes, in a JSON body or in SSE events.

use serde::Serialize;
use serde_json::Value;

/// The input and output sizes a provider reported for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[allow(clippy::struct_field_names)] // the providers' own field names
pub(crate) struct Usage {
    /// Uncached input tokens.
    pub(crate) input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub(crate) cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic).
    pub(crate) cache_creation_input_tokens: u64,
    /// Output tokens.
    pub(crate) output_tokens: u64,
}

impl Usage {
    /// Reads a usage object of Anthropic's, OpenAI Chat's, Responses' or Gemini's shape,
    /// merging it into what was read before (a stream reports input and output in different
    /// events).
    fn merge(&mut self, usage: &Value) {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        let cached = usage
            .get("input_tokens_details")
            .or_else(|| usage.get("prompt_tokens_details"))
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64)
            .or_else(|| field("cachedContentTokenCount"));
        if let Some(read) = field("cache_read_input_tokens") {
            self.cache_read_input_tokens = read;
        }
        if let Some(created) = field("cache_creation_input_tokens") {
            self.cache_creation_input_tokens = created;
        }
        // OpenAI and Gemini count cached tokens inside the input; Anthropic apart from it.
        if let Some(input) = field("input_tokens")
            .or_else(|| field("prompt_tokens"))
            .or_else(|| field("promptTokenCount"))
        {
            match cached {
                Some(cached) => {
                    self.cache_read_input_tokens = cached;
                    self.input_tokens = input.saturating_sub(cached);
                }
                None => self.input_tokens = input,
            }
        }
        if let Some(output) = field("output_tokens")
            .or_else(|| field("completion_tokens"))
            .or_else(|| field("candidatesTokenCount"))
        {
            self.output_tokens = output;
        }
    }

    /// Every input token the call was billed for, cached or not.
    pub(crate) fn total_input(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }
}

/// Finds usage in a response's bytes as they pass: in each SSE `data:` line, or in a JSON
/// body whole (up to a cap, past which usage is not read).
#[derive(Debug, Default)]
pub(crate) struct UsageScanner {
    line: Vec<u8>,
    whole: Vec<u8>,
    is_sse: bool,
    overflowed: bool,
    usage: Option<Usage>,
}

/// The longest line, or JSON body, the scanner keeps to look for usage in.
const SCAN_CAP: usize = 4 << 20;

impl UsageScanner {
    /// A scanner for a response whose content type is `content_type`.
    pub(crate) fn new(content_type: &str) -> Self {
        Self {
            is_sse: content_type.starts_with("text/event-stream"),
            ..Self::default()
        }
    }

    /// Looks at the next chunk of the body.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if self.overflowed {
            return;
        }
        if !self.is_sse {
            if self.whole.len() + chunk.len() > SCAN_CAP {
                self.overflowed = true;
                self.whole = Vec::new();
            } else {
                self.whole.extend_from_slice(chunk);
            }
            return;
        }
        let mut rest = chunk;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..at]);
            let line = std::mem::take(&mut self.line);
            self.read_line(&line);
            rest = &rest[at + 1..];
        }
        if self.line.len() + rest.len() > SCAN_CAP {
            self.line.clear();
        } else {
            self.line.extend_from_slice(rest);
        }
    }

    fn read_line(&mut self, line: &[u8]) {
        let Some(data) = line.strip_prefix(b"data:") else {
            return;
        };
        if let Ok(event) = serde_json::from_slice::<Value>(data.trim_ascii()) {
            self.read_event(&event);
        }
    }

    fn read_event(&mut self, event: &Value) {
        let places = [
            event.get("usage"),
            event.get("message").and_then(|m| m.get("usage")),
            event.get("response").and_then(|r| r.get("usage")),
            event.get("usageMetadata"),
        ];
        for usage in places.into_iter().flatten() {
            if usage.is_object() {
                self.usage.get_or_insert_with(Usage::default).merge(usage);
            }
        }
    }

    /// The usage found, once the body has ended.
    pub(crate) fn finish(mut self) -> Option<Usage> {
        if !self.is_sse && !self.whole.is_empty() {
            let whole = std::mem::take(&mut self.whole);
            if let Ok(body) = serde_json::from_slice::<Value>(&whole) {
                self.read_event(&body);
            }
        } else if self.is_sse && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.read_line(&line);
        }
        self.usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_from_anthropic_and_openai_streams_and_bodies() {
        let mut sse = UsageScanner::new("text/event-stream; charset=utf-8");
        sse.feed(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":200,\"cache_creation_input_tokens\":30,\"output_tokens\":1}}}\n\nevent: message_delta\nda");
        sse.feed(b"ta: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n");
        let usage = sse.finish().unwrap();
        assert_eq!(usage.total_input(), 240);
        assert_eq!(usage.output_tokens, 42);
        let mut json = UsageScanner::new("application/json");
        json.feed(br#"{"usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60}, "output_tokens": 5}}"#);
        let usage = json.finish().unwrap();
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_input_tokens,
                usage.total_input()
            ),
            (40, 60, 100)
        );
    }
}
