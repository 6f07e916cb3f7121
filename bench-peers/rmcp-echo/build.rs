//! Linked like the SDK's own bench binaries (benches/build.rs): packed relative relocations on
//! Linux/glibc, so the cold-start and memory rows of scripts/bench.sh compare the SDKs, not
//! their link flags.

fn main() {
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux_gnu {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
