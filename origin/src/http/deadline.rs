//! The booking API's deadline: a visitor's booking request answers 503
//! `store_unavailable` once it has taken [`BookingStore::deadline`], so a
//! database that froze while the request was talking to it (the pool's
//! connection timeout covers only the wait for a connection) never keeps
//! the visitor waiting past a stated time.
//!
//! Cutting a request short is safe at any point, as a client hanging up
//! is: every write is one transaction, and a confirm cut after its payment
//! is finished by recovery (the booking, or a recorded refund).
//!
//! [`BookingStore::deadline`]: booking::BookingStore::deadline

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::state::AppState;
use booking::BookingError;

/// Bounds every `/api/{room}/...` request by the booking store's deadline.
pub async fn bound(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let Some(booking) = state
        .booking
        .as_deref()
        .filter(|_| path.starts_with("/api/"))
    else {
        return next.run(request).await;
    };
    let deadline = booking.deadline(path.ends_with("/confirm"));
    match tokio::time::timeout(deadline, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(?deadline, "a booking request outlasted its deadline");
            ApiError::Booking(BookingError::Unavailable).into_response()
        }
    }
}
