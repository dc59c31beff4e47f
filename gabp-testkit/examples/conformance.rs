//! Runs the live conformance suite against a mod and prints one line per check, as `gabp conformance` does.
//!
//! ```text
//! cargo run -p gabp-testkit --example conformance -- --connect tcp://127.0.0.1:4711 --token TOKEN
//! cargo run -p gabp-testkit --example conformance -- --spawn gabp mod --stdio
//! cargo run -p gabp-testkit --example conformance            # the in-memory mock
//! ```
//!
//! With `--spawn`, the token (from `--token`, `GABP_TOKEN`, or a fresh one) reaches each child in
//! `GABP_TOKEN`. Exits 0 only when no check failed.

use std::process::ExitCode;

use gabp_testkit::conformance::{self, Options, Target};
use gabp_testkit::MockMod;
use gabp_transport::{Endpoint, Token};

fn usage() -> ExitCode {
    eprintln!("usage: conformance [--connect ENDPOINT] [--token TOKEN] [--spawn PROGRAM ARGS...]");
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut endpoint, mut token, mut spawn) = (None, None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--connect" => endpoint = args.next(),
            "--token" => token = args.next(),
            "--spawn" => spawn = Some(args.by_ref().collect::<Vec<_>>()),
            _ => return usage(),
        }
    }
    let token = token.or_else(|| std::env::var(gabp_transport::GABP_TOKEN).ok());
    let token = match token.map(Token::new).unwrap_or_else(Token::generate) {
        Ok(token) => token,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mock;
    let target = match (endpoint, spawn) {
        (Some(endpoint), None) => match endpoint.parse::<Endpoint>() {
            Ok(endpoint) => Target::endpoint(endpoint, token),
            Err(e) => {
                eprintln!("error: --connect: {e}");
                return ExitCode::from(2);
            }
        },
        (None, Some(command)) => {
            let Some((program, rest)) = command.split_first() else {
                return usage();
            };
            Target::spawn(program, rest, token)
        }
        (None, None) => {
            mock = match MockMod::demo() {
                Ok(mock) => mock,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
            mock.conformance_target()
        }
        (Some(_), Some(_)) => return usage(),
    };
    eprintln!("testing {target}");
    let report =
        conformance::run_with(&target, &Options::default(), |check| println!("{check}")).await;
    println!("{}", report.summary());
    if report.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
