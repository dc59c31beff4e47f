//! `gabp`: the command line of gabp-rs.
//!
//! - `gabp demo` tours the protocol: the demo game in-process and a bridge talking to it.
//! - `gabp call`, `gabp tools` and `gabp tail` talk to any mod; `gabp conformance` runs the live conformance
//!   suite against one; `gabp bench` measures one (or, with `--self`, the demo game against a raw echo).
//! - `gabp mod` serves the demo game, a 16x16x16 voxel world, as a GABP mod.
//! - `gabp inspect` serves a web page that shows a mod and calls its tools.
//! - `gabp validate [--method METHOD] PATH...` checks messages against the strict gabp/1 rules.
//! - `gabp mcp` serves the configured games to AI agents over MCP, as GABS does.
//! - `gabp record` records sessions between bridges and a mod; `gabp replay` replays one as a mod or as the
//!   bridge (SPEC/1.0 recording.md).
//!
//! Layering: the top of the workspace, a thin shell over the library crates (`gabp-session` for the bridge
//! and the server, `gabp-testkit` for conformance, `gabp-demo`, `gabp-mcp`, `gabp-record`); whatever it does,
//! a program can do with them.
//!
//! ```text
//! cargo install gabp-cli
//! gabp demo                               # the tour
//! gabp mod                                # terminal 1: the demo game; writes bridge.json
//! gabp call demo/echo '{"value":1}'       # terminal 2: found through bridge.json
//! gabp conformance --spawn 'gabp mod --stdio'
//! ```
#![forbid(unsafe_code)]
// Doc comments are clap help text, where `[::1]` is an address, not a link.
#![allow(rustdoc::broken_intra_doc_links)]

use std::future::Future;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod call;
mod call_args;
mod call_content;
mod conformance;
mod demo;
mod inspect;
mod mcp;
mod record;
mod replay;
mod serve_mod;
mod signals;
mod tail;
mod target;
mod terminal;
#[cfg(test)]
mod test_env;
mod tools;
mod validate;

/// The command line of gabp-rs, the Rust implementation of the Game Agent Bridge Protocol.
#[derive(Debug, Parser)]
#[command(name = "gabp", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Tour the protocol: the demo game in-process on loopback TCP, and a bridge talking to it.
    #[command(after_help = demo::EXAMPLES)]
    Demo,
    /// Make one request to a mod and print the result as JSON.
    #[command(after_help = call::EXAMPLES)]
    Call(call::CallArgs),
    /// List a mod's tools as a table.
    #[command(after_help = tools::EXAMPLES)]
    Tools(tools::ToolsArgs),
    /// Follow event channels of a mod, one JSON line per event.
    #[command(after_help = tail::EXAMPLES)]
    Tail(tail::TailArgs),
    /// Serve a web page that shows a mod and calls its tools (on loopback, behind a secret URL).
    #[command(after_help = inspect::EXAMPLES)]
    Inspect(inspect::InspectArgs),
    /// Run the live conformance suite against a mod.
    #[command(after_help = conformance::EXAMPLES)]
    Conformance(conformance::ConformanceArgs),
    /// Measure call latency and throughput of a mod (or, with --self, of the demo game against a raw echo).
    #[command(after_help = bench::EXAMPLES)]
    Bench(bench::BenchArgs),
    /// Serve the demo game (a 16x16x16 voxel world, one player) as a GABP mod on TCP, a Unix socket or stdio.
    #[command(after_long_help = serve_mod::EXAMPLES, after_help = serve_mod::EXAMPLES)]
    Mod(serve_mod::ModArgs),
    /// Validate GABP messages strictly (files, directories or `-` for stdin).
    Validate(validate::ValidateArgs),
    /// Serve the configured games to AI agents over MCP (stdio, or streamable HTTP): a drop-in for GABS.
    #[command(after_help = mcp::EXAMPLES)]
    Mcp(mcp::McpArgs),
    /// Record every session between bridges and a mod: a transparent proxy that writes JSON Lines.
    #[command(after_help = record::EXAMPLES)]
    Record(record::RecordArgs),
    /// Replay a recording: as a mod (--as-mod), or as the bridge against a live mod (--as-bridge).
    #[command(after_help = replay::EXAMPLES)]
    Replay(replay::ReplayArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    match cli.command {
        Command::Validate(args) => {
            let outcome = validate::run(
                &args,
                &mut std::io::stdin().lock(),
                &mut stdout.lock(),
                &mut stderr.lock(),
            );
            ExitCode::from(outcome.code())
        }
        Command::Mod(args) => ExitCode::from(serve_mod::run(&args)),
        Command::Mcp(args) => ExitCode::from(mcp::run(&args)),
        Command::Record(args) => ExitCode::from(record::run(&args)),
        Command::Replay(args) => ExitCode::from(replay::run(&args)),
        Command::Demo => client(async { demo::run(&mut std::io::stdout().lock()).await }),
        Command::Call(args) => {
            match block_on(async move {
                call::run(&args, &mut std::io::stdout(), &mut std::io::stderr()).await
            }) {
                Ok(code) => ExitCode::from(code),
                Err(e) => fail(&e),
            }
        }
        Command::Tools(args) => {
            client(async move { tools::run(&args, &mut std::io::stdout()).await })
        }
        Command::Tail(args) => {
            client(
                async move { tail::run(&args, &mut std::io::stdout(), &mut std::io::stderr()).await },
            )
        }
        Command::Inspect(args) => {
            client(async move { inspect::run(&args, &mut std::io::stdout()).await })
        }
        Command::Bench(args) => {
            client(async move { bench::run(&args, &mut std::io::stdout()).await })
        }
        Command::Conformance(args) => {
            match block_on(async move { conformance::run(&args, &mut std::io::stdout()).await }) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => fail(&e),
            }
        }
    }
}

/// Runs a client command: exit 0 on success, else its error as one line on stderr and exit 1.
fn client(command: impl Future<Output = Result<(), String>>) -> ExitCode {
    match block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(error: &str) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error: {error}");
    ExitCode::from(1)
}

/// Logs to stderr only (stdout may carry frames or MCP), at `default` unless `RUST_LOG` says otherwise.
pub(crate) fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Runs `command` on a fresh multi-threaded runtime.
pub(crate) fn block_on<T>(command: impl Future<Output = Result<T, String>>) -> Result<T, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let outcome = runtime.block_on(command);
    // A spawned mod's stderr reader or a stdin read may still be parked: do not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    outcome
}
