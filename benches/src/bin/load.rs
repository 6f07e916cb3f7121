//! The load driver: N sequential 2026-07-28 `tools/call echo` requests, every response checked.
//!
//! ```text
//! load --stdio [--] CMD [ARGS...]      # spawn CMD, talk over its stdin / stdout
//! load --http http://127.0.0.1:PORT/mcp
//! load --addr-file PATH                # wait for a server to write IP:PORT there; path /mcp
//!      [-n N] [--warmup W] [--text TEXT | --text-bytes B] [--timeout-s S]
//!      [--peer] [--flow | --suspend] [--pid PID] [--sample-every K]
//! ```
//!
//! `--flow`: each of the N operations is a two-leg multi-round-trip flow of `provision {name}`
//! (first leg: an `InputRequiredResult` with a form question under `region` and a sealed
//! `requestState`; second leg: the answer and the state echoed, checked to complete).
//! `--suspend`: N first legs only, never answered — flows the server would have to remember if
//! it kept per-flow state; the server's VmRSS / VmHWM are printed every `--sample-every` flows
//! (default N / 10). `--peer`: the server is another SDK's (no `serverInfo` stamp check).
//! With `--stdio` the server's memory is read from the child; over HTTP pass `--pid`.
//!
//! It is deliberately cheap so that it is never the bottleneck: blocking std I/O, one write per
//! request (raw pipes for stdio, a raw keep-alive HTTP/1.1 connection over TCP with
//! TCP_NODELAY), no async runtime. It prints one line on stdout:
//! `transport=… calls=N seconds=… calls_per_s=… us_per_call=…` (warm-up calls excluded; with
//! `--flow` a call is a whole flow), followed by `server_vmrss_kib=… server_vmhwm_kib=…` when
//! the server's pid is known.
//! With `--stdio` it closes the child's stdin after the last call and fails unless the child
//! exits successfully; HTTP servers are left running (stop them with SIGTERM).

use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use modelctx_benches::{
    Args, DEFAULT_TEXT, FLOW_TOOL, HTTP_PATH, PROTOCOL_VERSION, TOOL, check_flow_result,
    check_input_required, check_response, eprint_line, flow_request, request_body,
};

const USAGE: &str = "usage: load (--stdio [--] CMD [ARGS...] | --http URL | --addr-file PATH) \
                     [-n N] [--warmup W] [--text TEXT | --text-bytes B] [--timeout-s S] \
                     [--peer] [--flow | --suspend] [--pid PID] [--sample-every K]";

/// What each of the N operations is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    /// One `tools/call echo`.
    Echo,
    /// A whole two-leg flow.
    Flow,
    /// A first leg whose question is never answered.
    Suspend,
}

enum Target {
    Stdio(Vec<String>),
    Http(String),
    AddrFile(PathBuf),
}

struct Options {
    target: Target,
    calls: u64,
    warmup: u64,
    text: String,
    timeout: Duration,
    work: Work,
    stamp: bool,
    pid: Option<u32>,
    sample_every: Option<u64>,
}

fn options() -> Result<Options, String> {
    let mut args = Args::from_env();
    let mut target = None;
    let mut calls = 1000;
    let mut warmup = 0;
    let mut text = DEFAULT_TEXT.to_owned();
    let mut timeout = Duration::from_secs(120);
    let mut work = Work::Echo;
    let mut stamp = true;
    let mut pid = None;
    let mut sample_every = None;
    while let Some(word) = args.next() {
        match word.as_str() {
            "--stdio" => {
                let mut command = args.rest();
                if command.first().is_some_and(|w| w == "--") {
                    command.remove(0);
                }
                if command.is_empty() {
                    return Err("--stdio needs a command".to_owned());
                }
                target = Some(Target::Stdio(command));
            }
            "--http" => target = Some(Target::Http(args.value("--http")?)),
            "--addr-file" => target = Some(Target::AddrFile(args.value("--addr-file")?.into())),
            "-n" => calls = args.parsed("-n")?,
            "--warmup" => warmup = args.parsed("--warmup")?,
            "--text" => text = args.value("--text")?,
            "--text-bytes" => text = "x".repeat(args.parsed("--text-bytes")?),
            "--timeout-s" => timeout = Duration::from_secs(args.parsed("--timeout-s")?),
            "--flow" => work = Work::Flow,
            "--suspend" => work = Work::Suspend,
            "--peer" => stamp = false,
            "--pid" => pid = Some(args.parsed("--pid")?),
            "--sample-every" => sample_every = Some(args.parsed("--sample-every")?),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Options {
        target: target.ok_or(USAGE)?,
        calls,
        warmup,
        text,
        timeout,
        work,
        stamp,
        pid,
        sample_every,
    })
}

/// One round trip: send a request body (a `tools/call` of tool `name`), get the response body.
trait Transport {
    fn call(&mut self, name: &str, body: &[u8]) -> Result<Vec<u8>, String>;
    /// The server's pid, when known.
    fn pid(&self) -> Option<u32>;
}

struct StdioTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    out: Vec<u8>,
}

impl StdioTransport {
    fn spawn(command: &[String]) -> Result<Self, String> {
        let (program, args) = command.split_first().ok_or("empty command")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {program:?}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(4096),
            out: Vec::with_capacity(4096),
        })
    }

    /// Closes the child's stdin and waits for it to exit.
    fn finish(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("server exited with {status}"))
        }
    }
}

/// Whether a line is a request or notification from the server (not a response).
fn is_server_message(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .is_some_and(|v| v.get("method").is_some())
}

impl Transport for StdioTransport {
    fn pid(&self) -> Option<u32> {
        Some(self.child.id())
    }

    fn call(&mut self, _name: &str, body: &[u8]) -> Result<Vec<u8>, String> {
        self.out.clear();
        self.out.extend_from_slice(body);
        self.out.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(&self.out)
            .map_err(|e| format!("write to server: {e}"))?;
        loop {
            self.line.clear();
            let read = self
                .stdout
                .read_until(b'\n', &mut self.line)
                .map_err(|e| format!("read from server: {e}"))?;
            if read == 0 {
                return Err("server closed stdout".to_owned());
            }
            while self.line.last().is_some_and(u8::is_ascii_whitespace) {
                self.line.pop();
            }
            if !self.line.is_empty() && !is_server_message(&self.line) {
                return Ok(std::mem::take(&mut self.line));
            }
        }
    }
}

struct HttpTransport {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    head: String,
    out: Vec<u8>,
    pid: Option<u32>,
}

/// `http://HOST:PORT/PATH` → (`HOST:PORT`, `/PATH`).
fn split_url(url: &str) -> Result<(String, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url:?}: only http:// URLs"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok((authority.to_owned(), path.to_owned()))
}

impl HttpTransport {
    fn connect(url: &str, timeout: Duration, pid: Option<u32>) -> Result<Self, String> {
        let (authority, path) = split_url(url)?;
        let deadline = Instant::now() + timeout;
        let stream = loop {
            match TcpStream::connect(&authority) {
                Ok(stream) => break stream,
                Err(error) if Instant::now() >= deadline => {
                    return Err(format!("cannot connect to {authority}: {error}"));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
             Mcp-Method: tools/call\r\n"
        );
        Ok(Self {
            reader: BufReader::with_capacity(64 * 1024, stream),
            writer,
            head,
            out: Vec::with_capacity(4096),
            pid,
        })
    }

    fn read_line(&mut self, line: &mut Vec<u8>) -> Result<(), String> {
        line.clear();
        let read = self
            .reader
            .read_until(b'\n', line)
            .map_err(|e| format!("read response: {e}"))?;
        if read == 0 {
            return Err("server closed the connection".to_owned());
        }
        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            line.pop();
        }
        Ok(())
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, String> {
        let mut body = Vec::new();
        let mut line = Vec::new();
        loop {
            self.read_line(&mut line)?;
            let size = std::str::from_utf8(&line)
                .ok()
                .and_then(|l| usize::from_str_radix(l.split(';').next()?.trim(), 16).ok())
                .ok_or("bad chunk size")?;
            if size == 0 {
                // Trailers, then an empty line.
                loop {
                    self.read_line(&mut line)?;
                    if line.is_empty() {
                        return Ok(body);
                    }
                }
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.reader
                .read_exact(&mut body[start..])
                .map_err(|e| format!("read chunk: {e}"))?;
            self.read_line(&mut line)?;
        }
    }
}

/// The last `data:` payload of an event stream (the response comes last).
fn last_sse_data(body: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut last = None;
    let mut current: Option<String> = None;
    for line in text.split('\n').map(|l| l.trim_end_matches('\r')) {
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.strip_prefix(' ').unwrap_or(data);
            match current.as_mut() {
                Some(buffer) => {
                    buffer.push('\n');
                    buffer.push_str(data);
                }
                None => current = Some(data.to_owned()),
            }
        } else if line.is_empty()
            && let Some(data) = current.take()
            && !is_server_message(data.as_bytes())
        {
            last = Some(data);
        }
    }
    if let Some(data) = current
        && !is_server_message(data.as_bytes())
    {
        last = Some(data);
    }
    last.map(String::into_bytes)
}

impl Transport for HttpTransport {
    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn call(&mut self, name: &str, body: &[u8]) -> Result<Vec<u8>, String> {
        self.out.clear();
        self.out.extend_from_slice(self.head.as_bytes());
        self.out.extend_from_slice(
            format!("Mcp-Name: {name}\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
        );
        self.out.extend_from_slice(body);
        self.writer
            .write_all(&self.out)
            .map_err(|e| format!("send request: {e}"))?;
        let mut line = Vec::with_capacity(128);
        self.read_line(&mut line)?;
        let status = String::from_utf8_lossy(&line).into_owned();
        if !status.starts_with("HTTP/1.1 200") {
            return Err(format!("HTTP status {status:?}"));
        }
        let mut length = None;
        let mut chunked = false;
        let mut event_stream = false;
        loop {
            self.read_line(&mut line)?;
            if line.is_empty() {
                break;
            }
            let header = String::from_utf8_lossy(&line).to_ascii_lowercase();
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "content-type" => event_stream = value.starts_with("text/event-stream"),
                _ => {}
            }
        }
        let body = if chunked {
            self.read_chunked()?
        } else {
            let length = length.ok_or("response without Content-Length")?;
            let mut body = vec![0; length];
            self.reader
                .read_exact(&mut body)
                .map_err(|e| format!("read body: {e}"))?;
            body
        };
        if event_stream {
            last_sse_data(&body).ok_or_else(|| "event stream without a response".to_owned())
        } else {
            Ok(body)
        }
    }
}

fn wait_for_addr(path: &PathBuf, timeout: Duration) -> Result<String, String> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(addr) = std::fs::read_to_string(path)
            && !addr.trim().is_empty()
        {
            return Ok(format!("http://{}{HTTP_PATH}", addr.trim()));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no address in {} after {timeout:?}",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// VmRSS and VmHWM of process `pid`, in KiB, from `/proc/PID/status`.
fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// `server_vmrss_kib=… server_vmhwm_kib=…` of the server, or nothing.
fn memory_fields(transport: &dyn Transport) -> String {
    transport
        .pid()
        .and_then(memory_kib)
        .map_or_else(String::new, |(rss, hwm)| {
            format!(" server_vmrss_kib={rss} server_vmhwm_kib={hwm}")
        })
}

/// One operation (`round` numbers them from 0): an echo, a whole flow, or a first leg.
fn operate(
    transport: &mut dyn Transport,
    options: &Options,
    id: &mut u64,
    round: u64,
) -> Result<(), String> {
    *id += 1;
    match options.work {
        Work::Echo => {
            let body = request_body(*id, &options.text);
            let response = transport.call(TOOL, &body)?;
            check_response(&response, *id, &options.text, options.stamp)
        }
        Work::Flow | Work::Suspend => {
            let name = format!("db-{round}");
            let response = transport.call(FLOW_TOOL, &flow_request(*id, &name, None))?;
            let state = check_input_required(&response, *id, options.stamp)?;
            if options.work == Work::Suspend {
                return Ok(());
            }
            *id += 1;
            let response = transport.call(FLOW_TOOL, &flow_request(*id, &name, Some(&state)))?;
            check_flow_result(&response, *id, &name, options.stamp)
        }
    }
}

fn drive(transport: &mut dyn Transport, options: &Options) -> Result<(Duration, String), String> {
    let mut id = 0u64;
    let mut start = Instant::now();
    let every = match options.work {
        Work::Suspend => options.sample_every.unwrap_or((options.calls / 10).max(1)),
        _ => 0,
    };
    if every > 0 {
        out_line(&format!("suspended=0{}", memory_fields(transport)));
    }
    for round in 0..options.warmup + options.calls {
        if round == options.warmup {
            start = Instant::now();
        }
        operate(transport, options, &mut id, round)?;
        let done = (round + 1).saturating_sub(options.warmup);
        if every > 0 && done > 0 && done % every == 0 {
            out_line(&format!("suspended={done}{}", memory_fields(transport)));
        }
    }
    Ok((start.elapsed(), memory_fields(transport)))
}

fn out_line(line: &str) {
    let _ = writeln!(io::stdout().lock(), "{line}");
}

fn run(options: &Options) -> Result<(&'static str, (Duration, String)), String> {
    match &options.target {
        Target::Stdio(command) => {
            let mut transport = StdioTransport::spawn(command)?;
            let elapsed = drive(&mut transport, options);
            let finished = transport.finish();
            let elapsed = elapsed?;
            finished?;
            Ok(("stdio", elapsed))
        }
        Target::Http(url) => {
            let mut transport = HttpTransport::connect(url, options.timeout, options.pid)?;
            Ok(("http", drive(&mut transport, options)?))
        }
        Target::AddrFile(path) => {
            let url = wait_for_addr(path, options.timeout)?;
            let mut transport = HttpTransport::connect(&url, options.timeout, options.pid)?;
            Ok(("http", drive(&mut transport, options)?))
        }
    }
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprint_line(&message);
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok((transport, (elapsed, memory))) => {
            let seconds = elapsed.as_secs_f64();
            let calls = options.calls as f64;
            let line = format!(
                "transport={transport} calls={} seconds={seconds:.6} calls_per_s={:.0} us_per_call={:.2}{memory}",
                options.calls,
                if seconds > 0.0 { calls / seconds } else { 0.0 },
                if options.calls > 0 {
                    seconds * 1e6 / calls
                } else {
                    0.0
                },
            );
            out_line(&line);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprint_line(&format!("load: {message}"));
            ExitCode::FAILURE
        }
    }
}
