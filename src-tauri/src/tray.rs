//! The tray icon: the engine's state (running at which address, stopping, stopped) as the
//! first, inert line of its menu and as its tooltip, then Open, "Restaurar desde una copia…"
//! (restore.rs) and Quit.

use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Wry};

const TRAY: &str = "mandato";

/// The menu line that shows the engine's state.
struct StateLine(MenuItem<Wry>);

pub fn create(app: &AppHandle, state: &str) -> tauri::Result<()> {
    let text = line(state);
    let state_line = MenuItem::with_id(app, "state", &text, false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open Mandato Desk", true, None::<&str>)?;
    let restore = MenuItem::with_id(
        app,
        "restore",
        crate::restore::MENU_LABEL,
        true,
        None::<&str>,
    )?;
    let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &state_line,
            &PredefinedMenuItem::separator(app)?,
            &open,
            &restore,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    let mut tray = TrayIconBuilder::with_id(TRAY)
        .menu(&menu)
        .tooltip(&text)
        .on_menu_event(|app, event| match event.id().as_ref() {
            "open" => crate::show_window(app),
            "restore" => crate::restore::pick(app),
            // Through the exit request, which stops the engine gracefully first.
            "quit" => app.exit(0),
            _ => {}
        });
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    app.manage(StateLine(state_line));
    Ok(())
}

/// Shows the engine's new state in the tray.
pub fn show_state(app: &AppHandle, state: &str) {
    let text = line(state);
    if let Some(state_line) = app.try_state::<StateLine>() {
        let _ = state_line.0.set_text(&text);
    }
    if let Some(tray) = app.tray_by_id(TRAY) {
        let _ = tray.set_tooltip(Some(&text));
    }
}

fn line(state: &str) -> String {
    format!("Engine: {state}")
}
