//! The SQL functions searches use, registered on every connection the store opens:
//! `search_fold(text)` is `domain::search::fold`, `rut_key(text)` is `domain::search::rut_key`.
//! Both are deterministic, so SQLite may reuse their results within a statement.

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

use mandato_core::domain::search;

pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("search_fold", 1, flags, |ctx| {
        Ok(ctx.get::<Option<String>>(0)?.map(|t| search::fold(&t)))
    })?;
    conn.create_scalar_function("rut_key", 1, flags, |ctx| {
        Ok(ctx.get::<Option<String>>(0)?.map(|t| search::rut_key(&t)))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_fold_in_sql() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let (name, rut, none): (String, String, Option<String>) = conn
            .query_row(
                "SELECT search_fold('José Muñoz'), rut_key('12.345.678-K'), search_fold(NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            (name.as_str(), rut.as_str(), none),
            ("jose munoz", "12345678k", None)
        );
    }

    #[test]
    fn postgres_functions_fold_as_sqlite_s_do() {
        let database = crate::pg_test::database();
        let pg = database.connect();
        let samples = [
            "José Muñoz",
            "ÑUÑOA",
            "Ágata Güell Çelik",
            "ana@Example.cl",
            "Jose\u{301}",
            "12.345.678-K",
            "",
        ];
        pg.transaction(|db| {
            for sample in samples {
                let (folded, rut) = db.query_row(
                    "SELECT search_fold(?1), rut_key(?1)",
                    &crate::db::params![sample],
                    |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
                )?;
                assert_eq!(folded, search::fold(sample), "{sample}");
                assert_eq!(rut, search::rut_key(sample), "{sample}");
            }
            Ok::<(), crate::db::Error>(())
        })
        .unwrap();
    }
}
