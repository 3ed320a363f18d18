//! The `ctxcompact` command line: each subcommand's arguments to the library and back to bytes
//! (one module per subcommand); errors to exit codes.

mod analyze;
mod archive_dir;
mod args;
mod bench;
mod calibrate;
mod compact;
mod count;
mod files;
mod flags;
mod input;
mod mcp;
mod output;
#[cfg(feature = "proxy")]
mod presets;
#[cfg(feature = "proxy")]
mod proxy;
mod replay;
mod trim_tools;
mod validate;
#[cfg(feature = "proxy")]
mod wrap;

use std::io;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use args::{Cli, Command};
use output::{EXIT_BAD_INPUT, EXIT_CANNOT_FIT, say};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            say(&format!("ctxcompact: error: {err:#}"));
            let cannot_fit = err
                .downcast_ref::<ctxcompact::Error>()
                .is_some_and(ctxcompact::Error::is_cannot_fit);
            ExitCode::from(if cannot_fit {
                EXIT_CANNOT_FIT
            } else {
                EXIT_BAD_INPUT
            })
        }
    }
}

/// Whether the error is a closed standard output (`ctxcompact … | head`): not a failure.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Runs the subcommand.
fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Compact(args) => compact::run(args),
        Command::TrimTools(args) => trim_tools::run(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Count(args) => count::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Mcp(args) => mcp::run(&args).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "proxy")]
        Command::Proxy(args) => proxy::run(&args).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "proxy")]
        Command::Wrap(args) => wrap::run(&args),
    }
}
