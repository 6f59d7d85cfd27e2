//! The queue API of the contract: join, status and leave, under
//! `/queue/{room}/`. Tickets come from the `wr_ticket_{room}` cookie
//! (browsers: every tab of one browser shares it, and so one place) or
//! `Authorization: Bearer` (apps).

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use token::{Claims, Kind, entry_cookie, ticket_cookie};
use tracing::instrument;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::api_doc::{ChallengeHeader, ChallengeRequiredBody, PreferWait, RoomPath};
use super::client::Client;
use super::extract::{
    ChallengeAnswer, IdentityToken, Presented, RoomTicket, SmallBody, optional_object,
    presented_entry, verify,
};
use super::issue::{Holder, Issued, issue};
use super::responses::{
    BadBody, BadTicket, ChallengeRefused, CrossSite, JoinLimits, LeaveAuth, NoRoom, StoreDown,
    TicketAuth,
};
use super::session_end::{end_session, end_shared};
use super::site::SameSite;
use crate::challenge::{ask_pow, pow_proof};
use crate::cookies::clear_cookie;
use crate::error::ApiError;
use crate::holds::{self, Preferred};
use crate::limits::clients::ClientKey;
use crate::outlook::Outlook;
use crate::sessions::{SessionRules, Watch, entry_expiry};
use crate::state::AppState;
use queue::snapshot::RoomWatch;
use queue::{JoinRequest, Joined, Proof, SeatsLeft, Snapshot, Standing, StoreError, pacing};
use room::{AccountHash, Challenge, ChallengeKind, IdentityMode, RoomId, RoomState};

/// Largest body a queue route accepts (they take none, or `{}`).
const MAX_BODY: usize = 1024;
/// How long a ticket stays valid after the later of its issue and the
/// room's opening; a visitor who keeps polling gets a fresh one on rejoin.
const TICKET_LIFETIME_SECS: u64 = 24 * 3600;

/// The queue routes. Their bodies are held to [`MAX_BODY`] by the handlers'
/// [`SmallBody`], not a body-limit layer: every layer wraps each route once
/// more, and the router clones that nesting on every request.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(join))
        .routes(routes!(status))
        .routes(routes!(leave))
}

/// The join and leave body: nothing yet (empty, or `{}`), but unknown fields
/// are refused so a client that thinks it sends options hears that they are
/// ignored.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
struct EmptyBody {}

/// Where the visitor stands.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum VisitorState {
    /// In line (`position` says where, once the room has opened).
    Waiting,
    /// Let in: `entry_token` and `entry_expires_at` are set.
    Admitted,
    /// A genuine ticket whose place is gone (left, abandoned, session ended): join again.
    Expired,
    /// The room is closed: no place is given or kept.
    Closed,
    /// Nothing left: the line cap is reached, or every seat is booked. A
    /// join takes no place; a waiter keeps its place in case seats return.
    SoldOut,
}

/// The contract's status body.
#[derive(Serialize, ToSchema)]
struct StatusBody<'a> {
    state: VisitorState,
    /// 1 = next; null unless waiting, and while waiting before the opening.
    #[schema(required = true, minimum = 1)]
    position: Option<u64>,
    /// Everyone in line in this room.
    waiting: u64,
    /// Expected wait, from the admission schedule; null before the opening, while paused, while the stays seen cannot tell it yet, and where the seats may run short before the waiter's turn (`outlook` `uncertain` or `unlikely`).
    #[schema(required = true)]
    eta_seconds: Option<u64>,
    /// How long to wait before polling again.
    #[schema(minimum = 1000, maximum = 60000)]
    poll_after_ms: u64,
    room: RoomBody<'a>,
    /// The ticket (join only); also set as the cookie `wr_ticket_{room}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<String>,
    /// Only when admitted; also set as the cookie `wr_entry_{room}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    entry_token: Option<String>,
    /// Only when admitted: when the entry token ends (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    entry_expires_at: Option<String>,
    /// Whether, from this place, seats will probably be left at the
    /// visitor's turn; null where the room sells nothing through this
    /// origin, before the opening, and for anyone not waiting (a waiter of
    /// a sold-out sale reads `unlikely`).
    #[schema(required = true)]
    outlook: Option<Outlook>,
}

impl VisitorState {
    /// The wire name (what serde writes; a test holds them equal).
    fn as_str(self) -> &'static str {
        match self {
            VisitorState::Waiting => "waiting",
            VisitorState::Admitted => "admitted",
            VisitorState::Expired => "expired",
            VisitorState::Closed => "closed",
            VisitorState::SoldOut => "sold_out",
        }
    }
}

impl StatusBody<'_> {
    /// Writes the body exactly as serde would, but copies its strings
    /// rather than escaping them byte by byte: serde's writer spent 3,000
    /// instructions on a join's body, most of them on the ticket, and no
    /// string here can need escaping (room ids are `[a-z0-9-]`, tokens
    /// base64url and `.`, times RFC 3339). Checks that, and writes nothing
    /// and answers false for a body that is not so (serde writes it then).
    fn write_plain(&self, out: &mut Vec<u8>) -> bool {
        let strings = [
            Some(self.room.id),
            self.room.opens_at.as_deref(),
            self.ticket.as_deref(),
            self.entry_token.as_deref(),
            self.entry_expires_at.as_deref(),
        ];
        // Not short-circuited, so the check runs a word at a time.
        let plain = strings.iter().flatten().all(|s| {
            s.bytes().fold(true, |ok, b| {
                ok & (b' '..=b'~').contains(&b) & (b != b'"') & (b != b'\\')
            })
        });
        if !plain {
            return false;
        }
        let text = |out: &mut Vec<u8>, s: &str| {
            out.push(b'"');
            out.extend_from_slice(s.as_bytes());
            out.push(b'"');
        };
        let number = |out: &mut Vec<u8>, n: Option<u64>| match n {
            Some(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            None => out.extend_from_slice(b"null"),
        };
        out.extend_from_slice(b"{\"state\":");
        text(out, self.state.as_str());
        out.extend_from_slice(b",\"position\":");
        number(out, self.position);
        out.extend_from_slice(b",\"waiting\":");
        number(out, Some(self.waiting));
        out.extend_from_slice(b",\"eta_seconds\":");
        number(out, self.eta_seconds);
        out.extend_from_slice(b",\"poll_after_ms\":");
        number(out, Some(self.poll_after_ms));
        out.extend_from_slice(b",\"room\":{\"id\":");
        text(out, self.room.id);
        out.extend_from_slice(b",\"state\":");
        text(out, self.room.state.as_str());
        out.extend_from_slice(b",\"opens_at\":");
        match &self.room.opens_at {
            Some(at) => text(out, at),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        for (name, value) in [
            (&b",\"ticket\":"[..], &self.ticket),
            (b",\"entry_token\":", &self.entry_token),
            (b",\"entry_expires_at\":", &self.entry_expires_at),
        ] {
            if let Some(value) = value {
                out.extend_from_slice(name);
                text(out, value);
            }
        }
        out.extend_from_slice(b",\"outlook\":");
        match self.outlook {
            Some(o) => text(out, o.as_str()),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        true
    }
}

/// The room a status body is about.
#[derive(Serialize, ToSchema)]
struct RoomBody<'a> {
    id: &'a str,
    state: RoomState,
    /// The opening (RFC 3339); null when the room has none.
    #[schema(required = true, format = DateTime)]
    opens_at: Option<String>,
}

pub(super) fn rfc3339_ms(ms: u64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
}

/// The ticket that must be there (status, leave).
async fn required_claims(
    state: &AppState,
    presented: Result<Option<Presented>, ApiError>,
    room: &RoomId,
    now: u64,
) -> Result<Claims, ApiError> {
    match present_claims(state, presented, room, now) {
        Ok(claims) => Ok(claims),
        Err(e) => Err(Box::pin(unknown_room_first(state, room, e)).await),
    }
}

/// [`checked_claims`] of a ticket that must be there, without the store
/// (which [`required_claims`] asks when it is refused).
fn present_claims(
    state: &AppState,
    presented: Result<Option<Presented>, ApiError>,
    room: &RoomId,
    now: u64,
) -> Result<Claims, ApiError> {
    checked_claims(state, presented, room, now)
        .and_then(|claims| claims.ok_or(ApiError::MissingTicket))
}

/// The ticket's claims, checked without the store.
fn checked_claims(
    state: &AppState,
    presented: Result<Option<Presented>, ApiError>,
    room: &RoomId,
    now: u64,
) -> Result<Option<Claims>, ApiError> {
    let Some(presented) = presented? else {
        return Ok(None);
    };
    verify(&state.keys, &presented.token, Kind::Ticket, room, now)
        .map(Some)
        .map_err(|reason| ApiError::InvalidTicket {
            reason,
            clear_cookie: presented.cookie,
        })
}

/// A room that does not exist is 404 whatever the ticket says: `error`,
/// unless the store says the room is unknown (or cannot say). Asked of the
/// store only when the ticket failed, so good requests keep one round
/// trip; boxed by its callers, so the futures of good requests do not
/// carry it.
async fn unknown_room_first(state: &AppState, room: &RoomId, error: ApiError) -> ApiError {
    match room_exists(state, room).await {
        Ok(true) => error,
        Ok(false) => ApiError::UnknownRoom,
        Err(e) => e,
    }
}

/// Whether `room` exists. A room this instance observed within a view's
/// life exists, and one the promoter's recent listing lacks does not: a
/// flood of made-up room ids then costs no store call each. Without a
/// fresh listing the store is asked.
pub(super) async fn room_exists(state: &AppState, room: &RoomId) -> Result<bool, ApiError> {
    match state.snapshots.exists(room) {
        Some(true) => return Ok(true),
        Some(false) => {
            // Perhaps made since the listing, on another instance: the
            // list is read again, once a tick at most for all such requests.
            if state.snapshots.claim_relist() {
                let asked = std::time::Instant::now();
                if let Ok(rooms) = state.queue.rooms().await {
                    state.snapshots.retain(&rooms, asked);
                    return Ok(rooms.contains(room));
                }
            }
            return Ok(false);
        }
        None if state.snapshots.observed(room) => return Ok(true),
        None => {}
    }
    match state.queue.figures(room).await {
        Ok(_) => Ok(true),
        Err(StoreError::UnknownRoom) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// When a ticket issued at `now` (unix seconds) expires: a day from the
/// later of now and the room's opening, so a pre-queue ticket outlives the
/// wait for it.
fn ticket_expiry(now: u64, opens_at_ms: Option<u64>) -> u64 {
    opens_at_ms.map_or(now, |at| now.max(at / 1000)) + TICKET_LIFETIME_SECS
}

/// The status body for where the visitor stands (no tokens yet).
fn status_body<'a>(
    room: &'a RoomId,
    snap: &Snapshot,
    state: VisitorState,
    position: Option<u64>,
) -> StatusBody<'a> {
    let line = &snap.line;
    StatusBody {
        state,
        position,
        waiting: line.waiting,
        eta_seconds: pacing::eta_seconds(snap.standing, line),
        poll_after_ms: pacing::poll_after_ms(snap.standing, line),
        room: RoomBody {
            id: room.as_str(),
            state: line.state,
            opens_at: line.opens_at_ms.and_then(rfc3339_ms),
        },
        ticket: None,
        entry_token: None,
        entry_expires_at: None,
        outlook: None,
    }
}

/// The room's session rules when `snap` admits (the one answer that uses
/// them: its entry token's life); asked only then.
async fn admitted_rules(state: &AppState, room: &RoomId, snap: &Snapshot) -> Option<SessionRules> {
    match snap.standing {
        Standing::Admitted { .. } => {
            Some(state.sessions.rules_for(room, state.queue.as_ref()).await)
        }
        _ => None,
    }
}

/// The answer for a snapshot: the status body, with an entry token (also
/// set as its cookie) when admitted (`rules`, from [`admitted_rules`]), and
/// `ticket` when the caller issued one. No waiting in it: the poll answered
/// from the view never waits at all.
fn respond(
    state: &AppState,
    room: &RoomId,
    snap: &Snapshot,
    holder: Holder,
    ticket: Option<Issued>,
    rules: Option<SessionRules>,
) -> Response {
    let (visitor_state, position) = match snap.standing {
        Standing::Waiting { position } => (VisitorState::Waiting, position),
        Standing::Admitted { .. } => (VisitorState::Admitted, None),
        Standing::Gone => (VisitorState::Expired, None),
        Standing::Closed => (VisitorState::Closed, None),
        Standing::SoldOut => (VisitorState::SoldOut, None),
    };
    let mut body = status_body(room, snap, visitor_state, position);
    body.outlook = state.outlooks.tell(room, snap);
    if body.outlook.is_some_and(|o| o != Outlook::Likely) {
        // Where the seats may run short before this waiter's turn, every
        // seat may be held for a while first, and admission stops until
        // holds end: the schedule cannot tell when that turn comes.
        body.eta_seconds = None;
    }
    let mut cookies = Vec::new();
    if let Some(issued) = ticket {
        cookies.push(issued.cookie);
        body.ticket = Some(issued.token);
    }
    if let (Standing::Admitted { until_ms }, Some(seq)) = (snap.standing, snap.seq) {
        let now = state.clock.now_secs();
        let expires_at = entry_expiry(now, until_ms, rules.unwrap_or_default());
        let entry = issue(state, Kind::Entry, room, seq, holder, now, expires_at);
        cookies.push(entry.cookie);
        body.entry_token = Some(entry.token);
        body.entry_expires_at = rfc3339_ms(expires_at * 1000);
    }
    let mut response = json(&body);
    let h = response.headers_mut();
    if let Some(at) = admitted_at(snap).and_then(|at| HeaderValue::try_from(at).ok()) {
        h.insert(ADMITTED_AT, at);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    for cookie in cookies {
        h.append(header::SET_COOKIE, cookie);
    }
    response
}

/// The header of an `admitted` answer that says when the store let the
/// visitor in (RFC 3339, ms), so a client can tell how late it heard.
const ADMITTED_AT: header::HeaderName = header::HeaderName::from_static("waiting-room-admitted-at");

/// When an admitted visitor was let in: its session's end less the session
/// length (the store's, at the last tick; a length changed since then
/// shifts it); `None` unless admitted, or before the room's first tick.
fn admitted_at(snap: &Snapshot) -> Option<String> {
    let Standing::Admitted { until_ms } = snap.standing else {
        return None;
    };
    let session_ms = snap.line.schedule?.session_ms;
    rfc3339_ms(until_ms.checked_sub(session_ms)?)
}

/// Room for a status body with a ticket and an entry token (about 600
/// bytes), so writing it never grows the buffer.
const BODY_CAPACITY: usize = 768;

thread_local! {
    /// Each worker thread's buffer for writing status bodies: the answer
    /// then takes one allocation of the body's exact size, where a buffer
    /// of its own took two (the buffer, and the shared header `Bytes` puts
    /// on a vector whose length is not its capacity).
    static BODY_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `body` as an `application/json` answer.
fn json(body: &StatusBody) -> Response {
    let written = BODY_BUF.with_borrow_mut(|buf| {
        buf.clear();
        buf.reserve(BODY_CAPACITY);
        if !body.write_plain(buf) {
            serde_json::to_writer(&mut *buf, body)?;
        }
        Ok::<_, serde_json::Error>(Bytes::copy_from_slice(buf))
    });
    let bytes = match written {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!(error = %e, room = %body.room.id, "a status body did not serialize");
            return ApiError::Internal.into_response();
        }
    };
    let mut response = Response::new(Body::from(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Join the room's line.
///
/// Gives a place in line and a ticket, gives back the place of a valid
/// ticket (never a second place), or admits at once when the room is open,
/// nobody waits and there is room. In a room that asks a challenge
/// (`challenge`), a join that holds no standing place must bring its
/// answer in `Waiting-Room-Challenge`: without one it is 428 with what to
/// solve; one answer is one place (shown again, it gets that place back). A closed room answers `closed`, a room
/// whose line cap is reached `sold_out`; neither takes a place. The ticket
/// is also set as the cookie `wr_ticket_{room}` (HttpOnly, SameSite=Lax,
/// Path=/, Secure except on plain-http loopback), and when admitted the
/// entry token as `wr_entry_{room}`.
#[utoipa::path(
    post,
    path = "/queue/{room}/join",
    tag = "queue",
    params(RoomPath, ChallengeHeader),
    request_body(content = EmptyBody, description = "Nothing, or `{}`"),
    security((), ("ticket" = [])),
    responses(
        (status = 200, description = "Where the visitor stands, with its ticket", body = StatusBody,
            headers(
                ("Set-Cookie" = String, description = "`wr_ticket_{room}`, and `wr_entry_{room}` when admitted"),
                ("Waiting-Room-Admitted-At" = String, description = "When admitted: when the visitor was let in (RFC 3339)"),
            )),
        (status = 428, description = "`challenge_required`: the room asks a challenge and the join \
            brought no answer (and holds no standing place); no place was taken", body = ChallengeRequiredBody),
        BadBody, BadTicket, ChallengeRefused, NoRoom, JoinLimits,
    ),
)]
// No span: at the binary's default `info` the fmt subscriber formatted a
// span's fields on every call (6,500 instructions a join: `request_cost
// --log`), and even at debug its wrapper doubled the future, copied on
// every request. A store error logged on the way does not name the room
// (an outage is the store's, not a room's).
async fn join(
    State(state): State<AppState>,
    _: SameSite,
    RoomTicket { room, presented }: RoomTicket,
    IdentityToken(identity): IdentityToken,
    ChallengeAnswer(answer): ChallengeAnswer,
    Client(client): Client,
    SmallBody(body): SmallBody<MAX_BODY>,
) -> Result<Response, ApiError> {
    let EmptyBody {} = optional_object(body?)?;
    state.clients.check_join(&client)?;
    // The waits other than the store's are boxed, so the join's future
    // (copied on every request) carries none of them.
    // One clock read for the ticket's check and the new one's times.
    let now = state.clock.now_secs();
    let claims = match checked_claims(&state, presented, &room, now) {
        Ok(claims) => claims,
        Err(e) => return Err(Box::pin(unknown_room_first(&state, &room, e)).await),
    };
    let rules = match state.sessions.known(&room) {
        Some(rules) => rules,
        None => Box::pin(state.sessions.known_for(&room, state.queue.as_ref())).await?,
    };
    let account = join_account(
        &state,
        &room,
        rules.identity,
        identity,
        claims.as_ref(),
        now,
    )?;
    let standing = claims.is_some() || account.is_some();
    let proof = match rules.challenge.kind {
        ChallengeKind::Off => Proof::NotAsked,
        ChallengeKind::Pow => pow_proof(
            &state.keys,
            &room,
            rules.challenge,
            answer.as_deref(),
            standing,
            now,
        )?,
        ChallengeKind::Turnstile => {
            Box::pin(state.turnstile.join_proof(
                rules.challenge.fail,
                answer.as_deref(),
                standing,
                client.exact_ip(),
                now.saturating_mul(1000),
            ))
            .await?
        }
    };
    let limit = state.clients.place_limit(&client);
    let request = JoinRequest {
        existing: claims.as_ref().map(|c| c.seq),
        limit,
        account,
        proof,
    };
    let joined = state.joins.join(&room, request).await?;
    let mut snap = match joined {
        Joined::Answer(snap) => snap,
        Joined::TooManyPlaces => return Err(ApiError::TooManyPlaces),
        Joined::ChallengeNeeded => return Err(challenge_ask(&state, &room, rules.challenge, now)),
    };
    let solution = match proof {
        Proof::Solved { key, .. } => Some(key),
        _ => None,
    };
    // The same place keeps the same visitor and account: a ticket's standing
    // place wins over the account a token names (as in the store, which
    // leaves that account's own place as it was), so its tokens keep naming
    // the account it was given to, and the other account's tokens name only
    // that account's one place. A new place gets a new visitor id. Every
    // browser of an account on its one place is one visitor (its hold is
    // theirs), named by the account and the place.
    let (visitor, place_account) = match (&claims, account, snap.seq) {
        (Some(c), _, Some(seq)) if c.seq == seq => (c.visitor, c.account),
        (_, Some(account), Some(seq)) => (account_visitor(account, seq), Some(account.0)),
        (_, None, Some(seq)) if let Some(key) = solution => (shared_visitor(key, seq), None),
        _ => (rand::random(), None),
    };
    // An admission shown again (its ticket, or its account from another
    // browser) from one more address counts as a status does (a ticket or
    // an identity posted for a crowd would otherwise mint entry tokens
    // here); ended, it reads as a gone place and gets no ticket. One let in
    // at once without an account is counted by its first status, not here:
    // every join of a passthrough room would otherwise fill the sessions'
    // map.
    let shown_again = account.is_some()
        || solution.is_some()
        || claims.as_ref().is_some_and(|c| Some(c.seq) == snap.seq);
    if let (true, Standing::Admitted { until_ms }, Some(seq)) =
        (shown_again, snap.standing, snap.seq)
        && Box::pin(used_from(&state, &room, seq, visitor, until_ms, client)).await?
    {
        snap.standing = Standing::Gone;
        snap.seq = None;
    }
    let rules = match snap.standing {
        Standing::Admitted { .. } => Box::pin(admitted_rules(&state, &room, &snap)).await,
        _ => None,
    };
    let holder = Holder {
        visitor,
        account: place_account,
    };
    let ticket = snap.seq.map(|seq| {
        let expires_at = ticket_expiry(now, snap.line.opens_at_ms);
        issue(&state, Kind::Ticket, &room, seq, holder, now, expires_at)
    });
    Ok(respond(&state, &room, &snap, holder, ticket, rules))
}

/// The account a join names, as the room's `identity` setting (`mode`)
/// asks: its identity token's when it sends one (checked even where
/// optional), else the one its valid ticket carries (a rejoin needs no new
/// token), else none, or 401 where one is required.
fn join_account(
    state: &AppState,
    room: &RoomId,
    mode: IdentityMode,
    identity: Option<String>,
    claims: Option<&Claims>,
    now: u64,
) -> Result<Option<AccountHash>, ApiError> {
    if identity.is_none()
        && mode.is_on()
        && let Some(account) = claims.and_then(|c| c.account)
    {
        return Ok(Some(AccountHash(account)));
    }
    state
        .identities
        .account(mode, identity.as_deref(), room, now)
}

/// The 428 for a join that needs a challenge and brought none.
fn challenge_ask(state: &AppState, room: &RoomId, challenge: Challenge, now: u64) -> ApiError {
    match challenge.kind {
        ChallengeKind::Pow => {
            ApiError::ChallengeRequired(Box::new(ask_pow(&state.keys, room, challenge.bits, now)))
        }
        ChallengeKind::Turnstile => state.turnstile.ask().into(),
        // Not asked: only a join to a room that asks one is refused so.
        ChallengeKind::Off => ApiError::Internal,
    }
}

/// The visitor id of an account's place: the same for every browser of the
/// account on that place, so they share its one hold.
fn account_visitor(account: AccountHash, seq: u64) -> u128 {
    shared_visitor(account.0, seq)
}

/// The visitor id of a place every holder of `key` (an account, or a
/// challenge's solution) shares: named by the key and the place, so they
/// share its one hold.
fn shared_visitor(key: [u8; 8], seq: u64) -> u128 {
    (u128::from(u64::from_be_bytes(key)) << 64) | u128::from(seq)
}

/// Where the ticket's holder stands.
///
/// Also records that the visitor still polls (a waiter who stops polling
/// for the room's abandon time loses the place). When admitted, the answer
/// carries the entry token, also set as the cookie `wr_entry_{room}`.
///
/// With `Prefer: wait=N` (RFC 7240), a waiter is held: in a paused room,
/// until it is resumed or closed; near the front of an open room with
/// seats to sell, until it is let in (in a lottery, 1 s at most); and,
/// far back, while every seat is held or booked or, once that has
/// happened since the opening, while a few seats are back. It is answered
/// when that changes (let in, sold out, paused, resumed, closed) or after
/// at most min(N, the poll interval, 20) seconds, with
/// `Preference-Applied: wait=N`; poll again right after such an answer.
/// Any other poll is answered at once, as without the header.
#[utoipa::path(
    get,
    path = "/queue/{room}/status",
    tag = "queue",
    params(RoomPath, PreferWait),
    security(("ticket" = [])),
    responses(
        (status = 200, description = "Where the visitor stands", body = StatusBody,
            headers(
                ("Set-Cookie" = String, description = "`wr_entry_{room}` when admitted"),
                ("Preference-Applied" = String, description = "`wait=N` when the poll was held (at most N seconds)"),
                ("Waiting-Room-Admitted-At" = String, description = "When admitted: when the visitor was let in (RFC 3339)"),
            )),
        TicketAuth, NoRoom, StoreDown,
    ),
)]
// No span: the poll answered from the view, most of a sale's requests,
// logs nothing, and a span's wrapper doubled its future (copied on every
// request); the store's way has its own (`stored_status`).
async fn status(Poll(poll): Poll) -> Result<Response, ApiError> {
    match poll {
        Ok(response) => Ok(response),
        Err(later) => Box::pin(later.answer()).await,
    }
}

/// A status poll, answered at once where it can be (far back in line,
/// from the view: most of a sale's requests), else what it waits for. An
/// extractor rather than the handler's body: an extractor reads the
/// router's state by reference, where taking `State` clones it, two atomic
/// writes a poll to the one counter every request on every core shares.
/// Whatever waits goes in a boxed future of its own (with its own clone of
/// the state), so the handler's, created and copied on every request,
/// carries none of theirs.
struct Poll(Result<Response, Pending>);

/// A poll the view could not answer at once, with what answering it needs
/// (its `Later` already boxed: no second box around it).
struct Pending {
    later: Box<Later>,
    state: AppState,
    room: RoomId,
    client: ClientKey,
}

impl Pending {
    async fn answer(self) -> Result<Response, ApiError> {
        self.later.answer(self.state, self.room, self.client).await
    }
}

impl FromRequestParts<AppState> for Poll {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Poll, ApiError> {
        let RoomTicket { room, presented } = RoomTicket::from_request_parts(parts, state).await?;
        let Ok(Client(client)) = Client::from_request_parts(parts, state).await;
        let Ok(Preferred(preferred)) = Preferred::from_request_parts(parts, state).await;
        Ok(Poll(at_once(state, &room, presented, preferred).map_err(
            |later| Pending {
                later,
                state: state.clone(),
                room,
                client,
            },
        )))
    }
}

/// What a status poll still needs that waits (boxed where it is returned:
/// it is large, and only the uncommon polls make one).
enum Later {
    /// A refused ticket: refused unless the store says the room is unknown.
    Refused(ApiError),
    /// The view cannot answer: the store's status, then as below.
    Store {
        claims: Claims,
        watch: Option<(u64, RoomWatch)>,
    },
    /// A waiter's answer to hold for `secs` (`Prefer: wait`).
    Hold {
        claims: Claims,
        watch: RoomWatch,
        snap: Snapshot,
        secs: u64,
    },
    /// Admitted: the room's session rules, for the entry token.
    Admitted { claims: Claims, snap: Snapshot },
}

/// The status answer when nothing needs a wait, else what does.
fn at_once(
    state: &AppState,
    room: &RoomId,
    presented: Result<Option<Presented>, ApiError>,
    preferred: Option<u64>,
) -> Result<Response, Box<Later>> {
    let claims = present_claims(state, presented, room, state.clock.now_secs())
        .map_err(|e| Box::new(Later::Refused(e)))?;
    // Subscribed before the answer is computed, so no change after it is missed.
    let watch = preferred.and_then(|p| state.snapshots.watch(room).map(|w| (p, w)));
    match state.snapshots.answer(room, claims.seq) {
        Some(snap) => settle(state, room, claims, watch, snap),
        None => Err(Box::new(Later::Store { claims, watch })),
    }
}

/// The answer for `snap`, unless it is to be held or admits (both wait).
fn settle(
    state: &AppState,
    room: &RoomId,
    claims: Claims,
    watch: Option<(u64, RoomWatch)>,
    snap: Snapshot,
) -> Result<Response, Box<Later>> {
    if let (Some((preferred, watch)), Standing::Waiting { position }) = (watch, snap.standing) {
        let most = holds::wait_secs(preferred, snap.standing, &snap.line);
        let secs = holds::hold_secs(&snap.line, &watch, position, most);
        if secs > 0 {
            return Err(Box::new(Later::Hold {
                claims,
                watch,
                snap,
                secs,
            }));
        }
    }
    if let Standing::Admitted { .. } = snap.standing {
        return Err(Box::new(Later::Admitted { claims, snap }));
    }
    Ok(respond(state, room, &snap, Holder::of(&claims), None, None))
}

impl Later {
    /// Waits for what the poll needs, and answers it.
    async fn answer(
        self: Box<Self>,
        state: AppState,
        room: RoomId,
        client: ClientKey,
    ) -> Result<Response, ApiError> {
        match *self {
            Later::Refused(e) => Err(unknown_room_first(&state, &room, e).await),
            Later::Store { claims, watch } => {
                let snap = stored_status(&state, &room, &claims, client).await?;
                match settle(&state, &room, claims, watch, snap) {
                    Ok(response) => Ok(response),
                    // Hold or Admitted: one more step, not this one again.
                    Err(later) => Box::pin(later.answer(state, room, client)).await,
                }
            }
            Later::Hold {
                claims,
                watch,
                snap,
                secs,
            } => held(state, room, claims, client, watch, snap, secs).await,
            Later::Admitted { claims, snap } => {
                let rules = admitted_rules(&state, &room, &snap).await;
                Ok(respond(
                    &state,
                    &room,
                    &snap,
                    Holder::of(&claims),
                    None,
                    rules,
                ))
            }
        }
    }
}

/// A status poll held until the sale changes or `secs` pass (`Prefer:
/// wait`), then answered with `Preference-Applied`.
async fn held(
    state: AppState,
    room: RoomId,
    claims: Claims,
    client: ClientKey,
    watch: RoomWatch,
    mut snap: Snapshot,
    secs: u64,
) -> Result<Response, ApiError> {
    // Only a waiter is held (the caller's check).
    let position = match snap.standing {
        Standing::Waiting { position } => position,
        _ => None,
    };
    let mut applied = None;
    let ticket = (&room, claims.seq);
    let began = std::time::Instant::now();
    if let Some(ended) = state
        .holds
        .hold(ticket, watch, position, &snap.line, secs)
        .await
    {
        snap = match ended {
            // Every held waiter of the room wakes at once on the last
            // seat: all read the same terminal answer, from the signal
            // itself, rather than ask the view or the store each (a
            // view aged by that very rush would send thousands to the
            // store at once, past its timeouts).
            Some(signal) if signal.seats == SeatsLeft::SoldOut => sold_out(snap),
            // A closed room wakes them all alike, and the view does not
            // answer for it: from the signal too, beyond the reach of the
            // admission budget over what the view may have missed during
            // the hold (seats that came back meanwhile may have let the
            // front in; it stays inside). Healthy, it missed a tick's
            // moves; blind (observations failing), the whole hold's.
            Some(signal)
                if signal.state == RoomState::Closed
                    && position.is_some_and(|p| {
                        let missed = began.elapsed().min(state.snapshots.blind_for(&room));
                        p > state.snapshots.front_zone(&snap.line, missed)
                    }) =>
            {
                closed(snap)
            }
            _ => current_status(&state, &room, &claims, client).await?,
        };
        applied = Some(secs);
    }
    let rules = admitted_rules(&state, &room, &snap).await;
    let mut response = respond(&state, &room, &snap, Holder::of(&claims), None, rules);
    if let Some(Ok(value)) = applied.map(|secs| HeaderValue::try_from(format!("wait={secs}"))) {
        response
            .headers_mut()
            .insert(holds::PREFERENCE_APPLIED, value);
    }
    Ok(response)
}

/// The answer for a waiter of a room that has just closed (what the store
/// answers then: `closed`, no position).
fn closed(mut snap: Snapshot) -> Snapshot {
    snap.standing = Standing::Closed;
    snap.line.state = RoomState::Closed;
    snap
}

/// The answer for a waiter of a room that has just sold out.
fn sold_out(mut snap: Snapshot) -> Snapshot {
    snap.standing = Standing::SoldOut;
    snap.line.sale.seats = SeatsLeft::SoldOut;
    snap
}

/// Where `claims`' holder stands now: from the instance's snapshot when it
/// can answer (far back in line: no store round trip), else from the store;
/// an admission used from too many addresses ends here.
async fn current_status(
    state: &AppState,
    room: &RoomId,
    claims: &Claims,
    client: ClientKey,
) -> Result<Snapshot, ApiError> {
    if let Some(snap) = state.snapshots.answer(room, claims.seq) {
        return Ok(snap);
    }
    // Boxed: the store's path (a shared session ended on the way) is a
    // future of over 2 KiB, which every status from the view, the most
    // common request of a sale, would otherwise carry and copy.
    Box::pin(stored_status(state, room, claims, client)).await
}

/// [`current_status`] when the view cannot answer: the store's. A span at
/// debug, so a store error logged on the way names the room under
/// `RUST_LOG=origin=debug`.
#[instrument(level = "debug", skip_all, fields(%room))]
async fn stored_status(
    state: &AppState,
    room: &RoomId,
    claims: &Claims,
    client: ClientKey,
) -> Result<Snapshot, ApiError> {
    let mut snap = state.queue.status(room, claims.seq).await?;
    state.snapshots.saw(room, claims.seq, snap.standing);
    if let Standing::Admitted { until_ms } = snap.standing
        && used_from(state, room, claims.seq, claims.visitor, until_ms, client).await?
    {
        snap.standing = Standing::Gone;
    }
    Ok(snap)
}

/// Counts `client` among the addresses an admitted session is used from,
/// against the room's rules; past them the session ends (one admission
/// shared among many) and this is `true`. Status and join (a ticket shown
/// again) both count: either hands out an entry token.
async fn used_from(
    state: &AppState,
    room: &RoomId,
    seq: u64,
    visitor: u128,
    until_ms: u64,
    client: ClientKey,
) -> Result<bool, ApiError> {
    // The watch counts addresses against the room's rules: learn them
    // first (the store is asked once per room and instance).
    state.sessions.rules_for(room, state.queue.as_ref()).await;
    let now = state.clock.now_ms();
    if state.sessions.watch(room, seq, until_ms, client, now) == Watch::Shared {
        end_shared(state, room, seq, visitor).await?;
        return Ok(true);
    }
    Ok(false)
}

/// Give up the place in line or the session.
///
/// The slot is free at once; the room's cookies are deleted. Without a
/// ticket, the session's entry token (cookie `wr_entry_{room}` or header
/// `Entry-Token`) ends the session it names: the edge's way when the site
/// answers a visitor with `Waiting-Room-Command: revoke`. A ticket, when
/// there is one, is what counts.
#[utoipa::path(
    post,
    path = "/queue/{room}/leave",
    tag = "queue",
    params(RoomPath),
    request_body(content = EmptyBody, description = "Nothing, or `{}`"),
    security(("ticket" = []), ("entry_token" = [])),
    responses(
        (status = 204, description = "Left (also when already gone)",
            headers(("Set-Cookie" = String, description = "Deletes `wr_ticket_{room}` and `wr_entry_{room}`"))),
        BadBody, LeaveAuth, CrossSite, NoRoom, StoreDown,
    ),
)]
// At debug, as join's span.
#[instrument(level = "debug", skip_all, fields(%room))]
async fn leave(
    State(state): State<AppState>,
    _: SameSite,
    RoomTicket { room, presented }: RoomTicket,
    headers: HeaderMap,
    SmallBody(body): SmallBody<MAX_BODY>,
) -> Result<Response, ApiError> {
    let EmptyBody {} = optional_object(body?)?;
    let now = state.clock.now_secs();
    let entry = match presented {
        Ok(None) => presented_entry(&headers, &room),
        _ => None,
    };
    let claims = match entry {
        Some(token) => match verify(&state.keys, &token, Kind::Entry, &room, now) {
            Ok(claims) => claims,
            Err(reason) => {
                let refused = ApiError::InvalidEntry(reason);
                return Err(Box::pin(unknown_room_first(&state, &room, refused)).await);
            }
        },
        None => required_claims(&state, presented, &room, now).await?,
    };
    end_session(&state, &room, claims.seq, claims.visitor).await?;
    state.snapshots.forget(&room, claims.seq);
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.append(
        header::SET_COOKIE,
        clear_cookie(&ticket_cookie(room.as_str())),
    );
    h.append(
        header::SET_COOKIE,
        clear_cookie(&entry_cookie(room.as_str())),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(state: VisitorState) -> StatusBody<'static> {
        StatusBody {
            state,
            position: None,
            waiting: 0,
            eta_seconds: None,
            poll_after_ms: 1_000,
            room: RoomBody {
                id: "concert-1",
                state: RoomState::Open,
                opens_at: None,
            },
            ticket: None,
            entry_token: None,
            entry_expires_at: None,
            outlook: None,
        }
    }

    fn by_hand(body: &StatusBody) -> Option<String> {
        let mut out = Vec::new();
        body.write_plain(&mut out)
            .then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_hand_written_body_is_serdes_to_the_byte() {
        let mut bodies = Vec::new();
        for state in [
            VisitorState::Waiting,
            VisitorState::Admitted,
            VisitorState::Expired,
            VisitorState::Closed,
            VisitorState::SoldOut,
        ] {
            bodies.push(body(state));
        }
        for room_state in [RoomState::Open, RoomState::Paused, RoomState::Closed] {
            let mut b = body(VisitorState::Waiting);
            b.room.state = room_state;
            bodies.push(b);
        }
        let mut full = body(VisitorState::Admitted);
        full.position = Some(1);
        full.waiting = u64::MAX;
        full.eta_seconds = Some(0);
        full.poll_after_ms = 60_000;
        full.room.opens_at = rfc3339_ms(1_795_578_327_109);
        full.ticket = Some("AQEFYmVuY2gJY29zdC1qb2lu-_x.ZrNzVZG_iaxmLKHl3zjt".to_owned());
        full.entry_token = Some("AQIFYmVuY2g.abc".to_owned());
        full.entry_expires_at = rfc3339_ms(1_795_578_400_000);
        bodies.push(full);
        let mut ticket_only = body(VisitorState::Waiting);
        ticket_only.position = Some(1_000_000);
        ticket_only.eta_seconds = Some(310);
        ticket_only.ticket = Some("t.s".to_owned());
        bodies.push(ticket_only);
        for outlook in [Outlook::Likely, Outlook::Uncertain, Outlook::Unlikely] {
            let mut b = body(VisitorState::Waiting);
            b.outlook = Some(outlook);
            bodies.push(b);
        }
        for b in &bodies {
            let serde = serde_json::to_string(b).unwrap();
            assert_eq!(by_hand(b).as_deref(), Some(serde.as_str()));
        }
    }

    #[test]
    fn a_string_not_plain_printable_ascii_is_left_to_serde() {
        for odd in ["a\"b", "a\\b", "a\nb", "\u{7f}", "é"] {
            let mut b = body(VisitorState::Waiting);
            b.ticket = Some(odd.to_owned());
            assert_eq!(by_hand(&b), None, "{odd:?}");
            let mut out = Vec::new();
            assert!(!b.write_plain(&mut out));
            assert!(out.is_empty());
        }
    }
}
