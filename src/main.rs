//! The `mandato` binary: parse, set up logging, run.

use mandato::cli::{Cli, Command};

/// mimalloc gives freed memory back to the system, so a burst (many sign-ins at once, large
/// uploads) does not leave the process at its peak size for good, as glibc's allocator did.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    mandato::app::without_huge_pages();
    mandato::app::init_logging();
    // With --json, a usage error is a JSON error too.
    let cli: Cli = mandato::cli::parse();
    let json_mode = cli.json;
    let result = match cli.command {
        Command::Serve(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .on_thread_park(mandato::app::release_idle_memory)
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|rt| {
                rt.block_on(mandato::cli::serve(
                    cli.data_dir,
                    cli.database_url,
                    cli.postgres,
                    args,
                ))
            }),
        _ => mandato::cli::run_admin(cli),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => mandato::cli::report(json_mode, &e),
    }
}
