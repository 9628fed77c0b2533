//! The staff's global search: one text, looked up at once as a customer (name, RUT with or
//! without dots and dash, userId, usr_ id, e-mail, through the customers list's trigram
//! search), a mandate (its ids or name, or its customer's, through the mandates list's), an
//! installment (ins_ id or the merchant's id, exactly) and an event (evt_ id), in one snapshot,
//! at most `limit` of each kind.

use mandato_core::error::Result;
use mandato_store::search::{self, EventHit, InstallmentHit};
use mandato_store::staff_views::{
    self as views, CustomerFilter, CustomerLine, MandateFilter, MandateLine,
};

use crate::Engine;

/// What one search found, by kind.
pub struct GlobalSearch {
    pub customers: Vec<CustomerLine>,
    pub mandates: Vec<MandateLine>,
    pub installments: Vec<InstallmentHit>,
    pub events: Vec<EventHit>,
}

impl Engine {
    /// Everything `text` names, at most `limit` of each kind, newest first.
    pub fn global_search(&self, text: &str, limit: i64) -> Result<GlobalSearch> {
        let text = text.trim().to_string();
        self.store().read(|c| {
            let customers = views::search_customers(
                c,
                &CustomerFilter {
                    text: Some(text.clone()),
                    limit,
                    ..CustomerFilter::default()
                },
            )?;
            let mandates = views::list_mandates(
                c,
                &MandateFilter {
                    text: Some(text.clone()),
                    limit,
                    ..MandateFilter::default()
                },
            )?;
            // Ids hold no spaces: a text with one is no installment's or event's id.
            let (installments, events) = if text.contains(char::is_whitespace) {
                (Vec::new(), Vec::new())
            } else {
                (
                    search::installments_by_id(c, &text, limit)?,
                    search::events_by_id(c, &text)?,
                )
            };
            Ok(GlobalSearch {
                customers,
                mandates,
                installments,
                events,
            })
        })
    }
}
