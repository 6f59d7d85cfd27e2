//! What a flood of made-up room ids costs the origin's memory: starts the
//! `origin` binary (embedded store, SQLite in a temporary folder) on a
//! loopback port, reads its resident memory, sends `--requests` pipelined
//! `GET /api/z<63 random characters>/performances` (no token: all 401) over
//! `--connections` connections, and reads its memory again. Nothing a
//! refused request names may stay behind, so the growth must stay within a
//! few MB however many arrive (BENCHMARKS.md, "Made-up room ids (origin
//! memory)"):
//!
//! ```sh
//! cargo build --release -p origin -p bench
//! target/release/made_up_rooms --requests 1000000
//! ```
//!
//! Exits non-zero when the growth passes `--max-growth-mb`.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser)]
struct Args {
    /// The origin binary to start.
    #[arg(long, default_value = "target/release/origin")]
    origin_bin: String,
    /// Requests in all.
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,
    /// Connections at once.
    #[arg(long, default_value_t = 8)]
    connections: u64,
    /// Requests written at once on a connection.
    #[arg(long, default_value_t = 64)]
    pipeline: u64,
    /// Most growth of the origin's resident memory allowed, in MB.
    #[arg(long, default_value_t = 16)]
    max_growth_mb: u64,
}

/// The process's resident memory in KB (`VmRSS` of `/proc/<pid>/status`).
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn made_up_room() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let tail: String = (0..63)
        .map(|_| CHARS[rand::random_range(0..CHARS.len())] as char)
        .collect();
    format!("z{tail}")
}

/// Sends `n` requests on one connection, `pipeline` at a time; returns
/// how many answers were 401.
async fn flood(addr: String, n: u64, pipeline: u64) -> std::io::Result<u64> {
    let mut stream = TcpStream::connect(&addr).await?;
    let mut refused = 0;
    let mut sent = 0;
    let mut buf = vec![0u8; 1 << 16];
    let mut pending = Vec::new();
    while sent < n {
        let batch = pipeline.min(n - sent);
        let mut out = String::new();
        for _ in 0..batch {
            out.push_str(&format!(
                "GET /api/{}/performances HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                made_up_room()
            ));
        }
        stream.write_all(out.as_bytes()).await?;
        sent += batch;
        // Read until this batch's answers are in.
        let mut answers = 0;
        while answers < batch {
            let read = stream.read(&mut buf).await?;
            if read == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            pending.extend_from_slice(&buf[..read]);
            while let Some(end) = find(&pending, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())
                            .flatten()
                    })
                    .unwrap_or(0);
                if pending.len() < end + 4 + length {
                    break;
                }
                if head.starts_with("HTTP/1.1 401") {
                    refused += 1;
                }
                pending.drain(..end + 4 + length);
                answers += 1;
            }
        }
    }
    Ok(refused)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(18_181);
    let dir = std::env::temp_dir().join(format!("wr-made-up-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let addr = format!("127.0.0.1:{port}");
    let mut child = match std::process::Command::new(&args.origin_bin)
        .args(["--listen", &addr, "--sqlite-path"])
        .arg(dir.join("booking.sqlite"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot start {}: {e}", args.origin_bin);
            return ExitCode::FAILURE;
        }
    };
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&addr).await.is_err() {
        if Instant::now() > deadline {
            eprintln!("the origin did not listen");
            let _ = child.kill();
            return ExitCode::FAILURE;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A first round warms the allocator and the connection set-up.
    let _ = flood(addr.clone(), 1_000, args.pipeline).await;
    let before = rss_kb(pid).unwrap_or(0);
    let started = Instant::now();
    let per = args.requests / args.connections.max(1);
    let tasks: Vec<_> = (0..args.connections.max(1))
        .map(|_| tokio::spawn(flood(addr.clone(), per, args.pipeline)))
        .collect();
    let mut refused = 0;
    for t in tasks {
        match t.await {
            Ok(Ok(n)) => refused += n,
            Ok(Err(e)) => eprintln!("a connection failed: {e}"),
            Err(e) => eprintln!("a task failed: {e}"),
        }
    }
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_kb(pid).unwrap_or(0);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let growth_mb = after.saturating_sub(before) as f64 / 1024.0;
    println!(
        "made-up room ids: {refused} of {} requests refused (401) in {:.1} s; \
         origin resident memory {:.1} MB -> {:.1} MB ({growth_mb:+.1} MB)",
        per * args.connections.max(1),
        took.as_secs_f64(),
        before as f64 / 1024.0,
        after as f64 / 1024.0,
    );
    if growth_mb > args.max_growth_mb as f64 || refused < per * args.connections.max(1) {
        eprintln!(
            "FAIL: more than {} MB kept, or not every request refused",
            args.max_growth_mb
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
