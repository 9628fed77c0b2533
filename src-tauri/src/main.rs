//! Mandato Desk, the desktop shell around the mandato engine. It holds no business logic: it
//! starts the engine in this process on a free loopback port, opens a window on the engine's
//! own staff UI already signed in as the owner (a single-use link from the engine, never a
//! password), shows the engine's state in the tray, keeps one instance per data directory,
//! restores the database from a backup when asked (restore.rs), and on quit lets the engine
//! finish its in-flight requests and work before the process exits.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod restore;
mod tray;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mandato::app::Running;
use mandato::clock::SystemClock;
use mandato::config::Config;
use tauri::{AppHandle, Manager, RunEvent, Url, WebviewUrl, WebviewWindowBuilder};

/// The engine's allocator, as in the `mandato` binary: freed memory goes back to the system.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The label of the one window.
const MAIN: &str = "main";

/// The engine while it runs; taken out (and shut down) when the app is asked to exit, and for
/// the time a restore swaps its database.
struct Engine {
    running: Mutex<Option<Running>>,
    data_dir: PathBuf,
    /// A restore is under way: the engine is away on purpose and comes back.
    restoring: AtomicBool,
    /// Quit was asked during a restore: the app quits once the engine is back.
    quit_after_restore: AtomicBool,
}

impl Engine {
    fn new(data_dir: PathBuf) -> Self {
        Self {
            running: Mutex::new(None),
            data_dir,
            restoring: AtomicBool::new(false),
            quit_after_restore: AtomicBool::new(false),
        }
    }

    fn take(&self) -> Option<Running> {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn put(&self, running: Running) {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) = Some(running);
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }
}

fn main() -> std::process::ExitCode {
    mandato::app::without_huge_pages();
    mandato::app::init_logging();
    match run() {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            tracing::error!("{e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<i32> {
    let launched = Instant::now();
    let data_dir = data_dir();
    // The engine's tasks and Tauri's share one runtime, which outlives the event loop so that
    // the engine's shutdown can finish on it.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mandato")
        .on_thread_park(mandato::app::release_idle_memory)
        .build()?;
    tauri::async_runtime::set(runtime.handle().clone());
    let instance = tauri_plugin_single_instance::Builder::new()
        .dbus_id(instance_id(&data_dir))
        .callback(|app, args, cwd| on_second_launch(app, args, &cwd))
        .build();
    let engine = Arc::new(Engine::new(data_dir));
    let started = Arc::clone(&engine);
    let app = tauri::Builder::default()
        // First, so that a second instance leaves before it touches the data.
        .plugin(instance)
        .plugin(tauri_plugin_dialog::init())
        .manage(Arc::clone(&engine))
        .setup(move |app| {
            setup(app, &started, launched)?;
            Ok(())
        })
        .build(tauri::generate_context!())?;
    let mut code = app.run_return(on_event);
    // Whatever ended the loop, the engine never stops without its graceful shutdown.
    if let Some(running) = engine.take() {
        if let Err(e) = runtime.block_on(running.shutdown()) {
            tracing::error!("engine shutdown: {e:#}");
            code = 1;
        } else {
            tracing::info!("engine stopped cleanly");
        }
    }
    tracing::info!(code, "Mandato Desk exits");
    Ok(code)
}

/// `--data-dir DIR`, else `MANDATO_DATA_DIR`, else the engine's own default (the platform's
/// data directory), so the `mandato` command line finds the same database.
fn data_dir() -> PathBuf {
    option_value(std::env::args_os().skip(1), "--data-dir")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("MANDATO_DATA_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(mandato::config::default_data_dir)
}

/// The value after `name` among the command line's arguments, if any.
fn option_value(
    args: impl IntoIterator<Item = impl Into<OsString>>,
    name: &str,
) -> Option<OsString> {
    let mut args = args.into_iter().map(Into::into);
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next();
        }
    }
    None
}

/// `mandato-desk --restore FILE`: the backup to restore, relative to where it was launched.
fn restore_argument(
    args: impl IntoIterator<Item = impl Into<OsString>>,
    cwd: &Path,
) -> Option<PathBuf> {
    option_value(args, "--restore").map(|file| cwd.join(file))
}

/// A second launch on the same data directory hands over to this instance: it shows the
/// window, and asks to restore the backup it names with `--restore FILE`.
fn on_second_launch(app: &AppHandle, args: Vec<String>, cwd: &str) {
    show_window(app);
    if let Some(backup) = restore_argument(args.into_iter().skip(1), Path::new(cwd)) {
        restore::confirm(app, backup);
    }
}

/// One instance per data directory: its D-Bus name (Linux) carries a digest of the path.
fn instance_id(data_dir: &std::path::Path) -> String {
    let absolute = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let digest = mandato::auth::api_key::hash_key(&absolute.to_string_lossy());
    format!("cl.mandato.desk.d{}", &digest[..16])
}

/// The machine's user, whose name the owner account takes on a first start.
fn local_user() -> String {
    ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "owner".into())
}

fn setup(app: &mut tauri::App, engine: &Engine, launched: Instant) -> anyhow::Result<()> {
    let (running, url) = tauri::async_runtime::block_on(start_engine(engine.data_dir()))?;
    let base = running.base_url();
    engine.put(running);
    tray::create(app.handle(), &format!("running at {base}"))?;
    let window = WebviewWindowBuilder::new(app, MAIN, WebviewUrl::External(url))
        .title("Mandato Desk")
        .inner_size(1280.0, 800.0)
        .min_inner_size(900.0, 600.0)
        .build()?;
    close_with_page(&window)?;
    watch_signals(app.handle().clone());
    tracing::info!(
        url = %base,
        ms = launched.elapsed().as_millis() as u64,
        "Mandato Desk is up; its window opens signed in"
    );
    if let Some(backup) = restore_argument(std::env::args_os().skip(1), &std::env::current_dir()?) {
        restore::confirm(app.handle(), backup);
    }
    Ok(())
}

/// Starts the engine on the data directory, on a free loopback port, and answers it with the
/// single-use link that signs the window in as the machine's user.
async fn start_engine(data_dir: &Path) -> anyhow::Result<(Running, Url)> {
    std::fs::create_dir_all(data_dir)?;
    tracing::info!(data_dir = %data_dir.display(), "starting the engine");
    let mut config = Config::new(data_dir.to_path_buf());
    config.listen = "127.0.0.1:0".parse()?;
    let running = mandato::app::start(config, Arc::new(SystemClock)).await?;
    let link = mandato::http::admin::desk::sign_in_path(&running.state, &local_user())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let url = format!("{}{}", running.base_url(), link.expose()).parse()?;
    Ok((running, url))
}

/// When the page itself is closed (WebDriver's Close Window, a script's `window.close()`),
/// WebKitGTK drops the view and leaves an empty window; the window then closes too, as if the
/// user had closed it. (The view's own `close` signal cannot be used: the view is destroyed in
/// an earlier handler of that signal, which disconnects the later ones.)
#[cfg(target_os = "linux")]
fn close_with_page(window: &tauri::WebviewWindow) -> tauri::Result<()> {
    let closing = window.clone();
    window.with_webview(move |webview| {
        use gtk::prelude::WidgetExt;
        webview.inner().connect_destroy(move |_| {
            // Also runs when the window closes first; closing it again is then a no-op.
            let _ = closing.close();
        });
    })
}

#[cfg(not(target_os = "linux"))]
fn close_with_page(_window: &tauri::WebviewWindow) -> tauri::Result<()> {
    Ok(())
}

/// Ctrl-C or SIGTERM quit like the tray's Quit: through the graceful shutdown.
fn watch_signals(app: AppHandle) {
    tauri::async_runtime::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            tokio::select! {
                _ = ctrl_c => {},
                _ = term.recv() => {},
            }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("signal received: quitting");
        app.exit(0);
    });
}

pub(crate) fn show_window(app: &AppHandle) {
    if let Some(window) = app.get_webview_window(MAIN) {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

fn on_event(app: &AppHandle, event: RunEvent) {
    if let RunEvent::ExitRequested { api, .. } = event {
        // During a restore the engine is away for a moment: quit when it is back.
        if let Some(engine) = app.try_state::<Arc<Engine>>()
            && engine.restoring.load(Ordering::SeqCst)
        {
            engine.quit_after_restore.store(true, Ordering::SeqCst);
            api.prevent_exit();
            return;
        }
        // Closing the window or Quit: hold the exit until the engine has stopped, then exit
        // again (the engine is gone by then, so that second request goes through).
        let Some(running) = take_engine(app) else {
            return;
        };
        api.prevent_exit();
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            let code = stop_engine_with(&app, running).await;
            app.exit(code);
        });
    }
}

fn take_engine(app: &AppHandle) -> Option<Running> {
    app.try_state::<Arc<Engine>>()
        .and_then(|engine| engine.take())
}

async fn stop_engine_with(app: &AppHandle, running: Running) -> i32 {
    tray::show_state(app, "stopping: finishing in-flight work");
    tracing::info!("shutting down: finishing in-flight requests and work");
    let code = match running.shutdown().await {
        Ok(()) => {
            tracing::info!("engine stopped cleanly");
            0
        }
        Err(e) => {
            tracing::error!("engine shutdown: {e:#}");
            1
        }
    };
    tray::show_state(app, "stopped");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_takes_the_argument_after_it() {
        let args = ["--data-dir", "/srv/mandato", "--restore", "copy.db"];
        assert_eq!(
            option_value(args, "--data-dir"),
            Some(OsString::from("/srv/mandato"))
        );
        assert_eq!(option_value(args, "--restore"), Some("copy.db".into()));
        assert_eq!(option_value(["--data-dir"], "--data-dir"), None);
        assert_eq!(option_value(["copy.db"], "--restore"), None);
    }

    #[test]
    fn a_restore_file_is_taken_from_where_the_app_was_launched() {
        let cwd = Path::new("/home/ana");
        assert_eq!(
            restore_argument(["--restore", "backups/copy.db"], cwd),
            Some(PathBuf::from("/home/ana/backups/copy.db"))
        );
        assert_eq!(
            restore_argument(["--restore", "/tmp/copy.db"], cwd),
            Some(PathBuf::from("/tmp/copy.db"))
        );
        assert_eq!(restore_argument(["--data-dir", "/srv"], cwd), None);
    }
}
