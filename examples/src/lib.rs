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
