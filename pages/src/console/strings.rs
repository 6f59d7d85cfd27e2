//! The console's words, in English and Korean. The HTML labels are filled
//! in when the page is rendered; the rest go to the page's script in its
//! config block. `{name}` placeholders are filled in by the script.

use serde::Serialize;

use crate::lang::Lang;
use crate::skeleton::labels;

/// Every string the console shows.
#[derive(Serialize, Debug)]
pub struct Strings {
    /// The page's heading and title.
    #[serde(skip)]
    pub title: &'static str,
    /// Names the language links.
    #[serde(skip)]
    pub label_language: &'static str,
    /// Forgets the key in this tab.
    #[serde(skip)]
    pub label_logout: &'static str,
    /// Without JavaScript.
    #[serde(skip)]
    pub msg_noscript: &'static str,
    /// The key field's label.
    #[serde(skip)]
    pub label_key: &'static str,
    /// Under the key field: where the key is kept.
    #[serde(skip)]
    pub hint_key: &'static str,
    /// The key form's button.
    #[serde(skip)]
    pub label_login: &'static str,
    /// When there is no room.
    #[serde(skip)]
    pub msg_no_rooms: &'static str,
    /// No key given.
    pub msg_key_missing: &'static str,
    /// The origin refused the key.
    pub msg_key_wrong: &'static str,
    /// The origin has no admin key.
    pub msg_admin_disabled: &'static str,
    /// The origin cannot be reached.
    pub msg_unreachable: &'static str,
    /// An error without the contract's body.
    pub msg_http: &'static str,
    /// After each successful read.
    pub msg_updated: &'static str,
    /// A room's state.
    pub state_open: &'static str,
    /// A room's state.
    pub state_paused: &'static str,
    /// A room's state.
    pub state_closed: &'static str,
    /// An open room before its opening (`opens_at`); `{time}`.
    pub state_opens: &'static str,
    /// Button.
    pub label_pause: &'static str,
    /// Button.
    pub label_resume: &'static str,
    /// Button.
    pub label_close: &'static str,
    /// Asks before closing.
    pub msg_confirm_close: &'static str,
    /// Confirms the close.
    pub label_close_confirm: &'static str,
    /// Cancels the close.
    pub label_cancel: &'static str,
    /// After a pause.
    pub msg_paused: &'static str,
    /// After a resume.
    pub msg_resumed: &'static str,
    /// After a close.
    pub msg_closed: &'static str,
    /// After a settings change.
    pub msg_saved: &'static str,
    /// Apply with nothing changed.
    pub msg_no_change: &'static str,
    /// Figure.
    pub label_waiting: &'static str,
    /// Figure.
    pub label_inside: &'static str,
    /// Figure.
    pub label_rate: &'static str,
    /// Figure.
    pub label_oldest_wait: &'static str,
    /// Figure.
    pub label_eta_last: &'static str,
    /// Figure.
    pub label_abandoned: &'static str,
    /// Figure.
    pub label_seats: &'static str,
    /// ETA while nobody is admitted.
    pub msg_no_admissions: &'static str,
    /// A duration under a minute.
    pub fmt_seconds: &'static str,
    /// A duration under an hour.
    pub fmt_minutes: &'static str,
    /// Whole minutes.
    pub fmt_whole_minutes: &'static str,
    /// A longer duration.
    pub fmt_hours: &'static str,
    /// Under a chart: how far back it reaches.
    pub fmt_span: &'static str,
    /// A chart's time axis, at its left end; `{d}` a duration.
    pub axis_ago: &'static str,
    /// A chart's time axis, at its right end.
    pub axis_now: &'static str,
    /// A count of people on a chart's axis; `{n}`.
    pub unit_people: &'static str,
    /// A rate on a chart's axis; `{n}`.
    pub unit_rate: &'static str,
    /// A count of seats on a chart's axis; `{n}`.
    pub unit_seats: &'static str,
    /// Chart title.
    pub chart_waiting: &'static str,
    /// Chart title.
    pub chart_inside: &'static str,
    /// Chart title.
    pub chart_rate: &'static str,
    /// Chart title.
    pub chart_seats: &'static str,
    /// A chart with no samples yet.
    pub msg_no_history: &'static str,
    /// Chart series.
    pub series_inside: &'static str,
    /// Chart series.
    pub series_capacity: &'static str,
    /// Chart series.
    pub series_achieved: &'static str,
    /// Chart series.
    pub series_configured: &'static str,
    /// Chart series.
    pub series_available: &'static str,
    /// Chart series.
    pub series_held: &'static str,
    /// Chart series.
    pub series_booked: &'static str,
    /// The settings form's heading.
    pub label_settings: &'static str,
    /// Field label.
    pub field_capacity: &'static str,
    /// Field label.
    pub field_admit_per_second: &'static str,
    /// Field label.
    pub field_session_seconds: &'static str,
    /// Field label.
    pub field_abandon_seconds: &'static str,
    /// Field label: whether joins name an account of the site.
    pub field_identity: &'static str,
    /// The identity field's choice.
    pub identity_off: &'static str,
    /// The identity field's choice.
    pub identity_optional: &'static str,
    /// The identity field's choice.
    pub identity_required: &'static str,
    /// Field label: what a join must show before it takes a place.
    pub field_challenge: &'static str,
    /// The challenge field's choice.
    pub challenge_off: &'static str,
    /// The challenge field's choice.
    pub challenge_pow: &'static str,
    /// The challenge field's choice.
    pub challenge_turnstile: &'static str,
    /// Field label: the proof of work's difficulty.
    pub field_challenge_bits: &'static str,
    /// Field label: a Turnstile room when Cloudflare cannot be asked.
    pub field_challenge_fail: &'static str,
    /// The display_name field's label.
    pub field_display_name: &'static str,
    /// The color field's label.
    pub field_color: &'static str,
    /// The logo field's label.
    pub field_logo: &'static str,
    /// The currency field's label.
    pub field_currency: &'static str,
    /// The challenge_fail field's choice.
    pub challenge_fail_closed: &'static str,
    /// The challenge_fail field's choice.
    pub challenge_fail_open: &'static str,
    /// The settings form's button.
    pub label_apply: &'static str,
}

static EN: Strings = Strings {
    title: "Operator console",
    label_language: "Language",
    label_logout: "Forget key",
    msg_noscript: "The console needs JavaScript.",
    label_key: "Admin key",
    hint_key: "Kept in this browser tab only, until you close it.",
    label_login: "Open console",
    msg_no_rooms: "No rooms yet. Create one with PUT /admin/rooms/{room}.",
    msg_key_missing: "Enter the admin key.",
    msg_key_wrong: "That admin key is not valid.",
    msg_admin_disabled: "The admin API is off: start the origin with --admin-key.",
    msg_unreachable: "Cannot reach the origin. Retrying…",
    msg_http: "The origin answered {status}.",
    msg_updated: "Live · updated {time}",
    state_open: "open",
    state_paused: "paused",
    state_closed: "closed",
    state_opens: "opens {time}",
    label_pause: "Pause",
    label_resume: "Resume",
    label_close: "Close…",
    msg_confirm_close: "Close {room}? New visitors are turned away and those in line read “closed”.",
    label_close_confirm: "Yes, close",
    label_cancel: "Cancel",
    msg_paused: "{room} is paused: nobody is admitted.",
    msg_resumed: "{room} is open: admissions resume on the next tick.",
    msg_closed: "{room} is closed.",
    msg_saved: "{room}: settings saved; they apply on the next tick.",
    msg_no_change: "Nothing to change.",
    label_waiting: "Waiting",
    label_inside: "Inside / capacity",
    label_rate: "Admissions/s, last 10 s / set",
    label_oldest_wait: "Oldest wait",
    label_eta_last: "ETA of the last in line",
    label_abandoned: "Abandoned",
    label_seats: "Seats available / held / booked",
    msg_no_admissions: "no admissions",
    fmt_seconds: "{n} s",
    fmt_minutes: "{m} min {s} s",
    fmt_whole_minutes: "{m} min",
    fmt_hours: "{h} h {m} min",
    fmt_span: "last {d}",
    axis_ago: "−{d}",
    axis_now: "now",
    unit_people: "{n} people",
    unit_rate: "{n}/s",
    unit_seats: "{n} seats",
    chart_waiting: "Waiting",
    chart_inside: "Inside and capacity",
    chart_rate: "Admissions per second",
    chart_seats: "Seats",
    msg_no_history: "no samples yet",
    series_inside: "inside",
    series_capacity: "capacity",
    series_achieved: "achieved (per 5 s)",
    series_configured: "set",
    series_available: "available",
    series_held: "held",
    series_booked: "booked",
    label_settings: "Settings",
    field_capacity: "Capacity (inside at once)",
    field_admit_per_second: "Admissions per second",
    field_session_seconds: "Session length (s)",
    field_abandon_seconds: "Abandon after (s)",
    field_identity: "Accounts (identity token)",
    identity_off: "off: one place per browser",
    identity_optional: "optional: one place per account when signed in",
    identity_required: "required: signed-in accounts only",
    field_challenge: "Join challenge (bots)",
    challenge_off: "off: joining is one request",
    challenge_pow: "proof of work: the browser computes for a moment",
    challenge_turnstile: "Cloudflare Turnstile",
    field_challenge_bits: "Proof of work difficulty (bits, 8–32)",
    field_challenge_fail: "When Turnstile cannot be reached",
    field_display_name: "Name visitors see (empty: the room id)",
    field_color: "Page colour (#rgb or #rrggbb)",
    field_logo: "Logo (a path on your site, /…)",
    field_currency: "Currency (ISO 4217, e.g. KRW, USD)",
    challenge_fail_closed: "closed: refuse joins",
    challenge_fail_open: "open: let joins in unchecked",
    label_apply: "Apply",
};

static KO: Strings = Strings {
    title: "운영자 콘솔",
    label_language: "언어",
    label_logout: "키 지우기",
    msg_noscript: "콘솔을 사용하려면 JavaScript가 필요합니다.",
    label_key: "관리자 키",
    hint_key: "이 브라우저 탭에만 보관되며, 탭을 닫으면 사라집니다.",
    label_login: "콘솔 열기",
    msg_no_rooms: "아직 방이 없습니다. PUT /admin/rooms/{room} 으로 만드세요.",
    msg_key_missing: "관리자 키를 입력하세요.",
    msg_key_wrong: "관리자 키가 올바르지 않습니다.",
    msg_admin_disabled: "관리자 API가 꺼져 있습니다. --admin-key 로 오리진을 시작하세요.",
    msg_unreachable: "오리진에 연결할 수 없습니다. 다시 시도하는 중…",
    msg_http: "오리진이 {status} 로 응답했습니다.",
    msg_updated: "실시간 · {time} 갱신",
    state_open: "열림",
    state_paused: "일시 정지",
    state_closed: "닫힘",
    state_opens: "{time} 열림 예정",
    label_pause: "일시 정지",
    label_resume: "재개",
    label_close: "닫기…",
    msg_confirm_close: "{room} 을(를) 닫을까요? 새 방문자는 들어올 수 없고 대기 중인 방문자에게는 “닫힘”이 표시됩니다.",
    label_close_confirm: "예, 닫기",
    label_cancel: "취소",
    msg_paused: "{room} 일시 정지됨: 아무도 입장하지 않습니다.",
    msg_resumed: "{room} 열림: 다음 틱부터 입장이 재개됩니다.",
    msg_closed: "{room} 닫힘.",
    msg_saved: "{room}: 설정이 저장되었습니다. 다음 틱부터 적용됩니다.",
    msg_no_change: "변경된 내용이 없습니다.",
    label_waiting: "대기",
    label_inside: "입장 / 정원",
    label_rate: "초당 입장, 최근 10초 / 설정",
    label_oldest_wait: "최장 대기",
    label_eta_last: "마지막 대기자 예상 시간",
    label_abandoned: "이탈",
    label_seats: "좌석 잔여 / 선점 / 예매",
    msg_no_admissions: "입장 없음",
    fmt_seconds: "{n}초",
    fmt_minutes: "{m}분 {s}초",
    fmt_whole_minutes: "{m}분",
    fmt_hours: "{h}시간 {m}분",
    fmt_span: "최근 {d}",
    axis_ago: "{d} 전",
    axis_now: "지금",
    unit_people: "{n}명",
    unit_rate: "초당 {n}",
    unit_seats: "{n}석",
    chart_waiting: "대기",
    chart_inside: "입장과 정원",
    chart_rate: "초당 입장",
    chart_seats: "좌석",
    msg_no_history: "아직 데이터 없음",
    series_inside: "입장",
    series_capacity: "정원",
    series_achieved: "실제(5초 단위)",
    series_configured: "설정",
    series_available: "잔여",
    series_held: "선점",
    series_booked: "예매",
    label_settings: "설정",
    field_capacity: "정원 (동시 입장)",
    field_admit_per_second: "초당 입장 수",
    field_session_seconds: "세션 길이 (초)",
    field_abandon_seconds: "이탈 판정 (초)",
    field_identity: "계정 (신원 토큰)",
    identity_off: "끔: 브라우저마다 한 자리",
    identity_optional: "선택: 로그인하면 계정마다 한 자리",
    identity_required: "필수: 로그인한 계정만",
    field_challenge: "입장 확인 (봇 차단)",
    challenge_off: "끔: 요청 한 번으로 줄 서기",
    challenge_pow: "작업 증명: 브라우저가 잠시 계산",
    challenge_turnstile: "Cloudflare Turnstile 확인",
    field_challenge_bits: "작업 증명 난이도 (비트, 8–32)",
    field_challenge_fail: "Turnstile에 연결할 수 없을 때",
    field_display_name: "방문자에게 보이는 이름 (비우면 대기실 ID)",
    field_color: "페이지 색상 (#rgb 또는 #rrggbb)",
    field_logo: "로고 (사이트 안의 경로, /…)",
    field_currency: "통화 (ISO 4217, 예: KRW, USD)",
    challenge_fail_closed: "닫힘: 줄 서기 거절",
    challenge_fail_open: "열림: 확인 없이 줄 서기 허용",
    label_apply: "적용",
};

impl Strings {
    /// The texts the page's HTML shows, by their template keys.
    pub(crate) fn labels(&self) -> [(&'static str, &'static str); 7] {
        labels!(
            self;
            label_language,
            label_logout,
            msg_noscript,
            label_key,
            hint_key,
            label_login,
            msg_no_rooms,
        )
    }
}

/// The console's strings in `lang`.
#[must_use]
pub fn strings(lang: Lang) -> &'static Strings {
    lang.pick(&EN, &KO)
}
