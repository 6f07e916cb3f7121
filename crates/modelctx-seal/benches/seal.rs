//! Cost of sealing and opening a typical `requestState` through the whole policy: claims JSON,
//! argument digest, AES-256-GCM and base64url. Goal: seal + open ≤ 2 µs.
//!
//! Run with `cargo bench -p modelctx-seal`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use modelctx_seal::{AesGcmCodec, Codec, Principal, RequestBinding, RequestStateSecurity};
use serde_json::json;

const KEY: &[u8; 32] = b"bench-secret-0123456789abcdefghi";

/// A ~100-byte resolver state, as the high-level server writes it.
const STATE: &str = r#"{"v":3,"outcomes":{"main:ask_prefs":{"action":"accept","data":{"seat":"aisle"}}},"asked":{}}"#;

fn boundary(c: &mut Criterion) {
    assert!((90..=110).contains(&STATE.len()));
    let security = RequestStateSecurity::with_keys([KEY])
        .unwrap()
        .with_audience("Bookshop");
    let args = json!({"name": "orders", "region": "eu-west-1", "replicas": 3});
    let binding = RequestBinding::tool_call("provision", Some(&args));
    let token = security.seal(STATE, &binding).unwrap();
    assert_eq!(security.open(&token, &binding).unwrap(), STATE);

    // One round as a server runs it: a fresh binding per request (so the argument digest is
    // computed once per round, not once per benchmark), then seal and open.
    c.bench_function("seal+open (policy, small args, 100 B state)", |b| {
        b.iter(|| {
            let binding = RequestBinding::tool_call(black_box("provision"), Some(black_box(&args)));
            let token = security.seal(black_box(STATE), &binding).unwrap();
            security.open(black_box(&token), &binding).unwrap()
        });
    });
    // Worst case: seal and open with separate bindings, each digesting the arguments.
    c.bench_function("seal+open (policy, two bindings)", |b| {
        b.iter(|| {
            let minting = RequestBinding::tool_call(black_box("provision"), Some(black_box(&args)));
            let token = security.seal(black_box(STATE), &minting).unwrap();
            let opening = RequestBinding::tool_call(black_box("provision"), Some(black_box(&args)));
            security.open(black_box(&token), &opening).unwrap()
        });
    });
    // Seal and open alone reuse one binding whose digest is already cached.
    c.bench_function("seal (policy)", |b| {
        b.iter(|| {
            security
                .seal(black_box(STATE), black_box(&binding))
                .unwrap()
        });
    });
    c.bench_function("open (policy)", |b| {
        b.iter(|| {
            security
                .open(black_box(&token), black_box(&binding))
                .unwrap()
        });
    });

    let alice = Principal::from_oauth("shop-app", Some("https://id.example"), Some("alice"));
    c.bench_function("seal+open (policy, with principal)", |b| {
        b.iter(|| {
            let binding = RequestBinding::tool_call(black_box("provision"), Some(black_box(&args)))
                .with_principal(Some(&alice));
            let token = security.seal(black_box(STATE), &binding).unwrap();
            security.open(black_box(&token), &binding).unwrap()
        });
    });
}

fn parts(c: &mut Criterion) {
    let codec = AesGcmCodec::new([KEY]).unwrap();
    let payload = [b'x'; 230]; // the size of the claims envelope above
    c.bench_function("codec seal+unseal (230 B payload)", |b| {
        b.iter(|| {
            let token = codec.seal(black_box(&payload)).unwrap();
            codec.unseal(black_box(&token)).unwrap()
        });
    });
    let args = json!({"name": "orders", "region": "eu-west-1", "replicas": 3});
    c.bench_function("arguments digest (small object)", |b| {
        b.iter(|| modelctx_seal::arguments_digest(black_box(Some(&args))));
    });
}

criterion_group!(benches, boundary, parts);
criterion_main!(benches);
