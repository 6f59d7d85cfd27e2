//! The seat page's words, in English and Korean. The HTML labels are filled
//! in when the page is rendered; the messages go to the page's script in its
//! config block. `{name}` placeholders are filled in by the script.

use serde::Serialize;

use crate::lang::Lang;
use crate::skeleton::labels;

/// Every string the seat page shows.
#[derive(Serialize, Debug)]
pub struct Strings {
    /// Heading when the caller sets no title, while choosing seats.
    pub default_title: &'static str,
    /// Before the room id.
    #[serde(skip)]
    pub label_room: &'static str,
    /// Before the script has said anything.
    #[serde(skip)]
    pub msg_loading: &'static str,
    /// Without JavaScript.
    #[serde(skip)]
    pub msg_noscript: &'static str,
    /// The link back to the waiting page when the session is over.
    #[serde(skip)]
    pub label_back: &'static str,
    /// Heading of the performance list.
    #[serde(skip)]
    pub label_performance: &'static str,
    /// Heading of the seat map; also "seats" in the hold and the booking.
    #[serde(skip)]
    pub label_seats: &'static str,
    /// Legend: a seat one can choose.
    #[serde(skip)]
    pub label_available: &'static str,
    /// Legend: a seat one has chosen.
    #[serde(skip)]
    pub label_selected: &'static str,
    /// Legend: a seat someone holds.
    #[serde(skip)]
    pub label_held: &'static str,
    /// Legend: a sold seat.
    #[serde(skip)]
    pub label_booked: &'static str,
    /// Before the chosen seats.
    #[serde(skip)]
    pub label_selection: &'static str,
    /// Before a total price.
    #[serde(skip)]
    pub label_total: &'static str,
    /// The button that holds the chosen seats.
    #[serde(skip)]
    pub label_hold: &'static str,
    /// The button that clears the choice.
    #[serde(skip)]
    pub label_clear: &'static str,
    /// Heading of the hold.
    #[serde(skip)]
    pub label_your_hold: &'static str,
    /// Before the hold's countdown.
    #[serde(skip)]
    pub label_time_left: &'static str,
    /// The payment field's label.
    #[serde(skip)]
    pub label_card: &'static str,
    /// Under the payment field: which test tokens do what.
    #[serde(skip)]
    pub hint_card: &'static str,
    /// The button that pays and confirms.
    #[serde(skip)]
    pub label_confirm: &'static str,
    /// The button that gives the held seats back.
    #[serde(skip)]
    pub label_release: &'static str,
    /// Heading of the booking.
    #[serde(skip)]
    pub label_booking: &'static str,
    /// The booking's number.
    #[serde(skip)]
    pub label_booking_id: &'static str,
    /// The booking's status.
    #[serde(skip)]
    pub label_status: &'static str,
    /// When the booking was made.
    #[serde(skip)]
    pub label_created: &'static str,
    /// The button that copies the booking number.
    #[serde(skip)]
    pub label_copy: &'static str,
    /// The name of the links after a booking.
    #[serde(skip)]
    pub label_next: &'static str,
    /// Above the links after a booking.
    #[serde(skip)]
    pub msg_next: &'static str,
    /// The link to the list of events.
    #[serde(skip)]
    pub label_events: &'static str,

    /// Heading (when the caller sets no title) while seats are held.
    pub title_held: &'static str,
    /// Heading (when the caller sets no title) once booked.
    pub title_booked: &'static str,
    /// The booking number was copied.
    pub msg_copied: &'static str,
    /// The browser would not copy: the number is selected instead.
    pub msg_copy_failed: &'static str,

    /// Several performances: pick one.
    pub msg_choose_performance: &'static str,
    /// The room sells nothing (yet).
    pub msg_no_performances: &'static str,
    /// Under a performance; `{n}`.
    pub seats_left: &'static str,
    /// A performance is chosen; `{max}`.
    pub msg_choose_seats: &'static str,
    /// Tried to choose more than allowed; `{max}`.
    pub msg_max_seats: &'static str,
    /// While holding.
    pub msg_holding: &'static str,
    /// Held; `{time}` is when the hold ends.
    pub msg_held: &'static str,
    /// While paying.
    pub msg_confirming: &'static str,
    /// Booked (the number is shown under it, whole).
    pub msg_booked: &'static str,
    /// The hold was given back.
    pub msg_released: &'static str,
    /// 409 `seat_unavailable`: someone was faster; `{seats}`.
    pub msg_seat_taken: &'static str,
    /// 402 `payment_declined`: the hold stays.
    pub msg_declined: &'static str,
    /// 409 `hold_expired`, or the countdown reached zero.
    pub msg_hold_expired: &'static str,
    /// 409 `hold_exists`.
    pub msg_hold_exists: &'static str,
    /// 409 `account_limit`: the account holds and has booked its limit.
    pub msg_account_limit: &'static str,
    /// 401: no entry, or the session is over.
    pub msg_session_ended: &'static str,
    /// 429; `{n}` seconds.
    pub msg_rate_limited: &'static str,
    /// 503 and other server trouble.
    pub msg_unavailable: &'static str,
    /// No answer at all.
    pub msg_network: &'static str,
    /// No answer to a payment: retrying is safe.
    pub msg_network_retry: &'static str,
    /// 422; `{reason}` is the server's message.
    pub msg_invalid: &'static str,
    /// Anything else; `{code}`.
    pub msg_error: &'static str,
    /// Live region: a seat chosen; `{seat}`, `{n}`, `{max}`.
    pub announce_selected: &'static str,
    /// Live region: a seat unchosen; `{seat}`.
    pub announce_deselected: &'static str,
    /// Live region: the map changed; `{n}` seats.
    pub announce_updated: &'static str,
    /// A section's heading; `{section}`.
    pub section: &'static str,
    /// A row's name; `{row}`.
    pub row: &'static str,
    /// A seat button's accessible name; `{section}`, `{row}`, `{number}`,
    /// `{price}`, `{state}`.
    pub seat_label: &'static str,
    /// Seat state words for the accessible name.
    pub state_available: &'static str,
    /// Chosen by this visitor.
    pub state_selected: &'static str,
    /// Held by someone else.
    pub state_held: &'static str,
    /// Sold.
    pub state_booked: &'static str,
    /// Held by this visitor.
    pub state_mine: &'static str,
    /// The selection is empty.
    pub none_selected: &'static str,
    /// A booking's status `confirmed`.
    pub status_confirmed: &'static str,
}

const EN: Strings = Strings {
    default_title: "Choose your seats",
    label_room: "Event:",
    msg_loading: "Loading the performances…",
    msg_noscript: "Choosing seats needs JavaScript.",
    label_back: "Back to the waiting room",
    label_performance: "Performance",
    label_seats: "Seats",
    label_available: "Available",
    label_selected: "Your choice",
    label_held: "Held by someone",
    label_booked: "Sold",
    label_selection: "Chosen",
    label_total: "Total",
    label_hold: "Hold these seats",
    label_clear: "Clear the choice",
    label_your_hold: "Your seats are held",
    label_time_left: "Time left to pay",
    label_card: "Card token",
    hint_card: "tok_visa pays; tok_decline is always declined (a test of a refused card).",
    label_confirm: "Pay and book",
    label_release: "Give the seats back",
    label_booking: "Booking confirmed",
    label_booking_id: "Booking number",
    label_status: "Status",
    label_created: "Booked at",
    label_copy: "Copy",
    label_next: "What next",
    msg_next: "Keep your booking number: you will need it if you contact the box office.",
    label_events: "Back to the events",

    title_held: "Pay for your seats",
    title_booked: "You are booked",
    msg_copied: "Copied.",
    msg_copy_failed: "Selected: press Ctrl+C (⌘C) to copy.",

    msg_choose_performance: "Choose a performance.",
    msg_no_performances: "Nothing is on sale in this room yet.",
    seats_left: "{n} seats left",
    msg_choose_seats: "Choose up to {max} seats, then hold them while you pay.",
    msg_max_seats: "You can choose up to {max} seats at once.",
    msg_holding: "Holding your seats…",
    msg_held: "Your seats are held until {time}. Pay before then to keep them.",
    msg_confirming: "Paying…",
    msg_booked: "Booked! Your booking number and seats are below.",
    msg_released: "Your seats were given back.",
    msg_seat_taken: "Sorry, someone else just took {seats}. Please choose other seats.",
    msg_declined: "The payment was declined. Your seats are still held: try another card.",
    msg_hold_expired: "Your hold has ended and its seats are on sale again. Please choose again.",
    msg_hold_exists: "You already hold seats in this sale, for this performance or another. Pay for them or give them back before holding others.",
    msg_account_limit: "Your account has reached this performance's limit of seats (those held and those booked count together). Choose fewer seats, or none.",
    msg_session_ended: "Your visit has ended, or you have not been let in yet. Go back to the waiting room to get in.",
    msg_rate_limited: "Too many requests. Please wait {n} s and try again.",
    msg_unavailable: "The box office is busy right now. Please try again in a moment.",
    msg_network: "Connection problem. Check your connection and try again.",
    msg_network_retry: "No answer from the box office. Try again: you will not be charged twice.",
    msg_invalid: "These seats cannot be held: {reason}",
    msg_error: "Something went wrong ({code}). Please try again.",
    announce_selected: "{seat} chosen, {n} of {max}",
    announce_deselected: "{seat} no longer chosen",
    announce_updated: "Seat map updated: {n} seats changed.",
    section: "Section {section}",
    row: "Row {row}",
    seat_label: "Section {section}, row {row}, seat {number}, {price}, {state}",
    state_available: "available",
    state_selected: "chosen",
    state_held: "held by someone",
    state_booked: "sold",
    state_mine: "held for you",
    none_selected: "No seats yet",
    status_confirmed: "Confirmed",
};

const KO: Strings = Strings {
    default_title: "좌석 선택",
    label_room: "이벤트:",
    msg_loading: "공연 정보를 불러오는 중…",
    msg_noscript: "좌석을 선택하려면 JavaScript가 필요합니다.",
    label_back: "대기실로 돌아가기",
    label_performance: "공연 회차",
    label_seats: "좌석",
    label_available: "선택 가능",
    label_selected: "내가 고른 좌석",
    label_held: "다른 분이 선점",
    label_booked: "판매 완료",
    label_selection: "고른 좌석",
    label_total: "합계",
    label_hold: "이 좌석 선점하기",
    label_clear: "선택 해제",
    label_your_hold: "좌석을 선점했습니다",
    label_time_left: "남은 결제 시간",
    label_card: "카드 토큰",
    hint_card: "tok_visa는 결제되고, tok_decline은 항상 거절됩니다(거절 카드 시험용).",
    label_confirm: "결제하고 예매하기",
    label_release: "좌석 반납",
    label_booking: "예매가 확정되었습니다",
    label_booking_id: "예매 번호",
    label_status: "상태",
    label_created: "예매 일시",
    label_copy: "복사",
    label_next: "다음 단계",
    msg_next: "예매 번호를 보관하세요. 예매처에 문의할 때 필요합니다.",
    label_events: "이벤트 목록으로",

    title_held: "좌석 결제",
    title_booked: "예매 완료",
    msg_copied: "복사했습니다.",
    msg_copy_failed: "선택했습니다. Ctrl+C(⌘C)를 눌러 복사하세요.",

    msg_choose_performance: "공연 회차를 선택하세요.",
    msg_no_performances: "이 이벤트에는 아직 판매 중인 공연이 없습니다.",
    seats_left: "잔여 {n}석",
    msg_choose_seats: "최대 {max}석까지 고른 뒤, 결제하는 동안 좌석을 선점하세요.",
    msg_max_seats: "한 번에 최대 {max}석까지 고를 수 있습니다.",
    msg_holding: "좌석을 선점하는 중…",
    msg_held: "{time}까지 좌석이 선점되었습니다. 그 전에 결제하세요.",
    msg_confirming: "결제하는 중…",
    msg_booked: "예매되었습니다! 예매 번호와 좌석은 아래에 있습니다.",
    msg_released: "좌석을 반납했습니다.",
    msg_seat_taken: "죄송합니다. 방금 다른 분이 {seats} 좌석을 선택했습니다. 다른 좌석을 골라 주세요.",
    msg_declined: "결제가 거절되었습니다. 좌석은 그대로 선점되어 있으니 다른 카드로 다시 시도하세요.",
    msg_hold_expired: "선점 시간이 끝나 좌석이 다시 판매됩니다. 좌석을 다시 골라 주세요.",
    msg_hold_exists: "이미 선점한 좌석이 있습니다(이 공연 또는 다른 공연). 다른 좌석을 선점하려면 먼저 결제하거나 반납하세요.",
    msg_account_limit: "이 계정은 이 공연에서 살 수 있는 좌석 수에 도달했습니다(선점한 좌석과 예매한 좌석을 합쳐 셉니다). 좌석을 줄여서 고르세요.",
    msg_session_ended: "입장 시간이 끝났거나 아직 입장하지 않았습니다. 대기실로 돌아가 입장하세요.",
    msg_rate_limited: "요청이 너무 많습니다. {n}초 후에 다시 시도하세요.",
    msg_unavailable: "지금은 예매 서비스가 혼잡합니다. 잠시 후 다시 시도하세요.",
    msg_network: "연결에 문제가 있습니다. 연결을 확인한 뒤 다시 시도하세요.",
    msg_network_retry: "예매 서비스의 응답이 없습니다. 다시 시도해도 두 번 결제되지 않습니다.",
    msg_invalid: "이 좌석은 선점할 수 없습니다: {reason}",
    msg_error: "문제가 생겼습니다({code}). 다시 시도하세요.",
    announce_selected: "{seat} 선택, {max}석 중 {n}석",
    announce_deselected: "{seat} 선택 해제",
    announce_updated: "좌석 배치도가 바뀌었습니다: {n}석 변경.",
    section: "{section}구역",
    row: "{row}열",
    seat_label: "{section}구역 {row}열 {number}번, {price}, {state}",
    state_available: "선택 가능",
    state_selected: "선택함",
    state_held: "다른 분이 선점",
    state_booked: "판매 완료",
    state_mine: "내가 선점함",
    none_selected: "아직 고른 좌석이 없습니다",
    status_confirmed: "확정",
};

impl Strings {
    /// The texts the page's HTML shows, by their template keys.
    pub(crate) fn labels(&self) -> [(&'static str, &'static str); 28] {
        labels!(
            self;
            label_room,
            msg_loading,
            msg_noscript,
            label_back,
            label_performance,
            label_seats,
            label_available,
            label_selected,
            label_held,
            label_booked,
            label_selection,
            label_total,
            label_hold,
            label_clear,
            label_your_hold,
            label_time_left,
            label_card,
            hint_card,
            label_confirm,
            label_release,
            label_booking,
            label_booking_id,
            label_status,
            label_created,
            label_copy,
            label_next,
            msg_next,
            label_events,
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
