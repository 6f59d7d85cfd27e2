//! The answers the edge gives itself (everything that is not forwarded), as
//! plain data: status, headers, body. The runtime adapter copies a
//! [`Reply`] into a Workers `Response`; building it here keeps the exact
//! bytes under native tests.

use serde_json::json;

use crate::gate::Decision;
use crate::page::{Page, page_url};

/// Seconds a JSON client is told to wait before retrying a held request.
/// Apps should join at once and then poll as the status says; this is for
/// clients that only read headers.
pub const IN_QUEUE_RETRY_AFTER: &str = "5";

/// Seconds a client is told to wait when the queue API is unreachable.
pub const UNAVAILABLE_RETRY_AFTER: &str = "2";

/// A complete response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(&'static str, String)>,
    /// The body (UTF-8).
    pub body: String,
}

fn error_json(code: &str, message: &str) -> String {
    json!({"error": {"code": code, "message": message}}).to_string()
}

fn json_reply(status: u16, body: String) -> Reply {
    Reply {
        status,
        headers: vec![
            ("Content-Type", "application/json".to_owned()),
            ("Cache-Control", "no-store".to_owned()),
        ],
        body,
    }
}

impl Reply {
    /// The answer for a decision the edge makes itself; `None` for
    /// [`Decision::Forward`] and [`Decision::CheckQueue`], which are not
    /// answers.
    #[must_use]
    pub fn for_decision(decision: &Decision<'_>, page: &Page, fail_open: bool) -> Option<Reply> {
        match decision {
            Decision::WaitingPage { room, target, lang } => Some(Reply {
                status: 200,
                headers: vec![
                    ("Content-Type", "text/html; charset=utf-8".to_owned()),
                    ("Cache-Control", "no-store".to_owned()),
                    ("Content-Security-Policy", page.csp().to_owned()),
                    ("X-Content-Type-Options", "nosniff".to_owned()),
                    ("Referrer-Policy", "same-origin".to_owned()),
                    ("X-Robots-Tag", "noindex".to_owned()),
                    // The same URL serves the page or the site, by cookie.
                    ("Vary", "Cookie, Accept, Accept-Language".to_owned()),
                ],
                body: page.render(room, target, *lang, fail_open),
            }),
            Decision::InQueue { room, target } => {
                let body = json!({
                    "error": {
                        "code": "in_queue",
                        "message": "This resource is behind a waiting room. Join the line, poll \
                                    its status, and retry with the entry token once admitted. \
                                    A join may answer 428 challenge_required: solve it and send \
                                    the join again with the Waiting-Room-Challenge header.",
                    },
                    "queue": {
                        "room": room,
                        "join": format!("/queue/{room}/join"),
                        "status": format!("/queue/{room}/status"),
                        "page": page_url(room, target),
                        "challenge_header": token::CHALLENGE_HEADER,
                    },
                });
                let mut reply = json_reply(429, body.to_string());
                reply
                    .headers
                    .push(("Retry-After", IN_QUEUE_RETRY_AFTER.to_owned()));
                Some(reply)
            }
            Decision::NotFound => Some(Reply::not_found()),
            Decision::Hidden => Some(Reply::hidden()),
            Decision::TooLong => Some(Reply::too_long()),
            Decision::MethodNotSupported => Some(Reply::method_not_supported()),
            Decision::Preflight => Some(Reply::preflight_refused()),
            Decision::Forward(_) | Decision::CheckQueue => None,
        }
    }

    /// 404 for an edge-owned path of an unknown room.
    #[must_use]
    pub fn not_found() -> Reply {
        json_reply(
            404,
            error_json("unknown_room", "No waiting room has this name."),
        )
    }

    /// 404 for a path hidden from the public (the origin's admin API), in
    /// the origin's own 404 shape, so it looks like nothing is there.
    #[must_use]
    pub fn hidden() -> Reply {
        json_reply(404, error_json("not_found", "no such resource"))
    }

    /// 414 for a path too long to match (see [`crate::path::MAX_PATH_LEN`]).
    #[must_use]
    pub fn too_long() -> Reply {
        json_reply(414, error_json("uri_too_long", "The address is too long."))
    }

    /// 501 for a method the edge cannot forward as sent (see
    /// [`crate::gate::forwards_method`]).
    #[must_use]
    pub fn method_not_supported() -> Reply {
        json_reply(
            501,
            error_json(
                "method_not_supported",
                "This request method is not supported here.",
            ),
        )
    }

    /// 204 with no body and no `Access-Control-Allow-*` header: the answer
    /// to a CORS preflight for a protected path, which tells the browser
    /// the cross-site request it asked about is not allowed.
    #[must_use]
    pub fn preflight_refused() -> Reply {
        Reply {
            status: 204,
            headers: vec![("Cache-Control", "no-store".to_owned())],
            body: String::new(),
        }
    }

    /// 502 when a request could not be forwarded to the origin at all.
    /// `queue` says whether it was the queue API (then clients back off and
    /// retry; with `FAIL_MODE=open` the waiting page tries the site).
    #[must_use]
    pub fn origin_unreachable(queue: bool) -> Reply {
        let (code, message) = if queue {
            (
                "queue_unavailable",
                "The waiting room cannot be reached just now. Retry shortly.",
            )
        } else {
            (
                "origin_unreachable",
                "The site cannot be reached just now. Retry shortly.",
            )
        };
        let mut reply = json_reply(502, error_json(code, message));
        reply
            .headers
            .push(("Retry-After", UNAVAILABLE_RETRY_AFTER.to_owned()));
        reply
    }

    /// 500 when the edge's own settings are invalid: the operator's mistake,
    /// logged in full; the visitor gets no detail.
    #[must_use]
    pub fn misconfigured() -> Reply {
        json_reply(
            500,
            error_json(
                "edge_misconfigured",
                "The waiting room is not configured correctly.",
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::config::PageStyle;
    use crate::http::Lang;

    fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
        reply
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn in_queue_has_the_contract_shape() {
        let page = Page::new(&PageStyle::default());
        let decision = Decision::InQueue {
            room: "concert",
            target: "/api/seats?x=1".to_owned(),
        };
        let reply = Reply::for_decision(&decision, &page, false).expect("answer");
        assert_eq!(reply.status, 429);
        assert_eq!(header(&reply, "Retry-After"), Some("5"));
        assert_eq!(header(&reply, "Cache-Control"), Some("no-store"));
        let body: Value = serde_json::from_str(&reply.body).expect("json");
        assert_eq!(body["error"]["code"], "in_queue");
        assert!(body["error"]["message"].is_string());
        assert_eq!(body["queue"]["room"], "concert");
        assert_eq!(body["queue"]["join"], "/queue/concert/join");
        assert_eq!(body["queue"]["status"], "/queue/concert/status");
        assert_eq!(body["queue"]["challenge_header"], "Waiting-Room-Challenge");
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("428 challenge_required"), "{message}");
        assert!(message.contains("Waiting-Room-Challenge"), "{message}");
        assert_eq!(
            body["queue"]["page"],
            "/waiting-room/concert?to=%2Fapi%2Fseats%3Fx%3D1"
        );
    }

    #[test]
    fn waiting_page_is_html_and_never_cached() {
        let page = Page::new(&PageStyle::default());
        let decision = Decision::WaitingPage {
            room: "concert",
            target: "/book/".to_owned(),
            lang: Lang::Ko,
        };
        let reply = Reply::for_decision(&decision, &page, false).expect("answer");
        assert_eq!(reply.status, 200);
        assert_eq!(
            header(&reply, "Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(header(&reply, "Cache-Control"), Some("no-store"));
        assert_eq!(header(&reply, "Content-Security-Policy"), Some(page.csp()));
        assert!(reply.body.contains("<html lang=\"ko\">"));
    }

    #[test]
    fn error_replies_use_the_contract_error_shape() {
        for (reply, status, code) in [
            (Reply::not_found(), 404, "unknown_room"),
            (Reply::hidden(), 404, "not_found"),
            (Reply::too_long(), 414, "uri_too_long"),
            (Reply::method_not_supported(), 501, "method_not_supported"),
            (Reply::origin_unreachable(true), 502, "queue_unavailable"),
            (Reply::origin_unreachable(false), 502, "origin_unreachable"),
            (Reply::misconfigured(), 500, "edge_misconfigured"),
        ] {
            assert_eq!(reply.status, status);
            let body: Value = serde_json::from_str(&reply.body).expect("json");
            assert_eq!(body["error"]["code"], code);
            assert!(body["error"]["message"].is_string());
        }
    }

    #[test]
    fn a_refused_preflight_is_empty_and_allows_nothing() {
        let page = Page::new(&PageStyle::default());
        let reply = Reply::for_decision(&Decision::Preflight, &page, false).expect("answer");
        assert_eq!(reply.status, 204);
        assert!(reply.body.is_empty());
        assert!(
            reply
                .headers
                .iter()
                .all(|(name, _)| !name.to_ascii_lowercase().starts_with("access-control-")),
            "{:?}",
            reply.headers
        );
    }

    #[test]
    fn forwards_are_not_answers() {
        let page = Page::new(&PageStyle::default());
        assert!(Reply::for_decision(&Decision::CheckQueue, &page, false).is_none());
        assert!(
            Reply::for_decision(
                &Decision::Forward(crate::gate::Pass::Unprotected),
                &page,
                false
            )
            .is_none()
        );
    }
}
