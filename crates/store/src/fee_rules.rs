//! Each commerce's fee rule per payment method (`fee_rules`), as text the core checks.

use super::db::{self, Db, params};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeeRuleRow {
    pub method_id: i64,
    pub commission_percent: String,
    pub fixed_amount: String,
    pub iva: bool,
    pub updated_at: String,
}

fn row(r: &db::Row<'_>) -> db::Result<FeeRuleRow> {
    Ok(FeeRuleRow {
        method_id: r.get(0)?,
        commission_percent: r.get(1)?,
        fixed_amount: r.get(2)?,
        iva: r.get::<i64>(3)? != 0,
        updated_at: r.get(4)?,
    })
}

/// The commerce's rules, by method id.
pub fn of_commerce<'c>(db: impl Into<Db<'c>>, commerce_id: i64) -> db::Result<Vec<FeeRuleRow>> {
    db.into().query_map(
        "SELECT method_id, commission_percent, fixed_amount, iva, updated_at
         FROM fee_rules WHERE commerce_id = ?1 ORDER BY method_id",
        &params![commerce_id],
        row,
    )
}

/// The commerce's rule for one method, if it has one.
pub fn get<'c>(
    db: impl Into<Db<'c>>,
    commerce_id: i64,
    method_id: i64,
) -> db::Result<Option<FeeRuleRow>> {
    db.into().query_opt(
        "SELECT method_id, commission_percent, fixed_amount, iva, updated_at
         FROM fee_rules WHERE commerce_id = ?1 AND method_id = ?2",
        &params![commerce_id, method_id],
        row,
    )
}

/// Sets (or replaces) the commerce's rule for `rule.method_id`.
pub fn set<'c>(db: impl Into<Db<'c>>, commerce_id: i64, rule: &FeeRuleRow) -> db::Result<()> {
    db.into().execute(
        "INSERT INTO fee_rules
             (commerce_id, method_id, commission_percent, fixed_amount, iva, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (commerce_id, method_id) DO UPDATE SET
             commission_percent = excluded.commission_percent,
             fixed_amount = excluded.fixed_amount,
             iva = excluded.iva,
             updated_at = excluded.updated_at",
        &params![
            commerce_id,
            rule.method_id,
            rule.commission_percent.as_str(),
            rule.fixed_amount.as_str(),
            i64::from(rule.iva),
            rule.updated_at.as_str()
        ],
    )?;
    Ok(())
}

/// Removes the commerce's rule for a method (it goes back to the default); false when none.
pub fn remove<'c>(db: impl Into<Db<'c>>, commerce_id: i64, method_id: i64) -> db::Result<bool> {
    Ok(db.into().execute(
        "DELETE FROM fee_rules WHERE commerce_id = ?1 AND method_id = ?2",
        &params![commerce_id, method_id],
    )? > 0)
}
