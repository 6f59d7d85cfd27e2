//! The seat page at `/book/{room}/`: one self-contained HTML document
//! (`seats.html`, `seats.css`, `seats.js`) where an admitted visitor picks a
//! performance and seats, holds them, watches the hold's countdown, pays and
//! sees the booking, in English or Korean, by keyboard as well as by mouse.
//!
//! The script talks to the booking API of the contract under the URL the
//! caller passes (same origin, so the entry-token cookie goes along), and
//! sends the visitor back to the waiting page when the session is over.
//! Rendered in the pages' skeleton, like the waiting page. Nothing here
//! checks who may see the page: the API behind it checks the entry token
//! on every call.

mod strings;

use serde::Serialize;

pub use strings::{Strings, strings};

use crate::html::{escape, script_json};
use crate::lang::Lang;
use crate::skeleton::{NOINDEX, Parts, Script, Skeleton};

const JS: &str = include_str!("seats.js");

const PARTS: Parts = Parts {
    head: NOINDEX,
    body: include_str!("seats.html"),
    css: include_str!("seats.css"),
    script: Some(Script {
        js: JS,
        config_id: "bk-config",
    }),
};

/// Seats one hold may take when the API does not say: the contract's
/// default `max_seats_per_hold`. The API has the last word (422).
pub const DEFAULT_MAX_SEATS: u32 = 4;

/// The seat page's parts that depend only on the settings, built once.
#[derive(Debug, Clone)]
pub struct SeatPage(Skeleton);

/// One rendering of the page.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    /// The room id (escaped where it is shown).
    pub room: &'a str,
    /// The room's display name, shown instead of its id when set.
    pub name: Option<&'a str>,
    /// The visitor's language.
    pub lang: Lang,
    /// The room's booking API, without a trailing `/`: `/api/{room}`.
    pub api: &'a str,
    /// The room's waiting page, linked when the session is over.
    pub waiting: &'a str,
    /// ISO 4217 code of the prices, which are integers in its minor unit
    /// (`KRW`: 110000 is ₩110,000).
    pub currency: &'a str,
}

/// What the page's script reads from its config block.
#[derive(Serialize)]
struct ScriptConfig<'a> {
    room: &'a str,
    lang: &'a str,
    currency: &'a str,
    /// The operator set the heading: the script leaves it alone.
    titled: bool,
    #[serde(rename = "maxSeats")]
    max_seats: u32,
    api: &'a str,
    waiting: &'a str,
    t: &'a Strings,
}

impl SeatPage {
    /// Prepares the page with a heading (`None`: "Choose your seats" in the
    /// visitor's language) and accent colour (`#rgb` or `#rrggbb`; `None`
    /// or anything else: [`crate::DEFAULT_COLOR`]).
    #[must_use]
    pub fn new(title: Option<&str>, color: Option<&str>) -> SeatPage {
        SeatPage(Skeleton::new(&PARTS, title, color))
    }

    /// The `Content-Security-Policy` to serve the page with.
    #[must_use]
    pub fn csp(&self) -> &str {
        self.0.csp()
    }

    /// The page for one visit.
    #[must_use]
    pub fn render(&self, visit: &Visit<'_>) -> String {
        let lang = visit.lang;
        let t = strings(lang);
        let room = escape(visit.name.unwrap_or(visit.room));
        let waiting = escape(visit.waiting);
        // The currency goes to `Intl.NumberFormat`, which throws on
        // anything but three letters.
        let currency = if visit.currency.len() == 3
            && visit.currency.bytes().all(|b| b.is_ascii_alphabetic())
        {
            visit.currency
        } else {
            "KRW"
        };
        let config = script_json(&ScriptConfig {
            room: visit.room,
            lang: lang.tag(),
            currency,
            titled: self.0.titled(),
            max_seats: DEFAULT_MAX_SEATS,
            api: visit.api,
            waiting: visit.waiting,
            t,
        });
        self.0.render(
            lang,
            t.default_title,
            &config,
            &t.labels(),
            |key| match key {
                "room" => Some(room.as_str()),
                "waiting_url" => Some(waiting.as_str()),
                _ => None,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{assert_csp_matches, between, script_strings_exist};

    fn visit(room: &str, lang: Lang) -> Visit<'_> {
        Visit {
            room,
            name: None,
            lang,
            api: "/api/concert",
            waiting: "/waiting-room/concert",
            currency: "KRW",
        }
    }

    #[test]
    fn renders_every_placeholder_in_both_languages() {
        let page = SeatPage::new(None, None);
        for lang in Lang::ALL {
            let t = strings(lang);
            let html = page.render(&visit("concert", lang));
            assert!(!html.contains("{{"), "unfilled placeholder");
            assert!(html.contains(&format!("<html lang=\"{}\">", lang.tag())));
            assert!(html.contains(&format!("<title>{}</title>", t.default_title)));
            assert!(html.contains("<strong>concert</strong>"));
            assert!(html.contains(t.label_confirm) && html.contains(t.hint_card));
            assert!(html.contains("href=\"/waiting-room/concert\""));
            assert!(!html.contains("http://") && !html.contains("https://"));
            let config: serde_json::Value =
                serde_json::from_str(between(&html, "type=\"application/json\">", "</script>"))
                    .expect("config is JSON");
            assert_eq!(config["api"], "/api/concert");
            assert_eq!(config["currency"], "KRW");
            assert_eq!(config["maxSeats"], DEFAULT_MAX_SEATS);
            assert_eq!(config["lang"], lang.tag());
            assert_eq!(config["titled"], false);
            assert_eq!(config["t"]["msg_declined"], t.msg_declined);
        }
    }

    #[test]
    fn the_hooks_tests_drive_are_there() {
        let html = SeatPage::new(None, None).render(&visit("concert", Lang::En));
        for hook in [
            "id=\"app\" class=\"card\" data-phase=\"loading\"",
            "id=\"message\"",
            "aria-live=\"polite\"",
            "id=\"seatmap\"",
            "id=\"hold-button\"",
            "id=\"hold\"",
            "id=\"countdown\"",
            "id=\"payment-token\" name=\"payment_token\" type=\"text\" value=\"tok_visa\"",
            "id=\"confirm\"",
            "id=\"release\"",
            "id=\"booking\"",
            "id=\"back-link\"",
            "id=\"pay-error\" class=\"msg\" data-kind=\"error\" role=\"alert\"",
            "id=\"booking-id\"",
            "id=\"copy-id\"",
            "id=\"events-link\" class=\"button\" href=\"/\"",
        ] {
            assert!(html.contains(hook), "{hook}");
        }
        // The script draws seats with these.
        for attr in ["data-seat", "data-state", "data-booking-id", "aria-pressed"] {
            assert!(JS.contains(attr), "{attr}");
        }
    }

    #[test]
    fn the_script_uses_only_strings_that_exist() {
        for lang in Lang::ALL {
            script_strings_exist(JS, strings(lang));
        }
    }

    #[test]
    fn room_title_and_urls_are_escaped() {
        let page = SeatPage::new(Some("Tix <b>& \"co\""), Some("#aa3300"));
        let html = page.render(&Visit {
            room: "<i>x</i>",
            name: None,
            lang: Lang::Ko,
            api: "/api/x",
            waiting: "/w\"><script>",
            currency: "KRW",
        });
        assert!(html.contains("<title>Tix &lt;b&gt;&amp; &quot;co&quot;</title>"));
        assert!(html.contains("<strong>&lt;i&gt;x&lt;/i&gt;</strong>"));
        assert!(html.contains("href=\"/w&quot;&gt;&lt;script&gt;\""));
        assert_eq!(html.matches("<script").count(), 2, "only the page's own");
        assert!(html.contains("--accent:#aa3300"));
        assert!(
            html.contains("\"titled\":true"),
            "the script keeps the operator's heading"
        );
        let html = page.render(&Visit {
            name: Some("Spring <tour>"),
            ..visit("spring", Lang::En)
        });
        assert!(html.contains("<strong>Spring &lt;tour&gt;</strong>"));
        assert!(
            html.contains("\"room\":\"spring\""),
            "the API still names the id"
        );
    }

    #[test]
    fn only_currency_codes_reach_the_script() {
        let page = SeatPage::new(None, None);
        let html = page.render(&Visit {
            currency: "x\"y",
            ..visit("concert", Lang::En)
        });
        assert!(html.contains("\"currency\":\"KRW\""));
        let html = page.render(&Visit {
            currency: "USD",
            ..visit("concert", Lang::En)
        });
        assert!(html.contains("\"currency\":\"USD\""));
    }

    #[test]
    fn csp_names_the_inline_hashes() {
        let page = SeatPage::new(None, Some("#123456"));
        for lang in Lang::ALL {
            assert_csp_matches(&page.render(&visit("concert", lang)), page.csp());
        }
    }

    #[test]
    fn page_is_small() {
        let html = SeatPage::new(None, None).render(&visit("concert", Lang::Ko));
        assert!(html.len() < 48 * 1024, "{} bytes", html.len());
    }
}
