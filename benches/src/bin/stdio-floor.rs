//! The stdio floor: no SDK, no async runtime. Reads newline-delimited JSON from stdin, parses
//! each line with serde_json, and writes the same result line as `echo-server --stdio`, flushing
//! after each response. Ends on stdin EOF.

use std::io::{self, BufRead as _, BufWriter, Write as _};
use std::process::ExitCode;

use modelctx_benches::{eprint_line, floor_response};

fn serve() -> io::Result<()> {
    let mut input = io::stdin().lock();
    let mut output = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let Some(mut response) = floor_response(&line) else {
            continue;
        };
        response.push(b'\n');
        output.write_all(&response)?;
        output.flush()?;
    }
    output.flush()
}

fn main() -> ExitCode {
    if std::env::args().len() > 1 {
        eprint_line("usage: stdio-floor   (serves stdin / stdout until stdin closes)");
        return ExitCode::from(2);
    }
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprint_line(&format!("stdio-floor: {error}"));
            ExitCode::FAILURE
        }
    }
}
