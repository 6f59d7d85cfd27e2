//! The one frame every page is rendered in: the document around the page's
//! own body (its language, the `<head>`, the inline style with the accent
//! colour and the base stylesheet in front, the config block and the inline
//! script) and the CSP that names that style and script by hash. A page
//! brings its [`Parts`], its words and its config; the skeleton does the
//! rest, so every page is served the same way.

use crate::html::{Allow, accent_css, compact_js, csp, csp_with, escape, fill};
use crate::lang::Lang;

/// The stylesheet every page's own sheet follows.
const BASE_CSS: &str = include_str!("base.css");

/// The `<head>` line of pages search engines should not list.
pub(crate) const NOINDEX: &str = "<meta name=\"robots\" content=\"noindex\">\n";

/// `[("name", t.name), ...]`: a page's words by the template keys that show
/// them, so a key and its text cannot drift apart.
macro_rules! labels {
    ($t:expr; $($name:ident),+ $(,)?) => {
        [$((stringify!($name), $t.$name)),+]
    };
}
pub(crate) use labels;

/// What a page brings to the skeleton, fixed when it is compiled.
pub(crate) struct Parts {
    /// `<head>` lines after the charset and the viewport.
    pub head: &'static str,
    /// The page's `<body>` up to its scripts, with `{{key}}` placeholders.
    pub body: &'static str,
    /// The page's own stylesheet, which follows the base one.
    pub css: &'static str,
    /// The page's script; `None`: the page runs no script at all.
    pub script: Option<Script>,
}

/// A page's inline script and the id of the JSON block it reads its
/// config from.
pub(crate) struct Script {
    pub js: &'static str,
    pub config_id: &'static str,
}

/// A page's parts that depend only on the settings, built once (per isolate
/// at the edge, per process at the origin): the whole template, the
/// stylesheet with the operator's colour, and the CSP naming the hashes of
/// the inline style and script.
#[derive(Debug, Clone)]
pub(crate) struct Skeleton {
    template: String,
    css: String,
    /// The page's script as served ([`compact_js`]).
    js: String,
    csp: String,
    title: Option<String>,
}

impl Skeleton {
    /// The page with the operator's heading (`None`: the page's default in
    /// the visitor's language) and accent colour (`#rgb` or `#rrggbb`;
    /// `None` or anything else: [`crate::DEFAULT_COLOR`]).
    pub(crate) fn new(parts: &Parts, title: Option<&str>, color: Option<&str>) -> Skeleton {
        let css = accent_css(color, &format!("{BASE_CSS}{}", parts.css));
        let scripts = parts.script.as_ref().map_or_else(String::new, |s| {
            format!(
                "<script id=\"{}\" type=\"application/json\">{{{{config}}}}</script>\n\
                 <script>{{{{js}}}}</script>\n",
                s.config_id
            )
        });
        let template = format!(
            "<!doctype html>\n<html lang=\"{{{{lang}}}}\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             {head}<title>{{{{title}}}}</title>\n<style>{{{{css}}}}</style>\n</head>\n\
             <body>\n{body}{scripts}</body>\n</html>\n",
            head = parts.head,
            body = parts.body,
        );
        let js = parts.script.as_ref().map(|s| compact_js(s.js));
        Skeleton {
            template,
            csp: csp(&css, js.as_deref()),
            css,
            js: js.unwrap_or_default(),
            title: title.map(str::to_owned),
        }
    }

    /// Whether the operator set the heading (else the page's own, which a
    /// page's script may change with its state).
    pub(crate) fn titled(&self) -> bool {
        self.title.is_some()
    }

    /// The `Content-Security-Policy` to serve the page with.
    pub(crate) fn csp(&self) -> &str {
        &self.csp
    }

    /// The page's policy allowing `allow` too (built by the caller once:
    /// it hashes the page's style and script again).
    pub(crate) fn csp_allowing(&self, allow: &Allow<'_>) -> String {
        let js = (!self.js.is_empty()).then_some(self.js.as_str());
        csp_with(&self.css, js, allow)
    }

    /// The page in `lang`, titled by the operator or else `default_title`
    /// (escaped), with `config` as its script's config block. The body's
    /// other keys are looked up in `labels`, then asked of `own`; their
    /// texts go in as they are, so the caller escapes what needs it.
    pub(crate) fn render<'v>(
        &self,
        lang: Lang,
        default_title: &str,
        config: &str,
        labels: &[(&str, &'v str)],
        own: impl Fn(&str) -> Option<&'v str>,
    ) -> String {
        let title = escape(self.title.as_deref().unwrap_or(default_title));
        let capacity = self.css.len() + self.js.len() + config.len() + 4096;
        fill(&self.template, capacity, |key, out| {
            let text = match key {
                "lang" => Some(lang.tag()),
                "title" => Some(title.as_str()),
                "css" => Some(self.css.as_str()),
                "js" => Some(self.js.as_str()),
                "config" => Some(config),
                _ => labels
                    .iter()
                    .find(|(name, _)| *name == key)
                    .map(|(_, text)| *text)
                    .or_else(|| own(key)),
            };
            text.map(|text| out.push_str(text)).is_some()
        })
    }
}
