//! "Restaurar desde una copia…": puts a backup in place of the database from the desktop app.
//!
//! The owner picks the file in a native dialog opened on the backups directory (or names it
//! with `mandato-desk --restore FILE`) and confirms. Then the engine stops gracefully, the same
//! `mandato::backups::restore` that `mandato restore` uses swaps the file (checking the backup
//! first, and keeping the replaced database beside it as `mandato.db.replaced-<time>`), the
//! engine starts again on the restored data, and the window reloads signed in. A failure is
//! shown in a native dialog; the engine always starts again on whatever database is then in
//! place, so a refused backup leaves the app as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mandato::clock::{Clock, SystemClock};
use tauri::{AppHandle, Manager};
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

use crate::{Engine, MAIN, tray};

/// The menu entry that starts a restore.
pub const MENU_LABEL: &str = "Restaurar desde una copia…";
const TITLE: &str = "Restaurar desde una copia";

/// Opens the file picker on the backups directory; a picked file goes on to the confirmation.
pub fn pick(app: &AppHandle) {
    let Some(engine) = app.try_state::<Arc<Engine>>() else {
        return;
    };
    let backups = mandato::backups::directory(engine.data_dir());
    let mut picker = app
        .dialog()
        .file()
        .set_title(TITLE)
        .add_filter("Copias de mandato (*.db)", &["db"]);
    if backups.is_dir() {
        picker = picker.set_directory(backups);
    }
    let app = app.clone();
    picker.pick_file(move |picked| {
        let Some(picked) = picked else {
            return;
        };
        match picked.into_path() {
            Ok(backup) => confirm(&app, backup),
            Err(e) => show_error(&app, &format!("No se puede abrir ese archivo: {e}")),
        }
    });
}

/// Asks the owner to confirm, naming the backup and where the current database will be kept;
/// restores on yes.
pub fn confirm(app: &AppHandle, backup: PathBuf) {
    if confirmed_by_test_run() {
        start(app, backup);
        return;
    }
    let message = format!(
        "La copia {} reemplazará a la base de datos actual.\n\n\
         Mandato Desk se detiene unos segundos y vuelve a abrirse con los datos de la copia. \
         La base de datos actual no se borra: queda junto a ella como \
         mandato.db.replaced-<fecha>.\n\n¿Restaurar la copia?",
        display_name(&backup)
    );
    let answer_to = app.clone();
    app.dialog()
        .message(message)
        .title(TITLE)
        .kind(MessageDialogKind::Warning)
        .buttons(MessageDialogButtons::OkCancelCustom(
            "Restaurar".into(),
            "Cancelar".into(),
        ))
        .show(move |yes| {
            if yes {
                start(&answer_to, backup);
            }
        });
}

/// The end-to-end test cannot click a native dialog: in debug builds only,
/// `MANDATO_DESK_TEST_CONFIRM=restore` answers the confirmation with yes. Release builds, the
/// ones merchants install, always ask.
#[cfg(debug_assertions)]
fn confirmed_by_test_run() -> bool {
    std::env::var("MANDATO_DESK_TEST_CONFIRM").is_ok_and(|v| v == "restore")
}

#[cfg(not(debug_assertions))]
fn confirmed_by_test_run() -> bool {
    false
}

fn start(app: &AppHandle, backup: PathBuf) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move { restore(&app, backup).await });
}

async fn restore(app: &AppHandle, backup: PathBuf) {
    let Some(engine) = app.try_state::<Arc<Engine>>().map(|e| Arc::clone(&e)) else {
        return;
    };
    if engine.restoring.swap(true, Ordering::SeqCst) {
        show_error(
            app,
            "Ya hay una restauración en curso; espere a que termine.",
        );
        return;
    }
    // No engine means the app is quitting: nothing to restore into.
    let Some(running) = engine.take() else {
        engine.restoring.store(false, Ordering::SeqCst);
        return;
    };
    tray::show_state(app, "stopping to restore a backup");
    tracing::info!(backup = %backup.display(), "restore: stopping the engine");
    if let Err(e) = running.shutdown().await {
        tracing::error!("engine shutdown before the restore: {e:#}");
    }
    tray::show_state(app, "restoring a backup");
    let swapped = swap_database(engine.data_dir(), &backup).await;
    let restarted = restart(app, &engine).await;
    engine.restoring.store(false, Ordering::SeqCst);
    if let Err(e) = swapped {
        show_error(
            app,
            &format!(
                "No se restauró {}; los datos no cambiaron.\n\n{e:#}",
                display_name(&backup)
            ),
        );
    }
    if let Err(e) = restarted {
        show_error(
            app,
            &format!(
                "Mandato Desk no pudo volver a iniciarse: {e:#}\n\nCiérrelo y ábralo de nuevo."
            ),
        );
    }
    if engine.quit_after_restore.load(Ordering::SeqCst) {
        app.exit(0);
    }
}

/// `mandato restore`'s own swap, off the async threads (it copies and checks a whole file).
async fn swap_database(data_dir: &Path, backup: &Path) -> anyhow::Result<()> {
    let (data_dir, backup) = (data_dir.to_path_buf(), backup.to_path_buf());
    let restored = tauri::async_runtime::spawn_blocking(move || {
        mandato::backups::restore(&data_dir, &backup, SystemClock.now())
    })
    .await??;
    tracing::info!(
        database = %restored.database.display(),
        replaced = %restored.replaced.as_deref().map(Path::display).map(|p| p.to_string()).unwrap_or_default(),
        schema = restored.schema_version,
        "restored a backup; the replaced database is kept"
    );
    Ok(())
}

/// Starts the engine again and points the window at it, signed in.
async fn restart(app: &AppHandle, engine: &Engine) -> anyhow::Result<()> {
    let started = crate::start_engine(engine.data_dir()).await;
    let (running, url) = match started {
        Ok(started) => started,
        Err(e) => {
            tracing::error!("the engine did not start again after the restore: {e:#}");
            tray::show_state(app, "stopped");
            return Err(e);
        }
    };
    let base = running.base_url();
    engine.put(running);
    tray::show_state(app, &format!("running at {base}"));
    tracing::info!(url = %base, "the engine runs again; the window reloads signed in");
    if let Some(window) = app.get_webview_window(MAIN) {
        window.navigate(url)?;
    }
    Ok(())
}

fn show_error(app: &AppHandle, message: &str) {
    tracing::error!("restore: {message}");
    app.dialog()
        .message(message)
        .title(TITLE)
        .kind(MessageDialogKind::Error)
        .show(|_| {});
}

fn display_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
