//! The waiting page: one self-contained HTML document (CSS and script
//! inline, no external assets, no framework), rendered per request in the
//! pages' skeleton from `page.html`, `page.css` and `page.js` with the
//! room, the target, the visitor's language, the queue URLs and the
//! operator's title and colour.
//!
//! The edge serves it to held visitors and the origin at
//! `/waiting-room/{room}`; what differs between them (the target, the
//! queue URLs, fail-open, a Turnstile site key) is passed in a [`Visit`].
//!
//! In a room with a join challenge the page solves it itself: proof of
//! work in a Web Worker made from a `blob:` URL (so every rendering's CSP
//! allows `worker-src blob:`), or Cloudflare's Turnstile widget, whose
//! script and frame the CSP allows only for a page rendered with a site
//! key ([`WaitingPage::csp_for`]).

mod strings;

use serde::Serialize;

pub use strings::{Strings, strings};

use crate::html::{Allow, escape, script_json};
use crate::lang::Lang;
use crate::skeleton::{NOINDEX, Parts, Script, Skeleton};

const JS: &str = include_str!("page.js");

const PARTS: Parts = Parts {
    head: NOINDEX,
    body: include_str!("page.html"),
    css: include_str!("page.css"),
    script: Some(Script {
        js: JS,
        config_id: "wr-config",
    }),
};

/// Where Cloudflare's Turnstile widget comes from (its script and frame).
pub const TURNSTILE_ORIGIN: &str = "https://challenges.cloudflare.com";
/// The widget's script, rendered explicitly by the page.
const TURNSTILE_SCRIPT: &str =
    "https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit";

/// The page's parts that depend only on the settings, built once (per
/// isolate at the edge, per process at the origin).
#[derive(Debug, Clone)]
pub struct WaitingPage {
    skeleton: Skeleton,
    /// The policy without Turnstile: the page's own style and script, and
    /// the solver's `blob:` worker.
    csp: String,
    /// The same, allowing Turnstile's script and frame.
    csp_turnstile: String,
}

/// One rendering of the page: who waits where, and where the page sends
/// them.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    /// The room id (escaped where it is shown).
    pub room: &'a str,
    /// Where to go once admitted: a same-site path the caller has checked.
    pub target: &'a str,
    /// The visitor's language.
    pub lang: Lang,
    /// Whether to try `target` when the queue API cannot be reached.
    pub fail_open: bool,
    /// The queue API's join URL for the room (`POST`).
    pub join: &'a str,
    /// The queue API's status URL for the room (`GET`).
    pub status: &'a str,
    /// The Turnstile site key where the room's challenge may be Turnstile
    /// (the page may then load Cloudflare's widget; serve it with
    /// [`WaitingPage::csp_for`]`(true)`); `None`: a page that meets a
    /// Turnstile challenge goes to `/waiting-room/{room}` once instead.
    pub turnstile_site_key: Option<&'a str>,
}

/// What the page's script reads from its config block.
#[derive(Serialize)]
struct ScriptConfig<'a> {
    room: &'a str,
    target: &'a str,
    lang: &'a str,
    #[serde(rename = "failOpen")]
    fail_open: bool,
    api: Api<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turnstile: Option<Turnstile<'a>>,
    t: &'a Strings,
}

#[derive(Serialize)]
struct Turnstile<'a> {
    #[serde(rename = "siteKey")]
    site_key: &'a str,
    script: &'a str,
}

#[derive(Serialize)]
struct Api<'a> {
    join: &'a str,
    status: &'a str,
}

impl WaitingPage {
    /// Prepares the page with the operator's heading (`None`: "Waiting
    /// room" in the visitor's language) and accent colour (`#rgb` or
    /// `#rrggbb`; `None` or anything else: [`crate::DEFAULT_COLOR`]).
    #[must_use]
    pub fn new(title: Option<&str>, color: Option<&str>) -> WaitingPage {
        let skeleton = Skeleton::new(&PARTS, title, color);
        let csp = skeleton.csp_allowing(&Allow {
            scripts: &[],
            directives: &["worker-src blob:"],
        });
        let csp_turnstile = skeleton.csp_allowing(&Allow {
            scripts: &[TURNSTILE_ORIGIN],
            directives: &["worker-src blob:", &format!("frame-src {TURNSTILE_ORIGIN}")],
        });
        WaitingPage {
            skeleton,
            csp,
            csp_turnstile,
        }
    }

    /// The `Content-Security-Policy` to serve a page rendered without a
    /// Turnstile site key with.
    #[must_use]
    pub fn csp(&self) -> &str {
        &self.csp
    }

    /// The `Content-Security-Policy` for a page rendered with a Turnstile
    /// site key (`true`) or without.
    #[must_use]
    pub fn csp_for(&self, turnstile: bool) -> &str {
        if turnstile {
            &self.csp_turnstile
        } else {
            &self.csp
        }
    }

    /// The page for one visit.
    #[must_use]
    pub fn render(&self, visit: &Visit<'_>) -> String {
        let lang = visit.lang;
        let t = strings(lang);
        let room = escape(visit.room);
        let config = script_json(&ScriptConfig {
            room: visit.room,
            target: visit.target,
            lang: lang.tag(),
            fail_open: visit.fail_open,
            api: Api {
                join: visit.join,
                status: visit.status,
            },
            turnstile: visit.turnstile_site_key.map(|site_key| Turnstile {
                site_key,
                script: TURNSTILE_SCRIPT,
            }),
            t,
        });
        self.skeleton
            .render(lang, t.default_title, &config, &t.labels(), |key| {
                (key == "room").then_some(room.as_str())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{assert_csp_matches, script_strings_exist};

    fn page() -> WaitingPage {
        WaitingPage::new(Some("Tix <b>& \"co\""), Some("#aa3300"))
    }

    fn visit<'a>(room: &'a str, target: &'a str, lang: Lang, fail_open: bool) -> Visit<'a> {
        Visit {
            room,
            target,
            lang,
            fail_open,
            join: "/queue/concert/join",
            status: "/queue/concert/status",
            turnstile_site_key: None,
        }
    }

    #[test]
    fn renders_every_placeholder() {
        for lang in Lang::ALL {
            let html = page().render(&visit("concert", "/book/concert?seat=1", lang, false));
            assert!(!html.contains("{{"), "unfilled placeholder");
            assert!(html.contains(&format!("<html lang=\"{}\">", lang.tag())));
            assert!(html.contains("<strong id=\"wr-room\">concert</strong>"));
            assert!(html.contains("aria-live=\"polite\""));
            assert!(html.contains(strings(lang).label_position));
            assert!(html.contains("\"target\":\"/book/concert?seat=1\""));
            assert!(html.contains("\"join\":\"/queue/concert/join\""));
            assert!(html.contains("\"status\":\"/queue/concert/status\""));
            assert!(!html.contains("http://") && !html.contains("https://"));
        }
        let ko = page().render(&visit("concert", "/", Lang::Ko, true));
        assert!(ko.contains("내 순서") && ko.contains("\"failOpen\":true"));
    }

    #[test]
    fn operator_text_and_room_are_escaped() {
        let html = page().render(&visit("<i>x</i>", "/", Lang::En, false));
        assert!(html.contains("<title>Tix &lt;b&gt;&amp; &quot;co&quot;</title>"));
        assert!(!html.contains("<b>&"));
        assert!(html.contains("<strong id=\"wr-room\">&lt;i&gt;x&lt;/i&gt;</strong>"));
        assert!(!html.contains("<i>x"));
        assert!(html.contains("--accent:#aa3300"));
    }

    #[test]
    fn default_title_is_in_the_visitors_language() {
        let plain = WaitingPage::new(None, None);
        for lang in Lang::ALL {
            let html = plain.render(&visit("concert", "/", lang, false));
            let title = format!("<title>{}</title>", strings(lang).default_title);
            assert!(html.contains(&title), "{lang:?}");
        }
    }

    #[test]
    fn config_block_cannot_be_closed_early() {
        let html = page().render(&visit(
            "concert",
            "/x?</script><script>alert(1)",
            Lang::En,
            false,
        ));
        assert_eq!(html.matches("</script>").count(), 2, "only the page's own");
        assert!(html.contains("\\u003c/script>"));
    }

    #[test]
    fn csp_names_the_inline_hashes() {
        let p = page();
        for lang in Lang::ALL {
            assert_csp_matches(&p.render(&visit("concert", "/", lang, false)), p.csp());
        }
    }

    #[test]
    fn csp_allows_the_solvers_worker_and_turnstile_only_with_a_key() {
        let p = page();
        let plain = p.csp_for(false);
        assert_eq!(plain, p.csp());
        assert!(plain.contains("; worker-src blob:"));
        assert!(!plain.contains("cloudflare"));
        let html = p.render(&visit("concert", "/", Lang::En, false));
        assert!(!html.contains("\"turnstile\":{") && !html.contains("\"siteKey\""));

        let with_key = p.csp_for(true);
        assert!(with_key.contains("script-src 'sha256-"));
        let script_src = with_key
            .split("; ")
            .find(|d| d.starts_with("script-src "))
            .expect("script-src");
        assert!(script_src.ends_with(" https://challenges.cloudflare.com"));
        assert!(with_key.contains("; frame-src https://challenges.cloudflare.com"));
        assert!(with_key.contains("; worker-src blob:"));
        assert!(!with_key.contains("unsafe"));
        for lang in Lang::ALL {
            let html = p.render(&Visit {
                turnstile_site_key: Some("0x4AAA<key>"),
                ..visit("concert", "/", lang, false)
            });
            assert_csp_matches(&html, with_key);
            assert!(html.contains("\"siteKey\":\"0x4AAA\\u003ckey>\""));
            assert!(html.contains("/turnstile/v0/api.js?render=explicit"));
        }
    }

    #[test]
    fn the_script_uses_only_strings_that_exist() {
        for lang in Lang::ALL {
            script_strings_exist(JS, strings(lang));
        }
    }

    /// A budget against bloat: the solver, the about lines (visit length,
    /// cap, reference, live dot) and the outlook took it past 20 KiB.
    #[test]
    fn page_is_small() {
        let html = page().render(&visit("concert", "/", Lang::Ko, false));
        assert!(html.len() < 24 * 1024, "{} bytes", html.len());
    }
}
