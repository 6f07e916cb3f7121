//! Code shared by the runnable examples in `examples/examples/` (see `examples/README.md`).
//!
//! [`provision`] is the guide's low-level server: one `provision` tool that asks the user for a
//! region with an `InputRequiredResult` and finishes on the retry. Several examples serve it, so
//! it lives here once.

pub mod provision {
    //! The low-level `provision` server of the guide.
    //!
    //! Round 1 answers an `InputRequiredResult` with one form elicitation under the key
    //! `region` and the state `provision-v1`; the retry carries the user's answer under the same
    //! key and the state echoed back, and the tool finishes. The handler only ever sees the
    //! plaintext state: the server seals it on the way out and opens it on the way back in.

    use std::future::Ready;

    use modelctx::client::CallbackContext;
    use modelctx::seal::RequestStateSecurity;
    use modelctx::server::{RegistrationError, RequestContext, Server};
    use modelctx::types::{
        CallToolRequestParams, CallToolResult, ElicitAction, ElicitRequestFormParams,
        ElicitRequestParams, ElicitResult, ErrorObject, InputRequest, InputRequiredResult, Outcome,
        Tool,
    };
    use serde_json::{Map, Value, json};

    /// The name the server reports (and the audience of its sealed state).
    pub const NAME: &str = "Provisioner";

    /// The `provision` tool: `{name: string}`.
    pub fn tool() -> Tool {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The database's name."}},
            "required": ["name"],
        });
        let schema = match schema {
            Value::Object(map) => map,
            _ => modelctx::types::Extra::new(),
        };
        Tool::new("provision", schema)
            .with_description("Provision a database; asks which region it should live in.")
    }

    /// The handler: ask for the region, or provision with the answer.
    ///
    /// # Errors
    /// Never in practice (the schema is a constant).
    pub async fn provision(
        ctx: RequestContext,
        params: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, ErrorObject> {
        let name = params
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("db")
            .to_owned();
        // The retry: the answer comes under the key we asked with.
        let answer = params
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get("region"))
            .and_then(|response| response.as_elicit().ok());
        match answer {
            Some(answer) if answer.action == ElicitAction::Accept => {
                let region = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("region"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                let state = params.request_state.as_deref().unwrap_or("none");
                Ok(Outcome::Complete(CallToolResult::text(format!(
                    "Provisioned '{name}' in {region} (protocol {}, state seen by handler: \
                     '{state}').",
                    ctx.protocol_version()
                ))))
            }
            Some(answer) => Ok(Outcome::Complete(CallToolResult::error(format!(
                "Provisioning '{name}' was {}.",
                if answer.action == ElicitAction::Decline {
                    "declined"
                } else {
                    "cancelled"
                }
            )))),
            // Round 1: ask, and say where we are in plaintext state.
            None => {
                let schema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": {"region": {"type": "string"}},
                    "required": ["region"],
                }))
                .map_err(|e| ErrorObject::internal(e.to_string()))?;
                Ok(Outcome::InputRequired(
                    InputRequiredResult::new()
                        .with_request(
                            "region",
                            InputRequest::elicit(ElicitRequestFormParams::new(
                                "Which region should the database live in?",
                                schema,
                            )),
                        )
                        .with_state("provision-v1"),
                ))
            }
        }
    }

    /// A server with the `provision` tool whose state is sealed with `policy`.
    ///
    /// # Errors
    /// An invalid sealing policy.
    pub fn server(policy: RequestStateSecurity) -> Result<Server, RegistrationError> {
        Server::builder(NAME, "0.0.1")
            .tool(tool(), provision)
            .seal_request_state(policy)
            .build()
    }

    /// A client's elicitation callback that answers the region question with `region` (the
    /// examples' stand-in for a user).
    pub fn answer_region(
        region: &'static str,
    ) -> impl Fn(CallbackContext, ElicitRequestParams) -> Ready<Result<ElicitResult, ErrorObject>>
    + Send
    + Sync
    + 'static {
        move |_context, _params| {
            let mut content = Map::new();
            content.insert("region".to_owned(), Value::from(region));
            std::future::ready(Ok(ElicitResult::accept(content)))
        }
    }
}

pub mod lambda {
    //! The demo's `provision` (the high-level server of `mcp serve demo`) as an AWS Lambda
    //! function (`modelctx::server::lambda`), and what drives it without AWS: the API Gateway and
    //! function URL events of `lambda-events/`, handed to the function as the Lambda runtime
    //! hands them (`lambda_http`'s adapter), the response read back as the runtime posts it.

    use std::error::Error;

    use lambda_http::lambda_runtime::{Context, LambdaEvent};
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Service as _};
    use modelctx::seal::RequestStateSecurity;
    use modelctx::server::lambda::{LambdaConfig, LambdaFunction};
    use modelctx::server::{BuildError, McpServer};
    use modelctx_cli::demo;
    use serde_json::{Value, json};

    /// The function's server: the demo's `provision` (asks for the region, then provisions)
    /// and `echo`, its state sealed with `policy`.
    ///
    /// # Errors
    /// Never in practice (the tools are the demo's).
    pub fn server(policy: RequestStateSecurity) -> Result<McpServer, BuildError> {
        McpServer::builder(demo::NAME, env!("CARGO_PKG_VERSION"))
            .tool::<demo::provision>()
            .tool::<demo::echo>()
            .request_state_security(policy)
            .build()
    }

    /// A function instance as a cold start makes one: its own server, sealed with `keys`
    /// (what `MCP_REQUEST_STATE_KEYS` holds; `RequestStateSecurity::from_env` parses the same).
    ///
    /// # Errors
    /// Keys that do not parse, or a server that does not fit a function.
    pub fn instance(keys: &str, config: LambdaConfig) -> Result<LambdaFunction, Box<dyn Error>> {
        let policy =
            RequestStateSecurity::from_settings(Some(keys), None)?.ok_or("no sealing keys")?;
        Ok(LambdaFunction::new(server(policy)?.server(), config)?)
    }

    /// Where an event comes from: each has its own payload shape.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Source {
        /// An API Gateway REST API (payload 1.0), deployed to the stage `prod`.
        RestApi,
        /// An API Gateway HTTP API (payload 2.0).
        HttpApi,
        /// A function URL (payload 2.0, as the `cargo lambda` emulator sends it).
        FunctionUrl,
    }

    impl Source {
        /// Every source.
        pub const ALL: [Source; 3] = [Source::RestApi, Source::HttpApi, Source::FunctionUrl];

        fn template(self) -> &'static str {
            match self {
                Source::RestApi => include_str!("../lambda-events/rest-api.json"),
                Source::HttpApi => include_str!("../lambda-events/http-api.json"),
                Source::FunctionUrl => include_str!("../lambda-events/function-url.json"),
            }
        }
    }

    /// The `_meta` of a 2026-07-28 request from a client that answers form elicitations.
    pub fn meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "lambda-example", "version": "1.0.0"},
        })
    }

    /// The event `source` sends for a POST of `message` to `/mcp` with these MCP headers
    /// (`mcp-protocol-version`, `mcp-method`, `mcp-name`, …): the recorded event with its body
    /// and headers replaced.
    ///
    /// # Errors
    /// A template that is not JSON (never for the committed ones).
    pub fn event(
        source: Source,
        message: &Value,
        headers: &[(&str, &str)],
    ) -> Result<Value, Box<dyn Error>> {
        let mut event: Value = serde_json::from_str(source.template())?;
        let mut all = json!({
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        });
        for (name, value) in headers {
            all[*name] = Value::from(*value);
        }
        event["body"] = Value::from(message.to_string());
        event["isBase64Encoded"] = Value::Bool(false);
        let host = event["headers"]["host"].clone();
        all["host"] = host;
        if source == Source::RestApi {
            let multi: serde_json::Map<String, Value> = all
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| (name.clone(), json!([value])))
                .collect();
            event["multiValueHeaders"] = Value::Object(multi);
        }
        event["headers"] = all;
        Ok(event)
    }

    /// The headers of a 2026-07-28 request for `method` (and `name`, the tool's).
    pub fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(name) = name {
            headers.push(("mcp-name", name));
        }
        headers
    }

    /// One invocation: `event` handed to `function` as the Lambda runtime hands it, and the
    /// response payload the runtime would post back (`statusCode`, `headers`, `body`, …).
    ///
    /// # Errors
    /// An event that no `lambda_http` source reads, or a response that does not serialize.
    pub async fn invoke(function: &LambdaFunction, event: Value) -> Result<Value, Box<dyn Error>> {
        let request: LambdaRequest = serde_json::from_value(event)?;
        // `lambda_http::run` is the runtime's loop around exactly this adapter.
        let mut adapter = Adapter::from(function.clone());
        let response = adapter
            .call(LambdaEvent::new(request, Context::default()))
            .await?;
        Ok(serde_json::to_value(&response)?)
    }

    /// The JSON-RPC message of a response payload: its body as JSON, or the last message of an
    /// event stream.
    ///
    /// # Errors
    /// A body that holds no JSON-RPC message.
    pub fn message(payload: &Value) -> Result<Value, Box<dyn Error>> {
        let body = payload["body"]
            .as_str()
            .ok_or("a response without a body")?;
        if let Ok(message) = serde_json::from_str(body) {
            return Ok(message);
        }
        let last = body
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("data:"))
            .ok_or("neither JSON nor an event stream")?;
        Ok(serde_json::from_str(last.trim())?)
    }
}
