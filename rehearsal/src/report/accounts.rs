//! The figures of a run whose visitors are browsers of accounts
//! (`--accounts`): one place per account at any moment, the seats each
//! account booked against the performance's limit, and join order against
//! admission order over the accounts' places.
//!
//! An account's browsers share its place, each with a ticket of its own
//! carrying the place's seq. When one of them books (or leaves), the place
//! ends for all of them: their next answers on it say so (`expired`, 401),
//! which is the place working as it should, and a browser that joins again
//! takes a new place at the back. So an account may hold several places over a run,
//! one after another, never two at once.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{Fairness, fairness_of};
use crate::stats::Admission;
use crate::visitor::{Outcome, PlaceSeen, VisitorLog};

/// What the account figures are computed from, besides the logs.
pub struct Plan {
    /// Accounts the visitors are browsers of.
    pub accounts: usize,
    /// The performance's `max_seats_per_account`, if any.
    pub max_seats_per_account: Option<u64>,
}

/// The accounts' figures.
#[derive(Debug, Serialize)]
pub struct Accounts {
    /// Accounts the visitors are browsers of.
    pub accounts: usize,
    /// How many accounts had 0, 1, 2, ... browsers (index = browsers).
    pub browsers_per_account: Vec<u64>,
    /// Accounts one of whose browsers had a join answered.
    pub joined: usize,
    /// Accounts one of whose browsers was admitted.
    pub admitted: usize,
    /// How many accounts held 0, 1, 2, ... places over the whole run
    /// (index = distinct seqs their tickets carried): one after another.
    pub places_per_account: Vec<u64>,
    /// Most places one account was proven to hold at the same moment
    /// (must be 1): each place was alive at least from the first answer
    /// that showed it back to the last request answered with it alive.
    pub max_places_at_once: u64,
    /// Accounts proven to hold two places or more at once.
    pub accounts_with_places_at_once: usize,
    /// The performance's `max_seats_per_account` (null: none).
    pub seats_limit: Option<u64>,
    /// How many accounts booked 0, 1, 2, ... seats (index = seats).
    pub seats_booked_per_account: Vec<u64>,
    /// Most seats one account booked.
    pub max_seats_booked: u64,
    /// Accounts that booked more seats than the limit (must be 0).
    pub over_limit: usize,
    /// `409 account_limit` answers: the limit refusing a hold, expected.
    pub account_limit_answers: u64,
    /// Answers the sharing of a place caused, by kind, expected: `409
    /// hold_exists` (another browser of the account held seats for their
    /// place, which is one visitor to booking) and `429 rate_limited` (the
    /// place's one session spent its allowance of booking writes).
    pub shared_place_answers: BTreeMap<String, u64>,
    /// Answers that said a browser's place or session had ended after a
    /// browser of its account on that place had ended it: sent the confirm
    /// that booked (a booking ends the session) or left (expected; any
    /// other such answer is counted as an error).
    pub ended_by_account: u64,
    /// Browsers whose visit ended so: inside, their session ended by the
    /// account's booking (or leave) on their place.
    pub browsers_ended_by_account: usize,
    /// Join order (the place's seq) against admission order, over the
    /// accounts' places seen waiting and then admitted: one item per
    /// place, its admission pinned by all its browsers' reads. None in a
    /// pre-queue room, where the draw orders the line.
    pub fairness: Option<Fairness>,
}

/// When each place of an account was ended by one of its browsers (the
/// confirm that booked, or a leave, sent), by account and seq: the
/// earliest.
pub fn place_ends(logs: &[VisitorLog]) -> HashMap<(usize, u64), u64> {
    let mut ends: HashMap<(usize, u64), u64> = HashMap::new();
    for l in logs {
        let Some(a) = l.account else { continue };
        for &(sent, seq) in &l.ended_places {
            let at = ends.entry((a, seq)).or_insert(sent);
            *at = (*at).min(sent);
        }
    }
    ends
}

/// Whether a browser of `account` on place `seq`, told at `at` that its
/// place or session was over, was told of an end one of the account's
/// browsers made.
pub fn ended_by_account(
    ends: &HashMap<(usize, u64), u64>,
    account: Option<usize>,
    seq: Option<u64>,
    at: u64,
) -> bool {
    account
        .zip(seq)
        .and_then(|key| ends.get(&key))
        .is_some_and(|&sent| sent <= at)
}

/// `counts[i]` how many of `values` are `i`.
fn histogram(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut h: Vec<u64> = Vec::new();
    for v in values {
        let i = usize::try_from(v).unwrap_or(usize::MAX);
        if h.len() <= i {
            h.resize(i.saturating_add(1), 0);
        }
        if let Some(n) = h.get_mut(i) {
            *n += 1;
        }
    }
    h
}

/// The most of `spans` (from, to) that share one moment; spans that only
/// touch do not (a read at the very moment proves nothing).
fn most_at_once(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    let mut ends: std::collections::BinaryHeap<std::cmp::Reverse<u64>> = Default::default();
    let mut most = 0;
    for (from, to) in spans {
        while ends.peek().is_some_and(|e| e.0 <= from) {
            ends.pop();
        }
        ends.push(std::cmp::Reverse(to));
        most = most.max(ends.len() as u64);
    }
    most
}

/// The account figures, and the answers saying a place had ended that no
/// booking of the account explains (failed answers, by kind).
pub fn build(
    plan: &Plan,
    logs: &[VisitorLog],
    prequeue: bool,
) -> (Accounts, BTreeMap<String, u64>) {
    let n = plan.accounts;
    let mut browsers = vec![0u64; n];
    let mut joined = vec![false; n];
    let mut admitted = vec![false; n];
    let mut seats = vec![0u64; n];
    // Every place of every account, merged over its browsers.
    let mut places: Vec<BTreeMap<u64, PlaceSeen>> = vec![BTreeMap::new(); n];
    let ends = place_ends(logs);
    let mut account_limit_answers = 0;
    let mut shared_place_answers = BTreeMap::new();
    let mut browsers_ended_by_account = 0;
    let mut ended = 0;
    let mut unexplained = BTreeMap::new();
    for l in logs {
        let Some(a) = l.account else { continue };
        if let Some(b) = browsers.get_mut(a) {
            *b += 1;
        }
        if l.joined_ms.is_some()
            && let Some(j) = joined.get_mut(a)
        {
            *j = true;
        }
        if l.admitted_ms.is_some()
            && let Some(j) = admitted.get_mut(a)
        {
            *j = true;
        }
        if let (Some((_, booked)), Some(s)) = (&l.booked, seats.get_mut(a)) {
            *s += booked.len() as u64;
        }
        account_limit_answers += l.errors.get("409 account_limit").copied().unwrap_or(0);
        for (kind, n) in &l.shared {
            *shared_place_answers.entry(kind.clone()).or_insert(0) += n;
        }
        if matches!(l.outcome, Outcome::SessionEnded | Outcome::HoldExpired)
            && ended_by_account(&ends, Some(a), l.seq, l.ended_ms.unwrap_or(u64::MAX))
        {
            browsers_ended_by_account += 1;
        }
        for e in &l.place_ended {
            if ended_by_account(&ends, Some(a), e.seq, e.at_ms) {
                ended += 1;
            } else {
                *unexplained.entry(e.kind.clone()).or_insert(0) += 1;
            }
        }
        let Some(mine) = places.get_mut(a) else {
            continue;
        };
        for p in &l.places {
            mine.entry(p.seq)
                .and_modify(|m| {
                    m.first_ms = m.first_ms.min(p.first_ms);
                    m.last_ms = m.last_ms.max(p.last_ms);
                    m.waiting_sent_ms = m.waiting_sent_ms.max(p.waiting_sent_ms);
                    m.admitted_ms = match (m.admitted_ms, p.admitted_ms) {
                        (Some(x), Some(y)) => Some(x.min(y)),
                        (x, y) => x.or(y),
                    };
                })
                .or_insert_with(|| p.clone());
        }
    }
    let at_once: Vec<u64> = places
        .iter()
        .map(|ps| {
            let spans = ps
                .values()
                .filter(|p| p.first_ms < p.last_ms)
                .map(|p| (p.first_ms, p.last_ms))
                .collect();
            most_at_once(spans).max(u64::from(!ps.is_empty()))
        })
        .collect();
    let fairness = (!prequeue).then(|| {
        let items = places
            .iter()
            .flat_map(|ps| ps.values())
            .filter_map(|p| {
                Some(Admission {
                    order: p.seq,
                    lo: p.waiting_sent_ms?,
                    hi: p.admitted_ms?,
                })
            })
            .collect();
        fairness_of("account_place_seq", items)
    });
    let accounts = Accounts {
        accounts: n,
        browsers_per_account: histogram(browsers.iter().copied()),
        joined: joined.iter().filter(|j| **j).count(),
        admitted: admitted.iter().filter(|j| **j).count(),
        places_per_account: histogram(places.iter().map(|p| p.len() as u64)),
        max_places_at_once: at_once.iter().copied().max().unwrap_or(0),
        accounts_with_places_at_once: at_once.iter().filter(|m| **m > 1).count(),
        seats_limit: plan.max_seats_per_account,
        seats_booked_per_account: histogram(seats.iter().copied()),
        max_seats_booked: seats.iter().copied().max().unwrap_or(0),
        over_limit: plan
            .max_seats_per_account
            .map_or(0, |k| seats.iter().filter(|s| **s > k).count()),
        account_limit_answers,
        shared_place_answers,
        ended_by_account: ended,
        browsers_ended_by_account,
        fairness,
    };
    (accounts, unexplained)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visitor::PlaceEnd;

    fn place(
        seq: u64,
        first_ms: u64,
        last_ms: u64,
        waiting: Option<u64>,
        admitted: Option<u64>,
    ) -> PlaceSeen {
        PlaceSeen {
            seq,
            first_ms,
            last_ms,
            waiting_sent_ms: waiting,
            admitted_ms: admitted,
        }
    }

    /// A browser of `account` that saw `places` and ended with `outcome`.
    fn browser(account: usize, places: Vec<PlaceSeen>, outcome: Outcome) -> VisitorLog {
        VisitorLog {
            account: Some(account),
            seq: places.last().map(|p| p.seq),
            admitted_ms: places.iter().find_map(|p| p.admitted_ms),
            places,
            joined_ms: Some(0),
            queue_requests: 1,
            outcome,
            ..VisitorLog::default()
        }
    }

    fn booked(mut l: VisitorLog, confirm_sent: u64, seats: usize) -> VisitorLog {
        let seq = l.places.last().map_or(0, |p| p.seq);
        l.ended_places.push((confirm_sent, seq));
        l.booked = Some((
            confirm_sent + 50,
            (0..seats).map(|i| format!("A-1-{i}")).collect(),
        ));
        l.outcome = Outcome::Booked;
        l
    }

    fn plan(accounts: usize, limit: Option<u64>) -> Plan {
        Plan {
            accounts,
            max_seats_per_account: limit,
        }
    }

    #[test]
    fn browsers_of_an_account_share_a_place_and_a_later_one_is_not_at_once() {
        // Account 0: three browsers on place 1 (waiting 100..900, admitted
        // 1,000), one books at 1,500; one reads its place over at 1,600 and
        // joins again: place 7, from 1,700. Account 1: one browser, place 2.
        let mut b0 = browser(
            0,
            vec![place(1, 200, 1_400, Some(900), Some(1_000))],
            Outcome::Booked,
        );
        b0 = booked(b0, 1_500, 2);
        let mut b1 = browser(
            0,
            vec![
                place(1, 600, 1_200, Some(800), Some(1_100)),
                place(7, 1_700, 3_000, Some(2_500), Some(2_600)),
            ],
            Outcome::AccountLimit,
        );
        b1.place_ended.push(PlaceEnd {
            at_ms: 1_600,
            seq: Some(1),
            kind: "200 expired".into(),
        });
        b1.errors.insert("409 account_limit".into(), 2);
        b1.shared.insert("409 hold_exists".into(), 3);
        let b2 = browser(
            0,
            vec![place(1, 300, 500, Some(400), None)],
            Outcome::SoldOut,
        );
        let b3 = browser(
            1,
            vec![place(2, 250, 1_300, Some(1_050), Some(1_200))],
            Outcome::NoSeat,
        );
        let (a, errors) = build(&plan(3, Some(2)), &[b0, b1, b2, b3], false);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(a.accounts, 3);
        // One account of none (account 2), one of 1, one of 3.
        assert_eq!(a.browsers_per_account, vec![1, 1, 0, 1]);
        assert_eq!((a.joined, a.admitted), (2, 2));
        assert_eq!(a.places_per_account, vec![1, 1, 1]);
        assert_eq!(
            (a.max_places_at_once, a.accounts_with_places_at_once),
            (1, 0)
        );
        assert_eq!(a.seats_booked_per_account, vec![2, 0, 1]);
        assert_eq!((a.max_seats_booked, a.over_limit), (2, 0));
        assert_eq!(
            (
                a.account_limit_answers,
                a.shared_place_answers.get("409 hold_exists"),
                a.ended_by_account
            ),
            (2, Some(&3), 1)
        );
        // Places 1 (waiting until 900, admitted by 1,000), 2 (1,050 /
        // 1,200) and 7: in order.
        let f = a.fairness.unwrap();
        assert_eq!(
            (f.order, f.admitted, f.out_of_order_pairs),
            ("account_place_seq", 3, 0)
        );
        assert_eq!(f.kendall_tau, 1.0);
    }

    #[test]
    fn two_places_at_once_past_the_limit_and_out_of_order_are_caught() {
        // Account 0 holds places 3 and 4 over the same stretch and books 3
        // seats; place 4 was admitted (by 500) before place 3 was last seen
        // waiting (800): out of order. Its place ended at 100 with no
        // booking of the account before: a failed answer.
        let mut a0 = browser(
            0,
            vec![place(3, 100, 900, Some(800), Some(950))],
            Outcome::Booked,
        );
        a0 = booked(a0, 1_000, 3);
        let mut a1 = browser(
            0,
            vec![place(4, 200, 600, Some(300), Some(500))],
            Outcome::SessionEnded,
        );
        a1.place_ended.push(PlaceEnd {
            at_ms: 100,
            seq: Some(4),
            kind: "401 invalid_entry".into(),
        });
        // Touching spans share no moment.
        let b0 = browser(1, vec![place(5, 100, 200, None, None)], Outcome::SoldOut);
        let b1 = browser(1, vec![place(6, 200, 300, None, None)], Outcome::SoldOut);
        let (a, errors) = build(&plan(2, Some(2)), &[a0, a1, b0, b1], false);
        assert_eq!(
            errors,
            BTreeMap::from([("401 invalid_entry".to_owned(), 1)])
        );
        assert_eq!(
            (a.max_places_at_once, a.accounts_with_places_at_once),
            (2, 1)
        );
        assert_eq!(a.places_per_account, vec![0, 0, 2]);
        assert_eq!((a.max_seats_booked, a.over_limit), (3, 1));
        let f = a.fairness.unwrap();
        assert_eq!(f.out_of_order_pairs, 1);
        assert!(f.kendall_tau < 1.0);
        // No limit: nobody is over it.
        let (a, _) = build(
            &plan(2, None),
            &[browser(0, Vec::new(), Outcome::SoldOut)],
            true,
        );
        assert_eq!((a.over_limit, a.seats_limit), (0, None));
        assert!(a.fairness.is_none(), "a pre-queue's order is the draw's");
    }

    #[test]
    fn spans_at_once() {
        assert_eq!(most_at_once(Vec::new()), 0);
        assert_eq!(most_at_once(vec![(0, 10), (10, 20), (20, 30)]), 1);
        assert_eq!(most_at_once(vec![(0, 10), (5, 20), (9, 30), (25, 40)]), 3);
        assert_eq!(histogram([0, 2, 2, 5].into_iter()), vec![1, 0, 2, 0, 0, 1]);
    }
}
