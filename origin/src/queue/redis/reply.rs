//! Turns the scripts' flat arrays into the queue's types. A reply of the
//! wrong shape is a `StoreError::Protocol`, never a panic. The one answer
//! every script gives for a room that does not exist is told apart once,
//! by [`known_room`], before any parser here sees the reply.

use redis::Value;

use crate::queue::{
    END_BUCKETS, Joined, LineView, Observation, PREQUEUE_SPAN, RoomFigures, SaleSignal, Sample,
    Schedule, SeatsLeft, Snapshot, Standing, StoreError, TickReport,
};
use crate::room::{QueueingMethod, RoomSettings, RoomState};

fn bad(what: &str) -> StoreError {
    StoreError::Protocol(what.to_owned())
}

fn items(value: Value) -> Result<Vec<Value>, StoreError> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(bad("expected an array")),
    }
}

fn text(value: &Value) -> Option<&str> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok(),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

fn int(value: &Value) -> Result<i64, StoreError> {
    match value {
        Value::Int(n) => Ok(*n),
        other => text(other)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("expected an integer")),
    }
}

fn real(value: &Value) -> Result<f64, StoreError> {
    text(value)
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .ok_or_else(|| bad("expected a number"))
}

/// -1 means "none" in the scripts' replies.
fn optional(n: i64) -> Option<u64> {
    u64::try_from(n).ok()
}

fn state(value: &Value) -> Result<RoomState, StoreError> {
    text(value)
        .and_then(RoomState::parse)
        .ok_or_else(|| bad("unknown room state"))
}

/// The sale signal as the room hash keeps it (`seats`, `rate_factor`).
fn sale(seats: &Value, rate_factor: &Value) -> Result<SaleSignal, StoreError> {
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

/// The tick's summary as `tick.lua` writes it (`eta` in the room hash):
/// at, rate, allow, capacity, session ms, free, the end buckets, leaves,
/// inside, space-separated; empty before the room's first tick.
fn schedule(value: &Value) -> Result<Option<Schedule>, StoreError> {
    let text = text(value).ok_or_else(|| bad("expected a schedule"))?;
    if text.is_empty() {
        return Ok(None);
    }
    let parts: Vec<&str> = text.split(' ').collect();
    let n = |i: usize| -> Result<u64, StoreError> {
        parts
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("schedule: expected an integer"))
    };
    let x = |i: usize| -> Result<f64, StoreError> {
        parts
            .get(i)
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad("schedule: expected a number"))
    };
    if parts.len() != 8 + END_BUCKETS {
        return Err(bad("schedule has the wrong length"));
    }
    let mut ends = [0; END_BUCKETS];
    for (j, end) in ends.iter_mut().enumerate() {
        *end = n(6 + j)?;
    }
    Ok(Some(Schedule {
        at_ms: n(0)?,
        rate: x(1)?,
        allow: x(2)?,
        capacity: n(3)?,
        session_ms: n(4)?,
        free: n(5)?,
        ends,
        leaves: x(6 + END_BUCKETS)?,
        inside: x(7 + END_BUCKETS)?,
    }))
}

/// How `set_sale.lua` stores `seats` (and `sale` above reads it back).
pub fn seats_text(seats: SeatsLeft) -> &'static str {
    match seats {
        SeatsLeft::Available => "available",
        SeatsLeft::NoneAvailable => "none_available",
        SeatsLeft::SoldOut => "sold_out",
    }
}

/// What a script returns, alone, when the room does not exist
/// (`UNKNOWN_ROOM` in the prelude).
const UNKNOWN_ROOM: &str = "unknown_room";

/// Passes a script's reply on, or fails with `StoreError::UnknownRoom` when
/// the script said the room does not exist.
pub fn known_room(value: Value) -> Result<Value, StoreError> {
    if text(&value) == Some(UNKNOWN_ROOM) {
        Err(StoreError::UnknownRoom)
    } else {
        Ok(value)
    }
}

/// Parses `view()` of the prelude (join and status).
pub fn snapshot(value: Value) -> Result<Snapshot, StoreError> {
    let v = items(value)?;
    let [
        outcome,
        seq,
        pos,
        until_ms,
        waiting,
        st,
        opens_at,
        rate,
        abandon_ms,
        now,
        seats,
        rate_factor,
        sched,
    ] = <[Value; 13]>::try_from(v).map_err(|_| bad("view has the wrong length"))?;
    let standing = match text(&outcome) {
        Some("waiting") => Standing::Waiting {
            position: optional(int(&pos)?),
        },
        Some("admitted") => Standing::Admitted {
            until_ms: optional(int(&until_ms)?).ok_or_else(|| bad("negative session end"))?,
        },
        Some("gone") => Standing::Gone,
        Some("closed") => Standing::Closed,
        Some("sold_out") => Standing::SoldOut,
        _ => return Err(bad("unknown outcome")),
    };
    Ok(Snapshot {
        seq: optional(int(&seq)?),
        standing,
        line: LineView {
            state: state(&st)?,
            opens_at_ms: optional(int(&opens_at)?),
            waiting: optional(int(&waiting)?).unwrap_or(0),
            admit_rate: real(&rate)?,
            abandon_ms: optional(int(&abandon_ms)?).unwrap_or(0),
            sale: sale(&seats, &rate_factor)?,
            now_ms: optional(int(&now)?).unwrap_or(0),
            schedule: schedule(&sched)?,
        },
    })
}

/// Parses `join.lua`'s reply: `view()`, whose outcome `limit` (the place
/// cap refused the join) is not a standing.
pub fn joined(value: Value) -> Result<Joined, StoreError> {
    let limit = matches!(&value, Value::Array(v) if v.first().and_then(text) == Some("limit"));
    if limit {
        return Ok(Joined::TooManyPlaces);
    }
    snapshot(value).map(Joined::Answer)
}

/// Parses `join.lua`'s reply: one `view()` per join of the batch.
pub fn joined_many(value: Value) -> Result<Vec<Joined>, StoreError> {
    items(value)?.into_iter().map(joined).collect()
}

/// Parses `tick.lua`'s reply.
pub fn tick(value: Value) -> Result<TickReport, StoreError> {
    let v = items(value)?;
    let head: Vec<i64> = v.iter().take(4).map(int).collect::<Result<_, _>>()?;
    match head[..] {
        [active, waiting, expired, abandoned] => Ok(TickReport {
            admitted: v[4..]
                .iter()
                .map(|x| int(x).map(|n| n.max(0) as u64))
                .collect::<Result<_, _>>()?,
            expired: expired.max(0) as u64,
            abandoned: abandoned.max(0) as u64,
            active: active.max(0) as u64,
            waiting: waiting.max(0) as u64,
        }),
        _ => Err(bad("tick reply has the wrong length")),
    }
}

/// Parses `figures.lua`'s reply.
pub fn figures(value: Value) -> Result<RoomFigures, StoreError> {
    let v = items(value)?;
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
    ] = <[Value; 13]>::try_from(v).map_err(|_| bad("figures have the wrong length"))?;
    let settings: RoomSettings = text(&settings)
        .and_then(|json| serde_json::from_str(json).ok())
        .ok_or_else(|| bad("stored settings"))?;
    let count = |v: &Value| int(v).map(|n| n.max(0) as u64);
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
    })
}

/// Parses `observe.lua`'s reply.
pub fn observation(value: Value) -> Result<Observation, StoreError> {
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
    ] = <[Value; 9]>::try_from(items(value)?)
        .map_err(|_| bad("observation has the wrong length"))?;
    let line = snapshot(view)?.line;
    let method = text(&method)
        .and_then(QueueingMethod::parse)
        .ok_or_else(|| bad("unknown queueing method"))?;
    let base = u64::try_from(int(&base)?).map_err(|_| bad("negative base"))?;
    let seq_of = |score: u64| (score >= PREQUEUE_SPAN).then(|| base + (score - PREQUEUE_SPAN));
    let score = |s: &str| -> Result<u64, StoreError> {
        s.parse::<u64>()
            .map_err(|_| bad("expected an integer score"))
    };
    let front = match int(&front)? {
        -1 => None,
        f => Some(Sample {
            position: 1,
            seq: seq_of(u64::try_from(f).map_err(|_| bad("negative score"))?),
        }),
    };
    let text_samples = text(&samples).ok_or_else(|| bad("expected samples"))?;
    let parts: Vec<&str> = text_samples.split_ascii_whitespace().collect();
    if !parts.len().is_multiple_of(2) {
        return Err(bad("samples come in pairs"));
    }
    let samples = parts
        .chunks(2)
        .map(|pair| {
            Ok(Sample {
                position: score(pair[0])? + 1,
                seq: seq_of(score(pair[1])?),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let seqs = |v: Value| -> Result<Vec<u64>, StoreError> {
        items(v)?
            .iter()
            .map(|x| int(x).and_then(|n| u64::try_from(n).map_err(|_| bad("negative seq"))))
            .collect()
    };
    let sorted = |v: Value| {
        seqs(v).map(|mut s| {
            s.sort_unstable();
            s
        })
    };
    Ok(Observation {
        line,
        method,
        front,
        samples,
        samples_at_ms: u64::try_from(int(&samples_at)?).map_err(|_| bad("negative time"))?,
        gone: sorted(gone)?,
        drawn: sorted(drawn)?,
        departed: sorted(departed)?,
    })
}

/// Parses a script's single integer reply.
pub fn counter(value: Value) -> Result<u64, StoreError> {
    u64::try_from(int(&value)?).map_err(|_| bad("negative counter"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
