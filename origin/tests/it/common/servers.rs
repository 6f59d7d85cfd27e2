//! Servers a test owns: `redis-server` processes on free loopback ports in a
//! temporary folder, a Redis Cluster made of three of them, and `mariadbd`
//! on a data folder of its own.
//!
//! Every process is stopped by its own pid when its guard drops, also when
//! the test panics, and its folder is deleted. Nothing here touches the
//! shared Redis on 6379 or MariaDB on 3306. Needs `redis-server` and
//! `redis-cli` on PATH, and `mariadb-install-db` and `mariadbd` from the
//! `mariadb-server` package (`scripts/lib.sh` installs them).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to start answering on a loaded machine.
const START_TIMEOUT: Duration = Duration::from_secs(20);

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A folder of its own under the system's temporary folder; deleted on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(what: &str) -> TempDir {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let r: u32 = rand::random();
        let path =
            std::env::temp_dir().join(format!("wr-{what}-{}-{n}-{r:08x}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create a temporary folder");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loopback port nothing listens on right now. Another process could take
/// it before the server binds it; `RedisServer::start` then fails loudly.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid} failed");
}

/// One `redis-server` process the test owns, on its own port and folder.
pub struct RedisServer {
    pub port: u16,
    args: Vec<String>,
    dir: PathBuf,
    child: Option<Child>,
    stopped: bool,
}

impl RedisServer {
    /// Starts a server without persistence on a free port in `dir`.
    pub fn start(dir: &Path) -> RedisServer {
        Self::start_with(dir, &["--save", "", "--appendonly", "no"])
    }

    /// Starts a server with extra `redis-server` arguments.
    pub fn start_with(dir: &Path, extra: &[&str]) -> RedisServer {
        let mut server = RedisServer {
            port: free_port(),
            args: extra.iter().map(|s| (*s).to_owned()).collect(),
            dir: dir.to_owned(),
            child: None,
            stopped: false,
        };
        server.spawn();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server runs").id()
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.dir.join(format!("redis-{}.log", self.port)))
            .expect("create the server's log");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", &self.dir.to_string_lossy()])
            .args(["--daemonize", "no", "--protected-mode", "no"])
            .args(&self.args)
            .stdout(Stdio::from(log))
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server (is it installed? scripts/lib.sh installs it)");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the server answers PING (not LOADING).
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "redis-server on port {} exited at start ({status}); see {}",
                    self.port,
                    self.dir.display()
                );
            }
            if self.query(&["PING"]).is_ok_and(|r| r == "PONG") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs one command with a short-lived connection; the reply as text.
    pub fn query(&self, args: &[&str]) -> redis::RedisResult<String> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
        conn.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        let value: redis::Value = cmd.query(&mut conn)?;
        Ok(match value {
            redis::Value::SimpleString(s) => s,
            redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            redis::Value::Int(n) => n.to_string(),
            redis::Value::Okay => "OK".into(),
            other => format!("{other:?}"),
        })
    }

    /// Freezes the process (SIGSTOP): connections stay open, nothing answers.
    pub fn freeze(&mut self) {
        signal(self.pid(), "-STOP");
        self.stopped = true;
    }

    /// Lets a frozen process run again (SIGCONT).
    pub fn thaw(&mut self) {
        signal(self.pid(), "-CONT");
        self.stopped = false;
    }

    /// Kills the process (SIGKILL: no shutdown, no final save) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stopped = false;
    }

    /// Starts the server again on the same port, folder and arguments.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too; no SIGCONT needed first.
        self.kill();
    }
}

/// A Redis Cluster of three primaries and no replicas on loopback ports.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
    // Declared last: dropped after the servers that write into it.
    _dir: TempDir,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let dir = TempDir::new("cluster");
        let mut nodes = Vec::new();
        for i in 0..3 {
            let node_dir = dir.0.join(format!("node{i}"));
            std::fs::create_dir_all(&node_dir).expect("create a node folder");
            let bus = free_port().to_string();
            nodes.push(RedisServer::start_with(
                &node_dir,
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    &bus,
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
            ));
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("run redis-cli (is it installed? scripts/lib.sh installs it)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes, _dir: dir };
        cluster.wait_ok();
        cluster
    }

    /// Waits until every node sees every slot served.
    fn wait_ok(&self) {
        let deadline = Instant::now() + START_TIMEOUT;
        while !self.nodes.iter().all(|n| {
            n.query(&["CLUSTER", "INFO"])
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        }) {
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The seed URLs, comma-separated, as `--redis-url` takes them.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(RedisServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The port of the node that serves `key` (its "myself" line in
    /// CLUSTER NODES lists the slot ranges it owns).
    pub fn owner_of(&self, key: &str) -> u16 {
        let slot: u32 = self.nodes[0]
            .query(&["CLUSTER", "KEYSLOT", key])
            .expect("CLUSTER KEYSLOT")
            .parse()
            .expect("a slot number");
        for node in &self.nodes {
            let nodes = node.query(&["CLUSTER", "NODES"]).expect("CLUSTER NODES");
            let me = nodes
                .lines()
                .find(|l| l.contains("myself"))
                .expect("a myself line");
            let owns = me.split_whitespace().skip(8).any(|range| {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                matches!((lo.parse::<u32>(), hi.parse::<u32>()), (Ok(lo), Ok(hi)) if lo <= slot && slot <= hi)
            });
            if owns {
                return node.port;
            }
        }
        panic!("no node owns slot {slot}");
    }
}

/// Whether this process runs as root (mariadbd then needs `--user=root`).
fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// One `mariadbd` process the test owns: its own data folder (made by
/// `mariadb-install-db`), its own loopback port and socket, `root` without
/// a password. Stopped by its pid when the guard drops; nothing here
/// touches the machine's MariaDB on 3306. Needs the `mariadb-server`
/// package (`scripts/lib.sh` installs it).
pub struct MariaDbServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// Settings for a small, quick test server: a 4 MB redo log (not 96 MB),
/// a small buffer pool, no host name lookups.
const MARIADB_SETTINGS: &[&str] = &[
    "--innodb-log-file-size=4M",
    "--innodb-buffer-pool-size=16M",
    "--skip-name-resolve",
];

impl MariaDbServer {
    /// Makes a data folder in `dir` and starts a server on it.
    pub fn start(dir: &Path) -> MariaDbServer {
        let data = dir.join("data");
        let mut install = Command::new("mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .args(MARIADB_SETTINGS);
        if running_as_root() {
            install.arg("--user=root");
        }
        let out = install.output().expect(
            "run mariadb-install-db (is mariadb-server installed? scripts/lib.sh installs it)",
        );
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut server = MariaDbServer {
            port: free_port(),
            dir: dir.to_owned(),
            child: None,
        };
        server.spawn();
        server
    }

    /// A URL for `database` on this server.
    pub fn url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server runs").id()
    }

    fn spawn(&mut self) {
        let d = &self.dir;
        // mariadbd is in /usr/sbin, which a user's PATH may lack.
        let program = Path::new("/usr/sbin/mariadbd");
        let mut cmd = Command::new(if program.exists() {
            program
        } else {
            Path::new("mariadbd")
        });
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", d.join("data").display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", d.join("mysqld.sock").display()))
            .arg(format!("--pid-file={}", d.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", d.join("mysqld.err").display()))
            .args(MARIADB_SETTINGS)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if running_as_root() {
            cmd.arg("--user=root");
        }
        let child = cmd
            .spawn()
            .expect("start mariadbd (is mariadb-server installed? scripts/lib.sh installs it)");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits until the server greets a new connection (the handshake is
    /// its first packet, sent once it accepts clients).
    fn wait_ready(&mut self) {
        use std::io::Read;
        let deadline = Instant::now() + START_TIMEOUT;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "mariadbd on port {} exited at start ({status}); see {}",
                    self.port,
                    self.dir.join("mysqld.err").display()
                );
            }
            let greeted = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1))
                .and_then(|mut s| {
                    s.set_read_timeout(Some(Duration::from_secs(1)))?;
                    let mut buf = [0u8; 16];
                    s.read(&mut buf)
                })
                .is_ok_and(|n| n > 0);
            if greeted {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd on port {} did not answer; see {}",
                self.port,
                self.dir.join("mysqld.err").display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes the process (SIGSTOP): connections stay open, nothing answers.
    pub fn freeze(&mut self) {
        signal(self.pid(), "-STOP");
    }

    /// Lets a frozen process run again (SIGCONT).
    pub fn thaw(&mut self) {
        signal(self.pid(), "-CONT");
    }

    /// Stops the server as an operator would (SIGTERM: it ends every
    /// session and shuts down cleanly) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(child.id(), "-TERM");
            let deadline = Instant::now() + START_TIMEOUT;
            while !matches!(child.try_wait(), Ok(Some(_))) {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("mariadbd on port {} did not stop on SIGTERM", self.port);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Kills the process (SIGKILL, a stopped one too) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data folder and port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for MariaDbServer {
    fn drop(&mut self) {
        self.kill();
    }
}
