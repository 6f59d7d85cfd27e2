//! What the edge does when the site answers with `Waiting-Room-Command`:
//! the site's way to tell the waiting room about a visitor, in the
//! response to that visitor's own request.
//!
//! `revoke` (any case) in the response to a protected request ends the
//! visitor's session in the room: the edge calls the origin's
//! `POST /queue/{room}/leave` with each genuine entry token of the room the
//! request carried ([`Orders::revoke`]), so the slot goes to the next
//! waiter; tells the browser to delete the room's entry cookie, dropping
//! any renewal of it from the response ([`set_cookies`]); and, in this
//! isolate, refuses the session's tokens from then on
//! ([`crate::revoked`]). Any other value is ignored. The header itself
//! never reaches the browser, whatever the path and value
//! ([`keeps_header`]).
//!
//! Plain functions over what the request and the response carry; the
//! runtime makes the calls and copies the headers.

use crate::config::{EdgeConfig, QUEUE_PREFIX};
use crate::path;
use crate::revoked::refuse_until;

use super::{Input, Pass, entry_tokens, rooms_of};

/// The response header the site sends commands to the edge in.
pub const COMMAND_HEADER: &str = "Waiting-Room-Command";

/// How long the edge waits for the origin to end a revoked session before
/// it answers the browser anyway.
pub const REVOKE_TIMEOUT_MS: u64 = 2_000;

/// Whether a `Waiting-Room-Command` value says `revoke`: in any case, alone
/// or in a comma-separated list (several such headers arrive joined so).
#[must_use]
pub fn is_revoke(value: &str) -> bool {
    value
        .split(',')
        .any(|part| part.trim().eq_ignore_ascii_case("revoke"))
}

/// A session to end: its room, an entry token of it (what the origin's
/// leave is called with), its sequence number, and until when (unix
/// seconds) the edge refuses its tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revocation<'c, 'r> {
    /// The room.
    pub room: &'c str,
    /// The entry token, as the request carried it (trimmed).
    pub token: &'r str,
    /// The session's sequence number.
    pub seq: u64,
    /// When no token of the session can be valid any more.
    pub refuse_until: u64,
}

impl Revocation<'_, '_> {
    /// The origin path that ends the session: the room's leave.
    #[must_use]
    pub fn leave_path(&self) -> String {
        format!("{QUEUE_PREFIX}{}/leave", self.room)
    }
}

/// What a forwarded response's command asks of the edge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orders<'c, 'r> {
    /// Sessions to end at the origin, one leave each.
    pub revoke: Vec<Revocation<'c, 'r>>,
    /// Rooms whose entry cookie the browser is told to delete.
    pub expire: Vec<&'c str>,
}

/// What to do for the request `input`, forwarded as `pass`, whose response
/// carries `Waiting-Room-Command: {command}`. Only a request the gate held
/// to a room (let in by entry token, bypass secret or fail-open) can
/// revoke: the rooms are those of its path, the sessions those of the
/// genuine, unexpired entry tokens it carried for them (each session once).
/// A session revoked before is revoked again if `input.revoked` does not
/// say so: a leave of an ended session changes nothing.
#[must_use]
pub fn orders<'c, 'r>(
    cfg: &'c EdgeConfig,
    input: &Input<'r>,
    pass: &Pass<'_>,
    command: &str,
) -> Orders<'c, 'r> {
    let held = matches!(
        pass,
        Pass::Admitted(_) | Pass::BypassSecret | Pass::FailOpen(_)
    );
    if !held || !is_revoke(command) {
        return Orders::default();
    }
    let Ok(paths) = path::Readings::of(input.path) else {
        return Orders::default();
    };
    let rooms = rooms_of(cfg, &paths);
    let mut revoke: Vec<Revocation<'c, 'r>> = Vec::new();
    for &room in &rooms {
        for (token, claims) in entry_tokens(cfg, input, room) {
            if !revoke.iter().any(|r| r.room == room && r.seq == claims.seq) {
                revoke.push(Revocation {
                    room,
                    token,
                    seq: claims.seq,
                    refuse_until: refuse_until(claims.issued_at, claims.expires_at, input.now),
                });
            }
        }
    }
    Orders {
        revoke,
        expire: rooms,
    }
}

/// Whether a response header called `name` (any case) is copied as it is
/// when the edge rewrites a response that carried a command: all but the
/// command itself and `Set-Cookie`, which [`set_cookies`] decides.
#[must_use]
pub fn keeps_header(name: &str) -> bool {
    !(name.eq_ignore_ascii_case(COMMAND_HEADER) || name.eq_ignore_ascii_case("set-cookie"))
}

/// The response's `Set-Cookie` values as the browser gets them: any that
/// sets the entry cookie of a room in `expire` is dropped (the origin
/// renews the cookie in its protected answers, and this session has
/// ended), then one deleting it is added for each such room.
#[must_use]
pub fn set_cookies(existing: Vec<String>, expire: &[&str]) -> Vec<String> {
    let names: Vec<String> = expire
        .iter()
        .map(|room| token::entry_cookie(room))
        .collect();
    let mut kept: Vec<String> = existing
        .into_iter()
        .filter(|cookie| !names.iter().any(|name| cookie_name(cookie) == name))
        .collect();
    kept.extend(expire.iter().map(|room| expired_entry_cookie(room)));
    kept
}

/// The `Set-Cookie` value that deletes `room`'s entry cookie: the origin's
/// own deletion, attribute for attribute (`Path=/` as it was set; a
/// deletion needs no `Secure`).
#[must_use]
pub fn expired_entry_cookie(room: &str) -> String {
    format!(
        "{}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0",
        token::entry_cookie(room)
    )
}

/// The cookie name a `Set-Cookie` value sets (before its first `=`,
/// trimmed); empty when it has none.
fn cookie_name(set_cookie: &str) -> &str {
    set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.split_once('='))
        .map_or("", |(name, _)| name.trim())
}

#[cfg(test)]
mod tests {
    use token::{Claims, Keyring, Kind};

    use super::*;
    use crate::health::QueueHealth;
    use crate::revoked::Revoked;

    const NOW: u64 = 1_800_000_000;
    const KEYS: &str = "k1:edge-command-secret-0123";

    fn config() -> EdgeConfig {
        EdgeConfig::from_vars(|name| {
            Some(
                match name {
                    "ORIGIN_URL" => "http://127.0.0.1:8080",
                    "ROOMS" => {
                        r#"[{"room":"concert","paths":["/book/concert/","/api/concert/"]},{"room":"vip","paths":["/vip/"]}]"#
                    }
                    "SIGNING_KEYS" => KEYS,
                    "EDGE_SECRET" => "edge-secret-0123456789",
                    _ => return None,
                }
                .to_owned(),
            )
        })
        .expect("test config is valid")
    }

    fn entry(keys: &str, room: &str, seq: u64, expires_at: u64) -> String {
        Keyring::parse(keys).expect("keys").sign(&Claims {
            kind: Kind::Entry,
            room: room.to_owned(),
            visitor: 7,
            seq,
            issued_at: NOW - 10,
            expires_at,
            account: None,
        })
    }

    fn input<'r>(
        path: &'r str,
        cookie: Option<&'r str>,
        header: Option<&'r str>,
        revoked: &'r Revoked,
    ) -> Input<'r> {
        Input {
            method: "POST",
            path,
            query: "",
            accept: Some("application/json"),
            sec_fetch_mode: None,
            origin: None,
            access_control_request_method: None,
            accept_language: None,
            cookie,
            entry_token: header,
            bypass: None,
            now: NOW,
            queue: QueueHealth::Up,
            revoked,
        }
    }

    #[test]
    fn revoke_is_read_in_any_case_and_nothing_else_is() {
        for yes in [
            "revoke",
            "REVOKE",
            " Revoke ",
            "noop, revoke",
            "revoke,revoke",
        ] {
            assert!(is_revoke(yes), "{yes:?}");
        }
        for no in ["", "revoked", "re voke", "end", "revoke-all", "logout"] {
            assert!(!is_revoke(no), "{no:?}");
        }
    }

    #[test]
    fn a_revoke_ends_each_session_the_request_carried_for_its_room() {
        let cfg = config();
        let none = Revoked::default();
        let good = entry(KEYS, "concert", 3, NOW + 60);
        let other = entry(KEYS, "concert", 4, NOW + 30);
        let foreign = entry("k1:someone-elses-secret-0123", "concert", 5, NOW + 60);
        let expired = entry(KEYS, "concert", 6, NOW);
        let vip = entry(KEYS, "vip", 8, NOW + 60);
        let cookie = format!(
            "a=1; wr_entry_concert={good}; wr_entry_concert={foreign}; \
             wr_entry_concert={expired}; wr_entry_concert={other}; wr_entry_vip={vip}"
        );
        let req = input("/book/concert/checkout", Some(&cookie), Some(&good), &none);
        let orders = orders(&cfg, &req, &Pass::Admitted("concert"), "revoke");
        assert_eq!(
            orders.revoke,
            vec![
                Revocation {
                    room: "concert",
                    token: good.as_str(),
                    seq: 3,
                    refuse_until: NOW + 70,
                },
                Revocation {
                    room: "concert",
                    token: other.as_str(),
                    seq: 4,
                    refuse_until: NOW + 40,
                },
            ],
            "the header's and the cookies' genuine tokens, each session once; not vip's"
        );
        assert_eq!(orders.expire, vec!["concert"]);
        assert_eq!(
            orders.revoke.first().map(Revocation::leave_path).as_deref(),
            Some("/queue/concert/leave")
        );
    }

    #[test]
    fn only_a_revoke_on_a_held_path_orders_anything() {
        let cfg = config();
        let none = Revoked::default();
        let good = entry(KEYS, "concert", 3, NOW + 60);
        let cookie = format!("wr_entry_concert={good}");
        let protected = input("/api/concert/checkout", Some(&cookie), None, &none);
        for pass in [
            Pass::Admitted("concert"),
            Pass::BypassSecret,
            Pass::FailOpen("concert"),
        ] {
            let o = orders(&cfg, &protected, &pass, "Revoke");
            assert_eq!(o.revoke.len(), 1, "{pass:?}");
            assert_eq!(o.expire, vec!["concert"], "{pass:?}");
            assert_eq!(orders(&cfg, &protected, &pass, "logout"), Orders::default());
        }
        for pass in [Pass::Queue, Pass::Unprotected, Pass::BypassPath] {
            assert_eq!(
                orders(&cfg, &protected, &pass, "revoke"),
                Orders::default(),
                "{pass:?}"
            );
        }
        // No token (fail-open): nothing to call, the cookie still goes.
        let bare = input("/api/concert/checkout", None, None, &none);
        let o = orders(&cfg, &bare, &Pass::FailOpen("concert"), "revoke");
        assert!(o.revoke.is_empty());
        assert_eq!(o.expire, vec!["concert"]);
        // Readings under two rooms: both.
        let vip = entry(KEYS, "vip", 8, NOW + 60);
        let both = format!("wr_entry_concert={good}; wr_entry_vip={vip}");
        let odd = input("/vip/..;/book/concert/x", Some(&both), None, &none);
        let o = orders(&cfg, &odd, &Pass::Admitted("concert"), "revoke");
        let rooms: Vec<_> = o.revoke.iter().map(|r| (r.room, r.seq)).collect();
        assert_eq!(rooms, vec![("concert", 3), ("vip", 8)]);
        assert_eq!(o.expire, vec!["concert", "vip"]);
    }

    #[test]
    fn a_revoked_session_opens_the_gate_no_more() {
        let cfg = config();
        let good = entry(KEYS, "concert", 3, NOW + 60);
        let cookie = format!("wr_entry_concert={good}");
        let none = Revoked::default();
        let mut revoked = Revoked::default();
        let req = input("/api/concert/seats", Some(&cookie), None, &none);
        assert_eq!(
            super::super::decide(&cfg, &req),
            super::super::Decision::Forward(Pass::Admitted("concert"))
        );
        let o = orders(&cfg, &req, &Pass::Admitted("concert"), "revoke");
        for r in &o.revoke {
            revoked.insert(r.room, r.seq, r.refuse_until, NOW);
        }
        // The same token, and a renewed one of the same session: held.
        let renewed = entry(KEYS, "concert", 3, NOW + 65);
        for token in [good.as_str(), renewed.as_str()] {
            let req = input("/api/concert/seats", None, Some(token), &revoked);
            assert!(
                matches!(
                    super::super::decide(&cfg, &req),
                    super::super::Decision::InQueue {
                        room: "concert",
                        ..
                    }
                ),
                "{token}"
            );
        }
        // Another session of the room is not touched.
        let next = entry(KEYS, "concert", 9, NOW + 60);
        let req = input("/api/concert/seats", None, Some(&next), &revoked);
        assert_eq!(
            super::super::decide(&cfg, &req),
            super::super::Decision::Forward(Pass::Admitted("concert"))
        );
    }

    #[test]
    fn the_entry_cookie_is_deleted_and_its_renewal_dropped() {
        let existing = vec![
            "wr_entry_concert=renewed; HttpOnly; SameSite=Lax; Path=/; Max-Age=60".to_owned(),
            "session=abc; Path=/; Secure".to_owned(),
            " wr_entry_concert =x".to_owned(),
            "wr_entry_concertx=keep; Path=/".to_owned(),
            "wr_ticket_concert=keep; Path=/".to_owned(),
            "wr_entry_vip=keep; Path=/".to_owned(),
            "junk".to_owned(),
        ];
        assert_eq!(
            set_cookies(existing.clone(), &["concert"]),
            vec![
                "session=abc; Path=/; Secure",
                "wr_entry_concertx=keep; Path=/",
                "wr_ticket_concert=keep; Path=/",
                "wr_entry_vip=keep; Path=/",
                "junk",
                "wr_entry_concert=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0",
            ]
        );
        assert_eq!(
            set_cookies(existing.clone(), &[]),
            existing,
            "nothing revoked"
        );
        assert_eq!(set_cookies(Vec::new(), &[]), Vec::<String>::new());
    }

    #[test]
    fn the_command_never_reaches_the_browser() {
        for name in [
            "Waiting-Room-Command",
            "waiting-room-command",
            "WAITING-ROOM-COMMAND",
        ] {
            assert!(!keeps_header(name), "{name}");
        }
        assert!(!keeps_header("Set-Cookie"));
        for name in [
            "Content-Type",
            "Cache-Control",
            "Location",
            "Waiting-Room-Commands",
        ] {
            assert!(keeps_header(name), "{name}");
        }
    }
}
