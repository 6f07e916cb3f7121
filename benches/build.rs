//! Links the bench binaries the way `mcp` is linked (crates/modelctx-cli/build.rs says why):
//! with packed relative relocations. bench-peers/rmcp-echo is linked the same way, so the cold
//! start and memory rows compare the SDKs, not their link flags.

fn main() {
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
