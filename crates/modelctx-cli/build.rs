//! Links `mcp` with packed relative relocations (`DT_RELR`, `-z pack-relative-relocs`) on
//! Linux/glibc.
//!
//! Why: a position-independent Rust binary carries one 24-byte `R_X86_64_RELATIVE` entry per
//! pointer in its read-only data (vtables, string tables); `mcp` has tens of thousands. The
//! dynamic loader applies them all before `main` — the largest single cost of a cold
//! `mcp call` after the work itself — and the table is paged in, counted in every process's
//! RSS. Packed, the same relocations take a few KiB and apply in a tight loop (BENCHMARKS.md,
//! "Cold start"). glibc ≥ 2.36 loads such binaries; GNU ld ≥ 2.38 and lld write them (an older
//! GNU ld warns and ignores the flag).

fn main() {
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
