//! The `mandato` binary: parse, set up logging, run.

use clap::Parser;
use mandato::cli::{Cli, Command};

/// mimalloc gives freed memory back to the system, so a burst (many sign-ins at once, large
/// uploads) does not leave the process at its peak size for good, as glibc's allocator did.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    mandato::app::init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(mandato::cli::serve(cli.data_dir, args))),
        _ => mandato::cli::run_admin(cli),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
