//! The failures an operation can end in, independent of HTTP. `http::error` maps each one to
//! its status code and wire shape; clients match the stable `name`, never the message.

use std::fmt;

/// One problem with one input, located by a JSON path (`customer.contacts.email`,
/// `header.correlationId`, `path.mandateId`, `query.limit`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct FieldError {
    pub field: String,
    pub code: String,
    pub message: String,
    /// The value looked for, on a 404: the id as the request sent it; null otherwise (every
    /// member is always sent, CONTRACT 11).
    pub value: Option<String>,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            code: code.to_string(),
            message: message.into(),
            value: None,
        }
    }
}

/// Collects every problem of a request before answering, so the merchant fixes them all at once.
#[derive(Debug, Default)]
pub struct FieldErrors(Vec<FieldError>);

impl FieldErrors {
    pub fn new() -> Self {
        FieldErrors(Vec::new())
    }

    pub fn push(&mut self, field: impl Into<String>, code: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    pub fn missing(&mut self, field: impl Into<String>) {
        self.push(field, "REQUIRED", "is required");
    }

    pub fn into_vec(self) -> Vec<FieldError> {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(())` when nothing was found, otherwise the validation failure listing everything.
    /// A date past 9999-12-31 (or before 1900) alone is answered under its own name, as
    /// CONTRACT 12 gives it (`DATE_OUT_OF_RANGE` at the field); beside other problems it is one
    /// of the `VALIDATION_ERROR`'s field errors, with the same code.
    pub fn into_result(mut self) -> Result<(), Error> {
        match self.0.len() {
            0 => Ok(()),
            1 if self.0[0].code == crate::domain::date::DATE_OUT_OF_RANGE => {
                let only = self.0.remove(0);
                Err(Error::Refused {
                    name: crate::domain::date::DATE_OUT_OF_RANGE,
                    message: only.message,
                    field: Some(only.field),
                })
            }
            _ => Err(Error::Validation(self.0)),
        }
    }
}

/// Why an operation did not happen. Nothing was written when an operation returns one of these:
/// every operation runs in one transaction that is rolled back on error.
#[derive(Debug)]
pub enum Error {
    /// 400 `VALIDATION_ERROR`: the request names bad fields.
    Validation(Vec<FieldError>),
    /// 400 with its own name: a business rule refuses the request (`MANDATE_STATE_CONFLICT`, ...).
    Refused {
        name: &'static str,
        message: String,
        field: Option<String>,
    },
    /// 403: any credential problem. The message never says which part was wrong beyond need.
    Forbidden { name: &'static str, message: String },
    /// 401: the staff API needs a signed-in session.
    Unauthenticated { message: String },
    /// 404: unknown, or belonging to another commerce (the two are indistinguishable on purpose).
    /// `at` is the request's field that named it and the value it held, when known.
    NotFound {
        what: &'static str,
        at: Option<(String, String)>,
    },
    /// 410: the resource existed and is gone for good (a cancelled signature process).
    Gone { name: &'static str, message: String },
    /// 406 `NOT_ACCEPTABLE`: the request's `Accept` admits none of the operation's media types.
    NotAcceptable { message: String },
    /// 503 with `Retry-After`: the engine is overloaded for a moment (`SERVICE_BUSY`: every
    /// database connection in use, or a statement past its time limit). Nothing was written.
    Unavailable {
        name: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    /// 500: a fault of ours. The details go to the log, never to the client.
    Internal(anyhow::Error),
}

/// The name of a 503 for an overloaded engine.
pub const SERVICE_BUSY: &str = "SERVICE_BUSY";

impl Error {
    pub fn refused(name: &'static str, message: impl Into<String>) -> Self {
        Error::Refused {
            name,
            message: message.into(),
            field: None,
        }
    }

    pub fn refused_at(
        name: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Refused {
            name,
            message: message.into(),
            field: Some(field.into()),
        }
    }

    pub fn forbidden(name: &'static str, message: impl Into<String>) -> Self {
        Error::Forbidden {
            name,
            message: message.into(),
        }
    }

    pub fn not_found(what: &'static str) -> Self {
        Error::NotFound { what, at: None }
    }

    /// A 404 for `what`, named by the request's `field` holding `value`.
    pub fn not_found_at(what: &'static str, field: &str, value: &str) -> Self {
        Error::NotFound {
            what,
            at: Some((field.to_string(), value.to_string())),
        }
    }

    /// Says which of the request's fields named what was not found (`path.mandateId` and the
    /// id sent), unless the 404 already says; any other error is unchanged.
    pub fn located(self, field: &str, value: &str) -> Self {
        match self {
            Error::NotFound { what, at: None } => Error::not_found_at(what, field, value),
            other => other,
        }
    }

    pub fn validation(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        Error::Validation(vec![FieldError::new(field, code, message)])
    }

    /// 503 `SERVICE_BUSY` for a database too busy to take the operation now (`cause` goes to
    /// the log only).
    pub fn busy(cause: &dyn std::error::Error) -> Self {
        tracing::warn!(error = %cause, "refused an operation: the database is busy");
        Error::Unavailable {
            name: SERVICE_BUSY,
            message: "the service is busy; try again in a moment".to_string(),
            retry_after_secs: 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Validation(errors) => {
                write!(f, "validation failed on {} field(s)", errors.len())
            }
            Error::Refused { name, message, .. } => write!(f, "{name}: {message}"),
            Error::Forbidden { name, .. } => write!(f, "{name}"),
            Error::NotFound { what, .. } => write!(f, "{what} not found"),
            Error::Unauthenticated { .. } => write!(f, "not signed in"),
            Error::Gone { name, .. } => write!(f, "{name}"),
            Error::NotAcceptable { message } => write!(f, "NOT_ACCEPTABLE: {message}"),
            Error::Unavailable { name, message, .. } => write!(f, "{name}: {message}"),
            Error::Internal(e) => write!(f, "internal error: {e:#}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Internal(e.into())
    }
}

impl From<anyhow::Error> for Error {
    fn from(e: anyhow::Error) -> Self {
        // An operation's own failure may come back wrapped (a task's result, a store helper
        // that answers anyhow): it keeps its meaning, so a busy database is still a 503.
        match e.downcast::<Error>() {
            Ok(error) => error,
            Err(e) => Error::Internal(e),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
