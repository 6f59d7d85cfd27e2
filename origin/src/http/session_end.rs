//! Ending a visitor's session before its time: on leave, after a booking,
//! or when one admission is shared among too many addresses.

use room::RoomId;

use crate::error::ApiError;
use crate::state::AppState;

/// Ends a visitor's session at once (leave, a booking, a shared session):
/// the slot goes to the next waiter, the session's holds end and their
/// seats go back on sale, and no renewal follows.
pub async fn end_session(
    state: &AppState,
    room: &RoomId,
    seq: u64,
    visitor: u128,
) -> Result<(), ApiError> {
    let ended = state.queue.leave(room, seq).await?;
    state.sessions.forget(room, seq);
    // Nothing left to end: the holds ended with the place or session, by
    // time or by the call that ended it (one whose release failed is then
    // left to its time). One ticket's leaves in a loop would otherwise
    // each cost the booking database a query.
    if !ended {
        return Ok(());
    }
    if let Some(booking) = &state.booking {
        let now = state.clock.now_ms();
        // Bounded as a booking request is: a leave is the queue's, and
        // answers while the booking database is away.
        let ending = booking.end_session(room.as_str(), visitor, now);
        let error = match tokio::time::timeout(booking.deadline(false), ending).await {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some("no answer in time".to_owned()),
        };
        if let Some(error) = error {
            // The holds still end by time: they never outlive the session.
            tracing::warn!(%error, "could not end the session's holds at once");
        }
    }
    Ok(())
}

/// Ends a session used from more client addresses than the room allows:
/// one admission shared among many.
pub(crate) async fn end_shared(
    state: &AppState,
    room: &RoomId,
    seq: u64,
    visitor: u128,
) -> Result<(), ApiError> {
    tracing::warn!(%room, seq, "session used from too many addresses: ended");
    metrics::counter!(crate::metric_names::SESSIONS_SHARED, "room" => room.to_string())
        .increment(1);
    end_session(state, room, seq, visitor).await
}
