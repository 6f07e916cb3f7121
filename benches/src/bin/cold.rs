//! Cold start: how long a fresh process takes to answer.
//!
//! ```text
//! cold [-n N] --discover [--] CMD [ARGS...]   # spawn a stdio server, send `server/discover`,
//!                                             # time spawn → the first line on its stdout
//! cold [-n N] --exit [--] CMD [ARGS...]       # time spawn → the process exited (a one-shot
//!                                             # client such as `mcp call`), stdout read to EOF,
//!                                             # and spawn → its first line on stdout
//! ```
//!
//! Runs the command N times (default 7), one after the other, and prints one line:
//! `median_ms=… min_ms=… max_ms=… samples_ms=a,b,… runs=N`; with `--discover` also
//! `rss_kib=…`, the median VmRSS of the server right after its answer (its idle memory on
//! stdio); with `--exit` also `printed_median_ms=…` (and `printed_min_ms`, `printed_max_ms`,
//! `printed_samples_ms`): spawn → the first line on stdout, the result shown. With `--discover`
//! the answer must be a JSON-RPC result for id 1; with `--exit` the process must exit with
//! status 0 and print something.
//! The clock starts just before `spawn` (fork + exec included) and stops when the answer is read.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use modelctx_benches::{Args, PROTOCOL_VERSION, eprint_line};

const USAGE: &str = "usage: cold [-n N] (--discover | --exit) [--] CMD [ARGS...]";

/// The `server/discover` request of a 2026-07-28 client that asks for nothing optional.
fn discover_request() -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{{"#,
            r#""io.modelcontextprotocol/protocolVersion":"{version}","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"mcp-cold","version":"0.1.0"}}}}}}}}"#,
            "\n"
        ),
        version = PROTOCOL_VERSION
    )
}

/// VmRSS of process `pid` in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Spawn → first stdout line answering `server/discover`, and the server's VmRSS then; the
/// server is then told to stop by closing its stdin, and reaped (outside the measured time).
fn discover_once(command: &[String], request: &[u8]) -> Result<(Duration, u64), String> {
    let start = Instant::now();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", command[0]))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(request)
        .map_err(|e| format!("write: {e}"))?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .map_err(|e| format!("read: {e}"))?;
    let elapsed = start.elapsed();
    let rss = rss_kib(child.id()).unwrap_or(0);
    drop(stdin);
    let value: serde_json::Value =
        serde_json::from_str(&line).map_err(|_| format!("not a JSON line: {line:?}"))?;
    if value.get("id").and_then(serde_json::Value::as_u64) != Some(1)
        || value.get("result").is_none()
    {
        return Err(format!("not a result for id 1: {line}"));
    }
    // Whatever else it writes before it stops is not measured.
    let _ = stdout.read_to_end(&mut Vec::new());
    child.wait().map_err(|e| format!("wait: {e}"))?;
    Ok((elapsed, rss))
}

/// Spawn → the first line on stdout (the result printed), and spawn → exit with status 0,
/// stdout read to EOF (and not empty).
fn exit_once(command: &[String]) -> Result<(Duration, Duration), String> {
    let start = Instant::now();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", command[0]))?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut printed = Vec::new();
    stdout
        .read_until(b'\n', &mut printed)
        .map_err(|e| format!("read: {e}"))?;
    let first_line = start.elapsed();
    stdout
        .read_to_end(&mut printed)
        .map_err(|e| format!("read: {e}"))?;
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let exited = start.elapsed();
    if !status.success() || printed.is_empty() {
        return Err(format!(
            "{} exited with {status} and printed {:?}",
            command[0],
            String::from_utf8_lossy(&printed)
        ));
    }
    Ok((first_line, exited))
}

/// `median_ms=… min_ms=… max_ms=… samples_ms=…` of `samples`, each key after `prefix`.
fn summary(prefix: &str, samples: &mut [Duration]) -> String {
    let listed = samples.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(",");
    samples.sort();
    format!(
        "{prefix}median_ms={} {prefix}min_ms={} {prefix}max_ms={} {prefix}samples_ms={listed}",
        ms(samples[(samples.len() - 1) / 2]),
        ms(samples[0]),
        ms(samples[samples.len() - 1]),
    )
}

fn ms(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1e3)
}

fn run() -> Result<String, String> {
    let mut args = Args::from_env();
    let mut runs = 7usize;
    let mut discover = None;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" => runs = args.parsed("-n")?,
            "--discover" => discover = Some(true),
            "--exit" => discover = Some(false),
            "--" => command = args.rest(),
            _ => {
                command = std::iter::once(arg).chain(args.rest()).collect();
            }
        }
    }
    let (Some(discover), false, true) = (discover, command.is_empty(), runs > 0) else {
        return Err(USAGE.to_owned());
    };
    let request = discover_request();
    let mut samples = Vec::with_capacity(runs);
    let mut printed = Vec::with_capacity(runs);
    let mut rss = Vec::with_capacity(runs);
    for _ in 0..runs {
        if discover {
            let (elapsed, kib) = discover_once(&command, request.as_bytes())?;
            samples.push(elapsed);
            rss.push(kib);
        } else {
            let (first_line, exited) = exit_once(&command)?;
            printed.push(first_line);
            samples.push(exited);
        }
    }
    rss.sort_unstable();
    let rss = rss
        .get((runs - 1) / 2)
        .map_or_else(String::new, |kib| format!(" rss_kib={kib}"));
    let printed = if printed.is_empty() {
        String::new()
    } else {
        format!(" {}", summary("printed_", &mut printed))
    };
    Ok(format!(
        "{} runs={runs}{rss}{printed}",
        summary("", &mut samples)
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            let _ = writeln!(std::io::stdout().lock(), "{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprint_line(&format!("cold: {error}"));
            ExitCode::FAILURE
        }
    }
}
