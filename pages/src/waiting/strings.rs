//! The waiting page's words, in English and Korean. The HTML labels are
//! filled in when the page is rendered; the messages go to the page's script in its
//! config block. `{n}`, `{h}`, `{m}` and `{time}` are filled in by the script.

use serde::Serialize;

use crate::lang::Lang;
use crate::skeleton::labels;

/// Every string the page shows.
#[derive(Serialize, Debug)]
pub struct Strings {
    /// Heading when the operator set no `PAGE_TITLE`.
    #[serde(skip)]
    pub default_title: &'static str,
    /// Before the room id.
    #[serde(skip)]
    pub label_room: &'static str,
    /// The progress bar's accessible name.
    #[serde(skip)]
    pub label_progress: &'static str,
    /// Before the pre-queue countdown.
    #[serde(skip)]
    pub label_opens_in: &'static str,
    /// Figure: the visitor's position.
    #[serde(skip)]
    pub label_position: &'static str,
    /// Figure: how many wait.
    #[serde(skip)]
    pub label_waiting: &'static str,
    /// Figure: the estimated wait.
    #[serde(skip)]
    pub label_eta: &'static str,
    /// The button shown when the place expired.
    #[serde(skip)]
    pub label_rejoin: &'static str,
    /// The button that leaves the line, offered when seats will probably
    /// be gone before the visitor's turn.
    #[serde(skip)]
    pub label_leave: &'static str,
    /// Under the figures.
    #[serde(skip)]
    pub msg_keep_open: &'static str,
    /// Without JavaScript.
    #[serde(skip)]
    pub msg_noscript: &'static str,
    /// While joining.
    pub msg_connecting: &'static str,
    /// In line, open room.
    pub msg_waiting: &'static str,
    /// Before the opening; `{time}`.
    pub msg_prequeue: &'static str,
    /// In a lottery room (waiting, no position, after the opening).
    pub msg_lottery: &'static str,
    /// The room is paused.
    pub msg_paused: &'static str,
    /// The room is closed.
    pub msg_closed: &'static str,
    /// The line is full.
    pub msg_sold_out: &'static str,
    /// The place is gone (stopped polling, left, session over).
    pub msg_expired: &'static str,
    /// Admitted; leaving for the wanted page.
    pub msg_admitted: &'static str,
    /// Errors; retrying with backoff.
    pub msg_reconnecting: &'static str,
    /// Admitted again and again: the entry cookie is not kept.
    pub msg_no_cookie: &'static str,
    /// While the browser works out the room's proof of work.
    pub msg_checking: &'static str,
    /// Over the Turnstile widget.
    pub msg_turnstile: &'static str,
    /// The check kept failing (or cannot be shown here).
    pub msg_challenge_failed: &'static str,
    /// Live-region announcement; `{n}`.
    pub announce_position: &'static str,
    /// Position shown before the opening draw.
    pub position_draw: &'static str,
    /// ETA under a minute.
    pub eta_under_minute: &'static str,
    /// ETA in minutes; `{n}`.
    pub eta_minutes: &'static str,
    /// ETA in hours and minutes; `{h}`, `{m}`.
    pub eta_hours: &'static str,
    /// In place of the ETA while it cannot be told yet (an opening).
    pub eta_estimating: &'static str,
    /// In place of the ETA where the seats may run out first (outlook
    /// `uncertain` or `unlikely`): the turn then waits on holds ending.
    pub eta_seats: &'static str,
    /// After the ETA: the clock time it ends; `{time}`.
    pub eta_at: &'static str,
    /// Beside the live dot: the line's length and the last answer's time;
    /// `{n}`, `{time}`.
    pub msg_updated: &'static str,
    /// The place's reference for support; `{ref}`.
    pub msg_reference: &'static str,
    /// Days in the countdown to the opening; `{n}`.
    pub countdown_days: &'static str,
    /// How long a visit lasts once in; `{n}` minutes.
    pub msg_visit: &'static str,
    /// The line's cap; `{n}`.
    pub msg_cap: &'static str,
    /// Outlook `likely`: seats will probably be left at the visitor's turn.
    #[serde(rename = "likely")]
    pub outlook_likely: &'static str,
    /// Outlook `uncertain`: too close to tell.
    #[serde(rename = "uncertain")]
    pub outlook_uncertain: &'static str,
    /// Outlook `unlikely`: the seats will probably be gone first.
    #[serde(rename = "unlikely")]
    pub outlook_unlikely: &'static str,
    /// After leaving the line.
    pub msg_left: &'static str,
}

const EN: Strings = Strings {
    default_title: "Waiting room",
    label_room: "Event:",
    label_progress: "Progress through the line",
    label_opens_in: "Opens in",
    label_position: "Your place",
    label_waiting: "People ahead of you",
    label_eta: "Estimated wait",
    label_rejoin: "Join the line again",
    label_leave: "Leave the line",
    msg_keep_open: "Keep this page open. Reloading is safe: your place is kept.",
    msg_noscript: "This waiting room needs JavaScript to keep your place in line.",
    msg_connecting: "Getting your place in line…",
    msg_waiting: "You are in line. When it is your turn, this page takes you in by itself.",
    msg_prequeue: "The line opens at {time}. Everyone here before then gets a place in a random draw at the opening.",
    msg_lottery: "You are in the draw: visitors are let in at random as places free up.",
    msg_paused: "The line is paused for a moment. You keep your place.",
    msg_closed: "This line is closed.",
    msg_sold_out: "Sorry, the line is full: no more places are available.",
    msg_expired: "Your place has expired because this page stopped checking in. You can join the line again.",
    msg_admitted: "It is your turn! Taking you in…",
    msg_reconnecting: "Connection problem. Retrying shortly…",
    msg_no_cookie: "Your browser did not keep the entry pass. Please allow cookies for this site and reload.",
    msg_checking: "Checking your browser…",
    msg_turnstile: "Please complete the check below to get your place in line.",
    msg_challenge_failed: "The browser check did not work. Please try again.",
    announce_position: "Your place in line: {n}",
    position_draw: "Drawn at opening",
    eta_under_minute: "Under a minute",
    eta_minutes: "About {n} min",
    eta_hours: "About {h} h {m} min",
    eta_estimating: "Working it out…",
    eta_seats: "Depends on seats",
    eta_at: "around {time}",
    msg_updated: "{n} in line · updated {time}",
    msg_reference: "Your place's reference: {ref}. Quote it if you contact support.",
    countdown_days: "{n} d",
    msg_visit: "Once in, you have {n} min to choose your seats and pay.",
    msg_cap: "Only the first {n} places in line are given.",
    outlook_likely: "Seats should be left at your turn.",
    outlook_uncertain: "Too close to tell if seats will be left at your turn.",
    outlook_unlikely: "The seats will probably be gone before your turn.",
    msg_left: "You left the line.",
};

const KO: Strings = Strings {
    default_title: "대기실",
    label_room: "이벤트:",
    label_progress: "대기열 진행 상황",
    label_opens_in: "오픈까지",
    label_position: "내 순서",
    label_waiting: "내 앞 대기 인원",
    label_eta: "예상 대기 시간",
    label_rejoin: "다시 줄 서기",
    label_leave: "줄에서 나가기",
    msg_keep_open: "이 페이지를 열어 두세요. 새로고침해도 순서는 유지됩니다.",
    msg_noscript: "대기 순서를 유지하려면 JavaScript가 필요합니다.",
    msg_connecting: "대기 순서를 받는 중…",
    msg_waiting: "대기열에 들어왔습니다. 차례가 되면 자동으로 입장합니다.",
    msg_prequeue: "대기열은 {time}에 열립니다. 그 전에 오신 분들의 순서는 오픈 시각에 무작위 추첨으로 정해집니다.",
    msg_lottery: "추첨 대기 중입니다. 자리가 나는 대로 무작위로 입장합니다.",
    msg_paused: "대기열이 잠시 멈췄습니다. 순서는 그대로 유지됩니다.",
    msg_closed: "이 대기열은 마감되었습니다.",
    msg_sold_out: "죄송합니다. 대기열이 가득 차 더 이상 순서를 받을 수 없습니다.",
    msg_expired: "페이지 연결이 끊겨 대기 순서가 만료되었습니다. 다시 줄을 설 수 있습니다.",
    msg_admitted: "입장 차례입니다! 이동하는 중…",
    msg_reconnecting: "연결에 문제가 있습니다. 잠시 후 다시 시도합니다…",
    msg_no_cookie: "브라우저가 입장권 쿠키를 저장하지 않았습니다. 이 사이트의 쿠키를 허용한 뒤 새로고침하세요.",
    msg_checking: "브라우저를 확인하는 중…",
    msg_turnstile: "대기 순서를 받으려면 아래 확인을 완료하세요.",
    msg_challenge_failed: "브라우저 확인에 실패했습니다. 다시 시도해 주세요.",
    announce_position: "현재 내 순서: {n}번",
    position_draw: "오픈 시 추첨",
    eta_under_minute: "1분 미만",
    eta_minutes: "약 {n}분",
    eta_hours: "약 {h}시간 {m}분",
    eta_estimating: "계산하는 중…",
    eta_seats: "좌석에 따라 다름",
    eta_at: "{time}쯤",
    msg_updated: "대기 {n}명 · {time} 업데이트",
    msg_reference: "대기 참조 번호: {ref}. 고객센터에 문의할 때 알려 주세요.",
    countdown_days: "{n}일",
    msg_visit: "입장 후 {n}분 안에 좌석을 고르고 결제해야 합니다.",
    msg_cap: "대기 순서는 앞에서부터 {n}명까지만 받습니다.",
    outlook_likely: "차례에 좌석이 남아 있을 것 같습니다.",
    outlook_uncertain: "차례에 좌석이 남을지 모릅니다.",
    outlook_unlikely: "차례 전에 좌석이 다 팔릴 것 같습니다.",
    msg_left: "줄에서 나왔습니다.",
};

impl Strings {
    /// The texts the page's HTML shows, by their template keys.
    pub(crate) fn labels(&self) -> [(&'static str, &'static str); 11] {
        labels!(
            self;
            label_room,
            label_progress,
            label_opens_in,
            label_position,
            label_waiting,
            label_eta,
            label_rejoin,
            label_leave,
            msg_keep_open,
            msg_noscript,
            msg_connecting,
        )
    }
}

/// The strings for `lang`.
#[must_use]
pub fn strings(lang: Lang) -> &'static Strings {
    lang.pick(&EN, &KO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::tests::assert_strings_complete;

    #[test]
    fn both_languages_say_everything() {
        let texts = |t: &Strings| {
            [
                vec![t.default_title],
                t.labels().map(|(_, text)| text).to_vec(),
            ]
            .concat()
        };
        assert_strings_complete(&EN, &KO, &texts(&EN), &texts(&KO));
    }
}
