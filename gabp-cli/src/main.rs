//! `gabp`: the command line of gabp-rs.
//!
//! - `gabp validate [--method METHOD] PATH...` checks messages against the strict gabp/1 rules.
//! - `gabp demo` tours the protocol with the typed model and strict decoder.
//! - `gabp mod` serves the demo game, a 16x16x16 voxel world, as a GABP mod.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;
mod game;
mod serve_mod;
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
    /// Validate GABP messages strictly (files, directories or `-` for stdin).
    Validate(validate::ValidateArgs),
    /// Tour the protocol: build, encode and strictly check each kind of message.
    Demo,
    /// Serve the demo game (a 16x16x16 voxel world, one player) as a GABP mod on TCP, a Unix socket or stdio.
    #[command(after_long_help = serve_mod::EXAMPLES, after_help = serve_mod::EXAMPLES)]
    Mod(serve_mod::ModArgs),
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
        Command::Demo => ExitCode::from(demo::run(&mut stdout.lock())),
        Command::Mod(args) => ExitCode::from(serve_mod::run(&args)),
    }
}
