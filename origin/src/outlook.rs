//! Whether seats will probably be left at a waiter's turn: the status
//! body's `outlook`.
//!
//! The sale loop (`sale`) reads a room's seats from booking and its
//! figures from the queue's store on every pass anyway; from them it makes
//! one [`Estimate`] per room ([`Figures::estimate`]) and keeps it here
//! ([`Outlooks`]). A status answer then judges the waiter's place against
//! it ([`Estimate::outlook`]): a map lookup and a handful of float
//! operations, with no store or database call, so polls answered from the
//! instance's view pay nothing more.
//!
//! The arithmetic: everyone inside and every waiter ahead who will still be
//! there at their turn takes, on average, what an admitted visitor of this
//! room has taken so far (seats booked per session ended, so visitors who
//! bought nothing count too); together they are set against the seats
//! neither booked nor lost (available, and held: a hold that lapses gives
//! its seats back). Before anything is measured a prior stands in (two
//! seats per admitted visitor), and the uncertainty of the average (wide
//! while few sessions have ended) and of the sum (one visitor's seats vary
//! from none to the hold maximum) give a range: `unlikely` when even the
//! low end of the demand exceeds the seats, `likely` when even the high
//! end leaves seats over, `uncertain` between.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;
use utoipa::ToSchema;

use booking::RoomSeats;
use queue::{RoomFigures, SeatsLeft, Snapshot, Standing};
use room::RoomId;

/// Seats an admitted visitor is taken to take before any session ended.
pub const PRIOR_SEATS: f64 = 2.0;
/// The prior's weight, in ended sessions: after this many the room's own
/// average counts as much as the prior.
pub const PRIOR_WEIGHT: f64 = 20.0;
/// The uncertainty of the average left once many sessions ended (visitors
/// admitted later may behave differently).
const FLOOR_SPREAD: f64 = 0.15;
/// How wide the average's uncertainty is with no session ended (on top of
/// the floor), shrinking with the square root of the sessions ended.
const PRIOR_SPREAD: f64 = 0.5;
/// Standard deviations of the sum of many visitors' seats on either side.
const Z: f64 = 2.0;

/// Whether seats will probably be left at the visitor's turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outlook {
    /// Seats will most probably be left.
    Likely,
    /// Too close to tell.
    Uncertain,
    /// The seats will most probably be gone.
    Unlikely,
}

impl Outlook {
    /// The wire name (what serde writes; a test holds them equal).
    pub fn as_str(self) -> &'static str {
        match self {
            Outlook::Likely => "likely",
            Outlook::Uncertain => "uncertain",
            Outlook::Unlikely => "unlikely",
        }
    }
}

/// A room's sale as the sale loop read it: its seats (booking) and its
/// admissions (the queue's store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figures {
    /// Seats neither held nor booked.
    pub available: u64,
    /// Seats in live holds.
    pub held: u64,
    /// Seats sold.
    pub booked: u64,
    /// Visitors admitted since the room was created.
    pub admitted: u64,
    /// Visitors inside now.
    pub inside: u64,
    /// Places that left the line before their turn (left or abandoned).
    pub left_line: u64,
}

impl Figures {
    /// The figures of a room with seats `seats` and queue figures `f`.
    pub fn of(seats: RoomSeats, f: &RoomFigures) -> Figures {
        Figures {
            available: seats.available,
            held: seats.held,
            booked: seats.booked,
            admitted: f.admitted_total,
            inside: f.active,
            left_line: f
                .places_given
                .saturating_sub(f.waiting)
                .saturating_sub(f.admitted_total),
        }
    }

    /// What a waiter's place is judged against.
    pub fn estimate(&self) -> Estimate {
        let ended = self.admitted.saturating_sub(self.inside) as f64;
        let seats = (self.booked as f64 + PRIOR_SEATS * PRIOR_WEIGHT) / (ended + PRIOR_WEIGHT);
        let spread = FLOOR_SPREAD + PRIOR_SPREAD * (PRIOR_WEIGHT / (ended + PRIOR_WEIGHT)).sqrt();
        // Of the places whose wait is over, the share that reached its turn
        // (with a few admissions assumed, so an empty history says all).
        let admitted = self.admitted as f64 + 10.0;
        let reach = admitted / (admitted + self.left_line as f64);
        Estimate {
            supply: (self.available + self.held) as f64,
            inside: self.inside as f64,
            seats,
            spread,
            reach,
        }
    }
}

/// One room's figures for judging a place, made once a pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Seats still to be had: available and held.
    pub supply: f64,
    /// Sessions inside, each still to take its share.
    pub inside: f64,
    /// Seats one admitted visitor takes, on average.
    pub seats: f64,
    /// The average's relative uncertainty.
    pub spread: f64,
    /// The share of waiters who stay until their turn.
    pub reach: f64,
}

impl Estimate {
    /// The outlook from `position` (1 = next).
    pub fn outlook(&self, position: u64) -> Outlook {
        let ahead = position.saturating_sub(1) as f64;
        let low_n = ahead * self.reach + self.inside;
        let high_n = ahead + self.inside;
        let noise = |n: f64| Z * self.seats * n.sqrt();
        let low = low_n * self.seats / (1.0 + self.spread) - noise(low_n);
        let high = high_n * self.seats * (1.0 + self.spread) + noise(high_n);
        if low > self.supply {
            Outlook::Unlikely
        } else if high < self.supply {
            Outlook::Likely
        } else {
            Outlook::Uncertain
        }
    }
}

/// Every selling room's last [`Estimate`], kept by the sale loop and read
/// by status answers. A room that sells nothing through this origin (or
/// whose seats were never read) has none, and its waiters read null.
#[derive(Default)]
pub struct Outlooks {
    rooms: Mutex<HashMap<RoomId, Estimate>>,
}

impl Outlooks {
    /// Notes the room's figures (`None`: it sells nothing).
    pub fn note(&self, room: &RoomId, figures: Option<Figures>) {
        let Ok(mut rooms) = self.rooms.lock() else {
            return;
        };
        match figures {
            Some(f) => {
                rooms.insert(room.clone(), f.estimate());
            }
            None => {
                rooms.remove(room);
            }
        }
    }

    /// Forgets every room not in `rooms` (the store's list).
    pub fn retain(&self, rooms: &[RoomId]) {
        if let Ok(mut kept) = self.rooms.lock() {
            kept.retain(|room, _| rooms.contains(room));
        }
    }

    /// The room's estimate, if it sells.
    pub fn estimate(&self, room: &RoomId) -> Option<Estimate> {
        self.rooms.lock().ok()?.get(room).copied()
    }

    /// What the answer `snap` tells its visitor: null before the opening,
    /// in a room that sells nothing, and for anyone not waiting (a waiter
    /// of a sold-out sale reads `unlikely`).
    pub fn tell(&self, room: &RoomId, snap: &Snapshot) -> Option<Outlook> {
        if snap.line.before_opening() {
            return None;
        }
        let position = match snap.standing {
            Standing::Waiting { position } => position,
            Standing::SoldOut if snap.line.sale.seats == SeatsLeft::SoldOut => {
                return self.estimate(room).map(|_| Outlook::Unlikely);
            }
            _ => return None,
        };
        // A lottery room has no positions: a waiter stands, on average,
        // in the middle of the line.
        let position = position.unwrap_or(snap.line.waiting.div_ceil(2).max(1));
        Some(self.estimate(room)?.outlook(position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(available: u64, held: u64, booked: u64, admitted: u64, inside: u64) -> Figures {
        Figures {
            available,
            held,
            booked,
            admitted,
            inside,
            left_line: 0,
        }
    }

    #[test]
    fn wire_names_are_serdes() {
        for o in [Outlook::Likely, Outlook::Uncertain, Outlook::Unlikely] {
            assert_eq!(
                serde_json::to_value(o).unwrap(),
                serde_json::json!(o.as_str())
            );
        }
    }

    #[test]
    fn before_anything_is_measured_the_prior_decides_with_a_wide_margin() {
        // 2,000 seats at two a visitor cover about 1,000 places.
        let e = figures(2_000, 0, 0, 0, 0).estimate();
        assert_eq!(e.seats, PRIOR_SEATS);
        assert!((e.spread - 0.65).abs() < 1e-9, "{}", e.spread);
        assert_eq!(e.outlook(1), Outlook::Likely);
        assert_eq!(e.outlook(300), Outlook::Likely);
        assert_eq!(e.outlook(700), Outlook::Uncertain);
        assert_eq!(e.outlook(1_000), Outlook::Uncertain);
        assert_eq!(e.outlook(1_500), Outlook::Uncertain);
        assert_eq!(e.outlook(2_500), Outlook::Unlikely);
        assert_eq!(e.outlook(20_000), Outlook::Unlikely);
    }

    #[test]
    fn the_rooms_own_average_narrows_the_margin() {
        // 1,000 sessions ended having bought 1,000 seats: one a visitor,
        // so 1,000 seats left cover about 1,000 more (100 of them inside).
        let e = figures(900, 100, 1_000, 1_100, 100).estimate();
        assert!((e.seats - 1_040.0 / 1_020.0).abs() < 1e-9, "{}", e.seats);
        assert!(e.spread < 0.23, "{}", e.spread);
        assert_eq!(e.outlook(600), Outlook::Likely);
        assert_eq!(e.outlook(900), Outlook::Uncertain);
        assert_eq!(e.outlook(1_500), Outlook::Unlikely);
    }

    #[test]
    fn those_inside_come_first() {
        // Five seats left and 50 sessions inside that have not bought:
        // even the next waiter is unlikely to find any.
        let e = figures(5, 0, 500, 250, 50).estimate();
        assert_eq!(e.outlook(1), Outlook::Unlikely);
        // With nobody inside the next waiters find them.
        let e = figures(5, 0, 500, 200, 0).estimate();
        assert_eq!(e.outlook(1), Outlook::Likely);
    }

    #[test]
    fn waiters_who_leave_before_their_turn_make_room_for_those_behind() {
        let stay = figures(1_000, 0, 1_000, 500, 0).estimate();
        let leave = Figures {
            left_line: 500,
            ..figures(1_000, 0, 1_000, 500, 0)
        }
        .estimate();
        assert!((leave.reach - 510.0 / 1_010.0).abs() < 1e-9);
        let place = (1..5_000)
            .find(|p| stay.outlook(*p) == Outlook::Unlikely)
            .unwrap();
        assert_eq!(leave.outlook(place), Outlook::Uncertain);
    }

    #[test]
    fn visitors_who_buy_nothing_leave_seats_for_everyone() {
        let e = figures(100, 0, 0, 1_000, 0).estimate();
        assert!(e.seats < 0.05, "{}", e.seats);
        assert_eq!(e.outlook(500), Outlook::Likely);
    }

    #[test]
    fn outlooks_are_kept_per_room_and_forgotten_with_it() {
        let o = Outlooks::default();
        let (a, b) = (RoomId::parse("a").unwrap(), RoomId::parse("b").unwrap());
        o.note(&a, Some(figures(10, 0, 0, 0, 0)));
        o.note(&b, Some(figures(10, 0, 0, 0, 0)));
        assert!(o.estimate(&a).is_some());
        o.note(&a, None);
        assert!(o.estimate(&a).is_none(), "sells nothing");
        o.retain(&[]);
        assert!(o.estimate(&b).is_none(), "gone from the store");
    }
}
