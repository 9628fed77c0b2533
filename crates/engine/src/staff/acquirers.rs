//! Settings › Acquirers (CONTRACT 13): an admin sets, shows and removes each commerce's
//! acquirer per rail, as `mandato acquirer` does. Secrets are write-only: a change that keeps
//! the rail's kind may omit the secret, and the stored one stays; none is ever answered.

use mandato_core::domain::acquirer::{AcquirerInput, AcquirerSetting, Rail};
use mandato_core::error::{Error, Result};
use mandato_store::{acquirers as stored, commerces};

use super::settings::record;
use crate::Engine;
use crate::operations::acquirers::{self, AcquirerView};

impl Engine {
    /// The commerce's acquirers, cards first, without their secrets.
    pub fn acquirers(&self, code: &str) -> Result<Vec<AcquirerView>> {
        self.store().read(|c| {
            let commerce =
                commerces::by_code(c, code)?.ok_or_else(|| Error::not_found("commerce"))?;
            acquirers::show(c, commerce.id)
        })
    }

    /// Sets the commerce's acquirer of `input.rail`; answers the commerce's acquirers.
    pub fn set_acquirer(
        &self,
        actor: &str,
        code: &str,
        mut input: AcquirerInput,
    ) -> Result<Vec<AcquirerView>> {
        let sandbox = self.config.environment.is_sandbox();
        let now = self.clock.now();
        tokio::task::block_in_place(|| {
            self.store().write(|tx| {
                let commerce =
                    commerces::by_code(tx, code)?.ok_or_else(|| Error::not_found("commerce"))?;
                // The same kind keeps its stored secrets when they are left out.
                let same_kind = stored::of_commerce(tx, commerce.id)?.into_iter().find(|r| {
                    Some(r.rail.as_str()) == input.rail.as_deref().map(str::trim)
                        && Some(r.kind.as_str()) == input.kind.as_deref().map(str::trim)
                });
                if let Some(row) = same_kind {
                    if input.secret.is_none() {
                        input.secret = row.secret;
                    }
                    if input.webhook_secret.is_none() {
                        input.webhook_secret = row.webhook_secret;
                    }
                }
                let setting = AcquirerSetting::parse(input, sandbox)?;
                let at = mandato_core::clock::timestamp(now);
                acquirers::set(tx, commerce.id, &setting, &at)?;
                let detail = format!("{} {}", setting.rail, setting.terms.kind().as_str());
                record(tx, actor, now, "commerce.acquirer", code, Some(&detail))?;
                acquirers::show(tx, commerce.id)
            })
        })
    }

    /// Removes the commerce's acquirer of `rail`; answers the commerce's acquirers.
    pub fn remove_acquirer(
        &self,
        actor: &str,
        code: &str,
        rail: Rail,
    ) -> Result<Vec<AcquirerView>> {
        let now = self.clock.now();
        tokio::task::block_in_place(|| {
            self.store().write(|tx| {
                let commerce =
                    commerces::by_code(tx, code)?.ok_or_else(|| Error::not_found("commerce"))?;
                if !acquirers::remove(tx, commerce.id, rail)? {
                    return Err(Error::not_found("acquirer"));
                }
                let detail = format!("{rail} removed");
                record(tx, actor, now, "commerce.acquirer", code, Some(&detail))?;
                acquirers::show(tx, commerce.id)
            })
        })
    }

    /// The commerces (by code) whose rails no acquirer serves: production without `mandato
    /// acquirer set`. Empty in a sandbox, where the simulation serves every rail.
    pub fn unserved_rails(&self) -> Result<Vec<(String, Vec<Rail>)>> {
        self.store().read(|c| self.rails.unserved(c))
    }
}
