//! The slow-client attack `slow_clients.rs` runs: idle sockets, clients that
//! dribble a request head a byte at a time, and clients that send a body
//! slower than that; plus a normal visitor timing joins and status calls
//! meanwhile.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

/// How many of each attacker, and how slowly the slow ones send.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Sockets that connect and send nothing.
    pub idle: usize,
    /// Clients that send a request head one byte per `pace`.
    pub dribble: usize,
    /// Clients that send a whole head, then its body one byte per `pace`.
    pub slow_body: usize,
    /// Time between two bytes of a slow client.
    pub pace: Duration,
    /// When an attacker stops waiting for the server to close it.
    pub give_up: Duration,
}

/// Which attacker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Sends nothing.
    Idle,
    /// Dribbles its head.
    Dribble,
    /// Dribbles its body.
    SlowBody,
}

/// How one attacker ended.
#[derive(Clone, Copy, Debug)]
pub struct Outcome {
    /// Which attacker.
    pub kind: Kind,
    /// From connected to closed by the server; `None`: still open at `give_up`
    /// (or never connected).
    pub closed_after: Option<Duration>,
}

/// Starts every attacker at once; the set yields each one's outcome.
pub fn launch(addr: SocketAddr, room: &str, plan: Plan) -> JoinSet<Outcome> {
    let mut set = JoinSet::new();
    let dribbled = format!(
        "GET /queue/{room}/status HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: slow-clients\r\nAccept: application/json\r\n\r\n"
    );
    let head = format!(
        "POST /queue/{room}/join HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
    );
    for _ in 0..plan.idle {
        set.spawn(attacker(addr, Kind::Idle, Vec::new(), Vec::new(), plan));
    }
    for _ in 0..plan.dribble {
        set.spawn(attacker(
            addr,
            Kind::Dribble,
            Vec::new(),
            dribbled.clone().into_bytes(),
            plan,
        ));
    }
    for _ in 0..plan.slow_body {
        let body = vec![b' '; 4096];
        set.spawn(attacker(
            addr,
            Kind::SlowBody,
            head.clone().into_bytes(),
            body,
            plan,
        ));
    }
    set
}

/// Connects, sends `first` at once and then `slow` a byte per `plan.pace`,
/// until the server closes the connection or `plan.give_up` passes.
async fn attacker(
    addr: SocketAddr,
    kind: Kind,
    first: Vec<u8>,
    slow: Vec<u8>,
    plan: Plan,
) -> Outcome {
    let stream = match TcpStream::connect(addr).await {
        Ok(stream) => stream,
        Err(e) => {
            eprintln!("{kind:?}: connect failed: {e}");
            return Outcome {
                kind,
                closed_after: None,
            };
        }
    };
    let start = Instant::now();
    let (mut read, mut write) = stream.into_split();
    let sender = async move {
        if write.write_all(&first).await.is_err() {
            return;
        }
        for byte in slow {
            // The scenario: a slow client dribbling its request.
            tokio::time::sleep(plan.pace).await;
            if write.write_all(&[byte]).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    };
    let closed = async move {
        let mut buf = [0u8; 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {} // an error response; the close follows
            }
        }
    };
    let ended = tokio::time::timeout(plan.give_up, async {
        tokio::select! {
            () = closed => {},
            () = sender => {},
        }
    })
    .await;
    Outcome {
        kind,
        closed_after: ended.is_ok().then(|| start.elapsed()),
    }
}

/// A normal visitor: joins `room` and reads its status, again and again
/// until `until`, at least `min` times; each element is one join plus one status.
pub async fn visits(base: &str, room: &str, min: usize, until: Instant) -> Vec<Duration> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut taken = Vec::new();
    while taken.len() < min || Instant::now() < until {
        let start = Instant::now();
        let joined: serde_json::Value = client
            .post(format!("{base}/queue/{room}/join"))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .expect("join answers")
            .json()
            .await
            .expect("join body");
        let ticket = joined["ticket"].as_str().expect("a ticket").to_owned();
        client
            .get(format!("{base}/queue/{room}/status"))
            .bearer_auth(ticket)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .expect("status answers");
        taken.push(start.elapsed());
    }
    taken
}

/// The 99th percentile.
pub fn p99(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
}

/// A process's resident set (VmRSS), in bytes.
pub fn rss_bytes(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
