//! The side panel's requests about what the host keeps: past tasks,
//! settings, the profile, and the connection check. Each request is
//! answered from the store and the host's files; none of it is kept in the
//! extension.

use errand_protocol::{Body, ErrorCode};

use crate::host::Host;

/// Why a panel request could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    #[error("`{0}` is not a side-panel request")]
    NotAPanelRequest(String),
}

impl PanelError {
    /// The protocol error code for the reply.
    pub fn code(&self) -> ErrorCode {
        match self {
            PanelError::NotAPanelRequest(_) => ErrorCode::NotAllowed,
        }
    }
}

/// Answers one panel request.
pub async fn handle(_host: &Host, body: Body) -> Result<Body, PanelError> {
    Err(PanelError::NotAPanelRequest(crate::host::kind_of(&body)))
}
