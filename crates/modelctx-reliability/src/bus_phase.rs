//! The fleet's change-bus phase: listeners spread over both instances, changes made on one
//! instance and then on the other, a Redis restart in the middle. Every listener must get each
//! change exactly once, and the resync notifications after the restart.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use modelctx::client::{Client, ListenEvent, Subscription, TaskSettings, ToolStart};
use modelctx::types::SubscriptionFilter;
use modelctx::types::tasks::TaskIdsFilter as _;
use modelctx::types::{ErrorObject, InputResponses};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::procfs;
use crate::stats::{Latencies, ms};

/// The resource every listener follows and the phase updates.
pub const REPORT: &str = "fleet://report";
/// Announced after the changes under test: what a listener gets before it is what it got.
pub const SENTINEL: &str = "fleet://sentinel";
/// How long one expected event may take.
const BOUND: Duration = Duration::from_secs(30);

/// A private `redis-server` on 127.0.0.1 (nothing written to disk), restartable on its port.
#[derive(Debug)]
pub struct RedisServer {
    bin: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts `bin` on `port` and waits until it accepts connections.
    ///
    /// # Errors
    /// It could not start or never listened.
    pub async fn start(bin: &Path, port: u16) -> io::Result<Self> {
        let mut redis = Self {
            bin: bin.to_owned(),
            port,
            child: None,
        };
        redis.start_again().await?;
        Ok(redis)
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills it (its clients' connections drop) and waits for the exit.
    ///
    /// # Errors
    /// The kill failed.
    pub async fn stop(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await?;
        }
        Ok(())
    }

    /// Starts it again on the same port.
    ///
    /// # Errors
    /// It could not start or never listened.
    pub async fn start_again(&mut self) -> io::Result<()> {
        let child = Command::new(&self.bin)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            if Instant::now() > deadline {
                return Err(io::Error::other("redis-server did not listen within 10 s"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }
}

/// One listener: its subscription and the instance it listens on.
struct Listener {
    subscription: Subscription,
    _client: Client,
}

/// What the phase found: its checks (description, passed) and its figures.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Each check and whether it passed.
    pub checks: Vec<(String, bool)>,
    /// Figures for the report.
    pub figures: serde_json::Map<String, Value>,
}

impl Outcome {
    fn check(&mut self, passed: bool, what: String) {
        self.checks.push((what, passed));
    }
}

fn failed(what: &str) -> impl FnOnce(modelctx::client::ClientError) -> io::Error + '_ {
    move |error| io::Error::other(format!("{what}: {error}"))
}

/// Where the phase runs: the two instances, and the proxy in front of them.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Each instance's endpoint, A then B (changes are triggered there, on purpose).
    pub instances: [String; 2],
    /// Each instance's port, to count the streams the proxy holds to it.
    pub ports: [u16; 2],
    /// The proxy's endpoint for listen streams: the listeners connect through it.
    pub proxy: String,
}

/// Runs the phase: `listeners` listen streams opened through the proxy (which spreads them over
/// both instances), changes on A, then on B, a task on A followed from B, then a restart of
/// `redis`.
///
/// # Errors
/// A client could not connect or listen, or Redis could not be restarted (checks that fail
/// are in the outcome instead).
pub async fn run(fleet: Fleet, redis: &mut RedisServer, listeners: usize) -> io::Result<Outcome> {
    let mut outcome = Outcome::default();
    let filter = SubscriptionFilter::new()
        .with_tools_list_changed()
        .with_resource(REPORT)
        .with_resource(SENTINEL);
    let held_before = fleet
        .ports
        .map(|port| procfs::established_to(port).unwrap_or(0));
    let mut all = Vec::with_capacity(listeners);
    for _ in 0..listeners {
        let client = Client::builder()
            .connect_http(&fleet.proxy)
            .await
            .map_err(failed("connect through the proxy"))?;
        let subscription = client
            .listen(filter.clone())
            .await
            .map_err(failed("subscriptions/listen"))?;
        all.push(Listener {
            subscription,
            _client: client,
        });
    }
    // The proxy's connections to each instance that appeared with the listeners: the streams
    // each instance holds.
    let held: Vec<usize> = fleet
        .ports
        .iter()
        .zip(held_before)
        .map(|(&port, before)| {
            procfs::established_to(port)
                .unwrap_or(0)
                .saturating_sub(before)
        })
        .collect();
    outcome.check(
        held.iter().all(|&n| n > 0) && held.iter().sum::<usize>() >= listeners,
        format!(
            "4: the {listeners} listen streams opened through nginx are held by both instances \
             (A {}, B {})",
            held[0], held[1]
        ),
    );
    outcome
        .figures
        .insert("streams_held".into(), json!({"A": held[0], "B": held[1]}));
    let urls = &fleet.instances;
    let triggers = [
        Client::builder()
            .connect_http(&urls[0])
            .await
            .map_err(failed("connect to A"))?,
        Client::builder()
            .connect_http(&urls[1])
            .await
            .map_err(failed("connect to B"))?,
    ];
    let changes = [
        updated(REPORT),
        ListenEvent::ToolsListChanged,
        updated(SENTINEL),
    ];
    for (i, name) in ["A", "B"].into_iter().enumerate() {
        let started = Instant::now();
        touch(&triggers[i], REPORT).await?;
        call(&triggers[i], "test_trigger_tool_change", json!({})).await?;
        touch(&triggers[i], SENTINEL).await?;
        let (exact, latencies) = collect(&mut all, &changes, started).await;
        outcome.check(
            exact == listeners,
            format!(
                "4: a resource update and a tool-list change on {name} reached all {listeners} \
                 listeners exactly once ({exact} did)"
            ),
        );
        outcome.figures.insert(
            format!("changes_on_{name}"),
            json!({"listeners": listeners, "exact": exact, "p50_ms": ms(latencies.percentile(50.0)), "p99_ms": ms(latencies.percentile(99.0))}),
        );
    }

    task_on_a_followed_from_b(urls, &mut outcome).await?;

    // Redis restarts: every listener is told to refetch what it follows, and changes cross
    // again afterwards.
    let started = Instant::now();
    redis.stop().await?;
    redis.start_again().await?;
    let resync = [
        ListenEvent::ToolsListChanged,
        updated(REPORT),
        updated(SENTINEL),
    ];
    let (exact, latencies) = collect(&mut all, &resync, started).await;
    outcome.check(
        exact == listeners,
        format!(
            "4: after a Redis restart all {listeners} listeners got the resync notifications \
             ({exact} did)"
        ),
    );
    outcome.figures.insert(
        "resync_after_redis_restart".into(),
        json!({"listeners": listeners, "exact": exact, "p50_ms": ms(latencies.percentile(50.0)), "p99_ms": ms(latencies.percentile(99.0))}),
    );
    let started = Instant::now();
    touch(&triggers[0], REPORT).await?;
    touch(&triggers[0], SENTINEL).await?;
    let (exact, _) = collect(&mut all, &[updated(REPORT), updated(SENTINEL)], started).await;
    outcome.check(
        exact == listeners,
        format!(
            "4: after the restart a change on A reached all {listeners} listeners ({exact} did)"
        ),
    );
    Ok(outcome)
}

/// A task runs on A (`confirm_delete`: it asks, is answered on A, completes); a listener on B
/// follows it. Both instances keep tasks in the same Redis store, and B's listener hears each
/// status through the bus.
async fn task_on_a_followed_from_b(urls: &[String; 2], outcome: &mut Outcome) -> io::Result<()> {
    let tasks = || Client::builder().tasks(TaskSettings::new());
    // A's client declares form elicitation, so that the task may ask; the phase answers with
    // `tasks/update` itself.
    let on_a = tasks()
        .on_elicitation(|_, _| async { Err(ErrorObject::internal("answered with tasks/update")) })
        .connect_http(&urls[0])
        .await
        .map_err(failed("connect to A"))?;
    let on_b = tasks()
        .connect_http(&urls[1])
        .await
        .map_err(failed("connect to B"))?;
    let started = Instant::now();
    let ToolStart::Task(created) = on_a
        .start_tool("confirm_delete", json!({"filename": "q3.csv"}))
        .await
        .map_err(failed("confirm_delete as a task on A"))?
    else {
        return Err(io::Error::other("confirm_delete did not run as a task"));
    };
    let id = created.task().task_id.clone();
    let mut filter = SubscriptionFilter::new();
    filter.set_task_ids(Some(vec![id.clone()]));
    let mut at_b = on_b
        .listen(filter)
        .await
        .map_err(failed("subscriptions/listen on B"))?;
    if at_b.acknowledged().task_ids() != Some(vec![id.clone()]) {
        return Err(io::Error::other(format!(
            "B did not follow task {id} of A (acknowledged {:?})",
            at_b.acknowledged()
        )));
    }
    let mut seen = Vec::new();
    // Its status when B starts listening (working, or input_required if the handler has
    // asked already), then input_required if not seen yet.
    while seen.last().map(String::as_str) != Some("input_required") {
        seen.push(next_status(&mut at_b, &seen).await?);
    }
    let answer: InputResponses = serde_json::from_value(
        json!({"confirm_delete": {"action": "accept", "content": {"confirm": true}}}),
    )
    .map_err(io::Error::other)?;
    on_a.update_task(&id, answer)
        .await
        .map_err(failed("tasks/update on A"))?;
    while !matches!(
        seen.last().map(String::as_str),
        Some("completed" | "failed" | "cancelled")
    ) {
        seen.push(next_status(&mut at_b, &seen).await?);
    }
    // Seen from B: its status when B started listening (working, or input_required if the
    // handler had asked already), input_required, then the answered run: working (unless it
    // completed before B read the store) and completed.
    let seen: Vec<&str> = seen.iter().map(String::as_str).collect();
    let passed = [
        &["working", "input_required", "working", "completed"][..],
        &["working", "input_required", "completed"],
        &["input_required", "working", "completed"],
        &["input_required", "completed"],
    ]
    .contains(&seen.as_slice());
    outcome.check(
        passed,
        format!(
            "4: a listener on B heard each status of a task running on A ({})",
            seen.join(" → ")
        ),
    );
    outcome.figures.insert(
        "task_on_a_followed_from_b".into(),
        json!({"statuses": seen, "ms": ms(Some(started.elapsed()))}),
    );
    Ok(())
}

/// The next `notifications/tasks` status on `subscription`.
async fn next_status(subscription: &mut Subscription, seen: &[String]) -> io::Result<String> {
    loop {
        match tokio::time::timeout(BOUND, subscription.next()).await {
            Ok(Some(ListenEvent::Other { method, params })) if method == "notifications/tasks" => {
                if let Some(status) = params.as_ref().and_then(|p| p["status"].as_str()) {
                    return Ok(status.to_owned());
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => return Err(io::Error::other("the task listen stream ended")),
            Err(_) => {
                return Err(io::Error::other(format!(
                    "no task status within {BOUND:?} (after {seen:?})"
                )));
            }
        }
    }
}

fn updated(uri: &str) -> ListenEvent {
    ListenEvent::ResourceUpdated {
        uri: uri.to_owned(),
    }
}

async fn touch(client: &Client, uri: &str) -> io::Result<()> {
    call(client, "touch", json!({"uri": uri})).await
}

async fn call(client: &Client, tool: &str, arguments: Value) -> io::Result<()> {
    let result = client
        .call_tool(tool, arguments)
        .await
        .map_err(failed(tool))?;
    if result.is_error == Some(true) {
        return Err(io::Error::other(format!("{tool} failed: {result:?}")));
    }
    Ok(())
}

/// Reads every listener up to [`SENTINEL`]'s update: how many got exactly `expected`, and when
/// each had it all (from `started`).
async fn collect(
    listeners: &mut [Listener],
    expected: &[ListenEvent],
    started: Instant,
) -> (usize, Latencies) {
    let reads = listeners.iter_mut().map(|listener| async move {
        let mut events = Vec::new();
        loop {
            match tokio::time::timeout(BOUND, listener.subscription.next()).await {
                Ok(Some(event)) => {
                    let done = event == updated(SENTINEL);
                    events.push(event);
                    if done {
                        return (events, started.elapsed());
                    }
                }
                Ok(None) | Err(_) => return (events, started.elapsed()),
            }
        }
    });
    let mut latencies = Latencies::new();
    let mut exact = 0;
    for (events, took) in futures::future::join_all(reads).await {
        latencies.record(took);
        exact += usize::from(events == expected);
    }
    (exact, latencies)
}
