//! The error responses the OpenAPI document lists, each set said once: a
//! route names its errors in one word each, e.g.
//! `responses((status = 200, ..), AdminAuth, NoRoom, StoreDown)`.
//! Every body is the contract's `ErrorBody`.

use std::collections::BTreeMap;

use utoipa::IntoResponses;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, Response, ResponseBuilder};

/// One documented error response: status, description (the codes it may
/// carry) and the headers it sets.
fn error(description: &str, headers: &[(&str, &str, bool)]) -> RefOr<Response> {
    let mut response = ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("ErrorBody")))
            .build(),
    );
    for &(name, about, integer) in headers {
        let schema = if integer {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
                .minimum(Some(0))
        } else {
            ObjectBuilder::new().schema_type(Type::String)
        };
        let mut header = HeaderBuilder::new().schema(Some(schema));
        if !about.is_empty() {
            header = header.description(Some(about));
        }
        response = response.header(name, header.build());
    }
    RefOr::T(response.build())
}

const RETRY_AFTER: (&str, &str, bool) = ("Retry-After", "Seconds to wait", true);

/// Defines a unit type whose documentation is the given responses.
macro_rules! error_set {
    ($(#[$doc:meta])* $name:ident { $($status:literal => $description:expr, [$($header:expr),*];)+ }) => {
        $(#[$doc])*
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([
                    $(($status.to_string(), error($description, &[$($header),*])),)+
                ])
            }
        }
    };
}

error_set!(
    /// 503 `store_unavailable`, with `Retry-After`.
    StoreDown { "503" => "`store_unavailable`: the store cannot be reached", [RETRY_AFTER]; }
);

error_set!(
    /// 404 `unknown_room`: not a room id, or no such room.
    NoRoom { "404" => "`unknown_room`: not a room id, or no such room", []; }
);

error_set!(
    /// 404 `unknown_room`, or `no_draw` for a room without a draw.
    NoRoomOrDraw { "404" => "`unknown_room`: not a room id, or no such room; `no_draw`: the room \
        never had an opening, so no pre-queue draw", []; }
);

error_set!(
    /// 401 for a missing, wrong or disabled admin key, or an address that
    /// failed too often.
    AdminAuth {
        "401" => "`missing_admin_key`, `invalid_admin_key` or `admin_disabled`; also \
            `invalid_admin_key` with `Retry-After` while this address is throttled for \
            too many refused calls (the key is not even compared until then)",
            [("WWW-Authenticate", "", false)];
    }
);

error_set!(
    /// 401 when `--metrics-key` is set and not presented.
    MetricsAuth {
        "401" => "`invalid_metrics_key`: `--metrics-key` is set and the request \
            does not carry it as `Authorization: Bearer`", [("WWW-Authenticate", "", false)];
    }
);

error_set!(
    /// 401 for a missing or bad ticket.
    TicketAuth {
        "401" => "`missing_ticket`, or `invalid_ticket`: the ticket presented is forged, \
            malformed, expired or for another room", [];
    }
);

error_set!(
    /// 401 for a leave without a good ticket or entry token.
    LeaveAuth {
        "401" => "`missing_ticket` (neither a ticket nor an entry token), `invalid_ticket`: \
            the ticket presented is forged, malformed, expired or for another room, or \
            `invalid_entry`: with no ticket, the entry token presented is so; nothing changed", [];
    }
);

error_set!(
    /// 401 for a bad ticket where none is needed (join).
    BadTicket {
        "401" => "`invalid_ticket`: the ticket presented is forged, malformed, expired or \
            for another room", [];
    }
);

error_set!(
    /// What a JSON body can be refused with: 400, 413 and 422.
    BadBody {
        "400" => "`malformed_json`: the body is not JSON", [];
        "413" => "`body_too_large`: over the route's limit (1 KiB on queue routes, \
            4 KiB on booking routes, 64 KiB on admin routes)", [];
        "422" => "`invalid_body`: JSON of the wrong shape: wrong types, unknown fields \
            or values out of range", [];
    }
);

error_set!(
    /// 429 from the session's seat map loads.
    MapLimit {
        "429" => "`rate_limited`: this session loaded the seat map more often than \
            `--seat-map-per-minute` allows (a 304 does not count)", [RETRY_AFTER];
    }
);

error_set!(
    /// 429 from the per-address join limits.
    JoinLimits {
        "429" => "`rate_limited` (too many joins from this address) or \
            `too_many_places` (this address holds as many places as allowed); \
            no place was taken", [RETRY_AFTER];
    }
);

error_set!(
    /// A join's challenge answer refused, or not checkable now.
    ChallengeRefused {
        "403" => "`challenge_failed`: the answer's seed is forged, expired or for another \
            room, the hash has too few zero bits, or Turnstile refused the token; or \
            `cross_site`; nothing changed", [];
        "503" => "`store_unavailable`, or `challenge_unavailable`: a Turnstile room cannot \
            check tokens now and fails closed", [RETRY_AFTER];
    }
);

error_set!(
    /// 403 for a state-changing request from another site's page.
    CrossSite {
        "403" => "`cross_site`: sent from another site's page (by `Sec-Fetch-Site` or \
            `Origin`); nothing changed", [];
    }
);

error_set!(
    /// 401 for a missing, bad or ended entry token.
    EntryAuth {
        "401" => "`invalid_entry`: no entry token for this room, or one that is forged, \
            expired, for another room, or whose session has ended", [];
    }
);

error_set!(
    /// 404 for an unknown room, performance, hold or booking.
    NotFound {
        "404" => "`unknown_room`, `unknown_performance`, or `not_found` (no such hold or \
            booking of this visitor: another visitor's reads the same)", [];
    }
);

error_set!(
    /// What a hold can be refused with, besides the body's shape.
    SeatRefusal {
        "409" => "`seat_unavailable` (the taken seats listed in `seats`; nothing held), \
            `hold_exists` (one live hold per visitor and room, whatever the performance: release it \
            to hold elsewhere) or `account_limit` (the visitor's account would hold and have \
            booked more than the performance's `max_seats_per_account`; nothing held)", [];
        "422" => "`unknown_seat`, `too_many_seats`, `no_seats` or `invalid`", [];
    }
);

error_set!(
    /// What a confirm or a release can be refused with.
    BookingConflict {
        "402" => "`payment_declined` or `payment_failed`: nothing was charged, the hold stays \
            (but its 5th declined card ends it: a confirm after that is 409 `hold_expired`)", [];
        "409" => "`hold_expired`, `payment_in_progress` or `idempotency_key_reused`", [];
    }
);

error_set!(
    /// 429 from the session's allowance of booking writes.
    SessionLimit {
        "429" => "`rate_limited`: this session made more holds, releases and confirms than \
            its allowance (a burst of 20, then one a second); nothing changed", [RETRY_AFTER];
    }
);

error_set!(
    /// 503 when the booking database cannot be reached or stays busy.
    BookingDown {
        "503" => "`store_unavailable` or `busy`: retry shortly", [RETRY_AFTER];
    }
);

error_set!(
    /// What a confirm's headers and body can be refused with.
    ConfirmBody {
        "400" => "`malformed_json`, `idempotency_key_required` or `invalid_idempotency_key` \
            (1 to 255 visible ASCII characters)", [];
        "413" => "`body_too_large`: over 4 KiB", [];
        "422" => "`invalid_body`: not `{\"payment_token\": \"...\"}`", [];
    }
);

error_set!(
    /// 400 for a query parameter the route cannot read.
    BadQuery {
        "400" => "`invalid_query`: a query parameter is not what the route takes", [];
    }
);
