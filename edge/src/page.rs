//! The waiting page as the edge serves it. The page itself (HTML, CSS,
//! script, English and Korean) is the shared `pages` crate's, so the origin
//! serves the very same one; what is the edge's lives here: preparing it
//! from `PAGE_TITLE`, `PAGE_COLOR` and `TURNSTILE_SITE_KEY`, the queue URLs it polls (the edge
//! passes `/queue/*` through), and the edge's own URL of the page.

use crate::config::{PAGE_PREFIX, PageStyle, QUEUE_PREFIX};
use crate::http::Lang;
use crate::path;

/// The accent colour when the operator sets none.
pub use pages::DEFAULT_COLOR;
/// The waiting page's words.
pub use pages::waiting::{Strings, strings};

/// The waiting page prepared for the edge's settings, built once per
/// isolate.
#[derive(Debug, Clone)]
pub struct Page {
    page: pages::WaitingPage,
    turnstile_site_key: Option<String>,
}

impl Page {
    /// Prepares the page for these settings.
    #[must_use]
    pub fn new(style: &PageStyle) -> Page {
        Page {
            page: pages::WaitingPage::new(style.title.as_deref(), style.color.as_deref()),
            turnstile_site_key: style.turnstile_site_key.clone(),
        }
    }

    /// The `Content-Security-Policy` to serve the page with (allowing
    /// Cloudflare's Turnstile widget when `TURNSTILE_SITE_KEY` is set).
    #[must_use]
    pub fn csp(&self) -> &str {
        self.page.csp_for(self.turnstile_site_key.is_some())
    }

    /// The page for `room` in `lang`, sending the visitor to `target` (a
    /// same-site path already checked by [`path::safe_target`]) once
    /// admitted; with `fail_open`, also when the queue cannot be reached.
    #[must_use]
    pub fn render(&self, room: &str, target: &str, lang: Lang, fail_open: bool) -> String {
        self.page.render(&pages::waiting::Visit {
            room,
            target,
            lang,
            fail_open,
            join: &format!("{QUEUE_PREFIX}{room}/join"),
            status: &format!("{QUEUE_PREFIX}{room}/status"),
            // The edge does not know which rooms ask for Turnstile: with a
            // site key every page may show the widget, which it loads only
            // when a join asks for it.
            turnstile_site_key: self.turnstile_site_key.as_deref(),
        })
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

    #[test]
    fn renders_the_shared_page_with_the_edges_settings() {
        let page = Page::new(&PageStyle {
            title: Some("Tix".to_owned()),
            color: Some("#aa3300".to_owned()),
            turnstile_site_key: None,
        });
        let html = page.render("concert", "/book/concert/", Lang::Ko, true);
        assert!(html.contains("<title>Tix</title>"));
        assert!(html.contains("--accent:#aa3300"));
        assert!(html.contains("\"join\":\"/queue/concert/join\""));
        assert!(html.contains("\"status\":\"/queue/concert/status\""));
        assert!(html.contains("\"failOpen\":true"));
        assert!(html.contains(strings(Lang::Ko).label_position));
        assert!(page.csp().starts_with("default-src 'none'"));
        assert!(page.csp().contains("worker-src blob:"));
        assert!(!page.csp().contains("cloudflare") && !html.contains("siteKey\":"));
    }

    #[test]
    fn a_turnstile_site_key_reaches_the_page_and_its_csp() {
        let page = Page::new(&PageStyle {
            turnstile_site_key: Some("0x4AAA-key".to_owned()),
            ..PageStyle::default()
        });
        let html = page.render("concert", "/book/concert/", Lang::En, false);
        assert!(html.contains("\"siteKey\":\"0x4AAA-key\""));
        assert!(
            page.csp()
                .contains("frame-src https://challenges.cloudflare.com")
        );
    }

    #[test]
    fn page_urls_encode_the_target() {
        assert_eq!(
            page_url("concert", "/book/x?a=1&b=2"),
            "/waiting-room/concert?to=%2Fbook%2Fx%3Fa%3D1%26b%3D2"
        );
    }
}
