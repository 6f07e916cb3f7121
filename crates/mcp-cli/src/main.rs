//! The `mcp` command (see the `mcp_cli` library docs).

fn main() -> std::process::ExitCode {
    mcp_cli::run()
}
