//! Composition: starts the engine from a `Config` and serves its HTTP front doors on a
//! listener; graceful shutdown lets in-flight requests finish, then stops the engine.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Context;
use axum::extract::ConnectInfo;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};

use crate::clock::Clock;
use crate::config::{Config, HttpLimits};
use crate::connections::{Activity, Connections, Room};
use crate::http::{AppState, Shared};
use mandato_engine::Engine;

/// Opens the store and loads (or, on first start, generates) the environment's keys.
pub use mandato_engine::engine::open;

/// A running engine and its listener. Dropping it does not stop it; call `shutdown`.
pub struct Running {
    pub addr: SocketAddr,
    pub state: AppState,
    stop: Option<oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Connections being served now.
    open_connections: Arc<AtomicUsize>,
    /// The one-time first-visit setup code, when the engine listens beyond loopback and has no
    /// staff account yet; `serve` prints it.
    pub setup_code: Option<crate::secret::Secret<String>>,
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets in-flight requests and webhook sends finish, and writes what is
    /// queued.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.server).await??;
        self.state.engine.shutdown().await
    }

    /// How many connections are being served now (never more than the configured cap).
    pub fn connections(&self) -> usize {
        self.open_connections.load(Ordering::Relaxed)
    }

    /// Resolves when the server has stopped by itself (it only does on an I/O failure).
    pub async fn stopped(&mut self) -> anyhow::Result<()> {
        (&mut self.server).await??;
        Ok(())
    }
}

/// Starts the engine on `config.listen` (port 0 picks a free port).
pub async fn start(mut config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Running> {
    if config.public_host.is_none() {
        config.public_host = config
            .public_url
            .as_ref()
            .and_then(|url| url.host_str())
            .map(str::to_string);
    }
    if !config.listen.ip().is_loopback() {
        if !config.allow_non_loopback {
            anyhow::bail!(
                "refusing to listen on {}: pass --allow-non-loopback to serve other machines",
                config.listen
            );
        }
        tracing::warn!(address = %config.listen, "listening beyond this machine");
    }
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    let public_base_url = match (&config.public_url, &config.public_host) {
        (Some(url), _) => url.as_str().trim_end_matches('/').to_string(),
        (None, Some(host)) => format!("http://{host}:{}", addr.port()),
        (None, None) => format!("http://{addr}"),
    };
    let engine = Engine::start(config, clock).await?;
    let state = AppState::new(Shared::new(engine, public_base_url));
    // Listening beyond this machine (or behind a reverse proxy, where every visitor arrives
    // from the proxy's address) before the owner exists: the first visitor from elsewhere must
    // prove they can read this process's log.
    let needs_owner = state.engine.has_no_staff()?;
    let reachable_from_elsewhere =
        !state.config.listen.ip().is_loopback() || state.config.public_url.is_some();
    let setup_code = (reachable_from_elsewhere && needs_owner).then(|| state.setup_code.issue());
    let limits = state.config.http.clone();
    let app = crate::http::router(state.clone()).layer(axum::middleware::from_fn_with_state(
        limits.clone(),
        crate::http::guard::request_time_limit,
    ));
    let (stop, stopped) = oneshot::channel::<()>();
    let open_connections = Arc::new(AtomicUsize::new(0));
    let server = tokio::spawn(serve(
        listener,
        app,
        limits.clone(),
        Arc::clone(&open_connections),
        stopped,
    ));
    tracing::info!(url = %format!("http://{addr}"), environment = state.config.environment.as_str(), "mandato is serving");
    Ok(Running {
        addr,
        state,
        stop: Some(stop),
        server,
        open_connections,
        setup_code,
    })
}

/// The accept loop (CONTRACT 12, "HTTP"). A connection is served only with one of
/// `max_connections` permits, held until it closes (and counted in `open`). A newcomer past
/// the cap, or past its address's share, makes room by closing an idle connection
/// (`connections.rs` says which); when every connection is serving a request the loop waits
/// for one to end, and further clients wait in the kernel's backlog rather than being accepted
/// and dropped or exhausting file descriptors. Headers must arrive within
/// `header_read_timeout` (also the longest a kept-alive connection sits idle), so stalled
/// clients give their slot back; the request time limit is the router's outermost layer. On
/// `stop` the listener closes, and in-flight requests finish while idle connections close.
async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: HttpLimits,
    open: Arc<AtomicUsize>,
    mut stop: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let connections = Arc::new(Connections::new(limits.max_connections));
    loop {
        let (tcp, peer) = tokio::select! {
            biased;
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
        };
        let room = loop {
            match connections.make_room(peer.ip()) {
                Room::Later(wait) => tokio::select! {
                    biased;
                    _ = &mut stop => break None,
                    _ = tokio::time::sleep(wait) => {}
                },
                room => break Some(room),
            }
        };
        match room {
            None => break,
            // Closed at once: its address holds its share, every one of them busy.
            Some(Room::Refuse) => continue,
            Some(_) => {}
        }
        let permit = tokio::select! {
            biased;
            _ = &mut stop => break,
            permit = Arc::clone(&slots).acquire_owned() => {
                permit.expect("the connection semaphore is never closed")
            }
        };
        // Without it, small responses wait on delayed ACKs (about 40 ms per request).
        let _ = tcp.set_nodelay(true);
        let admitted = connections.admit(peer.ip());
        let service = busy_while_serving(app.clone(), peer, Arc::clone(&admitted.activity));
        let linger = Arc::new(AtomicBool::new(true));
        let io = TokioIo::new(WriteStallLimit::new(
            tcp,
            limits.request_timeout,
            Arc::clone(&linger),
        ));
        let connection = graceful.watch(http.serve_connection(io, service));
        open.fetch_add(1, Ordering::Relaxed);
        let (open, connections) = (Arc::clone(&open), Arc::clone(&connections));
        tokio::spawn(async move {
            tokio::select! {
                // Its errors are the client's doing (gone, too slow, not HTTP): nothing to report.
                _ = connection => {}
                // Idle, and its slot wanted by a newcomer: closed at once, nothing to linger for.
                _ = admitted.close.notified() => linger.store(false, Ordering::Relaxed),
            }
            connections.leave(admitted.id);
            open.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The router as one connection's service: each request knows its peer (through
/// `ConnectInfo`, as with `axum::serve`), and the connection counts as busy from the moment a
/// request head is read until its response body has been written.
fn busy_while_serving(
    app: axum::Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone {
    hyper::service::service_fn(move |mut request: hyper::Request<_>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let mut app = app.clone();
        let busy = activity.busy();
        async move {
            use http_body_util::BodyExt;
            let response = tower_service::Service::call(&mut app, request).await?;
            // The guard goes with the body: dropped once hyper has written (or dropped) it.
            Ok(response.map(|body| {
                axum::body::Body::new(body.map_frame(move |frame| {
                    let _writing = &busy;
                    frame
                }))
            }))
        }
    })
}

/// A connection whose answer makes no progress for `limit` fails: a client that stops reading
/// its response (the slow-reading half of slowloris) gives its slot back instead of holding it
/// forever. The request time limit ends when the response starts; this covers the rest.
struct WriteStallLimit {
    /// Taken only when the connection is dropped, to linger (see `Drop`).
    tcp: Option<tokio::net::TcpStream>,
    /// Cleared for an idle connection closed to make room: no answer is on its way.
    linger: Arc<AtomicBool>,
    limit: std::time::Duration,
    /// Running while writes wait for the client to read.
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl WriteStallLimit {
    fn new(
        tcp: tokio::net::TcpStream,
        limit: std::time::Duration,
        linger: Arc<AtomicBool>,
    ) -> Self {
        WriteStallLimit {
            tcp: Some(tcp),
            linger,
            limit,
            stalled: None,
        }
    }

    fn tcp(&mut self) -> std::pin::Pin<&mut tokio::net::TcpStream> {
        std::pin::Pin::new(self.tcp.as_mut().expect("the stream is taken only on drop"))
    }

    /// Passes a write's outcome through, failing it once writes have waited `limit` in a row.
    fn watch<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        outcome: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        use std::task::Poll;
        if outcome.is_ready() {
            self.stalled = None;
            return outcome;
        }
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if stalled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading its response",
            )));
        }
        Poll::Pending
    }
}

impl tokio::io::AsyncRead for WriteStallLimit {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.tcp().poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for WriteStallLimit {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let outcome = self.tcp().poll_write(cx, buf);
        self.watch(cx, outcome)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let outcome = self.tcp().poll_write_vectored(cx, bufs);
        self.watch(cx, outcome)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.as_ref().is_some_and(|tcp| tcp.is_write_vectored())
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let outcome = self.tcp().poll_flush(cx);
        self.watch(cx, outcome)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.tcp().poll_shutdown(cx)
    }
}

/// A lingering close, as web servers do: when a connection ends while the client is still
/// sending (an answer such as 413 given before the whole body was read), closing at once would
/// make the kernel answer the unread bytes with a reset, and the client would see "connection
/// reset" or "broken pipe" instead of the answer already sent. So the write side is shut (the
/// client gets the answer and its end) and what the client still sends is read and dropped,
/// for at most `LINGER` in all: the socket is no longer one of the `max_connections`, and a
/// client that never stops sending cannot keep it longer.
impl Drop for WriteStallLimit {
    fn drop(&mut self) {
        let (Some(tcp), Ok(runtime)) = (self.tcp.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        if self.linger.load(Ordering::Relaxed) {
            runtime.spawn(linger(tcp));
        }
    }
}

const LINGER: std::time::Duration = std::time::Duration::from_secs(3);

async fn linger(mut tcp: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tcp.shutdown().await;
    let mut sink = vec![0u8; 64 * 1024];
    let drain = async {
        // Ends at the client's own close (0), or at an error: a client that already closed
        // costs one read.
        while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// A failed `accept` either concerns that one connection (retry at once) or the process (out
/// of file descriptors: wait a little, as a busy loop would only fail again).
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
}

/// Keeps the process off transparent huge pages. mimalloc asks for them on its arenas, and a
/// huge page counts in full in the resident memory as soon as one byte of it is touched: an
/// idle engine held 50 MiB of mostly empty 2 MiB pages, and 150 MiB after a burst of requests
/// (110 MiB without them; `bench/README.md`). Called first thing in `main`; Linux only.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments and changes only this process's flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// For a runtime's `on_thread_park`: when a worker runs out of work, at most once a second per
/// thread, mimalloc returns the pages this thread freed to the system. mimalloc returns freed
/// memory only while the thread that freed it keeps allocating, so after a burst the idle
/// workers kept it (an engine served 33 MB more after a load than with immediate returns,
/// which cost a busy engine CPU on every free instead).
pub fn release_idle_memory() {
    use std::cell::Cell;
    use std::time::{Duration, Instant};
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    LAST.with(|last| {
        if last
            .get()
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        last.set(Some(Instant::now()));
        // SAFETY: `mi_collect` only frees this thread's unused allocator pages; with another
        // global allocator, mimalloc's heap of this thread is empty and nothing happens.
        unsafe { libmimalloc_sys::mi_collect(false) };
    });
}

/// Structured logs to stderr for a process running the engine (the `mandato` binary and
/// Mandato Desk): the level from `MANDATO_LOG` (an `EnvFilter` directive, `info` by default),
/// colours only on a terminal.
pub fn init_logging() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("MANDATO_LOG").unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
