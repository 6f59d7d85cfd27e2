//! The server's accept loop: how long a client may take and how many may be
//! connected at once, so idle sockets and slow senders cannot use up the
//! process's files, memory or tasks. Routing, extractors and errors are not
//! here; this module sees bytes and connections only.
//!
//! What each connection is allowed:
//! - a request head must arrive within the header timeout, counted from the
//!   connection's accept or, between requests, from the head's first byte;
//! - between requests a connection may sit silent for the idle timeout;
//! - a request body must arrive within the body timeout of its head, and a
//!   response may stall on a client that does not read for as long;
//! - hyper's read buffer is bounded near the header limit (its default
//!   buffers about 400 KB of unfinished head per connection);
//! - at most `max_connections` at once: past that the loop stops accepting
//!   and new clients wait in the kernel's backlog.
//!
//! Graceful shutdown stops accepting, lets in-flight requests finish and
//! closes idle connections; the timeouts bound how long that can take.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use super::MAX_HEADER_BYTES;

/// Limits on each connection and on how many there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// How long a request head may take to arrive.
    pub header_timeout: Duration,
    /// How long a connection may sit between requests.
    pub idle_timeout: Duration,
    /// How long a request body may take to arrive after its head, and how
    /// long a response may stall on a client that does not read.
    pub body_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
}

impl Default for ConnLimits {
    /// The `origin` binary's defaults.
    fn default() -> ConnLimits {
        ConnLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(10),
            max_connections: 10_000,
        }
    }
}

/// Largest request head hyper parses. Above [`MAX_HEADER_BYTES`] so that
/// heads a little over it still reach the router's JSON 431; past this one
/// hyper answers a bare 431 and closes.
const MAX_HEAD_BYTES: usize = 2 * MAX_HEADER_BYTES;
/// hyper's read buffer: one head at its largest plus a body chunk.
const MAX_BUF_BYTES: usize = MAX_HEAD_BYTES + 8 * 1024;

/// Serves `app` on `listener` under `limits` until `shutdown` completes,
/// then lets in-flight requests finish. Handlers see the TCP peer as
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let stop = CancellationToken::new();
    let trigger = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        trigger.cancel();
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let connections = TaskTracker::new();
    let mut h1 = hyper::server::conn::http1::Builder::new();
    h1.max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_BUF_BYTES);
    loop {
        let slot = tokio::select! {
            () = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break, // never closed
            },
        };
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                accept_failed(&e).await;
                continue;
            }
        };
        // workerd reuses its connection to the origin; without TCP_NODELAY
        // each request stalls on Nagle against delayed ACK.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let phase = Arc::new(Phase::default());
        let io = TokioIo::new(Timed::new(tcp, phase.clone(), limits));
        let service = service(app.clone(), peer, phase, limits.body_timeout);
        let conn = h1.serve_connection(io, service);
        let stop = stop.clone();
        connections.spawn(async move {
            let _slot = slot;
            tokio::pin!(conn);
            let served = tokio::select! {
                served = conn.as_mut() => served,
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, %peer, "connection ended");
            }
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    Ok(())
}

/// The router for one connection: each request gets the peer's address and
/// a body that gives up at the body timeout, and counts as busy (no idle or
/// head clock) until its response is ready.
fn service(
    app: Router,
    peer: SocketAddr,
    phase: Arc<Phase>,
    body_timeout: Duration,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response,
    Error = Infallible,
    Future = impl Future<Output = Result<Response, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |request: Request<Incoming>| {
        let busy = Busy::enter(phase.clone());
        let deadline = Instant::now() + body_timeout;
        let mut request = request.map(|body| {
            if http_body::Body::is_end_stream(&body) {
                Body::empty()
            } else {
                Body::new(TimedBody {
                    inner: body,
                    deadline,
                    sleep: None,
                })
            }
        });
        request.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            let response = app.oneshot(request).await;
            drop(busy);
            response
        }
    })
}

/// Logs an accept failure (rate-limited) and, when it is the process
/// running out of something (files, memory) rather than one client
/// giving up, waits a little so the loop does not spin.
async fn accept_failed(e: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    static LAST_LOG_MS: AtomicU64 = AtomicU64::new(0);
    let now_ms = room::clock::Clock::System.now_ms();
    let last = LAST_LOG_MS.load(Ordering::Relaxed);
    if now_ms.saturating_sub(last) >= 10_000
        && LAST_LOG_MS
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::error!(error = %e, "accept failed (logged at most every 10 s)");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// What a connection is doing, shared by its socket wrapper and its
/// requests: how many requests are in the service, and how many have left
/// it (each one ends a busy spell and starts a wait for the next head).
#[derive(Default)]
struct Phase {
    busy: AtomicUsize,
    finished: AtomicU64,
}

/// One request in the service; dropping it (also when the connection dies
/// mid-request) marks it done.
struct Busy(Arc<Phase>);

impl Busy {
    fn enter(phase: Arc<Phase>) -> Busy {
        phase.busy.fetch_add(1, Ordering::AcqRel);
        Busy(phase)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::AcqRel);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The socket, with the head and idle clocks on its reads and the stall
/// clock on its writes. hyper reads for the next head whenever no request
/// is in the service, so a read that stays pending past the deadline ends
/// the connection.
struct Timed {
    tcp: TcpStream,
    phase: Arc<Phase>,
    limits: ConnLimits,
    /// `phase.finished` when the current wait began.
    wait_of: u64,
    /// Whether the awaited head has begun (its clock, not the idle one, runs).
    head_begun: bool,
    read_deadline: Pin<Box<Sleep>>,
    write_stall: Option<Pin<Box<Sleep>>>,
}

impl Timed {
    fn new(tcp: TcpStream, phase: Arc<Phase>, limits: ConnLimits) -> Timed {
        // A new connection owes its first head at once: the head clock runs.
        Timed {
            tcp,
            phase,
            limits,
            wait_of: 0,
            head_begun: true,
            read_deadline: Box::pin(tokio::time::sleep(limits.header_timeout)),
            write_stall: None,
        }
    }

    /// Starts a new wait (idle clock) if a request finished since the last one.
    fn catch_up(&mut self) {
        let finished = self.phase.finished.load(Ordering::Acquire);
        if finished != self.wait_of {
            self.wait_of = finished;
            self.head_begun = false;
            let deadline = Instant::now() + self.limits.idle_timeout;
            self.read_deadline.as_mut().reset(deadline);
        }
    }

    fn waiting_for_head(&self) -> bool {
        self.phase.busy.load(Ordering::Acquire) == 0
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out"))
}

impl AsyncRead for Timed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.tcp).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before && this.waiting_for_head() {
                    this.catch_up();
                    if !this.head_begun {
                        this.head_begun = true;
                        let deadline = Instant::now() + this.limits.header_timeout;
                        this.read_deadline.as_mut().reset(deadline);
                    }
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if !this.waiting_for_head() {
                    return Poll::Pending;
                }
                this.catch_up();
                ready!(this.read_deadline.as_mut().poll(cx));
                Poll::Ready(Err(timed_out(if this.head_begun {
                    "request head"
                } else {
                    "idle connection"
                })))
            }
        }
    }
}

impl Timed {
    /// Passes a write's outcome through; one that stays pending for the body
    /// timeout fails (a client that does not read its responses).
    fn stall_clock<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.write_stall = None;
            return polled;
        }
        let limit = self.limits.body_timeout;
        let stall = self
            .write_stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        ready!(stall.as_mut().poll(cx));
        Poll::Ready(Err(timed_out("response write")))
    }
}

impl AsyncWrite for Timed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write(cx, buf);
        this.stall_clock(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs);
        this.stall_clock(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_flush(cx);
        this.stall_clock(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// A request body that fails once its deadline passes with data still
/// owed; the handler's body extractor then refuses the request and hyper
/// closes the connection, whose body was never finished.
struct TimedBody {
    inner: Incoming,
    deadline: Instant,
    /// Made on the first wait only: most bodies arrive with their head.
    sleep: Option<Pin<Box<Sleep>>>,
}

/// The body did not arrive within the body timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct BodyTimedOut;

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let deadline = this.deadline;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Some(Err(BodyTimedOut.into())))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Pending connections the kernel may queue for accept. A flash crowd (or
/// a flood of idle sockets) overflows the usual 1,024 at once; Linux caps
/// this at `net.core.somaxconn` (4,096 by default).
const LISTEN_BACKLOG: u32 = 4_096;

/// Binds a listener for [`serve`] with a deep accept backlog.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Raises the process's open-file limit to its hard limit, so the
/// connection cap, not the default soft limit (often 1,024), is what binds.
/// Returns the limit now in force (`None`: unlimited or unknown).
pub fn raise_open_file_limit() -> io::Result<Option<u64>> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return Ok(limit.current);
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    )?;
    Ok(getrlimit(Resource::Nofile).current)
}
