//! The `x-mcp-header` index: which tool arguments a `tools/call` mirrors into `Mcp-Param-*`
//! headers, learnt from `tools/list`. Tools whose annotations break the rules are dropped
//! from the listing with a warning, as 2026-07-28 requires of clients.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use mcp_types::{Extra, Tool};

use crate::http::headers::{ParamHeader, param_headers};

/// Tool name → its mirrored arguments.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaderIndex {
    tools: Mutex<HashMap<String, Vec<ParamHeader>>>,
}

impl ToolHeaderIndex {
    /// Filters a page of `tools/list` in place and records the headers of the tools it keeps.
    /// With `complete` (a single-page listing) tools that disappeared are forgotten.
    pub(crate) fn absorb(&self, tools: &mut Vec<Tool>, complete: bool) {
        let mut index = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if complete {
            index.clear();
        }
        tools.retain(|tool| match param_headers(&tool.input_schema) {
            Ok(headers) => {
                index.insert(tool.name.clone(), headers);
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

    /// The `Mcp-Param-*` headers (lower-cased name, encoded value) for a call of `tool` with
    /// `arguments`: present, non-null annotated arguments only. Empty for unlisted tools.
    pub(crate) fn headers_for(
        &self,
        tool: &str,
        arguments: Option<&Extra>,
    ) -> Vec<(String, String)> {
        let index = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(params) = index.get(tool) else {
            return Vec::new();
        };
        params
            .iter()
            .filter_map(|param| {
                let value = param.value_in(arguments)?;
                Some((param.header.clone(), param.encode(value)?))
            })
            .collect()
    }
}
