//! Property tests: a sealed token survives only unmodified and only for its own request.
//!
//! For arbitrary states, arguments, audiences and principals, changing the character at *every*
//! position of the token is rejected, as is presenting the token for any other request, and
//! every rejection is the same wire error.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use modelctx_seal::{InvalidRequestState, Principal, RequestBinding, RequestStateSecurity};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{Value, json};

const KEY: &[u8; 32] = b"proptest-secret-0123456789abcdef";
const OTHER_KEY: &[u8; 32] = b"proptest-other--0123456789abcdef";

/// Replacement characters: the whole base64url alphabet plus separators, padding, the
/// standard-alphabet characters, whitespace and non-ASCII.
const REPLACEMENTS: &[char] = &[
    'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', 'S',
    'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l',
    'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '0', '1', '2', '3', '4',
    '5', '6', '7', '8', '9', '-', '_', '.', '=', '+', '/', ' ', '\n', '\0', 'é', '😀',
];

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn wire() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState",
           "data": {"reason": "invalid_request_state"}})
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300f64).prop_map(Value::from),
        "\\PC{0,10}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        prop::collection::btree_map("[a-zA-Z_é]{1,8}", json_value(), 1..4)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
    )
}

#[derive(Debug, Clone)]
struct Case {
    state: String,
    method: &'static str,
    target: String,
    args: Option<Value>,
    audience: Option<String>,
    principal: Option<String>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        "\\PC{0,100}",
        prop::sample::select(vec!["tools/call", "prompts/get", "resources/read"]),
        "[a-z_:/]{0,16}",
        arguments(),
        prop::option::of("[A-Za-z]{1,12}"),
        prop::option::of("\\PC{1,24}"),
    )
        .prop_map(|(state, method, target, args, audience, principal)| Case {
            state,
            method,
            target,
            args,
            audience,
            principal,
        })
}

fn policy(case: &Case, key: &[u8]) -> RequestStateSecurity {
    let policy = RequestStateSecurity::with_keys([key]).unwrap();
    match &case.audience {
        Some(audience) => policy.with_audience(audience.clone()),
        None => policy,
    }
}

#[track_caller]
fn assert_same_wire_error(result: Result<String, InvalidRequestState>, what: &str) {
    match result {
        Ok(state) => panic!("{what}: accepted, yielding {state:?}"),
        Err(err) => assert_eq!(err.wire_error(), wire(), "{what}: {err}"),
    }
}

proptest! {
    // A fixed seed keeps the suite deterministic; change it locally to explore further.
    #![proptest_config(ProptestConfig {
        cases: 128,
        rng_seed: RngSeed::Fixed(0x5ea1_5ea1),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_single_character_change_is_rejected(case in case(), seed in any::<u64>()) {
        let security = policy(&case, KEY);
        let principal = case.principal.clone().map(Principal::new);
        let binding = RequestBinding::new(case.method, &case.target)
            .with_arguments(case.args.as_ref())
            .with_principal(principal.as_ref());
        let token = security.seal_at(&case.state, &binding, now()).unwrap();
        prop_assert_eq!(security.open_at(&token, &binding, now()).unwrap(), case.state.clone());

        let chars: Vec<char> = token.chars().collect();
        for position in 0..chars.len() {
            // A different replacement per position, varied across cases by the seed.
            let mut pick = (seed as usize).wrapping_add(position.wrapping_mul(7)) % REPLACEMENTS.len();
            if REPLACEMENTS[pick] == chars[position] {
                pick = (pick + 1) % REPLACEMENTS.len();
            }
            let mut tampered = chars.clone();
            tampered[position] = REPLACEMENTS[pick];
            let tampered: String = tampered.into_iter().collect();
            assert_same_wire_error(
                security.open_at(&tampered, &binding, now()),
                &format!("position {position} -> {:?}", REPLACEMENTS[pick]),
            );
        }
        // Dropping or appending a character is rejected too.
        assert_same_wire_error(security.open_at(&token[..token.len() - 1], &binding, now()), "truncated");
        assert_same_wire_error(security.open_at(&format!("{token}A"), &binding, now()), "extended");
    }

    #[test]
    fn a_token_only_opens_for_its_own_request(case in case()) {
        let security = policy(&case, KEY);
        let principal = case.principal.clone().map(Principal::new);
        let binding = RequestBinding::new(case.method, &case.target)
            .with_arguments(case.args.as_ref())
            .with_principal(principal.as_ref());
        let token = security.seal_at(&case.state, &binding, now()).unwrap();
        prop_assert_eq!(security.open_at(&token, &binding, now()).unwrap(), case.state.clone());

        let other_target = format!("{}x", case.target);
        assert_same_wire_error(
            security.open_at(&token, &binding.with_target(&other_target), now()),
            "other target",
        );
        let other_method = if case.method == "tools/call" { "prompts/get" } else { "tools/call" };
        assert_same_wire_error(
            security.open_at(&token, &binding.with_method(other_method), now()),
            "other method",
        );
        if case.method != "resources/read" {
            let mut other_args = case.args.clone().unwrap_or_else(|| json!({}));
            other_args.as_object_mut().unwrap().insert("zz extra".to_owned(), json!(1));
            assert_same_wire_error(
                security.open_at(&token, &binding.with_arguments(Some(&other_args)), now()),
                "other arguments",
            );
        }
        let other_audience = match &case.audience {
            Some(audience) => security.clone().with_audience(format!("{audience}x")),
            None => security.clone().with_audience("x"),
        };
        assert_same_wire_error(other_audience.open_at(&token, &binding, now()), "other audience");
        let mallory = Principal::new(format!("{}x", case.principal.clone().unwrap_or_default()));
        assert_same_wire_error(
            security.open_at(&token, &binding.with_principal(Some(&mallory)), now()),
            "other or extra principal",
        );
        if principal.is_some() {
            assert_same_wire_error(
                security.open_at(&token, &binding.with_principal(None), now()),
                "missing principal",
            );
        }
        assert_same_wire_error(
            security.open_at(&token, &binding, now() + Duration::from_secs(600)),
            "expired",
        );
        assert_same_wire_error(
            policy(&case, OTHER_KEY).open_at(&token, &binding, now()),
            "key not in the ring",
        );
        assert_same_wire_error(security.open_at(&case.state, &binding, now()), "plaintext");
        assert_same_wire_error(security.open_at("", &binding, now()), "empty");
    }

    #[test]
    fn arbitrary_input_never_opens(input in "\\PC{0,300}", prefixed in any::<bool>()) {
        let security = RequestStateSecurity::with_keys([KEY]).unwrap();
        let token = if prefixed { format!("v1.{input}") } else { input };
        let binding = RequestBinding::tool_call("t", None);
        assert_same_wire_error(security.open_at(&token, &binding, now()), "arbitrary input");
    }
}

#[test]
fn exhaustive_substitution_of_every_character_at_every_position() {
    let security = RequestStateSecurity::with_keys([KEY])
        .unwrap()
        .with_audience("Provisioner");
    let args = json!({"name": "orders", "n": [1, 2.5, "é"]});
    let alice = Principal::from_oauth("client", Some("https://issuer"), Some("alice"));
    let binding = RequestBinding::tool_call("provision", Some(&args)).with_principal(Some(&alice));
    let token = security.seal_at("provision-v1", &binding, now()).unwrap();
    let chars: Vec<char> = token.chars().collect();
    let mut checked = 0usize;
    for position in 0..chars.len() {
        for &replacement in REPLACEMENTS {
            if replacement == chars[position] {
                continue;
            }
            let mut tampered = chars.clone();
            tampered[position] = replacement;
            let tampered: String = tampered.into_iter().collect();
            assert_same_wire_error(
                security.open_at(&tampered, &binding, now()),
                &format!("position {position} -> {replacement:?}"),
            );
            checked += 1;
        }
    }
    assert!(checked > 200 * 60, "only {checked} variants checked");
}
