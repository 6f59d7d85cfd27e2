//! The client behind a request, as an extractor; who a client is and the
//! per-address limits live in [`crate::limits::clients`], below the state.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

use crate::limits::clients::ClientKey;
use crate::state::AppState;

/// The client behind the request (see
/// [`ClientPolicy::client_of`](crate::limits::clients::ClientPolicy::client_of)).
pub struct Client(pub ClientKey);

impl FromRequestParts<AppState> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| *addr);
        Ok(Client(state.clients.client_of(&parts.headers, peer)))
    }
}
