//! The operator's console at `/admin/`: one self-contained HTML document
//! (`console.html`, `console.css`, `console.js`) that asks for the admin key
//! once, then shows every room live (figures, the last 30 minutes as inline
//! SVG charts) with its controls (pause, resume, close with a confirmation,
//! capacity, rate, session and abandon times), in English or Korean, by
//! keyboard as well as by mouse.
//!
//! The script talks only to the admin API of the contract under the URL the
//! caller passes (same origin), with the key in the `Authorization` header;
//! the key stays in the tab's `sessionStorage`, never in a URL or a cookie.
//! The page itself holds no secret and no figure: everything it shows comes
//! from the API, which checks the key on every call. Rendered in the pages'
//! skeleton, like the other pages.

mod strings;

use serde::Serialize;

pub use strings::{Strings, strings};

use crate::html::{escape, script_json};
use crate::lang::Lang;
use crate::skeleton::{Parts, Script, Skeleton};

const JS: &str = include_str!("console.js");

/// The console's key must not leak through a `Referer`.
const HEAD: &str = concat!(
    "<meta name=\"robots\" content=\"noindex\">\n",
    "<meta name=\"referrer\" content=\"no-referrer\">\n",
);

const PARTS: Parts = Parts {
    head: HEAD,
    body: include_str!("console.html"),
    css: include_str!("console.css"),
    script: Some(Script {
        js: JS,
        config_id: "co-config",
    }),
};

/// The console's parts that depend only on the settings, built once.
#[derive(Debug, Clone)]
pub struct ConsolePage(Skeleton);

/// One rendering of the page.
#[derive(Debug, Clone, Copy)]
pub struct Visit<'a> {
    /// The operator's language.
    pub lang: Lang,
    /// The admin API, without a trailing `/`: `/admin`.
    pub api: &'a str,
    /// The page's own path, which the language links point at.
    pub path: &'a str,
}

/// What the page's script reads from its config block.
#[derive(Serialize)]
struct ScriptConfig<'a> {
    lang: &'a str,
    api: &'a str,
    t: &'a Strings,
}

impl ConsolePage {
    /// Prepares the page with an accent colour (`#rgb` or `#rrggbb`; `None`
    /// or anything else: [`crate::DEFAULT_COLOR`]).
    #[must_use]
    pub fn new(color: Option<&str>) -> ConsolePage {
        ConsolePage(Skeleton::new(&PARTS, None, color))
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
        let config = script_json(&ScriptConfig {
            lang: lang.tag(),
            api: visit.api,
            t,
        });
        let path = escape(visit.path);
        let languages: String = Lang::ALL
            .iter()
            .map(|l| {
                let name = match l {
                    Lang::En => "English",
                    Lang::Ko => "한국어",
                };
                format!(
                    "<a href=\"{path}?lang={tag}\" lang=\"{tag}\" hreflang=\"{tag}\"{current}>{name}</a>",
                    tag = l.tag(),
                    current = if *l == lang {
                        " aria-current=\"true\""
                    } else {
                        ""
                    },
                )
            })
            .collect();
        self.0.render(lang, t.title, &config, &t.labels(), |key| {
            (key == "languages").then_some(languages.as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::{
        assert_csp_matches, assert_strings_complete, between, script_strings_exist,
    };

    fn visit(lang: Lang) -> Visit<'static> {
        Visit {
            lang,
            api: "/admin",
            path: "/admin/",
        }
    }

    #[test]
    fn renders_every_placeholder_in_both_languages() {
        let page = ConsolePage::new(None);
        for lang in Lang::ALL {
            let t = strings(lang);
            let html = page.render(&visit(lang));
            assert!(!html.contains("{{"), "unfilled placeholder");
            assert!(html.contains(&format!("<html lang=\"{}\">", lang.tag())));
            assert!(html.contains(&format!("<title>{}</title>", t.title)));
            assert!(html.contains(t.label_key) && html.contains(t.hint_key));
            assert!(html.contains(&format!(
                "href=\"/admin/?lang={}\" lang=\"{0}\" hreflang=\"{0}\" aria-current=\"true\"",
                lang.tag()
            )));
            assert!(!html.contains("http://") || html.contains("http://www.w3.org/2000/svg"));
            assert!(!html.contains("https://"));
            let config: serde_json::Value =
                serde_json::from_str(between(&html, "type=\"application/json\">", "</script>"))
                    .expect("config is JSON");
            assert_eq!(config["api"], "/admin");
            assert_eq!(config["lang"], lang.tag());
            assert_eq!(config["t"]["msg_key_wrong"], t.msg_key_wrong);
        }
    }

    #[test]
    fn the_hooks_tests_drive_are_there() {
        let html = ConsolePage::new(None).render(&visit(Lang::En));
        for hook in [
            "id=\"login\"",
            "id=\"admin-key\" name=\"admin_key\" type=\"password\"",
            "id=\"login-error\"",
            "id=\"console\"",
            "id=\"status\"",
            "id=\"rooms\"",
            "id=\"logout\"",
        ] {
            assert!(html.contains(hook), "{hook}");
        }
        for hook in [
            "data-room",
            "data-state",
            "data-action",
            "data-field",
            "data-chart",
            "data-error-for",
            "sessionStorage",
        ] {
            assert!(JS.contains(hook), "{hook}");
        }
    }

    #[test]
    fn the_key_never_goes_into_a_url_or_a_cookie() {
        assert!(!JS.contains("document.cookie"));
        assert!(!JS.contains("localStorage"));
        assert!(JS.contains("Authorization: \"Bearer \" + key"));
        assert!(JS.contains("credentials: \"omit\""));
    }

    #[test]
    fn both_languages_say_everything() {
        let texts =
            |t: &Strings| [vec![t.title], t.labels().map(|(_, text)| text).to_vec()].concat();
        let (en, ko) = (strings(Lang::En), strings(Lang::Ko));
        assert_strings_complete(en, ko, &texts(en), &texts(ko));
        for lang in Lang::ALL {
            script_strings_exist(JS, strings(lang));
        }
        // Strings the script reads by a computed name.
        let en = serde_json::to_value(strings(Lang::En)).expect("serializes");
        for name in [
            "state_open",
            "state_paused",
            "state_closed",
            "msg_paused",
            "msg_resumed",
            "msg_closed",
            "field_capacity",
            "field_admit_per_second",
            "field_session_seconds",
            "field_abandon_seconds",
            "field_identity",
            "identity_off",
            "identity_optional",
            "identity_required",
            "field_challenge",
            "challenge_off",
            "challenge_pow",
            "challenge_turnstile",
            "field_challenge_bits",
            "field_challenge_fail",
            "field_display_name",
            "field_color",
            "field_logo",
            "field_currency",
            "challenge_fail_closed",
            "challenge_fail_open",
        ] {
            assert!(en.get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn csp_names_the_inline_hashes() {
        let page = ConsolePage::new(Some("#123456"));
        for lang in Lang::ALL {
            assert_csp_matches(&page.render(&visit(lang)), page.csp());
        }
    }

    #[test]
    fn page_is_small() {
        let html = ConsolePage::new(None).render(&visit(Lang::Ko));
        assert!(html.len() < 64 * 1024, "{} bytes", html.len());
    }
}
