//! The automatic backups, for the Settings screen: the last one's time and size, and the list.
//! Reading is open to every staff role; restoring is done with the engine stopped
//! (`mandato restore`), never over HTTP.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::session::Staff;
use crate::AppState;
use crate::envelope::Envelope;
use crate::error::{ApiResult, ErrorBody};
use mandato_core::clock::timestamp;
use mandato_core::error::Error;
use mandato_engine::backups;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupDto {
    /// The file's name in the backups directory (`mandato-2026-11-25T031500Z.db`).
    pub file: String,
    /// When it was taken (UTC).
    #[schema(format = DateTime)]
    pub taken_at: String,
    #[schema(minimum = 0)]
    pub size_bytes: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupsDto {
    /// Whether the engine takes a backup every day (`serve --no-backups` turns it off; on
    /// PostgreSQL it never does: the server's `pg_dump` does).
    pub enabled: bool,
    /// Where the backups are, beside the database.
    pub directory: String,
    /// The newest backup; absent when there is none yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<BackupDto>,
    /// Every backup kept, newest first.
    pub items: Vec<BackupDto>,
}

/// The automatic backups of the database, newest first, and the last one on its own.
#[utoipa::path(get, path = "/backups", tag = "staff",
    responses(
        (status = 200, description = "BACKUPS_OK", body = Envelope<BackupsDto>),
        (status = 401, description = "SESSION_REQUIRED", body = ErrorBody),
    ))]
pub async fn list(State(state): State<AppState>, _staff: Staff) -> ApiResult<Envelope<BackupsDto>> {
    let dir = backups::directory(&state.config.data_dir);
    let read = dir.clone();
    let found = tokio::task::spawn_blocking(move || backups::list(&read))
        .await
        .map_err(|e| Error::Internal(e.into()))?
        .map_err(|e| Error::Internal(e.into()))?;
    let items: Vec<BackupDto> = found
        .into_iter()
        .map(|b| BackupDto {
            file: b.file,
            taken_at: timestamp(b.taken_at),
            size_bytes: b.size,
        })
        .collect();
    let last = items.first().map(|b| BackupDto {
        file: b.file.clone(),
        taken_at: b.taken_at.clone(),
        size_bytes: b.size_bytes,
    });
    Ok(Envelope::ok(
        "BACKUPS_OK",
        "backups",
        BackupsDto {
            enabled: state.backups_enabled(),
            directory: dir.display().to_string(),
            last,
            items,
        },
    ))
}
