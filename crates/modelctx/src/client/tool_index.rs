//! What the client learns about tools from `tools/list`: which arguments a `tools/call` mirrors
//! into `Mcp-Param-*` headers (`x-mcp-header`), and the `outputSchema` its structured results
//! are checked against. Tools whose header annotations break the rules are dropped from the
//! listing with a warning, as 2026-07-28 requires of clients; a tool whose `outputSchema` does
//! not compile is kept, unchecked, with a warning.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use modelctx_types::tasks_2025::TaskSupport;
use modelctx_types::{CallToolResult, Extra, Tool};
use serde_json::Value;

use crate::http::headers::{ParamHeader, param_headers};
use crate::schema_check::SchemaCheck;
use crate::sync::lock;

#[derive(Debug)]
struct Known {
    headers: Vec<ParamHeader>,
    output: Option<Arc<SchemaCheck>>,
}

/// Tool name → what its listing said.
#[derive(Debug, Default)]
pub(crate) struct ToolIndex {
    tools: Mutex<HashMap<String, Known>>,
    /// Names whose results made the client read `tools/list` (once per name, so a tool the
    /// server never lists costs one listing, not one per call).
    looked_up: Mutex<HashSet<String>>,
    /// 2025-11-25: each listed tool's `execution.taskSupport` (absent: `forbidden`).
    task_support: Mutex<HashMap<String, TaskSupport>>,
}

impl ToolIndex {
    /// Filters a page of `tools/list` in place and records the tools it keeps.
    /// With `complete` (a single-page listing) tools that disappeared are forgotten.
    pub(crate) fn absorb(&self, tools: &mut Vec<Tool>, complete: bool) {
        let mut index = lock(&self.tools);
        if complete {
            index.clear();
        }
        tools.retain(|tool| match param_headers(&tool.input_schema) {
            Ok(headers) => {
                let output = tool.output_schema.as_ref().and_then(|schema| {
                    SchemaCheck::compile(&Value::Object(schema.clone()))
                        .inspect_err(|reason| {
                            tracing::warn!(tool = %tool.name, %reason, "outputSchema does not compile; its results are not checked");
                        })
                        .ok()
                        .map(Arc::new)
                });
                index.insert(tool.name.clone(), Known { headers, output });
                true
            }
            Err(reason) => {
                tracing::warn!(tool = %tool.name, %reason, "dropping a tool with an invalid x-mcp-header annotation");
                // A stale entry from an earlier valid listing must not mirror headers anymore.
                index.remove(&tool.name);
                false
            }
        });
    }

    /// 2025-11-25: records the `execution.taskSupport` of a page of `tools/list`; with
    /// `complete` (a single-page listing) tools that disappeared are forgotten.
    pub(crate) fn absorb_task_support(&self, tools: &[Tool], complete: bool) {
        let mut index = lock(&self.task_support);
        if complete {
            index.clear();
        }
        for tool in tools {
            let support = tool
                .execution
                .as_ref()
                .and_then(|execution| execution.task_support.clone())
                .unwrap_or(TaskSupport::FORBIDDEN);
            index.insert(tool.name.clone(), support);
        }
    }

    /// 2025-11-25: the `execution.taskSupport` of a listed tool; `None` for a tool never
    /// listed.
    pub(crate) fn task_support(&self, tool: &str) -> Option<TaskSupport> {
        lock(&self.task_support).get(tool).cloned()
    }

    /// 2025-11-25: true the first time it is asked about a tool whose `taskSupport` no listing
    /// has shown (the caller reads `tools/list` once for it).
    pub(crate) fn first_look_task_support(&self, tool: &str) -> bool {
        if lock(&self.task_support).contains_key(tool) {
            return false;
        }
        lock(&self.looked_up).insert(tool.to_owned())
    }

    /// True the first time it is asked about a tool that no listing has shown: the caller
    /// should read `tools/list` before checking the tool's result.
    pub(crate) fn first_look(&self, tool: &str) -> bool {
        if lock(&self.tools).contains_key(tool) {
            return false;
        }
        lock(&self.looked_up).insert(tool.to_owned())
    }

    /// The `Mcp-Param-*` headers (lower-cased name, encoded value) for a call of `tool` with
    /// `arguments`: present, non-null annotated arguments only. Empty for unlisted tools.
    pub(crate) fn headers_for(
        &self,
        tool: &str,
        arguments: Option<&Extra>,
    ) -> Vec<(String, String)> {
        let index = lock(&self.tools);
        let Some(known) = index.get(tool) else {
            return Vec::new();
        };
        known
            .headers
            .iter()
            .filter_map(|param| {
                let value = param.value_in(arguments)?;
                Some((param.header.clone(), param.encode(value)?))
            })
            .collect()
    }

    /// Checks a successful result of `tool` against the `outputSchema` of its listing: it must
    /// carry `structuredContent`, and that must conform. `Ok` for error results, for tools
    /// without an output schema and for tools never listed.
    pub(crate) fn check_result(&self, tool: &str, result: &CallToolResult) -> Result<(), String> {
        if result.is_error == Some(true) {
            return Ok(());
        }
        let check = {
            let index = lock(&self.tools);
            match index.get(tool).and_then(|known| known.output.clone()) {
                Some(check) => check,
                None => return Ok(()),
            }
        };
        match &result.structured_content {
            None => {
                Err("the tool has an outputSchema but returned no structuredContent".to_owned())
            }
            Some(content) => check.check(content),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, output: Value) -> Tool {
        let mut tool = Tool::new(name, Tool::empty_input_schema());
        if let Value::Object(schema) = output {
            tool.output_schema = Some(schema);
        }
        tool
    }

    #[test]
    fn results_are_checked_against_the_listed_output_schema() {
        let index = ToolIndex::default();
        let schema =
            json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        let mut tools = vec![tool("count", schema), tool("free", Value::Null)];
        index.absorb(&mut tools, true);
        let mut result = CallToolResult::text("3");
        result.structured_content = Some(json!({"n": 3}));
        assert_eq!(index.check_result("count", &result), Ok(()));
        result.structured_content = Some(json!({"n": "3"}));
        assert_eq!(
            index.check_result("count", &result),
            Err("/n: \"3\" is not of type \"integer\"".to_owned())
        );
        result.structured_content = None;
        assert!(index.check_result("count", &result).is_err());
        // Error results, tools without a schema and unlisted tools are not checked.
        assert_eq!(
            index.check_result("count", &CallToolResult::error("no")),
            Ok(())
        );
        assert_eq!(index.check_result("free", &result), Ok(()));
        assert_eq!(index.check_result("unlisted", &result), Ok(()));
        // A schema that does not compile leaves the tool listed and unchecked.
        let mut tools = vec![tool("odd", json!({"type": "no-such-type"}))];
        index.absorb(&mut tools, true);
        assert_eq!(tools.len(), 1);
        assert_eq!(index.check_result("odd", &result), Ok(()));
        assert_eq!(index.check_result("count", &result), Ok(()), "forgotten");
    }

    #[test]
    fn an_unseen_tool_is_looked_up_once() {
        let index = ToolIndex::default();
        index.absorb(&mut vec![tool("count", Value::Null)], true);
        assert!(!index.first_look("count"), "listed");
        assert!(index.first_look("hidden"));
        assert!(!index.first_look("hidden"), "asked already");
        assert!(index.first_look("other"));
    }
}
