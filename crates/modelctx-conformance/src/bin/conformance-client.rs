//! The conformance fixture client (implemented with the client runtime).
//!
//! Contract of the suite (`client` mode): the server URL is the last argument;
//! `MCP_CONFORMANCE_SCENARIO` names the scenario, `MCP_CONFORMANCE_PROTOCOL_VERSION` the
//! revision under test (a handshake-era revision selects the `initialize` handshake, anything
//! else the 2026-07-28 auto mode), and `MCP_CONFORMANCE_CONTEXT` carries scenario data (the tool
//! calls of `http-custom-headers`, the pre-registered credentials of the auth scenarios). Exit 0
//! when the scenario's steps ran, 1 otherwise (an auth scenario whose authorization must be
//! refused exits 1 by design); unknown scenarios exit 1.
//!
//! Every `auth/*` scenario runs the same client: OAuth through `ClientBuilder::oauth` with a
//! `RedirectFetcher` (the suite's authorization server approves at once and redirects to
//! `http://localhost:3000/callback`, which nothing serves), the suite's client ID metadata
//! document URL, and pre-registered credentials when the context carries some; then
//! `tools/list` and a call of the first tool. The client-credentials extension scenarios use
//! the client credentials grant (`client_secret_basic`, or `private_key_jwt` with the context's
//! key); enterprise-managed authorization exchanges the context's ID token for an ID-JAG at
//! the identity provider and presents it with the JWT bearer grant; workload identity
//! federation presents the context's workload token, read from a file, with the same grant.
//! DPoP is on whenever the authorization server advertises it (the client's default), which
//! the `auth/dpop*` scenarios' servers do. Credentials are bound to
//! the context's `issuer` when it names one, else to the first authorization server discovered.

use std::io::Write as _;
use std::process::ExitCode;

use modelctx::client::auth::{
    AssertionRequest, AuthError, ClientRegistration, IdentityTokenSource, IssuerBinding,
    OAuthConfig, RedirectFetcher,
};
use modelctx::client::{Client, ClientError, Mode};
use modelctx::types::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorObject, ListRootsResult,
    ProtocolVersion, Root, Tool,
};
use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        say("usage: conformance-client <server-url>");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| ProtocolVersion::LATEST.to_string());
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    match run(&scenario, &version, &context, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            say(&format!("scenario {scenario:?} failed: {error}"));
            ExitCode::FAILURE
        }
    }
}

fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "conformance-client: {message}");
}

/// Why a scenario failed.
#[derive(Debug)]
enum Failure {
    Client(ClientError),
    Unsupported(String),
    Missing(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Client(error) => write!(f, "{error}"),
            Self::Unsupported(what) => write!(f, "unsupported scenario: {what}"),
            Self::Missing(what) => write!(f, "missing: {what}"),
        }
    }
}

impl From<ClientError> for Failure {
    fn from(value: ClientError) -> Self {
        Self::Client(value)
    }
}

/// The redirect URI the suite's authorization server redirects to (nothing serves it: the
/// `RedirectFetcher` reads the redirect itself).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client ID metadata document URL the suite expects (it need not resolve).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

async fn run(scenario: &str, version: &str, context: &Value, url: &str) -> Result<(), Failure> {
    if scenario.starts_with("auth/") {
        return run_auth(scenario, version, context, url).await;
    }
    let known = [
        "initialize",
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ];
    if !known.contains(&scenario) {
        return Err(Failure::Unsupported(format!(
            "unknown scenario {scenario:?}"
        )));
    }
    let client = connect(version, url, None).await?;
    let outcome = scenario_steps(&client, scenario, context).await;
    let _ = client.close().await;
    outcome
}

/// An auth scenario: sign in as the scenario requires, list the tools, call the first one.
async fn run_auth(
    scenario: &str,
    version: &str,
    context: &Value,
    url: &str,
) -> Result<(), Failure> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    // Credentials belong to one authorization server: the context's `issuer` when the scenario
    // names it (pre-registration), else the first one discovered (the client credentials and
    // enterprise scenarios name none; their server names its own).
    let issuer = text("issuer").map_or(IssuerBinding::FirstDiscovered, IssuerBinding::from);
    let mut identity_token_file = None;
    let config = match scenario {
        "auth/client-credentials-basic" => {
            let id = text("client_id").ok_or_else(|| Failure::Missing("client_id".to_owned()))?;
            let secret = text("client_secret")
                .ok_or_else(|| Failure::Missing("client_secret".to_owned()))?;
            OAuthConfig::client_credentials(
                issuer,
                ClientRegistration::new(id)
                    .with_secret(secret)
                    .with_auth_method("client_secret_basic"),
            )
        }
        "auth/client-credentials-jwt" => {
            let id = text("client_id").ok_or_else(|| Failure::Missing("client_id".to_owned()))?;
            let pem = text("private_key_pem")
                .ok_or_else(|| Failure::Missing("private_key_pem".to_owned()))?;
            let algorithm = text("signing_algorithm").unwrap_or_else(|| "ES256".to_owned());
            OAuthConfig::client_credentials(issuer, ClientRegistration::new(id))
                .private_key_jwt(&pem, &algorithm)
                .map_err(|e| Failure::Client(e.into()))?
        }
        "auth/enterprise-managed-authorization" => {
            let field = |key: &str| text(key).ok_or_else(|| Failure::Missing(key.to_owned()));
            let client = ClientRegistration::new(field("client_id")?)
                .with_secret(field("client_secret")?)
                .with_auth_method("client_secret_basic");
            let idp = IdentityProvider {
                http: reqwest::Client::new(),
                token_endpoint: field("idp_token_endpoint")?,
                client_id: field("idp_client_id")?,
                id_token: field("idp_id_token")?,
            };
            let idp = std::sync::Arc::new(idp);
            OAuthConfig::identity_assertion(issuer, client, move |request: AssertionRequest| {
                let idp = std::sync::Arc::clone(&idp);
                async move { idp.exchange(&request).await }
            })
        }
        "auth/wif-jwt-bearer" => {
            // The workload's identity token as a platform hands it over: in a file (the one
            // Kubernetes projects), read for every token request.
            let id = text("client_id").ok_or_else(|| Failure::Missing("client_id".to_owned()))?;
            let jwt = text("valid_jwt").ok_or_else(|| Failure::Missing("valid_jwt".to_owned()))?;
            let path = std::env::temp_dir().join(format!(
                "mcp-conformance-identity-token-{}",
                std::process::id()
            ));
            std::fs::write(&path, jwt)
                .map_err(|e| Failure::Client(AuthError::Handler(e.to_string()).into()))?;
            identity_token_file = Some(path.clone());
            OAuthConfig::workload_identity(
                issuer,
                ClientRegistration::new(id),
                IdentityTokenSource::file(path),
            )
        }
        _ => {
            let mut config = OAuthConfig::new(RedirectFetcher::new(REDIRECT_URI))
                .client_name("mcp-rust-conformance-client")
                .client_metadata_url(CLIENT_METADATA_URL);
            if let Some(id) = text("client_id") {
                let mut client = ClientRegistration::new(id);
                if let Some(secret) = text("client_secret") {
                    client = client.with_secret(secret);
                }
                config = config.pre_registered_for(issuer, client);
            }
            config
        }
    };
    let outcome = async {
        let client = connect(version, url, Some(config)).await?;
        let outcome = async {
            let tools = client.list_tools().await?;
            if let Some(tool) = tools.first() {
                tolerate(&tool.name, client.call_tool(&tool.name, json!({})).await);
            }
            Ok::<_, Failure>(())
        }
        .await;
        let _ = client.close().await;
        outcome
    }
    .await;
    if let Some(path) = identity_token_file {
        let _ = std::fs::remove_file(path);
    }
    outcome
}

/// The enterprise identity provider of SEP-990: exchanges the user's ID token for an
/// identity assertion JWT authorization grant (ID-JAG) for the MCP authorization server
/// (RFC 8693 token exchange).
struct IdentityProvider {
    http: reqwest::Client,
    token_endpoint: String,
    client_id: String,
    id_token: String,
}

impl IdentityProvider {
    async fn exchange(&self, request: &AssertionRequest) -> Result<String, AuthError> {
        let form = [
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            ),
            ("subject_token", &self.id_token),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            ),
            ("audience", &request.audience),
            ("resource", &request.resource),
            ("client_id", &self.client_id),
        ];
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let response = self
            .http
            .post(&self.token_endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let answer: Value = serde_json::from_slice(&response.bytes().await?).unwrap_or_default();
        match answer.get("access_token").and_then(Value::as_str) {
            Some(grant) if status.is_success() => Ok(grant.to_owned()),
            _ => Err(AuthError::Handler(format!(
                "the identity provider refused the token exchange ({status}): {}",
                answer
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("no error code")
            ))),
        }
    }
}

/// Connects with every callback registered (so every capability is declared, as objects).
async fn connect(
    version: &str,
    url: &str,
    oauth: Option<OAuthConfig>,
) -> Result<Client, ClientError> {
    let version = ProtocolVersion::new(version.to_owned());
    let mode = if version.is_handshake() {
        Mode::Handshake
    } else {
        Mode::Auto
    };
    let mut builder = Client::builder()
        .mode(mode)
        .client_info(modelctx::types::Implementation::new(
            "mcp-rust-conformance-client",
            env!("CARGO_PKG_VERSION"),
        ))
        .on_elicitation(|_context, params: ElicitRequestParams| async move {
            Ok::<_, ErrorObject>(answer_elicitation(&params))
        })
        .on_sampling(|_context, _params| async {
            Ok::<_, ErrorObject>(CreateMessageResult::text(
                "test-model",
                "This is a test response from the client",
            ))
        })
        .on_list_roots(|_context| async {
            Ok::<_, ErrorObject>(ListRootsResult::new(vec![Root::new(
                "file:///tmp",
                Some("tmp".to_owned()),
            )]))
        });
    if version.is_handshake() {
        builder = builder.handshake_version(version);
    }
    if let Some(oauth) = oauth {
        builder = builder.oauth(oauth);
    }
    builder.connect_http(url).await
}

/// Accepts a form with each field's schema default, else its first enum value, else a value of
/// its type; accepts URL elicitations.
fn answer_elicitation(params: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::Form(form) = params else {
        return ElicitResult::accept_url();
    };
    let schema = serde_json::to_value(&form.requested_schema).unwrap_or(Value::Null);
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            content.insert(name.clone(), default_for(property));
        }
    }
    ElicitResult::accept(content)
}

fn default_for(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") => json!(1),
        Some("number") => json!(1.5),
        Some("array") => json!([]),
        _ => json!("x"),
    }
}

/// Stub arguments: one value per required property.
fn stub_arguments(tool: &Tool) -> Value {
    let schema = Value::Object(tool.input_schema.clone());
    let mut arguments = Map::new();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = schema
            .get("properties")
            .and_then(|p| p.get(name))
            .cloned()
            .unwrap_or(Value::Null);
        arguments.insert(name.to_owned(), default_for(&property));
    }
    Value::Object(arguments)
}

/// Runs a step whose failure does not end the scenario (the mock may legitimately refuse it).
fn tolerate<T>(step: &str, outcome: Result<T, ClientError>) {
    if let Err(error) = outcome {
        say(&format!("{step}: {error}"));
    }
}

async fn scenario_steps(client: &Client, scenario: &str, context: &Value) -> Result<(), Failure> {
    let tools = client.list_tools().await?;
    match scenario {
        "initialize" | "json-schema-ref-no-deref" => {}
        "tools_call" | "request-metadata" => {
            client
                .call_tool("add_numbers", json!({"a": 5, "b": 3}))
                .await?;
        }
        "sep-2322-client-request-state" => {
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                client.call_tool(name, json!({})).await?;
            }
        }
        "http-standard-headers" => {
            for tool in &tools {
                tolerate(
                    &tool.name,
                    client.call_tool(&tool.name, stub_arguments(tool)).await,
                );
            }
            match client.list_resources().await {
                Ok(resources) => {
                    for resource in resources {
                        tolerate(&resource.uri, client.read_resource(&resource.uri).await);
                    }
                }
                Err(error) => say(&format!("resources/list: {error}")),
            }
            match client.list_prompts().await {
                Ok(prompts) => {
                    for prompt in prompts {
                        tolerate(&prompt.name, client.get_prompt(&prompt.name, None).await);
                    }
                }
                Err(error) => say(&format!("prompts/list: {error}")),
            }
        }
        "http-custom-headers" => {
            let calls = context
                .get("toolCalls")
                .and_then(Value::as_array)
                .ok_or_else(|| Failure::Missing("MCP_CONFORMANCE_CONTEXT.toolCalls".to_owned()))?;
            for call in calls {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Failure::Missing("toolCalls[].name".to_owned()))?;
                let arguments = call.get("arguments").cloned().unwrap_or(json!({}));
                client.call_tool(name, arguments).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // Tools with invalid x-mcp-header annotations were dropped by list_tools.
            for tool in &tools {
                client.call_tool(&tool.name, stub_arguments(tool)).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let tool = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or_else(|| Failure::Missing("json_schema_2020_12_tool".to_owned()))?;
            let schema = Value::Object(tool.input_schema.clone());
            client
                .call_tool("json_schema_echo", json!({ "schema": schema }))
                .await?;
        }
        "elicitation-sep1034-client-defaults" => {
            client
                .call_tool("test_client_elicitation_defaults", json!({}))
                .await?;
        }
        "sse-retry" => {
            client.call_tool("test_reconnection", json!({})).await?;
        }
        other => return Err(Failure::Unsupported(other.to_owned())),
    }
    Ok(())
}
