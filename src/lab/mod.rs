//! The lab: measurements over recorded and generated conversations, for the CLI's `bench`,
//! `replay` and `calibrate` commands.
//!
//! Not part of the engine: nothing in the engine imports it, it sits above every engine layer,
//! and it is the one place that reads the clock (the bench's timings, which never influence an
//! output). It is compiled only with the `lab` feature, which the `cli` feature turns on, and is
//! not part of the library's stable API.
//!
//! It uses the engine as a caller does, through the crate's public items (`compact`, `Options`,
//! `Session`, `Counts`…); beyond them it reads only what a measurement needs and a caller has no
//! use for, each a crate-visible function of the module that owns the concept: who wrote a
//! message (`classify`), the paths and errors in calls and results (`evidence`), the efficiency
//! score (`select`), prices (`cost`), a span's marker (`digest`, `note`), the compaction kinds
//! `replay` compares (`session`) and the counter's pieces that calibration fits (`tokens`).

pub mod bench;
pub mod calibrate;
pub mod next;
mod recall;
mod references;
pub mod replay;

pub use recall::{first_chars, searchable};
