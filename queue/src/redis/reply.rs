//! Each script's reply as a `redis::FromRedisValue` type, so the store asks
//! `invoke_async` for the type it wants. A reply of the wrong shape fails to
//! decode, never panics; [`Reply`] tells the one answer every script gives
//! for a room that does not exist apart before any decoder here sees it, and
//! turns a failed decode into `StoreError::Protocol` with the decoder's words.
//!
//! The fixed shapes are ours ([`fields`]) rather than redis's tuple and `Vec`
//! impls: those take `nil` for an empty array, a lone string for a one-item
//! one, and cast a negative integer to a huge `u64`, where a reply like that
//! is refused here.

use std::str::FromStr;

use redis::{FromRedisValue, ParsingError, RedisError, Value};

use crate::store::{
    END_BUCKETS, Joined, LineView, Observation, PREQUEUE_SPAN, RoomFigures, SaleSignal, Sample,
    Schedule, SeatsLeft, Snapshot, Standing, StoreError, TickReport, sample_ranks,
};
use room::{QueueingMethod, RoomSettings, RoomState};

use crate::draw::{Seed, seed_from_hex};

type Parsed<T> = Result<T, ParsingError>;

fn bad(what: &str) -> ParsingError {
    what.into()
}

/// A script call's outcome: its reply decoded as `T`, the room unknown, or
/// `StoreError::Protocol` saying why the reply could not be read.
pub struct Reply<T>(pub Result<T, StoreError>);

/// What a script returns, alone, when the room does not exist
/// (`UNKNOWN_ROOM` in the prelude).
const UNKNOWN_ROOM: &str = "unknown_room";

impl<T: FromRedisValue> FromRedisValue for Reply<T> {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        if text(&value) == Some(UNKNOWN_ROOM) {
            return Ok(Reply(Err(StoreError::UnknownRoom)));
        }
        Ok(Reply(T::from_redis_value(value).map_err(|e| {
            // The detail of a parsing error is the text it was made from.
            let e = RedisError::from(e);
            StoreError::Protocol(e.detail().map_or_else(|| e.to_string(), str::to_owned))
        })))
    }
}

fn items(value: Value) -> Parsed<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(bad("expected an array")),
    }
}

/// The `N` values of an array reply, or `what` when it has another length.
fn fields<const N: usize>(value: Value, what: &str) -> Parsed<[Value; N]> {
    items(value)?.try_into().map_err(|_| bad(what))
}

fn text(value: &Value) -> Option<&str> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok(),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

/// One word of a text the scripts pack values into.
fn word<T: FromStr>(s: &str, what: &str) -> Parsed<T> {
    s.parse().map_err(|_| bad(what))
}

/// A finite number, in a reply or in a packed text.
fn finite(s: Option<&str>, what: &str) -> Parsed<f64> {
    s.and_then(|s| s.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .ok_or_else(|| bad(what))
}

fn int(value: &Value) -> Parsed<i64> {
    match value {
        Value::Int(n) => Ok(*n),
        other => text(other)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("expected an integer")),
    }
}

/// An integer that must not be negative, or `what`.
fn natural(value: &Value, what: &str) -> Parsed<u64> {
    u64::try_from(int(value)?).map_err(|_| bad(what))
}

/// A count, a negative one read as 0.
fn count(value: &Value) -> Parsed<u64> {
    int(value).map(|n| n.max(0) as u64)
}

fn real(value: &Value) -> Parsed<f64> {
    finite(text(value), "expected a number")
}

/// -1 means "none" in the scripts' replies.
fn optional(n: i64) -> Option<u64> {
    u64::try_from(n).ok()
}

fn state(value: &Value) -> Parsed<RoomState> {
    text(value)
        .and_then(RoomState::parse)
        .ok_or_else(|| bad("unknown room state"))
}

/// The sale signal as the room hash keeps it (`seats`, `rate_factor`).
fn sale(seats: &Value, rate_factor: &Value) -> Parsed<SaleSignal> {
    let seats = match text(seats) {
        Some("available") => SeatsLeft::Available,
        Some("none_available") => SeatsLeft::NoneAvailable,
        Some("sold_out") => SeatsLeft::SoldOut,
        _ => return Err(bad("unknown seats signal")),
    };
    Ok(SaleSignal {
        seats,
        rate_factor: real(rate_factor)?,
    })
}

/// How `set_sale.lua` stores `seats` (and `sale` above reads it back).
pub fn seats_text(seats: SeatsLeft) -> &'static str {
    match seats {
        SeatsLeft::Available => "available",
        SeatsLeft::NoneAvailable => "none_available",
        SeatsLeft::SoldOut => "sold_out",
    }
}

/// The tick's summary as `tick.lua` writes it (`eta` in the room hash):
/// at, rate, allow, capacity, session ms, free, the end buckets, leaves,
/// inside, watched ms, space-separated; empty before the room's first
/// tick. One written before the watched time was kept (until the next
/// tick rewrites it) reads as watched for ever.
fn schedule(value: &Value) -> Parsed<Option<Schedule>> {
    let text = text(value).ok_or_else(|| bad("expected a schedule"))?;
    if text.is_empty() {
        return Ok(None);
    }
    let mut words: Vec<&str> = text.split(' ').collect();
    let watched = if words.len() == 9 + END_BUCKETS {
        let w = words.pop().unwrap_or_default();
        word::<u64>(w, "schedule: expected an integer")?
    } else {
        u64::MAX
    };
    let parts: [&str; 8 + END_BUCKETS] = words
        .try_into()
        .map_err(|_| bad("schedule has the wrong length"))?;
    let [
        at,
        rate,
        allow,
        capacity,
        session,
        free,
        end @ ..,
        leaves,
        inside,
    ] = parts;
    let n = |s: &str| word::<u64>(s, "schedule: expected an integer");
    let x = |s: &str| finite(Some(s), "schedule: expected a number");
    let mut ends = [0; END_BUCKETS];
    for (slot, s) in ends.iter_mut().zip(end) {
        *slot = n(s)?;
    }
    Ok(Some(Schedule {
        at_ms: n(at)?,
        rate: x(rate)?,
        allow: x(allow)?,
        capacity: n(capacity)?,
        session_ms: n(session)?,
        free: n(free)?,
        ends,
        leaves: x(leaves)?,
        inside: x(inside)?,
        watched_ms: watched,
    }))
}

/// Values of `standing()` in the prelude: a visitor's own part of an answer.
const STANDING_LEN: usize = 5;
/// Values of `room_figures()` in the prelude: the room's part, shared by
/// every answer of one script call.
const FIGURES_LEN: usize = 8;

/// Decodes `room_figures()`; `waiting` is left at 0 for [`standing`] to set.
fn room_figures(v: &[Value; FIGURES_LEN]) -> Parsed<LineView> {
    let [
        st,
        opens_at,
        rate,
        abandon_ms,
        now,
        seats,
        rate_factor,
        sched,
    ] = v;
    Ok(LineView {
        state: state(st)?,
        opens_at_ms: optional(int(opens_at)?),
        waiting: 0,
        admit_rate: real(rate)?,
        abandon_ms: optional(int(abandon_ms)?).unwrap_or(0),
        sale: sale(seats, rate_factor)?,
        now_ms: optional(int(now)?).unwrap_or(0),
        schedule: schedule(sched)?,
    })
}

/// An answer from its outcome and its four numbers: seq, position,
/// session end and line length, -1 (0 for the session end) meaning none,
/// against its call's room figures (`line`). The outcomes `limit` (a join
/// refused by the place cap) and `challenge` (a join that needs a
/// solution) are not standings.
fn standing(outcome: Option<&str>, numbers: [i64; 4], line: &LineView) -> Parsed<Joined> {
    let [seq, pos, until_ms, waiting] = numbers;
    let standing = match outcome {
        Some("waiting") => Standing::Waiting {
            position: optional(pos),
        },
        Some("admitted") => Standing::Admitted {
            until_ms: optional(until_ms).ok_or_else(|| bad("negative session end"))?,
        },
        Some("gone") => Standing::Gone,
        Some("closed") => Standing::Closed,
        Some("sold_out") => Standing::SoldOut,
        Some("limit") => return Ok(Joined::TooManyPlaces),
        Some("challenge") => return Ok(Joined::ChallengeNeeded),
        _ => return Err(bad("unknown outcome")),
    };
    Ok(Joined::Answer(Snapshot {
        seq: optional(seq),
        standing,
        line: LineView {
            waiting: optional(waiting).unwrap_or(0),
            ..*line
        },
    }))
}

/// `view()` of the prelude (`status.lua`): `standing()` then
/// `room_figures()`.
impl FromRedisValue for Snapshot {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let [outcome, seq, pos, until_ms, waiting, figures @ ..] =
            fields::<{ STANDING_LEN + FIGURES_LEN }>(value, "view has the wrong length")?;
        let line = room_figures(&figures)?;
        let numbers = [int(&seq)?, int(&pos)?, int(&until_ms)?, int(&waiting)?];
        match standing(text(&outcome), numbers, &line)? {
            Joined::Answer(snapshot) => Ok(snapshot),
            Joined::TooManyPlaces | Joined::ChallengeNeeded => Err(bad("unknown outcome")),
        }
    }
}

/// `join.lua`'s reply: the room's figures once, then one text of values
/// separated by spaces: the room's base, then every join's answer in order,
/// `standing()`'s five values each with the member (-1: none) in place of
/// the seq, or `+` for a join that reads as the `waiting` one before it one
/// further back (the next member, position and line length). One value to
/// decode for the batch, where five per join were the larger part of the
/// client's work on a join.
#[derive(Debug)]
pub struct Joins(pub Vec<Joined>);

impl FromRedisValue for Joins {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let v = items(value)?;
        let (figures, answers) = v
            .split_first_chunk::<FIGURES_LEN>()
            .ok_or_else(|| bad("join reply too short"))?;
        let line = room_figures(figures)?;
        let [answers] = answers else {
            return Err(bad("join reply has the wrong length"));
        };
        let answers = text(answers).ok_or_else(|| bad("join answers are not text"))?;
        let mut fields = answers.split_ascii_whitespace();
        let base: i64 = fields
            .next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| bad("join answers without the room's base"))?;
        let mut joins = Vec::new();
        // The previous answer's member, position and line when it was a
        // plain `waiting` (what a `+` continues).
        let mut prev: Option<[i64; 3]> = None;
        while let Some(outcome) = fields.next() {
            let (outcome, [member, pos, until_ms, waiting]) = if outcome == "+" {
                let [member, pos, waiting] =
                    prev.ok_or_else(|| bad("a '+' join answer with nothing to follow"))?;
                let pos = if pos < 0 { -1 } else { pos + 1 };
                ("waiting", [member + 1, pos, 0, waiting + 1])
            } else {
                let mut number = || {
                    fields
                        .next()
                        .and_then(|f| f.parse::<i64>().ok())
                        .ok_or_else(|| bad("join answer cut short or not a number"))
                };
                (outcome, [number()?, number()?, number()?, number()?])
            };
            prev = (outcome == "waiting" && until_ms == 0 && member > 0)
                .then_some([member, pos, waiting]);
            let seq = if member < 0 {
                -1
            } else {
                base.checked_add(member)
                    .ok_or_else(|| bad("seq out of range"))?
            };
            joins.push(standing(
                Some(outcome),
                [seq, pos, until_ms, waiting],
                &line,
            )?);
        }
        Ok(Joins(joins))
    }
}

/// `tick.lua`'s reply: active, waiting, expired, abandoned, then the seqs
/// admitted.
/// `tick.lua`'s reply: what the tick did, and the draw this caller is to
/// apply, if any.
pub struct Ticked {
    pub report: TickReport,
    pub draw: Option<PendingDraw>,
}

/// A pre-queue draw to apply (draw.rs): the room's seed, its pre-queue's
/// first and last member, and its base.
pub struct PendingDraw {
    pub seed: Seed,
    pub lo: u64,
    pub hi: u64,
    pub base: u64,
}

impl FromRedisValue for Ticked {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let mut v = items(value)?;
        if v.len() < 5 {
            return Err(bad("tick reply has the wrong length"));
        }
        let rest = v.split_off(5);
        let draw = match v.get(4).and_then(text) {
            None | Some("") => None,
            Some(t) => Some(pending_draw(t).ok_or_else(|| bad("bad draw in tick reply"))?),
        };
        let n = |i: usize| v.get(i).map_or(Ok(0), count);
        let admitted = rest.iter().map(count).collect::<Parsed<_>>()?;
        Ok(Ticked {
            report: TickReport {
                admitted,
                expired: n(2)?,
                abandoned: n(3)?,
                active: n(0)?,
                waiting: n(1)?,
            },
            draw,
        })
    }
}

fn pending_draw(t: &str) -> Option<PendingDraw> {
    let mut w = t.split(' ');
    let seed = seed_from_hex(w.next()?)?;
    let mut num = || w.next()?.parse::<u64>().ok();
    Some(PendingDraw {
        seed,
        lo: num()?,
        hi: num()?,
        base: num()?,
    })
}

/// `draw.lua`'s 'view' reply: the room's seed, when it has one, the
/// opening that reveals it, and the store's clock.
pub struct DrawSeen(pub Option<(Seed, u64)>, pub u64);

impl FromRedisValue for DrawSeen {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let [seed, at, now] = fields(value, "draw view has the wrong length")?;
        let now = natural(&now, "bad clock in draw view")?;
        match text(&seed) {
            None | Some("") => Ok(DrawSeen(None, now)),
            Some(hex) => {
                let seed = seed_from_hex(hex).ok_or_else(|| bad("bad seed in draw view"))?;
                Ok(DrawSeen(Some((seed, natural(&at, "bad draw_at")?)), now))
            }
        }
    }
}

/// `figures.lua`'s reply.
impl FromRedisValue for RoomFigures {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let [
            settings,
            st,
            last_member,
            admitted,
            abandoned,
            rate_est,
            seats,
            rate_factor,
            waiting,
            active,
            oldest_ms,
            capped_clients,
            capped_places,
            accounts,
        ] = fields(value, "figures have the wrong length")?;
        let settings: RoomSettings = text(&settings)
            .and_then(|json| serde_json::from_str(json).ok())
            .ok_or_else(|| bad("stored settings"))?;
        Ok(RoomFigures {
            settings,
            state: state(&st)?,
            waiting: count(&waiting)?,
            active: count(&active)?,
            admitted_total: count(&admitted)?,
            abandoned_total: count(&abandoned)?,
            places_given: count(&last_member)?,
            admit_rate: real(&rate_est)?,
            sale: sale(&seats, &rate_factor)?,
            oldest_wait_seconds: optional(int(&oldest_ms)?).map(|ms| ms / 1000),
            capped_clients: count(&capped_clients)?,
            capped_places: count(&capped_places)?,
            accounts: count(&accounts)?,
        })
    }
}

/// A script's single integer reply, never negative.
pub struct Counter(pub u64);

impl FromRedisValue for Counter {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        natural(&value, "negative counter").map(Counter)
    }
}

/// `observe.lua`'s reply, all but what only the watch can say: which of
/// its polled seqs the present bitmap (when the reply carries one) shows
/// gone or on a draw. [`Observed::of`] adds that.
pub struct Observed {
    observation: Observation,
    bitmap: Option<Bitmap>,
}

/// The part of the present bitmap that sorts polled seqs.
struct Bitmap {
    bytes: Vec<u8>,
    /// The seq of the bitmap's first bit.
    first_seq: u64,
    /// The lowest seq placed after the opening; every draw is below.
    first: Option<u64>,
}

impl FromRedisValue for Observed {
    fn from_redis_value(value: Value) -> Parsed<Self> {
        let [
            view,
            method,
            front,
            base,
            samples_at,
            samples,
            gone,
            drawn,
            departed,
            next_edge,
            lottery_ticks,
        ] = fields(value, "observation has the wrong length")?;
        let line = Snapshot::from_redis_value(view)?.line;
        let method = text(&method)
            .and_then(QueueingMethod::parse)
            .ok_or_else(|| bad("unknown queueing method"))?;
        let base = natural(&base, "negative base")?;
        let seq_of = |score: u64| (score >= PREQUEUE_SPAN).then(|| base + (score - PREQUEUE_SPAN));
        let front = match int(&front)? {
            -1 => None,
            f => Some(Sample {
                position: 1,
                seq: seq_of(u64::try_from(f).map_err(|_| bad("negative score"))?),
            }),
        };
        let (samples, bitmap) = match samples {
            Value::Array(_) => {
                let [n, draws, from, bytes, first] =
                    fields(samples, "a bitmap of samples has the wrong length")?;
                let count = |v: &Value| natural(v, "negative count");
                let Value::BulkString(bytes) = bytes else {
                    return Err(bad("expected the present bitmap"));
                };
                let bitmap = Bitmap {
                    first_seq: base + 8 * count(&from)?,
                    first: optional(int(&first)?).map(|m| base + m),
                    bytes,
                };
                let samples =
                    samples_from_bits(count(&n)?, count(&draws)?, bitmap.first_seq, &bitmap.bytes)?;
                (samples, Some(bitmap))
            }
            other => {
                let text_samples = text(&other).ok_or_else(|| bad("expected samples"))?;
                let parts: Vec<&str> = text_samples.split_ascii_whitespace().collect();
                let (pairs, []) = parts.as_chunks::<2>() else {
                    return Err(bad("samples come in pairs"));
                };
                let score = |s: &str| word::<u64>(s, "expected an integer score");
                let samples = pairs
                    .iter()
                    .map(|&[position, seq]| {
                        Ok(Sample {
                            position: score(position)? + 1,
                            seq: seq_of(score(seq)?),
                        })
                    })
                    .collect::<Parsed<_>>()?;
                (samples, None)
            }
        };
        let seqs = |v: Value| -> Parsed<Vec<u64>> {
            items(v)?
                .iter()
                .map(|x| natural(x, "negative seq"))
                .collect()
        };
        let observation = Observation {
            line,
            method,
            front,
            samples,
            samples_at_ms: natural(&samples_at, "negative time")?,
            gone: seqs(gone)?,
            drawn: seqs(drawn)?,
            departed: sorted(seqs(departed)?),
            next_window_edge_ms: optional(int(&next_edge)?),
            lottery_ticks: natural(&lottery_ticks, "negative lottery ticks")?,
        };
        Ok(Observed {
            observation,
            bitmap,
        })
    }
}

fn sorted(mut seqs: Vec<u64>) -> Vec<u64> {
    seqs.sort_unstable();
    seqs
}

impl Observed {
    /// The observation of `polled` (the watch's seqs): those the bitmap
    /// does not hold are gone, those it holds below the first placed seq
    /// are on a draw.
    pub fn of(self, polled: &[u64]) -> Observation {
        let Observed {
            mut observation,
            bitmap,
        } = self;
        if let Some(Bitmap {
            bytes,
            first_seq,
            first,
        }) = bitmap
        {
            for &seq in polled {
                let present = seq
                    .checked_sub(first_seq)
                    .and_then(|bit| {
                        bytes
                            .get((bit / 8) as usize)
                            .map(|b| b & (0x80 >> (bit % 8)))
                    })
                    .is_some_and(|b| b != 0);
                if !present {
                    observation.gone.push(seq);
                } else if first.is_none_or(|f| seq < f) {
                    observation.drawn.push(seq);
                }
            }
        }
        observation.gone = sorted(observation.gone);
        observation.drawn = sorted(observation.drawn);
        observation
    }
}

/// The samples of a fifo line of `n` waiters at [`sample_ranks`], read off
/// the present bitmap (`observe.lua`): the waiter at rank r is the r-th bit
/// set, the first `draws` of them on a pre-queue draw (no seq). `first_seq`
/// is the seq of the bitmap's first bit (the room's base plus the member
/// it stands for); bit 0 is the high bit of the first byte, as Redis counts.
fn samples_from_bits(n: u64, draws: u64, first_seq: u64, bytes: &[u8]) -> Parsed<Vec<Sample>> {
    let mut ranks = sample_ranks(n).peekable();
    let mut samples = Vec::new();
    // Set bits before the current byte.
    let mut seen = 0u64;
    for (i, &byte) in bytes.iter().enumerate() {
        let ones = u64::from(byte.count_ones());
        while let Some(&r) = ranks.peek()
            && r < seen + ones
        {
            // The (r - seen)-th set bit of this byte, counting from the high bit.
            let mut left = r - seen;
            let mut bit = 0;
            while bit < 8 {
                if byte & (0x80 >> bit) != 0 {
                    if left == 0 {
                        break;
                    }
                    left -= 1;
                }
                bit += 1;
            }
            samples.push(Sample {
                position: r + 1,
                seq: (r >= draws).then_some(first_seq + 8 * i as u64 + bit),
            });
            ranks.next();
        }
        seen += ones;
    }
    if ranks.next().is_some() || seen != n {
        return Err(bad("the present bitmap does not hold the line"));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use redis::from_redis_value;

    use super::*;

    fn known_room(value: Value) -> Result<Value, StoreError> {
        from_redis_value::<Reply<Value>>(value).unwrap().0
    }

    #[test]
    fn only_the_bare_unknown_room_string_means_no_such_room() {
        let unknown = Value::BulkString(b"unknown_room".to_vec());
        assert!(matches!(known_room(unknown), Err(StoreError::UnknownRoom)));
        for other in [
            Value::Int(-1),
            Value::Array(vec![]),
            Value::Array(vec![Value::BulkString(b"unknown_room".to_vec())]),
        ] {
            assert_eq!(known_room(other.clone()).unwrap(), other);
        }
    }

    #[test]
    fn a_reply_that_does_not_decode_is_a_protocol_error_in_the_decoders_words() {
        let reply = from_redis_value::<Reply<Counter>>(Value::Int(-3)).map(|r| r.0);
        assert!(
            matches!(&reply, Ok(Err(StoreError::Protocol(m))) if m == "negative counter"),
            "{:?}",
            reply.map(|r| r.map(|c| c.0))
        );
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn joined_many(value: Value) -> Parsed<Vec<Joined>> {
        from_redis_value::<Joins>(value).map(|joins| joins.0)
    }

    fn snapshot(value: Value) -> Parsed<Snapshot> {
        from_redis_value(value)
    }

    #[test]
    fn a_join_reply_shares_the_room_figures_among_its_joins() {
        let figures = [
            bulk("open"),
            Value::Int(-1),
            bulk("2.5"),
            Value::Int(60_000),
            Value::Int(1_000),
            bulk("available"),
            bulk("1"),
            bulk(""),
        ];
        let reply: Vec<Value> = figures
            .iter()
            .cloned()
            .chain([bulk("40 waiting 1 7 0 7 limit -1 -1 0 7 waiting 2 8 0 8")])
            .collect();
        let answers = joined_many(Value::Array(reply.clone())).unwrap();
        let line = LineView {
            state: RoomState::Open,
            opens_at_ms: None,
            waiting: 0,
            admit_rate: 2.5,
            abandon_ms: 60_000,
            sale: SaleSignal {
                seats: SeatsLeft::Available,
                rate_factor: 1.0,
            },
            now_ms: 1_000,
            schedule: None,
        };
        let waiting = |seq, position, waiting| {
            Joined::Answer(Snapshot {
                seq: Some(seq),
                standing: Standing::Waiting {
                    position: Some(position),
                },
                line: LineView { waiting, ..line },
            })
        };
        assert_eq!(
            answers,
            [waiting(41, 7, 7), Joined::TooManyPlaces, waiting(42, 8, 8)]
        );

        // A standing cut short, a number that is not one, answers as an
        // array, or figures cut short, are refused.
        let with = |answers: Value| {
            let reply: Vec<Value> = figures.iter().cloned().chain([answers]).collect();
            joined_many(Value::Array(reply))
        };
        assert!(with(bulk("40 waiting 1 7 0 7 waiting 2 8 0")).is_err());
        assert!(with(bulk("40 waiting 1 7 x 7")).is_err());
        assert!(with(bulk("waiting 1 7 0 7")).is_err());
        assert!(with(bulk("9223372036854775807 waiting 1 7 0 7")).is_err());
        assert!(with(Value::Array(vec![bulk("waiting")])).is_err());
        assert!(joined_many(Value::Array(figures.to_vec())).is_err());
        assert!(joined_many(Value::Array(figures[..7].to_vec())).is_err());
        // '+' continues the waiting join before it, one further back; with
        // no position, it has none either.
        assert_eq!(
            with(bulk(
                "40 waiting 1 7 0 7 + + limit -1 -1 0 9 waiting 5 10 0 10 +"
            ))
            .unwrap(),
            [
                waiting(41, 7, 7),
                waiting(42, 8, 8),
                waiting(43, 9, 9),
                Joined::TooManyPlaces,
                waiting(45, 10, 10),
                waiting(46, 11, 11),
            ]
        );
        let unplaced = |seq, waiting| {
            Joined::Answer(Snapshot {
                seq: Some(seq),
                standing: Standing::Waiting { position: None },
                line: LineView { waiting, ..line },
            })
        };
        assert_eq!(
            with(bulk("40 waiting 3 -1 0 7 +")).unwrap(),
            [unplaced(43, 7), unplaced(44, 8)]
        );
        // A '+' follows only a waiting answer of this batch.
        assert!(with(bulk("40 +")).is_err());
        assert!(with(bulk("40 limit -1 -1 0 7 +")).is_err());
        assert!(with(bulk("40 admitted 1 -1 900 7 +")).is_err());
        // A batch of none is the figures and the base alone.
        assert_eq!(with(bulk("40")).unwrap(), []);
        assert!(with(bulk("")).is_err());
    }

    #[test]
    fn a_status_reply_is_its_standing_then_the_room_figures() {
        let reply = vec![
            bulk("admitted"),
            Value::Int(9),
            Value::Int(-1),
            Value::Int(5_000),
            Value::Int(3),
            bulk("paused"),
            Value::Int(-1),
            bulk("0"),
            Value::Int(60_000),
            Value::Int(1_000),
            bulk("sold_out"),
            bulk("1"),
            bulk(""),
        ];
        let snap = snapshot(Value::Array(reply.clone())).unwrap();
        assert_eq!(snap.seq, Some(9));
        assert_eq!(snap.standing, Standing::Admitted { until_ms: 5_000 });
        assert_eq!((snap.line.waiting, snap.line.state), (3, RoomState::Paused));
        assert_eq!(snap.line.sale.seats, SeatsLeft::SoldOut);
        let mut limit = reply;
        limit[0] = bulk("limit");
        assert!(snapshot(Value::Array(limit)).is_err());
    }

    #[test]
    fn samples_read_off_the_bitmap_are_the_line_at_the_sample_ranks() {
        // Members 20..5000 with gaps (left, admitted, dropped), the lowest
        // 7 on pre-queue draws; the bitmap starts at byte 0 (member 0).
        let members: Vec<u64> = (20..5_000u64)
            .filter(|m| m % 7 != 2 && m % 13 != 0)
            .collect();
        let mut bytes = vec![0u8; 5_000 / 8 + 1];
        for &m in &members {
            bytes[(m / 8) as usize] |= 0x80 >> (m % 8);
        }
        let (base, draws) = (1_000_000, 7);
        let n = members.len() as u64;
        let samples = samples_from_bits(n, draws, base, &bytes).unwrap();
        let expected: Vec<Sample> = sample_ranks(n)
            .map(|r| Sample {
                position: r + 1,
                seq: (r >= draws).then(|| base + members[r as usize]),
            })
            .collect();
        assert_eq!(samples, expected);
        // Read from byte 2 on: the same line, seqs counted from there.
        let from_two = samples_from_bits(n, draws, base + 16, &bytes[2..]).unwrap();
        assert_eq!(from_two, expected);
        // A bitmap that holds fewer waiters than the line is refused.
        assert!(samples_from_bits(n + 1, draws, base, &bytes).is_err());
        assert!(samples_from_bits(n - 1, draws, base, &bytes).is_err());
    }
}
