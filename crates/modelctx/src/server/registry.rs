//! What the server offers: tools, prompts, resources and resource templates, with their
//! handlers. The registry is immutable once built and swapped whole on change, so requests read
//! it without locks held across `.await` and see a consistent snapshot.

use std::collections::HashMap;
use std::sync::Arc;

use modelctx_types::{Prompt, Resource, ResourceTemplate, Tool};
use serde_json::Value;

use super::handler::{PromptHandler, ResourceHandler, ResourceTemplateHandler, ToolHandler};
use crate::http::headers::{InvalidParamHeaders, ParamHeader, param_headers};
use crate::schema_check::SchemaCheck;
use crate::uri_template::{UriTemplate, UriVariables};

/// A registration the server refuses, reported when the server is built or the item added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Two tools, prompts, resources or templates with the same name (or URI).
    #[error("{kind} {name:?} is registered twice")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name or URI.
        name: String,
    },
    /// A tool whose `inputSchema` is not `{"type": "object", …}`.
    #[error("tool {0:?}: inputSchema must have \"type\": \"object\"")]
    InputSchemaNotObject(String),
    /// A tool whose `inputSchema` or `outputSchema` is not a usable JSON Schema.
    #[error("tool {tool:?}: {which} is not a usable JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
    /// A tool with invalid `x-mcp-header` annotations (clients would drop it).
    #[error("tool {tool:?}: {source}")]
    InvalidParamHeaders {
        /// The tool.
        tool: String,
        /// What is wrong.
        #[source]
        source: InvalidParamHeaders,
    },
    /// A resource template that does not parse.
    #[error(transparent)]
    InvalidTemplate(#[from] crate::uri_template::InvalidTemplate),
    /// A sealing policy that cannot be installed (e.g. explicit keys and no server name); the
    /// policy's error is the [`source`](std::error::Error::source).
    #[error("request-state sealing: {0}")]
    Sealing(#[source] modelctx_seal::ConfigError),
    /// Single-use rounds were asked for without sealed request state: plaintext state has no
    /// replay key.
    #[error(
        "request-state sealing: single use needs sealed request state (seal_request_state): \
         plaintext state has no replay key"
    )]
    SingleUseNeedsSealing,
    /// The server's `Implementation` info does not serialize.
    #[error("server info: {0}")]
    ServerInfo(String),
    /// A tasks runtime that cannot run (e.g. no instance id: system randomness failed).
    #[error("tasks: {0}")]
    Tasks(String),
    /// A change bus the server cannot join (no instance id: system randomness failed).
    #[error("change bus: {0}")]
    Bus(String),
    /// Two extensions with the same identifier.
    #[error("extension {0:?} is given twice")]
    DuplicateExtension(String),
    /// An extension that cannot be served: settings too large, a method already bound, a
    /// second set of task hooks.
    #[error("extension {id:?}: {reason}")]
    Extension {
        /// The extension's identifier.
        id: String,
        /// What is wrong.
        reason: String,
    },
}

pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) headers: Vec<ParamHeader>,
    /// Arguments are checked against `inputSchema` before the handler runs.
    pub(crate) input_check: SchemaCheck,
    /// Structured results are checked against `outputSchema`, when the tool declares one.
    pub(crate) output_check: Option<SchemaCheck>,
    pub(crate) handler: Arc<dyn ToolHandler>,
}

pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<dyn PromptHandler>,
}

pub(crate) struct ResourceEntry {
    pub(crate) resource: Resource,
    pub(crate) handler: Arc<dyn ResourceHandler>,
}

pub(crate) struct TemplateEntry {
    pub(crate) template: ResourceTemplate,
    pub(crate) compiled: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceTemplateHandler>,
}

/// A snapshot of everything registered.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    pub(crate) tools: Vec<Arc<ToolEntry>>,
    tool_index: HashMap<String, usize>,
    pub(crate) prompts: Vec<Arc<PromptEntry>>,
    prompt_index: HashMap<String, usize>,
    pub(crate) resources: Vec<Arc<ResourceEntry>>,
    resource_index: HashMap<String, usize>,
    pub(crate) templates: Vec<Arc<TemplateEntry>>,
}

fn tool_name_is_conventional(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

impl Registry {
    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompt_index.get(name).map(|&i| &self.prompts[i])
    }

    pub(crate) fn resource(&self, uri: &str) -> Option<&Arc<ResourceEntry>> {
        self.resource_index.get(uri).map(|&i| &self.resources[i])
    }

    /// The first template (in registration order) that matches `uri`.
    pub(crate) fn template_for(&self, uri: &str) -> Option<(&Arc<TemplateEntry>, UriVariables)> {
        self.templates
            .iter()
            .find_map(|t| t.compiled.matches(uri).map(|vars| (t, vars)))
    }

    pub(crate) fn add_tool(
        &mut self,
        tool: Tool,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<(), RegistrationError> {
        if self.tool_index.contains_key(&tool.name) {
            return Err(RegistrationError::Duplicate {
                kind: "tool",
                name: tool.name,
            });
        }
        if tool.input_schema.get("type") != Some(&Value::from("object")) {
            return Err(RegistrationError::InputSchemaNotObject(tool.name));
        }
        if !tool_name_is_conventional(&tool.name) {
            tracing::warn!(tool = %tool.name, "tool names should be 1-128 characters of [A-Za-z0-9_.-]");
        }
        let headers = param_headers(&tool.input_schema).map_err(|source| {
            RegistrationError::InvalidParamHeaders {
                tool: tool.name.clone(),
                source,
            }
        })?;
        let compile = |which, schema: &Value| {
            SchemaCheck::compile(schema).map_err(|reason| RegistrationError::InvalidSchema {
                tool: tool.name.clone(),
                which,
                reason,
            })
        };
        let input_check = compile("inputSchema", &Value::Object(tool.input_schema.clone()))?;
        let output_check = match &tool.output_schema {
            Some(schema) => Some(compile("outputSchema", &Value::Object(schema.clone()))?),
            None => None,
        };
        self.tool_index.insert(tool.name.clone(), self.tools.len());
        self.tools.push(Arc::new(ToolEntry {
            tool,
            headers,
            input_check,
            output_check,
            handler,
        }));
        Ok(())
    }

    pub(crate) fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.tools.len();
        self.tools.retain(|t| t.tool.name != name);
        self.tool_index = index(&self.tools, |t| t.tool.name.clone());
        before != self.tools.len()
    }

    pub(crate) fn add_prompt(
        &mut self,
        prompt: Prompt,
        handler: Arc<dyn PromptHandler>,
    ) -> Result<(), RegistrationError> {
        if self.prompt_index.contains_key(&prompt.name) {
            return Err(RegistrationError::Duplicate {
                kind: "prompt",
                name: prompt.name,
            });
        }
        self.prompt_index
            .insert(prompt.name.clone(), self.prompts.len());
        self.prompts.push(Arc::new(PromptEntry { prompt, handler }));
        Ok(())
    }

    pub(crate) fn remove_prompt(&mut self, name: &str) -> bool {
        let before = self.prompts.len();
        self.prompts.retain(|p| p.prompt.name != name);
        self.prompt_index = index(&self.prompts, |p| p.prompt.name.clone());
        before != self.prompts.len()
    }

    pub(crate) fn add_resource(
        &mut self,
        resource: Resource,
        handler: Arc<dyn ResourceHandler>,
    ) -> Result<(), RegistrationError> {
        if self.resource_index.contains_key(&resource.uri) {
            return Err(RegistrationError::Duplicate {
                kind: "resource",
                name: resource.uri,
            });
        }
        self.resource_index
            .insert(resource.uri.clone(), self.resources.len());
        self.resources
            .push(Arc::new(ResourceEntry { resource, handler }));
        Ok(())
    }

    pub(crate) fn remove_resource(&mut self, uri: &str) -> bool {
        let before = self.resources.len();
        self.resources.retain(|r| r.resource.uri != uri);
        self.resource_index = index(&self.resources, |r| r.resource.uri.clone());
        before != self.resources.len()
    }

    pub(crate) fn add_template(
        &mut self,
        template: ResourceTemplate,
        handler: Arc<dyn ResourceTemplateHandler>,
    ) -> Result<(), RegistrationError> {
        if self
            .templates
            .iter()
            .any(|t| t.template.uri_template == template.uri_template)
        {
            return Err(RegistrationError::Duplicate {
                kind: "resource template",
                name: template.uri_template,
            });
        }
        let compiled = UriTemplate::parse(&template.uri_template)?;
        self.templates.push(Arc::new(TemplateEntry {
            template,
            compiled,
            handler,
        }));
        Ok(())
    }

    pub(crate) fn remove_template(&mut self, uri_template: &str) -> bool {
        let before = self.templates.len();
        self.templates
            .retain(|t| t.template.uri_template != uri_template);
        before != self.templates.len()
    }
}

fn index<T>(items: &[Arc<T>], key: impl Fn(&T) -> String) -> HashMap<String, usize> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| (key(item), i))
        .collect()
}
