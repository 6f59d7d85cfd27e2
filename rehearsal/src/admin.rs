//! The operator's side of a rehearsal, through the admin API (`Authorization:
//! Bearer <admin key>`): create the room and its performance, read the live
//! figures while the sale runs, read `/metrics` at the end.

use reqwest::{Client, Method};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::Error;

/// The admin API of one origin.
#[derive(Clone)]
pub struct Admin {
    client: Client,
    base: String,
    key: String,
    metrics_key: Option<String>,
}

/// One sample of a room's live figures.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Live {
    /// Everyone in line.
    pub waiting: u64,
    /// Visitors inside.
    pub active: u64,
    /// Admitted since the room was created.
    pub admitted_total: u64,
    /// Dropped for not polling since the room was created.
    pub abandoned_total: u64,
    /// The origin's achieved admissions per second.
    pub admit_rate: f64,
    /// The share of the configured rate admission runs at (adaptive
    /// admission; 1 from an origin that does not report it).
    pub rate_factor: f64,
}

/// A performance's seat counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Seats {
    /// Neither held nor booked.
    pub available: u64,
    /// In a live hold.
    pub held: u64,
    /// Booked.
    pub booked: u64,
}

impl Admin {
    /// The admin API at `base`.
    pub fn new(base: &str, key: &str, metrics_key: Option<String>) -> Result<Admin, Error> {
        let client = Client::builder()
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .map_err(|e| Error::Http {
                what: "admin client".into(),
                detail: e.to_string(),
            })?;
        Ok(Admin {
            client,
            base: base.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
            metrics_key,
        })
    }

    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, Error> {
        let what = format!("{method} {path}");
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(body) = body {
            req = req.json(body);
        }
        let text = send_text(&what, req).await?;
        serde_json::from_str(&text).map_err(|e| Error::Http {
            what,
            detail: format!("not JSON ({e}): {text}"),
        })
    }

    /// Creates or replaces the room with `settings` (the admin API's fields).
    pub async fn put_room(&self, room: &str, settings: &Value) -> Result<Value, Error> {
        self.call(Method::PUT, &format!("/admin/rooms/{room}"), Some(settings))
            .await
    }

    /// Sets the simulated payment's latency (the origin's `--payment-knob`).
    pub async fn set_payment_latency(&self, latency_ms: u64) -> Result<Value, Error> {
        let body = json!({ "latency_ms": latency_ms });
        self.call(Method::PUT, "/admin/payment", Some(&body)).await
    }

    /// Pauses (`"pause"`) or resumes (`"resume"`) the room.
    pub async fn room_action(&self, room: &str, action: &str) -> Result<Value, Error> {
        self.call(Method::POST, &format!("/admin/rooms/{room}/{action}"), None)
            .await
    }

    /// The room's settings and live figures.
    pub async fn room(&self, room: &str) -> Result<(Value, Live), Error> {
        let v = self
            .call(Method::GET, &format!("/admin/rooms/{room}"), None)
            .await?;
        // A figure missing from the answer reads as its default.
        let field = |k: &str| v.get("live").and_then(|l| l.get(k));
        let n = |k: &str| field(k).and_then(Value::as_u64).unwrap_or(0);
        let live = Live {
            waiting: n("waiting"),
            active: n("active"),
            admitted_total: n("admitted_total"),
            abandoned_total: n("abandoned_total"),
            admit_rate: field("admit_rate").and_then(Value::as_f64).unwrap_or(0.0),
            rate_factor: field("rate_factor").and_then(Value::as_f64).unwrap_or(1.0),
        };
        Ok((v, live))
    }

    /// Creates or replaces the performance (a fresh seat map if nothing is held or booked).
    pub async fn put_performance(
        &self,
        room: &str,
        perf: &str,
        spec: &Value,
    ) -> Result<Seats, Error> {
        let v = self
            .call(
                Method::PUT,
                &format!("/admin/rooms/{room}/performances/{perf}"),
                Some(spec),
            )
            .await?;
        Ok(seats(&v))
    }

    /// The performance's seat counts.
    pub async fn seats(&self, room: &str, perf: &str) -> Result<Seats, Error> {
        let v = self
            .call(
                Method::GET,
                &format!("/admin/rooms/{room}/performances/{perf}"),
                None,
            )
            .await?;
        Ok(seats(&v))
    }

    /// `/metrics` as text (with the metrics key if one was given).
    pub async fn metrics(&self) -> Result<String, Error> {
        let what = "GET /metrics";
        let mut req = self.client.get(format!("{}/metrics", self.base));
        if let Some(key) = &self.metrics_key {
            req = req.bearer_auth(key);
        }
        send_text(what, req).await
    }
}

/// Sends `req` and reads its answer as text; a transport failure or a
/// non-2xx status is an error naming `what` (and the body, which says why).
async fn send_text(what: &str, req: reqwest::RequestBuilder) -> Result<String, Error> {
    let failed = |detail: String| Error::Http {
        what: what.to_owned(),
        detail,
    };
    let res = req.send().await.map_err(|e| failed(e.to_string()))?;
    let status = res.status();
    let text = res.text().await.map_err(|e| failed(e.to_string()))?;
    if !status.is_success() {
        return Err(failed(format!("{status}: {text}")));
    }
    Ok(text)
}

fn seats(v: &Value) -> Seats {
    // The counts sit at the top level or under "seats", depending on the answer.
    let c = if v.get("available").is_some_and(Value::is_u64) {
        Some(v)
    } else {
        v.get("seats")
    };
    let n = |k: &str| {
        c.and_then(|c| c.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Seats {
        available: n("available"),
        held: n("held"),
        booked: n("booked"),
    }
}

/// A seat map of `total` seats (a multiple of 20): rows of 20, sections of
/// up to 10 rows named A, B, C, ...; more rows per section past 26 sections.
pub fn seat_map(total: u64) -> Result<Vec<Value>, Error> {
    if total == 0 || !total.is_multiple_of(20) || total > 520_000 {
        return Err(Error::Config(format!(
            "--seats {total}: a multiple of 20, 20 to 520,000"
        )));
    }
    let rows = total / 20;
    let per_section = rows.div_ceil(26).max(10);
    let mut out = Vec::new();
    let mut left = rows;
    let mut letter = b'A';
    while left > 0 {
        let r = left.min(per_section);
        out.push(json!({"name": (letter as char).to_string(), "rows": r, "seats_per_row": 20, "price": 5000}));
        left -= r;
        letter += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_maps_add_up() {
        for total in [20, 2000, 5200, 6000, 100_000] {
            let map = seat_map(total).unwrap();
            let sum: u64 = map
                .iter()
                .map(|s| s["rows"].as_u64().unwrap() * s["seats_per_row"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, total);
            assert!(map.len() <= 26);
        }
        assert!(seat_map(30).is_err());
        assert!(seat_map(0).is_err());
    }
}
