//! `mcp bench`: calls/s and latency percentiles of one tool, against any server.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use modelctx::client::Client;
use serde_json::{Value, json};

use crate::answers::Answers;
use crate::ask::Asker;
use crate::cli::BenchArgs;
use crate::error::{CliError, Result};
use crate::progress::ProgressView;
use crate::target::{Target, close, describe_server, timeout};

/// What one run measured.
#[derive(Debug)]
struct Figures {
    calls: u64,
    errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    /// Latency of every measured call, in microseconds, sorted.
    latencies: Vec<f64>,
}

impl Figures {
    fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The `p`-th percentile (nearest rank).
    fn percentile(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let rank = (p / 100.0 * self.latencies.len() as f64).ceil();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "1 ≤ rank ≤ len"
        )]
        let index = (rank.max(1.0) as usize).min(self.latencies.len()) - 1;
        self.latencies[index]
    }

    fn mean(&self) -> f64 {
        self.latencies.iter().sum::<f64>() / self.latencies.len().max(1) as f64
    }
}

/// `mcp bench`.
pub(crate) async fn bench(args: BenchArgs) -> Result<ExitCode> {
    let (target, rest) = Target::split(&args.positional, &args.command)?;
    if let Some(extra) = rest.first() {
        return Err(CliError::usage(format!(
            "unexpected argument {extra:?} (the tool is --tool NAME, its arguments --args JSON)"
        )));
    }
    let arguments: Value = serde_json::from_str(&args.args)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| CliError::usage(format!("--args {:?}: not a JSON object", args.args)))?;
    if args.calls == 0 || args.concurrency == 0 {
        return Err(CliError::usage(
            "--calls and --concurrency must be at least 1",
        ));
    }
    let answers = Answers::from_args(&args.answer.answers, args.answer.answers_file.as_deref())?;
    let asker = Arc::new(Asker::new(
        answers,
        &args.answer,
        false,
        ProgressView::stderr(),
    )?);
    let builder = asker.install(Client::builder());
    // Within --connect-timeout; --timeout counts from the connection on.
    let client = target.connect(builder, &args.connect).await?;
    // The server's name, escaped: it is printed in the report.
    let server = crate::safe_text::line(&describe_server(&client)).into_owned();
    asker.set_server(format!("{server} ({target})"));
    let run = async {
        for _ in 0..args.warmup {
            call(&client, &args.tool, &arguments)
                .await
                .map_err(|e| CliError::failed(format!("warm-up call failed: {e}")))?;
        }
        let figures = measure(&client, &args, &arguments).await;
        let protocol = client.protocol_version().to_string();
        Ok::<_, CliError>((figures, protocol))
    };
    let ran = match timeout(&args.connect) {
        Some(after) => tokio::time::timeout(after, run)
            .await
            .unwrap_or_else(|_| Err(CliError::failed("timed out (--timeout)"))),
        None => run.await,
    };
    let (figures, protocol) = match ran {
        Ok(ran) => ran,
        Err(error) => {
            close(client).await;
            return Err(error);
        }
    };
    let _ = client.close().await;
    if args.json {
        let report = json!({
            "target": target.to_string(),
            "transport": match target { Target::Http(_) => "http", Target::Stdio(_) => "stdio" },
            "server": server,
            "protocolVersion": protocol,
            "tool": args.tool,
            "calls": figures.calls,
            "concurrency": args.concurrency,
            "errors": figures.errors,
            "seconds": figures.elapsed.as_secs_f64(),
            "callsPerSecond": round(figures.calls_per_second()),
            "latencyUs": {
                "mean": round(figures.mean()),
                "p50": round(figures.percentile(50.0)),
                "p90": round(figures.percentile(90.0)),
                "p99": round(figures.percentile(99.0)),
                "max": round(figures.percentile(100.0)),
            },
        });
        println!("{}", crate::render::json(&report));
    } else {
        println!(
            "{server} over {} ({protocol}), tool {}, {} calls, concurrency {}",
            match target {
                Target::Http(_) => "HTTP",
                Target::Stdio(_) => "stdio",
            },
            args.tool,
            figures.calls,
            args.concurrency
        );
        println!(
            "  {:.0} calls/s in {:.2} s, {} error(s)",
            figures.calls_per_second(),
            figures.elapsed.as_secs_f64(),
            figures.errors
        );
        println!(
            "  latency µs: mean {:.0}  p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}",
            figures.mean(),
            figures.percentile(50.0),
            figures.percentile(90.0),
            figures.percentile(99.0),
            figures.percentile(100.0)
        );
    }
    if let Some(error) = &figures.first_error {
        eprintln!("first error: {}", crate::safe_text::line(error));
    }
    if figures.errors == figures.calls {
        return Err(CliError::failed("every call failed"));
    }
    Ok(ExitCode::SUCCESS)
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// One call; a tool error (`isError`) counts as a failure.
async fn call(client: &Client, tool: &str, arguments: &Value) -> std::result::Result<(), String> {
    match client.call_tool(tool, arguments.clone()).await {
        Ok(result) if result.is_error == Some(true) => Err(format!(
            "the tool reported an error: {}",
            result.first_text().unwrap_or_default()
        )),
        Ok(_) => Ok(()),
        Err(error) => Err(error.to_string()),
    }
}

async fn measure(client: &Client, args: &BenchArgs, arguments: &Value) -> Figures {
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(args.calls), ProgressDrawTarget::stderr())
    };
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} calls, {per_sec}, {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers = (0..args.concurrency.min(args.calls)).map(|_| {
        let client = client.clone();
        let next = Arc::clone(&next);
        let bar = bar.clone();
        let tool = args.tool.clone();
        let arguments = arguments.clone();
        let calls = args.calls;
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = 0u64;
            let mut first_error = None;
            while next.fetch_add(1, Ordering::Relaxed) < calls {
                let start = Instant::now();
                let outcome = call(&client, &tool, &arguments).await;
                latencies.push(start.elapsed().as_secs_f64() * 1e6);
                if let Err(error) = outcome {
                    errors += 1;
                    first_error.get_or_insert(error);
                }
                bar.inc(1);
            }
            (latencies, errors, first_error)
        })
    });
    let workers: Vec<_> = workers.collect();
    let mut figures = Figures {
        calls: args.calls,
        errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        latencies: Vec::with_capacity(usize::try_from(args.calls).unwrap_or(0)),
    };
    for worker in workers {
        match worker.await {
            Ok((latencies, errors, first_error)) => {
                figures.latencies.extend(latencies);
                figures.errors += errors;
                if figures.first_error.is_none() {
                    figures.first_error = first_error;
                }
            }
            Err(error) => {
                figures.errors += 1;
                figures.first_error.get_or_insert(error.to_string());
            }
        }
    }
    figures.elapsed = started.elapsed();
    bar.finish_and_clear();
    figures.latencies.sort_by(f64::total_cmp);
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let figures = Figures {
            calls: 10,
            errors: 0,
            first_error: None,
            elapsed: Duration::from_secs(2),
            latencies: (1..=10).map(f64::from).collect(),
        };
        assert_eq!(figures.percentile(50.0), 5.0);
        assert_eq!(figures.percentile(90.0), 9.0);
        assert_eq!(figures.percentile(99.0), 10.0);
        assert_eq!(figures.percentile(100.0), 10.0);
        assert_eq!(figures.mean(), 5.5);
        assert_eq!(figures.calls_per_second(), 5.0);
    }
}
