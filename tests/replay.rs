//! Replay over recorded sessions: the accounting adds up, and on the corpus `default` is valid
//! and cheaper than `naive` (issue 13).
