//! The lab: measurements over recorded and generated conversations, for the CLI's `bench`,
//! `replay` and `calibrate` commands.
//!
//! Not part of the engine: nothing in the engine imports it, it sits above every engine layer,
//! and it is the one place that reads the clock (the bench's timings, which never influence an
//! output). It is compiled only with the `lab` feature, which the `cli` feature turns on, and is
//! not part of the library's stable API.

pub mod bench;
pub mod calibrate;
pub mod next;
mod recall;
mod references;
pub mod replay;

pub use recall::{first_chars, searchable};
