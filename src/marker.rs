//! The notes ctxcompact leaves where it removed or cleared something.
//!
//! Every note comes from one format here, starts with `[ctxcompact:` so a reader (or a later
//! run) can recognise it, and counts against the budget like any other text.

/// The note that stands where `messages` earlier messages of `tokens` tokens were removed.
pub(crate) fn removed(messages: usize, tokens: usize) -> String {
    let noun = if messages == 1 { "message" } else { "messages" };
    format!(
        "[ctxcompact: {} earlier {noun} ({} tokens) removed]",
        thousands(messages),
        thousands(tokens)
    )
}

/// The placeholder that replaces a cleared tool result's content.
pub(crate) fn cleared_output(tool: &str, tokens: usize) -> String {
    format!(
        "[ctxcompact: output of {tool} cleared ({} tokens)]",
        thousands(tokens)
    )
}

/// The line that stands for the middle of a capped tool output; `unit` is `lines` or
/// `characters`.
pub(crate) fn omitted(omitted: usize, total: usize, unit: &str) -> String {
    format!(
        "[… {} of {} {unit} omitted …]",
        thousands(omitted),
        thousands(total)
    )
}

/// `9812` → `9,812`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(
            removed(14, 9812),
            "[ctxcompact: 14 earlier messages (9,812 tokens) removed]"
        );
        assert_eq!(
            removed(1, 1_234_567),
            "[ctxcompact: 1 earlier message (1,234,567 tokens) removed]"
        );
        assert_eq!(
            cleared_output("read_file", 2431),
            "[ctxcompact: output of read_file cleared (2,431 tokens)]"
        );
        assert_eq!(
            omitted(100, 1000, "lines"),
            "[… 100 of 1,000 lines omitted …]"
        );
    }
}
