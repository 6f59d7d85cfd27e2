//! The origin's own small pages: the front door at `/` (every room, linked
//! to its waiting page) and short notices for browsers (a room that does
//! not exist, a store that does not answer), in English and Korean, in the
//! pages' skeleton. The notices run no script (their CSP forbids any); the
//! list runs one small script, named by hash in its CSP, that shows each
//! room's opening in the visitor's own time zone (without script the UTC
//! time shows, the zone named).
//!
//! The edge never serves these; they live here so every page a visitor
//! sees is rendered the same way, from one crate.

use std::sync::LazyLock;

use serde::Serialize;

use crate::html::{escape, script_json};
use crate::lang::Lang;
use crate::skeleton::{Parts, Script, Skeleton};

/// Every page here: its title as the heading, then its text.
const BODY: &str = "<main>\n<h1>{{title}}</h1>\n{{text}}</main>\n";
const CSS: &str = include_str!("lobby.css");
const JS: &str = include_str!("lobby.js");

/// The room list, with its script.
static LIST: LazyLock<Skeleton> = LazyLock::new(|| {
    let parts = Parts {
        head: "",
        body: BODY,
        css: CSS,
        script: Some(Script {
            js: JS,
            config_id: "lobby-config",
        }),
    };
    Skeleton::new(&parts, None, None)
});

/// The notices, without script.
static NOTICE: LazyLock<Skeleton> = LazyLock::new(|| {
    let parts = Parts {
        head: "",
        body: BODY,
        css: CSS,
        script: None,
    };
    Skeleton::new(&parts, None, None)
});

/// What the list's script reads from its config block.
#[derive(Serialize)]
struct ScriptConfig<'a> {
    lang: &'a str,
}

/// Whether a listed room lets people in, as the room list shows it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RoomState {
    /// Open: the line moves.
    Open,
    /// Paused: the line keeps its places but admits nobody.
    Paused,
    /// Closed: no more places.
    Closed,
}

/// One room in the list.
#[derive(Copy, Clone, Debug)]
pub struct RoomLink<'a> {
    /// The room id (escaped when shown).
    pub id: &'a str,
    /// Where its link goes (escaped), e.g. `/waiting-room/{id}`.
    pub href: &'a str,
    /// Its state.
    pub state: RoomState,
    /// Its display name (escaped when shown); `None`: the id.
    pub name: Option<&'a str>,
    /// Its opening, while still ahead (RFC 3339, UTC): the room's state
    /// then reads "Opens …" rather than open.
    pub opens_at: Option<&'a str>,
}

/// A short page for a browser that asked for something that cannot be
/// shown. JSON clients get the contract's error body instead; this is what
/// a person sees.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// No such room (404 `unknown_room`).
    UnknownRoom,
    /// The store or the service does not answer (503).
    Unavailable,
    /// No page at this address (404 `not_found`).
    NotFound,
}

struct Words {
    rooms_title: &'static str,
    rooms_intro: &'static str,
    rooms_none: &'static str,
    open: &'static str,
    paused: &'static str,
    closed: &'static str,
    opens: &'static str,
    unknown_title: &'static str,
    unknown_text: &'static str,
    unavailable_title: &'static str,
    unavailable_text: &'static str,
    missing_title: &'static str,
    missing_text: &'static str,
    all_rooms: &'static str,
}

const EN: Words = Words {
    rooms_title: "Waiting rooms",
    rooms_intro: "Pick an event to join its line. When it is your turn you go straight on to choose your seats.",
    rooms_none: "No events are set up yet.",
    open: "Open",
    paused: "Paused",
    closed: "Closed",
    opens: "Opens",
    unknown_title: "No such event",
    unknown_text: "There is no waiting room at this address.",
    unavailable_title: "Please try again shortly",
    unavailable_text: "The waiting room cannot be reached right now. Reload this page in a few seconds.",
    missing_title: "Page not found",
    missing_text: "There is no page at this address. Check the link, or pick an event from the list.",
    all_rooms: "All events",
};

const KO: Words = Words {
    rooms_title: "대기실 목록",
    rooms_intro: "대기열에 들어갈 이벤트를 고르세요. 차례가 되면 바로 좌석 선택으로 이동합니다.",
    rooms_none: "아직 준비된 이벤트가 없습니다.",
    open: "진행 중",
    paused: "일시 중지",
    closed: "마감",
    opens: "오픈 예정",
    unknown_title: "이벤트를 찾을 수 없습니다",
    unknown_text: "이 주소에는 대기실이 없습니다.",
    unavailable_title: "잠시 후 다시 시도하세요",
    unavailable_text: "지금은 대기실에 연결할 수 없습니다. 몇 초 뒤 이 페이지를 새로고침하세요.",
    missing_title: "페이지를 찾을 수 없습니다",
    missing_text: "이 주소에는 페이지가 없습니다. 링크를 확인하거나 목록에서 이벤트를 고르세요.",
    all_rooms: "전체 이벤트",
};

fn words(lang: Lang) -> &'static Words {
    lang.pick(&EN, &KO)
}

/// The `Content-Security-Policy` of the room list ([`rooms`]): its own
/// style and script.
#[must_use]
pub fn rooms_csp() -> String {
    LIST.csp().to_owned()
}

/// The `Content-Security-Policy` of the notices ([`Notice::render`]): their
/// own style, no script.
#[must_use]
pub fn notice_csp() -> String {
    NOTICE.csp().to_owned()
}

fn document(skeleton: &Skeleton, lang: Lang, title: &str, config: &str, body: &str) -> String {
    skeleton.render(lang, title, config, &[], |key| {
        (key == "text").then_some(body)
    })
}

/// The room list: each room linked to its page, with its state.
#[must_use]
pub fn rooms(lang: Lang, rooms: &[RoomLink<'_>]) -> String {
    let w = words(lang);
    let mut body = format!("<p>{}</p>\n", w.rooms_intro);
    if rooms.is_empty() {
        body.push_str(&format!("<p id=\"no-rooms\">{}</p>\n", w.rooms_none));
    } else {
        body.push_str("<ul id=\"rooms\">\n");
        for room in rooms {
            let (key, label) = match (room.state, room.opens_at) {
                (RoomState::Open, Some(at)) => (
                    "opens",
                    format!(
                        "{} <time datetime=\"{}\">{}</time>",
                        w.opens,
                        escape(at),
                        escape(&utc_time(at))
                    ),
                ),
                (RoomState::Open, None) => ("open", w.open.to_owned()),
                (RoomState::Paused, _) => ("paused", w.paused.to_owned()),
                (RoomState::Closed, _) => ("closed", w.closed.to_owned()),
            };
            body.push_str(&format!(
                "<li><a href=\"{href}\" data-room=\"{id}\">{name}</a> \
                 <span class=\"state\" data-state=\"{key}\">{label}</span></li>\n",
                href = escape(room.href),
                id = escape(room.id),
                name = escape(room.name.unwrap_or(room.id)),
            ));
        }
        body.push_str("</ul>\n");
    }
    let config = script_json(&ScriptConfig { lang: lang.tag() });
    document(&LIST, lang, w.rooms_title, &config, &body)
}

/// `2030-05-01T19:00:00Z` as `2030-05-01 19:00 UTC`: the opening as the
/// list shows it without script, the zone named (the script shows it in
/// the visitor's own zone).
fn utc_time(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => rfc3339.to_owned(),
    }
}

impl Notice {
    /// The notice as a page, with a link to the room list.
    #[must_use]
    pub fn render(self, lang: Lang) -> String {
        let w = words(lang);
        let (title, text) = match self {
            Notice::UnknownRoom => (w.unknown_title, w.unknown_text),
            Notice::Unavailable => (w.unavailable_title, w.unavailable_text),
            Notice::NotFound => (w.missing_title, w.missing_text),
        };
        let body = format!("<p>{text}</p>\n<p><a href=\"/\">{}</a></p>\n", w.all_rooms);
        document(&NOTICE, lang, title, "", &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::csp_hash;
    use crate::html::tests::{assert_csp_matches, between};

    #[test]
    fn lists_rooms_with_links_and_escapes_them() {
        let html = rooms(
            Lang::En,
            &[
                RoomLink {
                    id: "concert",
                    href: "/waiting-room/concert",
                    state: RoomState::Open,
                    name: None,
                    opens_at: None,
                },
                RoomLink {
                    id: "<b>x\"",
                    href: "/waiting-room/\"><script>",
                    state: RoomState::Paused,
                    name: None,
                    opens_at: None,
                },
                RoomLink {
                    id: "spring",
                    href: "/waiting-room/spring",
                    state: RoomState::Open,
                    name: Some("Spring <tour>"),
                    opens_at: Some("2030-05-01T19:00:00Z"),
                },
            ],
        );
        assert!(
            html.contains("<a href=\"/waiting-room/concert\" data-room=\"concert\">concert</a>")
        );
        assert!(html.contains("&lt;b&gt;x&quot;"));
        assert!(html.contains("href=\"/waiting-room/&quot;&gt;&lt;script&gt;\""));
        assert!(!html.contains("\"><script>") && !html.contains("<b>"));
        assert_eq!(html.matches("<script").count(), 2, "only the page's own");
        assert!(html.contains("data-state=\"paused\">Paused<"));
        assert!(html.contains("data-room=\"spring\">Spring &lt;tour&gt;</a>"));
        // Without script the opening reads in UTC, the zone named; the
        // script reads the instant from `datetime`.
        assert!(html.contains(
            "data-state=\"opens\">Opens <time datetime=\"2030-05-01T19:00:00Z\">\
             2030-05-01 19:00 UTC</time></span>"
        ));
        assert!(html.contains(
            "<script id=\"lobby-config\" type=\"application/json\">{\"lang\":\"en\"}</script>"
        ));
        let ko = rooms(Lang::Ko, &[]);
        assert!(ko.contains("<html lang=\"ko\">") && ko.contains(KO.rooms_none));
        assert!(ko.contains("{\"lang\":\"ko\"}"));
    }

    #[test]
    fn an_opening_outside_rfc_3339_is_shown_as_it_is_and_escaped() {
        let html = rooms(
            Lang::Ko,
            &[RoomLink {
                id: "x",
                href: "/waiting-room/x",
                state: RoomState::Open,
                name: None,
                opens_at: Some("<soon>"),
            }],
        );
        assert!(html.contains("오픈 예정 <time datetime=\"&lt;soon&gt;\">&lt;soon&gt;</time>"));
    }

    #[test]
    fn notices_in_both_languages() {
        for lang in Lang::ALL {
            for notice in [Notice::UnknownRoom, Notice::Unavailable, Notice::NotFound] {
                let html = notice.render(lang);
                assert!(html.contains(&format!("<html lang=\"{}\">", lang.tag())));
                assert!(html.contains("<a href=\"/\">"));
            }
        }
        assert!(
            Notice::UnknownRoom
                .render(Lang::Ko)
                .contains(KO.unknown_title)
        );
    }

    #[test]
    fn the_list_csp_names_its_style_and_script() {
        for lang in Lang::ALL {
            assert_csp_matches(&rooms(lang, &[]), &rooms_csp());
        }
    }

    #[test]
    fn notices_run_no_script() {
        let html = Notice::NotFound.render(Lang::En);
        let policy = notice_csp();
        assert!(policy.contains(&csp_hash(between(&html, "<style>", "</style>"))));
        assert!(policy.contains("script-src 'none'"));
        assert!(!html.contains("<script"));
    }

    /// A budget against bloat: the list of a dozen rooms, its script
    /// included, stays a small page.
    #[test]
    fn the_list_is_small() {
        let ids: Vec<String> = (0..12).map(|i| format!("room-{i}")).collect();
        let links: Vec<RoomLink<'_>> = ids
            .iter()
            .map(|id| RoomLink {
                id,
                href: "/waiting-room/room",
                state: RoomState::Open,
                name: Some("A room with a longer display name"),
                opens_at: Some("2030-05-01T19:00:00Z"),
            })
            .collect();
        let html = rooms(Lang::Ko, &links);
        assert!(html.len() < 12 * 1024, "{} bytes", html.len());
    }

    #[test]
    fn both_languages_say_everything() {
        let all = |w: &Words| {
            [
                w.rooms_title,
                w.rooms_intro,
                w.rooms_none,
                w.open,
                w.paused,
                w.closed,
                w.opens,
                w.unknown_title,
                w.unknown_text,
                w.unavailable_title,
                w.unavailable_text,
                w.missing_title,
                w.missing_text,
                w.all_rooms,
            ]
        };
        for (en, ko) in all(&EN).into_iter().zip(all(&KO)) {
            assert!(!en.is_empty() && !ko.is_empty() && en != ko, "{en}");
        }
    }
}
