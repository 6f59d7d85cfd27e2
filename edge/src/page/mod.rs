//! The waiting page: one self-contained HTML document (CSS and script
//! inline, no external assets, no framework), rendered per request from
//! `page.html`, `page.css` and `page.js` with the room, the target, the
//! visitor's language and the operator's title and colour.
//!
//! The page is served under a Content-Security-Policy that allows exactly
//! its own inline style and script (by hash) and requests to its own site,
//! so nothing injected could run or send data elsewhere.

mod strings;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use strings::{Strings, strings};

use crate::config::{PAGE_PREFIX, PageStyle};
use crate::http::Lang;
use crate::path;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// The accent colour when the operator sets none.
pub const DEFAULT_COLOR: &str = "#2357c6";

/// The parts of the page that depend only on the settings, built once per
/// isolate: the stylesheet with the operator's colour, and the CSP header
/// that names the hashes of the inline style and script.
#[derive(Debug, Clone)]
pub struct Page {
    css: String,
    csp: String,
    title: Option<String>,
}

/// What the page's script reads from its config block.
#[derive(Serialize)]
struct ScriptConfig<'a> {
    room: &'a str,
    target: &'a str,
    lang: &'a str,
    #[serde(rename = "failOpen")]
    fail_open: bool,
    api: Api,
    t: &'a Strings,
}

#[derive(Serialize)]
struct Api {
    join: String,
    status: String,
}

fn csp_hash(text: &str) -> String {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(text.as_bytes()))
    )
}

/// Escapes text for HTML element content and double-quoted attributes.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// JSON that is safe inside `<script type="application/json">`: `<` only
/// occurs inside strings in JSON, where `\u003c` means the same, so no
/// `</script>` can end the block early.
fn script_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c")
}

impl Page {
    /// Prepares the page for these settings.
    #[must_use]
    pub fn new(style: &PageStyle) -> Page {
        let color = style.color.as_deref().unwrap_or(DEFAULT_COLOR);
        let css = format!(":root{{--accent:{color}}}\n{CSS}");
        let csp = format!(
            "default-src 'none'; style-src {}; script-src {}; connect-src 'self'; \
             img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            csp_hash(&css),
            csp_hash(JS)
        );
        Page {
            css,
            csp,
            title: style.title.clone(),
        }
    }

    /// The `Content-Security-Policy` to serve the page with.
    #[must_use]
    pub fn csp(&self) -> &str {
        &self.csp
    }

    /// The page for `room` in `lang`, sending the visitor to `target` (a
    /// same-site path already checked by [`path::safe_target`]) once
    /// admitted.
    #[must_use]
    pub fn render(&self, room: &str, target: &str, lang: Lang, fail_open: bool) -> String {
        let t = strings(lang);
        let title = escape_html(self.title.as_deref().unwrap_or(t.default_title));
        let config = script_json(&ScriptConfig {
            room,
            target,
            lang: lang.tag(),
            fail_open,
            api: Api {
                join: format!("/queue/{room}/join"),
                status: format!("/queue/{room}/status"),
            },
            t,
        });
        let mut out = String::with_capacity(TEMPLATE.len() + self.css.len() + JS.len() + 2048);
        let mut parts = TEMPLATE.split("{{");
        out.push_str(parts.next().unwrap_or(""));
        for part in parts {
            let (key, rest) = part.split_once("}}").unwrap_or(("", part));
            match key {
                "lang" => out.push_str(lang.tag()),
                "title" => out.push_str(&title),
                "room" => out.push_str(&escape_html(room)),
                "css" => out.push_str(&self.css),
                "js" => out.push_str(JS),
                "config" => out.push_str(&config),
                "label_room" => out.push_str(t.label_room),
                "label_progress" => out.push_str(t.label_progress),
                "label_opens_in" => out.push_str(t.label_opens_in),
                "label_position" => out.push_str(t.label_position),
                "label_waiting" => out.push_str(t.label_waiting),
                "label_eta" => out.push_str(t.label_eta),
                "label_rejoin" => out.push_str(t.label_rejoin),
                "msg_keep_open" => out.push_str(t.msg_keep_open),
                "msg_noscript" => out.push_str(t.msg_noscript),
                "msg_connecting" => out.push_str(t.msg_connecting),
                // An unknown key is a template bug; dropping it shows up in
                // the tests rather than on a visitor's screen.
                _ => {}
            }
            out.push_str(rest);
        }
        out
    }
}

/// The edge's own URL of a room's waiting page, returning to `target`.
#[must_use]
pub fn page_url(room: &str, target: &str) -> String {
    format!("{PAGE_PREFIX}{room}?to={}", path::percent_encode(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Page {
        Page::new(&PageStyle {
            title: Some("Tix <b>& \"co\"".to_owned()),
            color: Some("#aa3300".to_owned()),
        })
    }

    #[test]
    fn renders_every_placeholder() {
        for lang in [Lang::En, Lang::Ko] {
            let html = page().render("concert", "/book/concert?seat=1", lang, false);
            assert!(!html.contains("{{"), "unfilled placeholder");
            assert!(html.contains(&format!("<html lang=\"{}\">", lang.tag())));
            assert!(html.contains("<strong>concert</strong>"));
            assert!(html.contains("aria-live=\"polite\""));
            assert!(html.contains(strings(lang).label_position));
            assert!(html.contains("\"target\":\"/book/concert?seat=1\""));
            assert!(html.contains("\"join\":\"/queue/concert/join\""));
            assert!(!html.contains("http://") && !html.contains("https://"));
        }
        let ko = page().render("concert", "/", Lang::Ko, true);
        assert!(ko.contains("내 순서") && ko.contains("\"failOpen\":true"));
    }

    #[test]
    fn operator_text_is_escaped() {
        let html = page().render("concert", "/", Lang::En, false);
        assert!(html.contains("<title>Tix &lt;b&gt;&amp; &quot;co&quot;</title>"));
        assert!(!html.contains("<b>&"));
        assert!(html.contains("--accent:#aa3300"));
    }

    #[test]
    fn config_block_cannot_be_closed_early() {
        let html = page().render("concert", "/x?</script><script>alert(1)", Lang::En, false);
        assert_eq!(html.matches("</script>").count(), 2, "only the page's own");
        assert!(html.contains("\\u003c/script>"));
    }

    #[test]
    fn csp_names_the_inline_hashes() {
        let p = page();
        let html = p.render("concert", "/", Lang::En, false);
        let css = html
            .split_once("<style>")
            .and_then(|(_, rest)| rest.split_once("</style>"))
            .map(|(css, _)| css)
            .expect("style block");
        let js = html
            .rsplit_once("<script>")
            .and_then(|(_, rest)| rest.split_once("</script>"))
            .map(|(js, _)| js)
            .expect("script block");
        assert!(p.csp().contains(&csp_hash(css)));
        assert!(p.csp().contains(&csp_hash(js)));
        assert!(p.csp().starts_with("default-src 'none'"));
    }

    #[test]
    fn page_is_small() {
        let html = page().render("concert", "/", Lang::Ko, false);
        assert!(html.len() < 20 * 1024, "{} bytes", html.len());
    }

    #[test]
    fn page_urls_encode_the_target() {
        assert_eq!(
            page_url("concert", "/book/x?a=1&b=2"),
            "/waiting-room/concert?to=%2Fbook%2Fx%3Fa%3D1%26b%3D2"
        );
    }
}
