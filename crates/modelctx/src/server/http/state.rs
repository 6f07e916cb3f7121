//! What the endpoint shares between its requests: the server, the settings, the budget of
//! request bodies and the table of 2025-11-25 sessions. Below the handler and the handshake era,
//! which both serve from it.

use super::body::BodyBudget;
use super::config::HttpConfig;
use crate::server::Server;

pub(crate) struct HttpState {
    pub(crate) server: Server,
    pub(crate) config: HttpConfig,
    pub(crate) bodies: BodyBudget,
    pub(crate) sessions: super::sessions::Sessions,
}
