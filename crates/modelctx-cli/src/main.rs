//! The `mcp` command (see the `modelctx_cli` library docs).

fn main() -> std::process::ExitCode {
    modelctx_cli::run()
}
