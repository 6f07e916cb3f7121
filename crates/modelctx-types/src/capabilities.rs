//! Client and server capabilities.

use crate::Extra;

wire_struct! {
    /// `roots` client capability (deprecated in 2026-07-28).
    #[derive(Default)]
    pub struct RootsCapability {
        /// Handshake era only: the client notifies when its roots change.
        opt "listChanged" => list_changed: bool,
    }
}

wire_struct! {
    /// `sampling` client capability (deprecated in 2026-07-28).
    #[derive(Default)]
    pub struct SamplingCapability {
        /// Present when the client supports `includeContext` other than `"none"`.
        opt "context" => context: Extra,
        /// Present when the client supports tool use in sampling (`tools` / `toolChoice`).
        opt "tools" => tools: Extra,
    }
}

wire_struct! {
    /// `elicitation` client capability. `{}` means form mode only.
    #[derive(Default)]
    pub struct ElicitationCapability {
        /// Form mode.
        opt "form" => form: Extra,
        /// URL mode.
        opt "url" => url: Extra,
    }
}

wire_struct! {
    /// What a client supports. On 2026-07-28 it is declared on every request; servers must not
    /// infer it from earlier requests.
    #[derive(Default)]
    pub struct ClientCapabilities {
        @own setters;
        /// Experimental, non-standard capabilities.
        opt "experimental" => experimental: Extra,
        /// Roots (deprecated).
        opt "roots" => roots: RootsCapability,
        /// Sampling (deprecated).
        opt "sampling" => sampling: SamplingCapability,
        /// Elicitation.
        opt "elicitation" => elicitation: ElicitationCapability,
        /// Extensions by identifier (e.g. `io.modelcontextprotocol/tasks`), each with its
        /// settings object.
        opt "extensions" => extensions: Extra,
        /// 2025-11-25 only: the experimental tasks the client runs for the server
        /// ([`crate::tasks_2025::client_tasks_capability`]).
        opt "tasks" => tasks: Extra,
    }
}

impl ClientCapabilities {
    /// Whether form-mode elicitation is declared (`elicitation: {}` counts as form).
    pub fn elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// Whether URL-mode elicitation is declared.
    pub fn elicitation_url(&self) -> bool {
        self.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// Whether sampling is declared.
    pub fn sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether tool use in sampling is declared.
    pub fn sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether context inclusion in sampling is declared.
    pub fn sampling_context(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.context.is_some())
    }

    /// Whether roots are declared.
    pub fn roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Whether the extension `id` is declared.
    pub fn extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }

    /// Declares form-mode elicitation.
    #[must_use]
    pub fn with_elicitation_form(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).form = Some(Extra::new());
        self
    }

    /// Declares URL-mode elicitation.
    #[must_use]
    pub fn with_elicitation_url(mut self) -> Self {
        self.elicitation.get_or_insert_with(Default::default).url = Some(Extra::new());
        self
    }

    /// Declares sampling.
    #[must_use]
    pub fn with_sampling(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default);
        self
    }

    /// Declares sampling with tool use.
    #[must_use]
    pub fn with_sampling_tools(mut self) -> Self {
        self.sampling.get_or_insert_with(Default::default).tools = Some(Extra::new());
        self
    }

    /// Declares roots.
    #[must_use]
    pub fn with_roots(mut self) -> Self {
        self.roots.get_or_insert_with(Default::default);
        self
    }

    /// Declares an extension with empty settings.
    #[must_use]
    pub fn with_extension(mut self, id: impl Into<String>) -> Self {
        self.extensions
            .get_or_insert_with(Extra::new)
            .insert(id.into(), serde_json::Value::Object(Extra::new()));
        self
    }

    /// Adds every capability of `other` (elicitation modes, sampling with its `tools` and
    /// `context`, roots, extensions) to these.
    pub fn union(&mut self, other: &Self) {
        if let Some(e) = &other.elicitation {
            let target = self.elicitation.get_or_insert_with(Default::default);
            target.form = target.form.take().or_else(|| e.form.clone());
            target.url = target.url.take().or_else(|| e.url.clone());
        }
        if let Some(s) = &other.sampling {
            let target = self.sampling.get_or_insert_with(Default::default);
            target.tools = target.tools.take().or_else(|| s.tools.clone());
            target.context = target.context.take().or_else(|| s.context.clone());
        }
        if other.roots.is_some() {
            self.roots.get_or_insert_with(Default::default);
        }
        for (id, settings) in other.extensions.iter().flatten() {
            self.extensions
                .get_or_insert_with(Extra::new)
                .entry(id.clone())
                .or_insert_with(|| settings.clone());
        }
    }

    /// Whether every capability declared in `required` is declared here too (the check behind
    /// `-32021`).
    pub fn satisfies(&self, required: &Self) -> bool {
        (!required
            .elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
            || self.elicitation_form())
            && (!required.elicitation_url() || self.elicitation_url())
            && (!required.sampling() || self.sampling())
            && (!required.sampling_tools() || self.sampling_tools())
            && (!required.sampling_context() || self.sampling_context())
            && (!required.roots() || self.roots())
            && required
                .extensions
                .iter()
                .flat_map(|e| e.keys())
                .all(|id| self.extension(id))
    }
}

wire_struct! {
    /// `prompts` server capability.
    #[derive(Default)]
    pub struct PromptsCapability {
        /// The server sends `notifications/prompts/list_changed`.
        opt "listChanged" => list_changed: bool,
    }
}

wire_struct! {
    /// `resources` server capability.
    #[derive(Default)]
    pub struct ResourcesCapability {
        /// The server supports per-resource update subscriptions.
        opt "subscribe" => subscribe: bool,
        /// The server sends `notifications/resources/list_changed`.
        opt "listChanged" => list_changed: bool,
    }
}

wire_struct! {
    /// `tools` server capability.
    #[derive(Default)]
    pub struct ToolsCapability {
        /// The server sends `notifications/tools/list_changed`.
        opt "listChanged" => list_changed: bool,
    }
}

wire_struct! {
    /// What a server supports. Calls to features not declared here get `-32601`.
    #[derive(Default)]
    pub struct ServerCapabilities {
        /// Experimental, non-standard capabilities.
        opt "experimental" => experimental: Extra,
        /// Log messages (deprecated).
        opt "logging" => logging: Extra,
        /// Argument completion.
        opt "completions" => completions: Extra,
        /// Prompts.
        opt "prompts" => prompts: PromptsCapability,
        /// Resources.
        opt "resources" => resources: ResourcesCapability,
        /// Tools.
        opt "tools" => tools: ToolsCapability,
        /// Extensions by identifier, each with its settings object.
        opt "extensions" => extensions: Extra,
        /// 2025-11-25 only: the experimental tasks the server runs
        /// ([`crate::tasks_2025::server_runs_tool_tasks`]).
        opt "tasks" => tasks: Extra,
    }
}

impl ServerCapabilities {
    /// Whether the extension `id` is declared.
    pub fn extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }
}
