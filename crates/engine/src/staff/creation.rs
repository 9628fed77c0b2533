//! What staff create for a commerce from the back office: customers and mandates. Each goes
//! through the merchant API's own operation (`operations::customers::register`,
//! `operations::mandates::create`), so the rules are the same whoever asks, and is recorded in
//! the staff audit log in the same transaction.

use std::sync::Arc;

use mandato_core::clock::timestamp;
use mandato_core::error::{Error, Result};
use mandato_store::commerces::Commerce;
use mandato_store::customers::{self, CustomerInput, CustomerRow, Upserted};

use crate::Engine;
use crate::operations::mandates::{self, CreateMandate, MagicLinkPolicy, MandateView};

/// Where a customer's RUT is in the request: the merchant API's path, which the staff request
/// shares.
const RUT_FIELD: &str = "customer.identificationDocument.number";

impl Engine {
    /// The commerce a staff member creates something for, by its code: unknown is refused at
    /// the request's `commerce` field.
    pub fn staff_commerce(&self, code: &str) -> Result<Arc<Commerce>> {
        self.commerce_by_code(code.trim())?
            .map(Arc::new)
            .ok_or_else(|| {
                Error::validation(
                    "commerce",
                    "COMMERCE_NOT_FOUND",
                    format!("no commerce with code {code}"),
                )
            })
    }

    /// Registers a new customer of the commerce, as `POST /user` registers one. It must be new:
    /// a staff creation never updates a customer the merchant registered (that `userId` with
    /// that RUT is `DUPLICATED_RUT`, with another RUT `DUPLICATED_USER_ID`).
    pub async fn staff_create_customer(
        self: &Arc<Self>,
        actor: &str,
        commerce: Arc<Commerce>,
        input: CustomerInput,
    ) -> Result<CustomerRow> {
        let actor = actor.to_string();
        self.write(commerce, move |tx, ctx| {
            if let Some(held) = customers::by_user_id(tx, ctx.commerce.id, input.user_id.as_str())?
            {
                return Err(if held.rut == input.rut.as_str() {
                    Error::refused_at(
                        "DUPLICATED_RUT",
                        RUT_FIELD,
                        format!("the RUT is already registered for userId {}", held.user_id),
                    )
                } else {
                    Error::refused_at(
                        "DUPLICATED_USER_ID",
                        "customer.userId",
                        format!("userId {} is another customer's", held.user_id),
                    )
                });
            }
            let row = match crate::operations::customers::register(tx, ctx, &input)? {
                Upserted::Created(row) => row,
                Upserted::Updated(_) => {
                    return Err(Error::Internal(anyhow::anyhow!(
                        "a staff creation updated a customer"
                    )));
                }
            };
            let detail = serde_json::json!({
                "commerce": ctx.commerce.code,
                "userId": row.user_id,
            })
            .to_string();
            mandato_store::staff::record_action(
                tx,
                &timestamp(ctx.now),
                &actor,
                "customer.create",
                Some(&row.id),
                Some(&detail),
            )?;
            Ok(row)
        })
        .await
    }

    /// Creates a mandate for one of the commerce's customers, as `POST /mandate` creates it:
    /// its installments scheduled and its Magic Link issued.
    pub async fn staff_create_mandate(
        self: &Arc<Self>,
        actor: &str,
        commerce: Arc<Commerce>,
        command: CreateMandate,
    ) -> Result<MandateView> {
        let actor = actor.to_string();
        let policy = MagicLinkPolicy {
            valid_days: self.config.magic_link_days,
            business_offset_days: self.calendar.offset_days(),
        };
        self.write(commerce, move |tx, ctx| {
            let view = mandates::create(tx, ctx, &command, &policy)?;
            let detail = serde_json::json!({
                "commerce": ctx.commerce.code,
                "id": view.mandate.external_id,
                "type": view.mandate.mandate_type.name(),
            })
            .to_string();
            mandato_store::staff::record_action(
                tx,
                &timestamp(ctx.now),
                &actor,
                "mandate.create",
                Some(&view.mandate.id),
                Some(&detail),
            )?;
            Ok(view)
        })
        .await
    }
}
