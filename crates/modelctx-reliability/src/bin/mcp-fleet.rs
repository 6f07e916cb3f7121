//! Fleet driver: two `reliability-server` instances behind nginx (round-robin, one worker, on
//! 127.0.0.1), and two-round multi-round-trip flows through it. nginx adds
//! `X-Fleet-Upstream: $upstream_addr` to every answer, so each round's instance is known.
//!
//! Phases (all must pass, or the process fails):
//!
//! 1. **shared keys** — both instances get `MCP_REQUEST_STATE_KEYS=OLD`. N flows in sequence,
//!    each round on the other instance (strict round-robin; a `server/discover` after every odd
//!    flow flips the order, so both directions occur): 0 failures, every flow crossed. Then N
//!    flows from C concurrent workers: 0 failures.
//! 2. **per-process keys** — both restarted without the variable (each seals under its own
//!    random key). A cross-instance round two must get exactly the documented -32602
//!    `{"code":-32602,"message":"Invalid or expired requestState","data":{"reason":"invalid_request_state"}}`
//!    (HTTP 400), a same-instance one must complete; the driver starts a rejected flow again
//!    (the restart policy lives here) until it completes. N flows from C workers: all
//!    complete, and rejections are exactly the cross-instance rounds. With one sequential
//!    client, strict alternation makes every retry cross again: shown on one flow.
//! 3. **rolling rotation** — back to `[OLD]`, then `[OLD,NEW]` → `[NEW,OLD]` → `[NEW]`, restarting
//!    one instance at a time (SIGTERM, graceful) while C workers keep running flows; before each
//!    phase the flows that started under the previous one are drained (in production: one
//!    round's TTL). 0 failures, no restart needed. At the end a state minted under OLD is
//!    refused and one minted now completes.
//!
//! Usage: `mcp-fleet --server <reliability-server> --nginx <nginx> --dir <work dir> --flows N`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use modelctx::types::Method as _;
use modelctx::types::methods::{Discover, Elicit};
use modelctx_reliability::bus_phase::{self, RedisServer};
use modelctx_reliability::server::{HttpServer, Launch};
use modelctx_reliability::stats::{Latencies, ms};
use modelctx_reliability::wire::{self, CONFIRMED_TEXT, MRTR_TOOL};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, Notify};

#[derive(Debug, Parser)]
#[command(about = "Multi-round-trip flows across two server instances behind nginx")]
struct Args {
    /// The server binary (`reliability-server`).
    #[arg(long)]
    server: PathBuf,
    /// The nginx binary.
    #[arg(long, default_value = "nginx")]
    nginx: PathBuf,
    /// Work directory for nginx's configuration, pid, logs and temp files.
    #[arg(long)]
    dir: PathBuf,
    /// Flows per phase.
    #[arg(long, default_value_t = 1000)]
    flows: usize,
    /// Concurrent workers in the concurrent phases.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Attempts per flow before giving up (per-process keys phase).
    #[arg(long, default_value_t = 64)]
    max_attempts: u32,
    /// Restart instances with SIGTERM alone, without first taking them out of nginx's
    /// rotation (measures what that loses).
    #[arg(long)]
    no_lb_drain: bool,
    /// Write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run phase 4 (the change bus) with this `redis-server` binary.
    #[arg(long)]
    redis_server: Option<PathBuf>,
    /// Listen streams in phase 4, half on each instance.
    #[arg(long, default_value_t = 100)]
    listeners: usize,
}

fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A fresh 64-character secret.
fn secret() -> Result<String, Error> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A free port on 127.0.0.1 (bound, then released for the process that will use it).
fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Polls until something accepts connections on `port` (at most `limit`).
async fn wait_for_port(port: u16, limit: Duration) -> Result<(), Error> {
    let deadline = Instant::now() + limit;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("nothing listens on 127.0.0.1:{port} after {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// nginx in the foreground with its own configuration, pid, logs and temp paths.
struct Nginx {
    child: Child,
    pid: u32,
    port: u16,
    dir: PathBuf,
    upstreams: [u16; 2],
}

/// nginx's configuration: round-robin over `upstreams` (instance `down` taken out), listening on
/// 127.0.0.1:`port`, every path under `dir`.
fn nginx_config(dir: &Path, upstreams: [u16; 2], port: u16, down: Option<usize>) -> String {
    {
        let d = dir.display();
        let t = dir.join("tmp");
        let t = t.display();
        // As root, nginx would switch its worker to `nobody`, which cannot use these paths.
        let user = if rustix::process::geteuid().is_root() {
            "user root;"
        } else {
            ""
        };
        let server = |i: usize| {
            let state = if down == Some(i) { " down" } else { "" };
            format!("server 127.0.0.1:{} max_fails=0{state};", upstreams[i])
        };
        format!(
            "# Written by mcp-fleet (scripts/fleet.sh); git-ignored.
{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {t}/body;
    proxy_temp_path {t}/proxy;
    fastcgi_temp_path {t}/fastcgi;
    uwsgi_temp_path {t}/uwsgi;
    scgi_temp_path {t}/scgi;
    client_max_body_size 4m;
    keepalive_requests 100000;
    upstream mcp_fleet {{
        # Round-robin; never marked failed, so a restarted instance gets traffic at once.
        {a}
        {b}
    }}
    upstream mcp_streams {{
        # Listen streams last: the instance holding fewer takes the next one. Round-robin
        # would put every stream on one instance when each client sends one other request
        # (e.g. server/discover) before it listens.
        least_conn;
        {a}
        {b}
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://mcp_fleet;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_buffering off;
            # A refused connection (an instance that is down) goes to the other one.
            proxy_next_upstream error timeout;
            add_header X-Fleet-Upstream $upstream_addr always;
        }}
        location /streams/mcp {{
            proxy_pass http://mcp_streams/mcp;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_next_upstream error timeout;
        }}
    }}
}}
",
            a = server(0),
            b = server(1),
        )
    }
}

impl Nginx {
    async fn start(bin: &Path, dir: &Path, upstreams: [u16; 2]) -> Result<Self, Error> {
        let port = free_port()?;
        std::fs::create_dir_all(dir.join("tmp"))?;
        let log = dir.join("error.log");
        let _ = std::fs::remove_file(&log);
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, nginx_config(dir, upstreams, port, None))?;
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(&log)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let pid = child.id().ok_or("nginx exited at once")?;
        let mut nginx = Self {
            child,
            pid,
            port,
            dir: dir.to_owned(),
            upstreams,
        };
        if let Err(error) = wait_for_port(port, Duration::from_secs(30)).await {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = nginx.child.start_kill();
            return Err(format!("nginx did not start: {error}\n{log}").into());
        }
        Ok(nginx)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The same endpoint for listen streams (least connections, no read timeout).
    fn streams_url(&self) -> String {
        format!("http://127.0.0.1:{}/streams/mcp", self.port)
    }

    /// The worker processes (children of the master), from `/proc`.
    fn workers(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|stat| {
                        // `pid (comm) state ppid …`; comm may hold spaces, so split after ')'.
                        let rest = stat.rsplit_once(')')?.1;
                        rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                    })
                    == Some(self.pid)
            })
            .collect()
    }

    /// Rewrites the configuration and reloads it (SIGHUP); returns once every worker of the old
    /// configuration has finished its requests and exited, so nothing is sent to an instance
    /// taken out any more.
    async fn reload(&self, down: Option<usize>) -> Result<(), Error> {
        let old = self.workers();
        std::fs::write(
            self.dir.join("nginx.conf"),
            nginx_config(&self.dir, self.upstreams, self.port, down),
        )?;
        let pid = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or("invalid nginx pid")?;
        rustix::process::kill_process(pid, rustix::process::Signal::HUP)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self.workers();
            if !now.is_empty() && now.iter().all(|w| !old.contains(w)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
                return Err(format!("nginx did not reload within 30 s\n{log}").into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    async fn stop(mut self) -> Result<(), Error> {
        // SIGTERM: fast shutdown.
        modelctx_reliability::server::terminate(self.pid)?;
        tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await??;
        Ok(())
    }
}

/// The two instances, restartable on their fixed ports.
struct Fleet {
    bin: PathBuf,
    ports: [u16; 2],
    servers: [Option<HttpServer>; 2],
    /// The Redis change bus instances join when (re)started.
    bus: Option<String>,
}

impl Fleet {
    async fn start(&mut self, i: usize, keys: Option<&str>) -> Result<(), Error> {
        let launch = Launch {
            keys: keys.map(str::to_owned),
            bus: self.bus.clone(),
            port: self.ports[i],
            show_logs: false,
            streams_per_client: None,
            predictable_malloc: false,
        };
        // The old process has exited; its port is free again (SO_REUSEADDR).
        let server = HttpServer::start(&self.bin, &launch).await?;
        self.servers[i] = Some(server);
        Ok(())
    }

    /// Restarts instance `i` with `keys`: out of nginx's rotation first (unless `lb_drain` is
    /// off), graceful stop (SIGTERM: no new connections, requests in flight finish), start,
    /// back into the rotation.
    async fn restart(
        &mut self,
        i: usize,
        keys: Option<&str>,
        nginx: &Nginx,
        lb_drain: bool,
    ) -> Result<(), Error> {
        if lb_drain {
            nginx.reload(Some(i)).await?;
        }
        if let Some(server) = self.servers[i].take() {
            let status = server.stop(Duration::from_secs(30)).await?;
            if !status.success() {
                return Err(format!("instance {i} exited with {status}").into());
            }
        }
        self.start(i, keys).await?;
        if lb_drain {
            nginx.reload(None).await?;
        }
        Ok(())
    }

    async fn stop_all(&mut self) -> Result<(), Error> {
        for server in self.servers.iter_mut().filter_map(Option::take) {
            server.stop(Duration::from_secs(30)).await?;
        }
        Ok(())
    }
}

/// One HTTP round's outcome.
#[derive(Debug)]
struct Round {
    instance: usize,
    status: u16,
    body: Value,
}

/// Sends requests through nginx.
struct Driver {
    http: reqwest::Client,
    url: String,
    ids: AtomicU64,
    ports: [u16; 2],
}

impl Driver {
    /// The instance that answered: after a refused connection nginx lists every upstream it
    /// tried, and the last one answered.
    fn instance_of(&self, upstream: &str) -> Option<usize> {
        let last = upstream.rsplit(',').next()?.trim();
        let port: u16 = last.rsplit(':').next()?.parse().ok()?;
        self.ports.iter().position(|&p| p == port)
    }

    async fn post(&self, body: &Value) -> Result<Round, String> {
        let mut request = self.http.post(&self.url).body(body.to_string());
        for (name, value) in wire::headers_for(body) {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| format!("send: {e}"))?;
        let status = response.status().as_u16();
        let upstream = response
            .headers()
            .get("x-fleet-upstream")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let text = response.text().await.map_err(|e| format!("body: {e}"))?;
        let instance = self
            .instance_of(&upstream)
            .ok_or_else(|| format!("HTTP {status} from unknown upstream {upstream:?}: {text}"))?;
        let body: Value = serde_json::from_str(&text)
            .map_err(|_| format!("HTTP {status} from instance {instance}, not JSON: {text}"))?;
        Ok(Round {
            instance,
            status,
            body,
        })
    }

    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Round one: the question and the sealed state.
    async fn round_one(&self) -> Result<(Round, String), String> {
        let round = self
            .post(&wire::call_tool(self.next_id(), MRTR_TOOL, &json!({})))
            .await?;
        let result = &round.body["result"];
        match result["requestState"].as_str() {
            Some(state)
                if round.status == 200
                    && result["resultType"] == "input_required"
                    && result["inputRequests"]["confirm"]["method"] == Elicit::NAME =>
            {
                let state = state.to_owned();
                Ok((round, state))
            }
            _ => Err(format!(
                "round one: HTTP {} from instance {}: {}",
                round.status, round.instance, round.body
            )),
        }
    }

    /// Round two with `state`.
    async fn round_two(&self, state: &str) -> Result<(Round, RoundTwo), String> {
        let round = self
            .post(&wire::mrtr_round_two(self.next_id(), state))
            .await?;
        let verdict = if round.status == 200
            && round.body["result"]["resultType"] == "complete"
            && round.body["result"]["content"][0]["text"] == CONFIRMED_TEXT
        {
            RoundTwo::Complete
        } else if round.status == 400 && round.body["error"] == wire::invalid_request_state() {
            RoundTwo::InvalidState
        } else {
            return Err(format!(
                "round two: HTTP {} from instance {}: {}",
                round.status, round.instance, round.body
            ));
        };
        Ok((round, verdict))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoundTwo {
    Complete,
    InvalidState,
}

/// What a flow did.
#[derive(Debug, Default, Clone)]
struct FlowRecord {
    /// (instance of round one, instance of round two, rejected) per attempt.
    attempts: Vec<(usize, usize, bool)>,
    failure: Option<String>,
    elapsed: Duration,
}

impl FlowRecord {
    fn completed(&self) -> bool {
        self.failure.is_none() && self.attempts.last().is_some_and(|a| !a.2)
    }
}

/// Runs one flow; with `restart`, a rejected round two starts the flow again.
async fn flow(driver: &Driver, restart: bool, max_attempts: u32) -> FlowRecord {
    let started = Instant::now();
    let mut record = FlowRecord::default();
    for _ in 0..max_attempts {
        let (one, state) = match driver.round_one().await {
            Ok(r) => r,
            Err(failure) => {
                record.failure = Some(failure);
                break;
            }
        };
        match driver.round_two(&state).await {
            Ok((two, RoundTwo::Complete)) => {
                record.attempts.push((one.instance, two.instance, false));
                break;
            }
            Ok((two, RoundTwo::InvalidState)) => {
                record.attempts.push((one.instance, two.instance, true));
                if !restart {
                    record.failure = Some(format!(
                        "round two rejected (-32602 invalid_request_state): instance {} → {}",
                        one.instance, two.instance
                    ));
                    break;
                }
            }
            Err(failure) => {
                record.failure = Some(failure);
                break;
            }
        }
    }
    if record.failure.is_none() && !record.completed() {
        record.failure = Some(format!("not complete after {max_attempts} attempts"));
    }
    record.elapsed = started.elapsed();
    record
}

/// Runs `flows` flows on `concurrency` workers.
async fn concurrent(
    driver: &Arc<Driver>,
    flows: usize,
    concurrency: usize,
    restart: bool,
    max_attempts: u32,
) -> Vec<FlowRecord> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (driver, next) = (Arc::clone(driver), Arc::clone(&next));
        workers.spawn(async move {
            let mut records = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < flows {
                records.push(flow(&driver, restart, max_attempts).await);
            }
            records
        });
    }
    let mut records = Vec::with_capacity(flows);
    while let Some(joined) = workers.join_next().await {
        records.extend(joined.unwrap_or_default());
    }
    records
}

/// Figures of a set of flows.
#[derive(Debug, Default)]
struct Summary {
    flows: usize,
    completed: usize,
    failures: Vec<String>,
    crossed: usize,
    rejected_rounds: usize,
    attempts: BTreeMap<usize, usize>,
    per_instance: [usize; 2],
    latency: Latencies,
}

impl Summary {
    fn of(records: &[FlowRecord]) -> Self {
        let mut s = Self {
            flows: records.len(),
            ..Self::default()
        };
        for r in records {
            if r.completed() {
                s.completed += 1;
                s.latency.record(r.elapsed);
            }
            if let Some(f) = &r.failure {
                s.failures.push(f.clone());
            }
            *s.attempts.entry(r.attempts.len()).or_default() += 1;
            for &(one, two, rejected) in &r.attempts {
                s.per_instance[one] += 1;
                s.per_instance[two] += 1;
                s.rejected_rounds += usize::from(rejected);
            }
            if r.attempts.last().is_some_and(|&(one, two, _)| one != two) {
                s.crossed += 1;
            }
        }
        s
    }

    fn line(&self, name: &str, wall: Duration) -> String {
        format!(
            "| {name} | {} | {} | {} | {} | {} | {}/{} | {} | {} | {:.1?} |",
            self.flows,
            self.completed,
            self.failures.len(),
            self.crossed,
            self.rejected_rounds,
            self.per_instance[0],
            self.per_instance[1],
            ms(self.latency.percentile(50.0)),
            ms(self.latency.percentile(99.0)),
            wall
        )
    }

    fn json(&self, wall: Duration) -> Value {
        json!({
            "flows": self.flows,
            "completed": self.completed,
            "failures": self.failures.len(),
            "first_failures": self.failures.iter().take(5).collect::<Vec<_>>(),
            "crossed": self.crossed,
            "rejected_rounds": self.rejected_rounds,
            "attempts": self.attempts.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "rounds_per_instance": self.per_instance,
            "p50_ms": ms(self.latency.percentile(50.0)),
            "p99_ms": ms(self.latency.percentile(99.0)),
            "wall_seconds": wall.as_secs_f64(),
        })
    }
}

/// Phase 1a: in sequence, every flow crossing instances.
async fn alternating(driver: &Driver, flows: usize) -> Result<Vec<FlowRecord>, Error> {
    let mut records = Vec::with_capacity(flows);
    for n in 0..flows {
        records.push(flow(driver, false, 1).await);
        if n % 2 == 1 {
            // One request in between flips which instance the next flow starts on.
            let discover = driver
                .post(&wire::request(driver.next_id(), Discover::NAME, json!({})))
                .await?;
            if discover.status != 200 {
                return Err(format!("discover: {}", discover.body).into());
            }
        }
    }
    Ok(records)
}

/// Phase 3: flows run continuously while `rotate` restarts instances.
struct Rotation {
    generation: AtomicU64,
    in_flight: Mutex<BTreeMap<u64, usize>>,
    finished: Notify,
    stop: AtomicBool,
    completed: AtomicUsize,
}

impl Rotation {
    /// Waits until no flow of an older generation than the current one is in flight.
    async fn drain(&self) {
        let current = self.generation.load(Ordering::SeqCst);
        loop {
            let notified = self.finished.notified();
            if self
                .in_flight
                .lock()
                .await
                .range(..current)
                .all(|(_, n)| *n == 0)
            {
                return;
            }
            notified.await;
        }
    }

    /// Waits until `more` flows have completed from now.
    async fn progress(&self, more: usize) {
        let target = self.completed.load(Ordering::SeqCst) + more;
        loop {
            let notified = self.finished.notified();
            if self.completed.load(Ordering::SeqCst) >= target {
                return;
            }
            notified.await;
        }
    }
}

async fn rotation_worker(driver: Arc<Driver>, rotation: Arc<Rotation>) -> Vec<FlowRecord> {
    let mut records = Vec::new();
    while !rotation.stop.load(Ordering::SeqCst) {
        let generation = rotation.generation.load(Ordering::SeqCst);
        *rotation
            .in_flight
            .lock()
            .await
            .entry(generation)
            .or_default() += 1;
        let record = flow(&driver, false, 1).await;
        *rotation
            .in_flight
            .lock()
            .await
            .entry(generation)
            .or_default() -= 1;
        if record.completed() {
            rotation.completed.fetch_add(1, Ordering::SeqCst);
        }
        records.push(record);
        rotation.finished.notify_waiters();
    }
    records
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    std::fs::create_dir_all(&args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    let (old, new) = (secret()?, secret()?);
    let ports = [free_port()?, free_port()?];
    let mut fleet = Fleet {
        bin: args.server.clone(),
        ports,
        servers: [None, None],
        bus: None,
    };
    let mut redis = match &args.redis_server {
        Some(bin) => Some(RedisServer::start(bin, free_port()?).await?),
        None => None,
    };
    fleet.start(0, Some(&old)).await?;
    fleet.start(1, Some(&old)).await?;
    let nginx = match Nginx::start(&args.nginx, &dir, ports).await {
        Ok(nginx) => nginx,
        Err(error) => {
            fleet.stop_all().await?;
            return Err(error);
        }
    };
    let driver = Arc::new(Driver {
        // One connection per request: an nginx reload closes the idle keep-alive connections
        // of its old worker, and a request racing that close would fail on the client side.
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(0)
            .build()?,
        url: nginx.url(),
        ids: AtomicU64::new(1),
        ports,
    });
    out(&format!(
        "fleet: instances on 127.0.0.1:{} and :{}, nginx round-robin on {}; {} flows per phase, {} workers",
        ports[0], ports[1], driver.url, args.flows, args.concurrency
    ));
    let result = run(
        &args,
        &mut fleet,
        &nginx,
        &driver,
        [&old, &new],
        redis.as_mut(),
    )
    .await;
    let stopped = nginx.stop().await;
    fleet.stop_all().await?;
    let figures = result?;
    stopped?;
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)?;
    }
    Ok(())
}

fn check(ok: bool, what: &str, failures: &mut Vec<String>) {
    out(&format!("  {} {what}", if ok { "ok  " } else { "FAIL" }));
    if !ok {
        failures.push(what.to_owned());
    }
}

async fn run(
    args: &Args,
    fleet: &mut Fleet,
    nginx: &Nginx,
    driver: &Arc<Driver>,
    [old, new]: [&str; 2],
    redis: Option<&mut RedisServer>,
) -> Result<Value, Error> {
    let mut failures = Vec::new();
    let mut figures = serde_json::Map::new();
    out(
        "\n| phase | flows | completed | failed | crossed instances | rejected rounds | rounds on A/B | p50 ms | p99 ms | wall |",
    );
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");

    // 1. Shared keys.
    let started = Instant::now();
    let records = alternating(driver, args.flows).await?;
    let wall = started.elapsed();
    let s = Summary::of(&records);
    out(&s.line("1a shared keys, sequential, alternating", wall));
    let directions = records.iter().filter_map(|r| r.attempts.last()).fold(
        [0usize; 2],
        |mut d, &(one, _, _)| {
            d[one] += 1;
            d
        },
    );
    check(
        s.failures.is_empty() && s.completed == args.flows,
        "1a: every flow completed",
        &mut failures,
    );
    check(
        s.crossed == args.flows,
        "1a: every flow's rounds were on different instances",
        &mut failures,
    );
    check(
        directions[0] > 0 && directions[1] > 0,
        "1a: both directions (A→B and B→A) occurred",
        &mut failures,
    );
    figures.insert("shared_sequential".into(), s.json(wall));
    let old_state = driver.round_one().await.map_err(Error::from)?.1;

    let started = Instant::now();
    let records = concurrent(driver, args.flows, args.concurrency, false, 1).await;
    let wall = started.elapsed();
    let s = Summary::of(&records);
    out(&s.line("1b shared keys, concurrent", wall));
    check(
        s.failures.is_empty() && s.completed == args.flows,
        "1b: every flow completed",
        &mut failures,
    );
    figures.insert("shared_concurrent".into(), s.json(wall));

    // 2. Per-process keys.
    let drain = !args.no_lb_drain;
    fleet.restart(0, None, nginx, drain).await?;
    fleet.restart(1, None, nginx, drain).await?;
    let started = Instant::now();
    let records = concurrent(
        driver,
        args.flows,
        args.concurrency,
        true,
        args.max_attempts,
    )
    .await;
    let wall = started.elapsed();
    let s = Summary::of(&records);
    out(&s.line("2 per-process keys, concurrent, restart on -32602", wall));
    let exact = records
        .iter()
        .flat_map(|r| &r.attempts)
        .all(|&(one, two, rejected)| rejected == (one != two));
    check(
        s.failures.is_empty() && s.completed == args.flows,
        "2: every flow completed after restarts",
        &mut failures,
    );
    check(
        s.rejected_rounds > 0,
        "2: cross-instance rounds were rejected",
        &mut failures,
    );
    check(
        exact,
        "2: rejected exactly the cross-instance rounds (exact -32602 body, HTTP 400)",
        &mut failures,
    );
    let mut fig = s.json(wall);
    fig["attempt_histogram"] = json!(s.attempts);
    figures.insert("per_process_concurrent".into(), fig);
    // One sequential client: strict alternation sends every retry's round two across again.
    let stuck = flow(driver, true, 10).await;
    let all_rejected =
        stuck.attempts.len() == 10 && stuck.attempts.iter().all(|&(a, b, r)| r && a != b);
    out(&format!(
        "  2: one sequential client, 10 attempts: {} rejected, completed: {}",
        stuck.attempts.iter().filter(|a| a.2).count(),
        stuck.completed()
    ));
    check(
        all_rejected,
        "2: a lone sequential client never completes under strict round-robin",
        &mut failures,
    );
    figures.insert(
        "per_process_sequential_attempts_rejected".into(),
        json!(stuck.attempts.len()),
    );

    // 3. Rolling three-phase rotation while flows run.
    fleet.restart(0, Some(old), nginx, drain).await?;
    fleet.restart(1, Some(old), nginx, drain).await?;
    let rotation = Arc::new(Rotation {
        generation: AtomicU64::new(0),
        in_flight: Mutex::new(BTreeMap::new()),
        finished: Notify::new(),
        stop: AtomicBool::new(false),
        completed: AtomicUsize::new(0),
    });
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency {
        workers.spawn(rotation_worker(Arc::clone(driver), Arc::clone(&rotation)));
    }
    // Spread the flows over the steps: each of the 6 restarts is followed by this many.
    let per_step = (args.flows / 7).max(10);
    let bound = Duration::from_secs(120);
    let stalled = |what: &str| format!("3: no progress within {bound:?} ({what})");
    tokio::time::timeout(bound, rotation.progress(per_step))
        .await
        .map_err(|_| stalled("before the first restart"))?;
    let phases = [
        format!("{old},{new}"),
        format!("{new},{old}"),
        new.to_owned(),
    ];
    let mut steps = Vec::new();
    for (phase, keys) in phases.iter().enumerate() {
        // Tokens minted under the previous phase must be used (or expire) before the next one.
        rotation.generation.fetch_add(1, Ordering::SeqCst);
        tokio::time::timeout(bound, rotation.drain())
            .await
            .map_err(|_| stalled("draining"))?;
        for instance in 0..2 {
            let t = Instant::now();
            fleet.restart(instance, Some(keys), nginx, drain).await?;
            steps.push(json!({"phase": phase + 1, "instance": instance, "restart_ms": t.elapsed().as_secs_f64() * 1000.0, "completed_before": rotation.completed.load(Ordering::SeqCst)}));
            tokio::time::timeout(bound, rotation.progress(per_step))
                .await
                .map_err(|_| stalled("after a restart"))?;
        }
    }
    rotation.stop.store(true, Ordering::SeqCst);
    let mut records = Vec::new();
    while let Some(joined) = workers.join_next().await {
        records.extend(joined?);
    }
    let wall = started.elapsed();
    let s = Summary::of(&records);
    out(&s.line("3 rolling rotation [OLD]→[OLD,NEW]→[NEW,OLD]→[NEW]", wall));
    check(
        s.failures.is_empty(),
        "3: no flow failed during the rotation",
        &mut failures,
    );
    check(
        s.completed >= 7 * per_step,
        "3: flows kept completing through all six restarts",
        &mut failures,
    );
    // The rotation took effect: a state sealed under OLD is refused, a new one completes.
    let (_, verdict) = driver.round_two(&old_state).await.map_err(Error::from)?;
    check(
        verdict == RoundTwo::InvalidState,
        "3: a state sealed under OLD is refused after [NEW]",
        &mut failures,
    );
    let fresh = flow(driver, true, args.max_attempts).await;
    check(
        fresh.completed(),
        "3: a new flow completes under [NEW]",
        &mut failures,
    );
    let mut fig = s.json(wall);
    fig["restarts"] = json!(steps);
    figures.insert("rotation".into(), fig);
    for failure in s.failures.iter().take(5) {
        out(&format!("  failure: {failure}"));
    }

    // 4. The change bus: both instances restarted on Redis, listeners on both.
    if let Some(redis) = redis {
        fleet.bus = Some(redis.url());
        fleet.restart(0, Some(new), nginx, drain).await?;
        fleet.restart(1, Some(new), nginx, drain).await?;
        let urls = fleet
            .ports
            .map(|port| format!("http://127.0.0.1:{port}/mcp"));
        let started = Instant::now();
        let phase = bus_phase::run(
            bus_phase::Fleet {
                instances: urls,
                ports: fleet.ports,
                proxy: nginx.streams_url(),
            },
            redis,
            args.listeners,
        )
        .await?;
        out(&format!(
            "\n4 change bus: {} listeners through nginx, {:.1} s",
            args.listeners,
            started.elapsed().as_secs_f64()
        ));
        for (what, passed) in phase.checks {
            check(passed, &what, &mut failures);
        }
        figures.insert("bus".into(), Value::Object(phase.figures));
    }
    if failures.is_empty() {
        out("\nfleet: all phases passed");
        Ok(Value::Object(figures))
    } else {
        Err(format!(
            "fleet: {} checks failed: {}",
            failures.len(),
            failures.join("; ")
        )
        .into())
    }
}
