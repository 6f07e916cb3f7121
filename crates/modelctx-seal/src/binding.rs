//! The request a token is bound to, with its argument digest computed at most once.

use std::sync::OnceLock;

use serde_json::Value;

use crate::digest::{ShortDigest, arguments_short_digest};
use crate::principal::Principal;

/// `resources/read`: bound by URI only, its arguments digest is always that of `{}`.
const RESOURCES_READ: &str = "resources/read";

/// The request a token is minted for or presented with.
///
/// * `method`: the JSON-RPC method (`tools/call`, `prompts/get`, `resources/read`);
/// * `target`: `params.name` for tools and prompts, `params.uri` for resources (empty if absent);
/// * `arguments`: `params.arguments` as received (ignored for `resources/read`, as in Python);
/// * `principal`: the authenticated caller, `None` on unauthenticated transports.
///
/// The retry must present the same method, target, arguments and principal as the round that
/// minted the token. Build one binding per request and use it for both the inbound
/// [`open`](crate::RequestStateSecurity::open) and the outbound
/// [`seal`](crate::RequestStateSecurity::seal): the argument digest is computed on first use and
/// then reused (the Python boundary likewise reuses the inbound binding when re-sealing).
///
/// ```
/// use modelctx_seal::RequestBinding;
/// use serde_json::json;
///
/// let args = json!({"x": 7});
/// let binding = RequestBinding::tool_call("add", Some(&args));
/// assert_eq!(binding.method(), "tools/call");
/// assert_eq!(binding.arguments_digest(), "Ey8lUoApKugLEhHi5PR-xw");
/// ```
#[derive(Debug, Clone)]
pub struct RequestBinding<'a> {
    method: &'a str,
    target: &'a str,
    arguments: Option<&'a Value>,
    principal: Option<&'a Principal>,
    // Depends on method and arguments only; every builder touching those starts a fresh cell.
    digest: OnceLock<ShortDigest>,
}

impl<'a> RequestBinding<'a> {
    /// A binding for any method and target, without arguments or principal.
    pub const fn new(method: &'a str, target: &'a str) -> Self {
        Self::with_parts(method, target, None)
    }

    /// `tools/call` of tool `name` with `arguments`.
    pub const fn tool_call(name: &'a str, arguments: Option<&'a Value>) -> Self {
        Self::with_parts("tools/call", name, arguments)
    }

    /// `prompts/get` of prompt `name` with `arguments`.
    pub const fn prompt_get(name: &'a str, arguments: Option<&'a Value>) -> Self {
        Self::with_parts("prompts/get", name, arguments)
    }

    const fn with_parts(method: &'a str, target: &'a str, arguments: Option<&'a Value>) -> Self {
        Self {
            method,
            target,
            arguments,
            principal: None,
            digest: OnceLock::new(),
        }
    }

    /// `resources/read` of `uri`.
    pub const fn resource_read(uri: &'a str) -> Self {
        Self::new(RESOURCES_READ, uri)
    }

    // The `with_*` methods borrow so one binding can serve as the template of several
    // (tests and probes); a request normally builds exactly one.

    /// A copy of this binding for another method.
    #[must_use]
    pub fn with_method(&self, method: &'a str) -> Self {
        Self::with_parts(method, self.target, self.arguments).with_principal(self.principal)
    }

    /// A copy of this binding for another target.
    #[must_use]
    pub fn with_target(&self, target: &'a str) -> Self {
        Self {
            target,
            ..self.clone()
        }
    }

    /// A copy of this binding with other `arguments`.
    #[must_use]
    pub fn with_arguments(&self, arguments: Option<&'a Value>) -> Self {
        Self::with_parts(self.method, self.target, arguments).with_principal(self.principal)
    }

    /// A copy of this binding for `principal`.
    #[must_use]
    pub fn with_principal(&self, principal: Option<&'a Principal>) -> Self {
        Self {
            principal,
            ..self.clone()
        }
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The tool or prompt name, or the resource URI.
    pub fn target(&self) -> &'a str {
        self.target
    }

    /// The request's arguments, as given.
    pub fn arguments(&self) -> Option<&'a Value> {
        self.arguments
    }

    /// The authenticated principal, if any.
    pub fn principal(&self) -> Option<&'a Principal> {
        self.principal
    }

    /// The `a` claim for this request (see [`crate::arguments_digest`]); `{}`'s digest for
    /// `resources/read`.
    pub fn arguments_digest(&self) -> &str {
        self.digest().as_str()
    }

    pub(crate) fn digest(&self) -> &ShortDigest {
        self.digest.get_or_init(|| {
            // Per-method allowlist as in Python: resources are identified by URI alone.
            let arguments = if self.method == RESOURCES_READ {
                None
            } else {
                self.arguments
            };
            arguments_short_digest(arguments, &mut Vec::with_capacity(64))
        })
    }
}
