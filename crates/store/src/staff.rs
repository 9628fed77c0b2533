//! Staff accounts, their sessions, and the record of staff actions.

use super::db::{self, Db, Row, params};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Viewer,
    Operator,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "operator" => Some(Role::Operator),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StaffMember {
    pub id: i64,
    pub email: String,
    pub role: Role,
    pub password_hash: String,
    /// Signed in with a temporary password an admin set: only choosing a new one is allowed.
    pub password_change_required: bool,
}

pub fn count<'c>(db: impl Into<Db<'c>>) -> db::Result<i64> {
    db.into()
        .query_row("SELECT count(*) FROM staff", &params![], |r| r.get(0))
}

pub fn by_email<'c>(db: impl Into<Db<'c>>, email: &str) -> db::Result<Option<StaffMember>> {
    db.into().query_opt(
        "SELECT id, email, role, password_hash, password_change_required FROM staff
         WHERE email = ?1 AND disabled_at IS NULL",
        &params![email],
        member_from_row,
    )
}

/// A `StaffMember` from `SELECT id, email, role, password_hash, password_change_required`.
fn member_from_row(r: &Row<'_>) -> db::Result<StaffMember> {
    let role: String = r.get(2)?;
    Ok(StaffMember {
        id: r.get(0)?,
        email: r.get(1)?,
        role: Role::parse(&role).unwrap_or(Role::Viewer),
        password_hash: r.get(3)?,
        password_change_required: r.get(4)?,
    })
}

/// Creates the installation's owner, an admin account, and records the setup (`via`: how),
/// unless an account already exists; `true` when it created it. First-start setup in the
/// browser and the desktop app's first start both go through here, so whichever comes first
/// is the owner.
pub fn create_owner<'c>(
    db: impl Into<Db<'c>>,
    email: &str,
    password_hash: &str,
    at: &str,
    via: Option<&str>,
) -> mandato_core::error::Result<bool> {
    let db = db.into();
    if count(db)? > 0 {
        return Ok(false);
    }
    super::commerces::insert_staff(db, email, password_hash, Role::Admin.as_str(), at)?;
    record_action(db, at, email, "setup", None, via)?;
    Ok(true)
}

/// The installation's owner: its first enabled admin account.
pub fn owner<'c>(db: impl Into<Db<'c>>) -> db::Result<Option<StaffMember>> {
    db.into().query_opt(
        "SELECT id, email, role, password_hash, password_change_required FROM staff
         WHERE role = 'admin' AND disabled_at IS NULL ORDER BY id LIMIT 1",
        &params![],
        member_from_row,
    )
}

pub struct NewSession<'a> {
    pub token_hash: &'a str,
    pub staff_id: i64,
    pub csrf_token: &'a str,
    pub now: &'a str,
    pub expires_at: &'a str,
}

pub fn insert_session<'c>(db: impl Into<Db<'c>>, s: &NewSession<'_>) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO staff_sessions (token_hash, staff_id, csrf_token, created_at, expires_at, last_seen_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?4)",
        &params![s.token_hash, s.staff_id, s.csrf_token, s.now, s.expires_at],
    )?;
    Ok(())
}

/// A live session: its staff member, CSRF token and when it was last used.
#[derive(Debug, Clone)]
pub struct Session {
    pub staff: StaffMember,
    pub csrf_token: String,
    pub expires_at: String,
    pub last_seen_at: String,
}

pub fn session<'c>(db: impl Into<Db<'c>>, token_hash: &str) -> db::Result<Option<Session>> {
    db.into().query_opt(
        "SELECT s.id, s.email, s.role, s.password_hash, x.csrf_token, x.expires_at, x.last_seen_at,
                    s.password_change_required
             FROM staff_sessions x JOIN staff s ON s.id = x.staff_id
             WHERE x.token_hash = ?1 AND s.disabled_at IS NULL",
        &params![token_hash],
        |r| {
            let role: String = r.get(2)?;
            Ok(Session {
                staff: StaffMember {
                    id: r.get(0)?,
                    email: r.get(1)?,
                    role: Role::parse(&role).unwrap_or(Role::Viewer),
                    password_hash: r.get(3)?,
                    password_change_required: r.get(7)?,
                },
                csrf_token: r.get(4)?,
                expires_at: r.get(5)?,
                last_seen_at: r.get(6)?,
            })
        },
    )
}

pub fn touch_session<'c>(db: impl Into<Db<'c>>, token_hash: &str, now: &str) -> db::Result<()> {
    db.into().execute(
        "UPDATE staff_sessions SET last_seen_at = ?2 WHERE token_hash = ?1",
        &params![token_hash, now],
    )?;
    Ok(())
}

pub fn delete_session<'c>(db: impl Into<Db<'c>>, token_hash: &str) -> db::Result<()> {
    db.into().execute(
        "DELETE FROM staff_sessions WHERE token_hash = ?1",
        &params![token_hash],
    )?;
    Ok(())
}

/// Replaces a member's password hash. `temporary`: set by an admin, so the member must choose
/// a new one at the next sign-in.
pub fn set_password<'c>(
    db: impl Into<Db<'c>>,
    staff_id: i64,
    password_hash: &str,
    temporary: bool,
) -> db::Result<bool> {
    Ok(db.into().execute(
        "UPDATE staff SET password_hash = ?2, password_change_required = ?3 WHERE id = ?1",
        &params![staff_id, password_hash, temporary],
    )? > 0)
}

/// Ends a member's sessions, all but the one with `keep` (the session that made the change).
pub fn end_sessions<'c>(
    db: impl Into<Db<'c>>,
    staff_id: i64,
    keep: Option<&str>,
) -> db::Result<u64> {
    db.into().execute(
        "DELETE FROM staff_sessions WHERE staff_id = ?1 AND token_hash IS DISTINCT FROM ?2",
        &params![staff_id, keep],
    )
}

/// A member by e-mail, disabled or not, with its id.
pub fn id_by_email<'c>(db: impl Into<Db<'c>>, email: &str) -> db::Result<Option<i64>> {
    db.into().query_opt(
        "SELECT id FROM staff WHERE email = ?1",
        &params![email],
        |r| r.get(0),
    )
}

/// Records a staff action in the staff audit's hash chain, in the change's transaction.
pub fn record_action<'c>(
    db: impl Into<Db<'c>>,
    at: &str,
    email: &str,
    action: &str,
    target: Option<&str>,
    detail: Option<&str>,
) -> db::Result<()> {
    super::staff_audit::append(db, at, email, action, target, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_test::on_both;

    fn session_of(db: Db<'_>, token_hash: &str, staff_id: i64) {
        insert_session(
            db,
            &NewSession {
                token_hash,
                staff_id,
                csrf_token: "csrf",
                now: "2026-11-25T10:00:00.000Z",
                expires_at: "2026-11-26T10:00:00.000Z",
            },
        )
        .unwrap();
    }

    #[test]
    fn the_first_account_is_the_owner_and_only_the_first() {
        on_both(|db| {
            assert_eq!(count(db).unwrap(), 0);
            assert!(owner(db).unwrap().is_none());
            let at = "2026-11-25T10:00:00.000Z";
            assert!(create_owner(db, "ana@example.cl", "hash-a", at, Some("browser")).unwrap());
            assert!(!create_owner(db, "eva@example.cl", "hash-e", at, None).unwrap());
            assert_eq!(count(db).unwrap(), 1);
            let owner = owner(db).unwrap().unwrap();
            assert_eq!(
                (owner.email.as_str(), owner.role),
                ("ana@example.cl", Role::Admin)
            );
            assert!(!owner.password_change_required);
            assert_eq!(
                by_email(db, "ana@example.cl").unwrap().unwrap().id,
                owner.id
            );
            assert_eq!(id_by_email(db, "ana@example.cl").unwrap(), Some(owner.id));
            assert_eq!(id_by_email(db, "nadie@example.cl").unwrap(), None);
            // The setup is the staff audit's first record.
            let verified = crate::staff_audit::verify(db).unwrap();
            assert_eq!((verified.records, verified.broken), (1, None));
        });
    }

    #[test]
    fn sessions_are_read_touched_and_ended_but_the_one_kept() {
        on_both(|db| {
            let at = "2026-11-25T10:00:00.000Z";
            create_owner(db, "ana@example.cl", "hash-a", at, None).unwrap();
            let id = id_by_email(db, "ana@example.cl").unwrap().unwrap();
            for token in ["t1", "t2", "t3"] {
                session_of(db, token, id);
            }
            touch_session(db, "t1", "2026-11-25T11:00:00.000Z").unwrap();
            let live = session(db, "t1").unwrap().unwrap();
            assert_eq!(live.last_seen_at, "2026-11-25T11:00:00.000Z");
            assert_eq!(live.staff.email, "ana@example.cl");

            assert_eq!(end_sessions(db, id, Some("t2")).unwrap(), 2);
            assert!(session(db, "t1").unwrap().is_none());
            assert!(session(db, "t2").unwrap().is_some());
            delete_session(db, "t2").unwrap();
            assert!(session(db, "t2").unwrap().is_none());

            session_of(db, "t4", id);
            assert_eq!(end_sessions(db, id, None).unwrap(), 1);
        });
    }

    #[test]
    fn a_temporary_password_is_marked_for_change() {
        on_both(|db| {
            let at = "2026-11-25T10:00:00.000Z";
            create_owner(db, "ana@example.cl", "hash-a", at, None).unwrap();
            let id = id_by_email(db, "ana@example.cl").unwrap().unwrap();
            assert!(set_password(db, id, "hash-b", true).unwrap());
            let member = by_email(db, "ana@example.cl").unwrap().unwrap();
            assert_eq!(member.password_hash, "hash-b");
            assert!(member.password_change_required);
            assert!(!set_password(db, id + 100, "hash-c", false).unwrap());
        });
    }
}
