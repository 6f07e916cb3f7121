//! Sealing draws its randomness from the kernel and never starts aws-lc's user-space generator.
//!
//! aws-lc seeds its DRBG on first use from CPU-jitter entropy (about 40 ms and 320 M instructions
//! on the development VM, paid by every server at start-up when the ephemeral key was drawn from
//! it), and the first thing it does is map a wipe-on-fork page (`MADV_WIPEONFORK`, shown as `wf`
//! in `/proc/self/smaps`) to detect a fork. So no `wf` mapping after making an ephemeral key and
//! sealing with it means nothing seeded that generator. A test binary of its own: no other test
//! in this process may use aws-lc's generator.

#![cfg(target_os = "linux")]

use modelctx_seal::{AesGcmCodec, Codec, Keyring, Principal, RequestBinding, RequestStateSecurity};
use serde_json::json;

/// Mappings of this process that the kernel wipes in a forked child.
fn wipe_on_fork_mappings() -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
    smaps
        .lines()
        .filter_map(|line| line.strip_prefix("VmFlags:"))
        .filter(|flags| flags.split_whitespace().any(|flag| flag == "wf"))
        .count()
}

#[test]
fn sealing_never_seeds_a_user_space_generator() {
    assert_eq!(
        wipe_on_fork_mappings(),
        0,
        "a wipe-on-fork page before anything ran"
    );

    // The default ephemeral key, then everything that draws randomness per seal: the nonce and
    // the principal's salt.
    let codec = AesGcmCodec::from_keyring(Keyring::generate());
    let token = codec.seal(b"payload").unwrap();
    assert_eq!(codec.unseal(&token).unwrap(), b"payload");
    let security = RequestStateSecurity::ephemeral().with_audience("cold");
    let alice = Principal::from_oauth("app", Some("https://id.example"), Some("alice"));
    let args = json!({"name": "orders"});
    let binding = RequestBinding::tool_call("provision", Some(&args)).with_principal(Some(&alice));
    let sealed = security.seal("state", &binding).unwrap();
    assert_eq!(security.open(&sealed, &binding).unwrap(), "state");

    assert_eq!(
        wipe_on_fork_mappings(),
        0,
        "aws-lc's generator was seeded (it mapped its fork-detection page)"
    );
}
