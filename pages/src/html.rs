//! What every page's rendering shares: escaping, the JSON config block, the
//! CSP hashes and the `{{key}}` template filler. Private to the crate: the
//! pages are the API, these are how they are made.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The accent colour when the operator sets none.
pub const DEFAULT_COLOR: &str = "#2357c6";

/// The CSP source naming `text` by its SHA-256.
pub(crate) fn csp_hash(text: &str) -> String {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(text.as_bytes()))
    )
}

/// The policy of a page whose only style is `css` and only script is `js`
/// (`None`: the page runs no script at all). Requests may go to the page's
/// own site only.
pub(crate) fn csp(css: &str, js: Option<&str>) -> String {
    csp_with(css, js, &Allow::default())
}

/// What a page's policy allows beyond its own inline style and script.
#[derive(Default)]
pub(crate) struct Allow<'a> {
    /// Script hosts (added to `script-src` after the script's hash).
    pub scripts: &'a [&'a str],
    /// Whole directives appended to the policy (`worker-src blob:`).
    pub directives: &'a [&'a str],
}

/// [`csp`] with `allow`'s script hosts and directives added.
pub(crate) fn csp_with(css: &str, js: Option<&str>, allow: &Allow<'_>) -> String {
    let mut script = js.map_or_else(|| "'none'".to_owned(), csp_hash);
    for host in allow.scripts {
        script.push(' ');
        script.push_str(host);
    }
    let mut policy = format!(
        "default-src 'none'; style-src {}; script-src {script}; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        csp_hash(css)
    );
    for directive in allow.directives {
        policy.push_str("; ");
        policy.push_str(directive);
    }
    policy
}

/// A page's script as it is served: each line without its indentation,
/// blank lines and `//` comments (the source keeps them for readers). A
/// comment after code goes only when no quote or slash comes before it, so
/// no string or regex is cut; the scripts have no multi-line strings.
pub(crate) fn compact_js(js: &str) -> String {
    let mut out = String::with_capacity(js.len());
    for line in js.lines().map(str::trim) {
        let code = match line.split_once(" //") {
            Some((code, _)) if !code.contains(['"', '\'', '`', '/']) => code.trim_end(),
            _ => line,
        };
        if code.is_empty() || code.starts_with("//") {
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Escapes text for HTML element content and double-quoted attributes.
pub(crate) fn escape(text: &str) -> String {
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
pub(crate) fn script_json(value: &impl Serialize) -> String {
    serde_json::to_string(value)
        .unwrap_or_else(|_| "{}".to_owned())
        .replace('<', "\\u003c")
}

/// The page's stylesheet with the accent colour in front. The colour goes
/// into CSS unescaped, so only `#rgb` and `#rrggbb` are taken; anything
/// else (the edge refuses it at configuration already) is the default.
pub(crate) fn accent_css(color: Option<&str>, css: &str) -> String {
    let color = color.filter(|c| is_hex_color(c)).unwrap_or(DEFAULT_COLOR);
    format!(":root{{--accent:{color}}}\n{css}")
}

fn is_hex_color(color: &str) -> bool {
    color
        .strip_prefix('#')
        .is_some_and(|hex| matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Fills `template`'s `{{key}}` placeholders through `value`, which appends
/// the key's text to `out` and returns false for a key it does not know.
/// An unknown key is a template bug: it is dropped, which the pages' tests
/// catch, rather than shown to a visitor.
pub(crate) fn fill(
    template: &str,
    capacity: usize,
    mut value: impl FnMut(&str, &mut String) -> bool,
) -> String {
    let mut out = String::with_capacity(template.len() + capacity);
    let mut parts = template.split("{{");
    out.push_str(parts.next().unwrap_or(""));
    for part in parts {
        let (key, rest) = part.split_once("}}").unwrap_or(("", part));
        let _known = value(key, &mut out);
        debug_assert!(_known, "unknown template key {key:?}");
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The text between the first `open` after `from` and the next `close`.
    pub(crate) fn between<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
        html.split_once(open)
            .and_then(|(_, rest)| rest.split_once(close))
            .map(|(inner, _)| inner)
            .expect("block present")
    }

    /// The page's inline style and script match the hashes its CSP names,
    /// and the CSP allows nothing else to run.
    pub(crate) fn assert_csp_matches(html: &str, csp: &str) {
        let css = between(html, "<style>", "</style>");
        assert!(csp.contains(&csp_hash(css)), "style hash");
        let script = html
            .rsplit_once("<script>")
            .and_then(|(_, rest)| rest.split_once("</script>"))
            .map(|(js, _)| js)
            .expect("script block");
        assert!(csp.contains(&csp_hash(script)), "script hash");
        assert!(csp.starts_with("default-src 'none'"));
        assert!(!csp.contains("unsafe-inline"));
        assert_eq!(csp.matches("'sha256-").count(), 2);
    }

    /// Two languages' strings say everything: the script's strings (all
    /// that serialize) and the HTML labels (passed as lists) are non-empty,
    /// and each has the same `{placeholders}` in both languages.
    pub(crate) fn assert_strings_complete(
        en: &impl Serialize,
        ko: &impl Serialize,
        en_labels: &[&str],
        ko_labels: &[&str],
    ) {
        let en = serde_json::to_value(en).expect("serializes");
        let ko = serde_json::to_value(ko).expect("serializes");
        let (en, ko) = (en.as_object().expect("map"), ko.as_object().expect("map"));
        assert_eq!(en.keys().collect::<Vec<_>>(), ko.keys().collect::<Vec<_>>());
        assert!(!en.is_empty());
        let mut pairs: Vec<(String, &str, &str)> = en
            .iter()
            .map(|(key, value)| {
                (
                    key.clone(),
                    value.as_str().expect("a string"),
                    ko[key].as_str().expect("a string"),
                )
            })
            .collect();
        assert_eq!(en_labels.len(), ko_labels.len());
        for (i, (e, k)) in en_labels.iter().zip(ko_labels).enumerate() {
            pairs.push((format!("label #{i}"), e, k));
        }
        for (key, e, k) in pairs {
            assert!(
                !e.trim().is_empty() && !k.trim().is_empty(),
                "{key} is empty"
            );
            assert_ne!(e, k, "{key} is not translated");
            assert_eq!(placeholders(e), placeholders(k), "{key}");
        }
    }

    /// Every `t.name` the script reads is a string the page sends it.
    pub(crate) fn script_strings_exist(js: &str, strings: &impl Serialize) {
        let sent = serde_json::to_value(strings).expect("serializes");
        let mut read = 0;
        for (at, _) in js.match_indices("t.") {
            let before = js.get(..at).and_then(|b| b.chars().next_back());
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || "_.$".contains(c)) {
                continue;
            }
            let name: String = js
                .get(at + 2..)
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                sent.get(&name).is_some(),
                "the script reads t.{name}, never sent"
            );
            read += 1;
        }
        assert!(read > 5, "the script reads its strings as t.name");
    }

    fn placeholders(text: &str) -> Vec<&str> {
        let mut found: Vec<&str> = text
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn only_hex_colours_reach_the_css() {
        assert!(accent_css(Some("#aB3"), "").contains("--accent:#aB3}"));
        assert!(accent_css(Some("#aa3300"), "").contains("--accent:#aa3300}"));
        for bad in ["red", "#12345", "#1234567", "#ggg", "#fff}body{x:y", ""] {
            assert!(accent_css(Some(bad), "").contains(DEFAULT_COLOR), "{bad:?}");
        }
        assert!(accent_css(None, "").contains(DEFAULT_COLOR));
    }

    #[test]
    fn compact_js_drops_indentation_and_comment_lines() {
        let js = "// head\n(function () {\n  var a = \"//x\"; // kept\n\n    // gone\n  \
                  f(a);   // gone too\n  b = /x/; // kept\n})();\n";
        assert_eq!(
            compact_js(js),
            "(function () {\nvar a = \"//x\"; // kept\nf(a);\nb = /x/; // kept\n})();\n"
        );
    }

    #[test]
    fn a_page_without_script_forbids_scripts() {
        let policy = csp("b{}", None);
        assert!(policy.contains("script-src 'none'"));
    }

    #[test]
    fn fill_replaces_known_keys() {
        let out = fill("a{{x}}b{{y}}c", 8, |key, out| {
            out.push_str(&key.to_uppercase());
            true
        });
        assert_eq!(out, "aXbYc");
    }
}
