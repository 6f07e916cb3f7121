//! A client of several servers at once (the Python SDK's `ClientSessionGroup`): their tools,
//! prompts and resources as one set, each call routed to the server that offers it, the set
//! kept current as the servers announce changes.
//!
//! Each member is a [`Client`] the caller connected (stdio or HTTP, either era) and named: the
//! **key** the caller gives is what identifies a server here, never the `serverInfo.name` the
//! server reports — two servers may claim one name, and a hostile one could claim another's to
//! take its calls. Tool and prompt names are given in the group by a [`Naming`]: as they are
//! (a collision is refused), prefixed with the key, or by a function of the caller's. Resources
//! keep their URIs, which are global already; two servers listing one URI collide.
//!
//! Adding a member is all or nothing: its lists are read first, and if any name it brings
//! collides, nothing of it joins. A member whose server declares `listChanged` is followed: a
//! task listens for its list changes and reads its lists again; a name that collides then is
//! left out (and logged) while the member that holds it keeps it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock, Weak};

use modelctx_types::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, SubscriptionFilter, Tool,
};
use serde_json::Value;

use super::api::Client;
use super::error::ClientError;
use super::listen::ListenEvent;
use crate::sync::{read, write};

/// How the group names the tools and prompts of its members.
#[derive(Clone, Default)]
pub enum Naming {
    /// As the server names them; a name two members offer is refused.
    #[default]
    Exact,
    /// `key` + `separator` + the server's name (e.g. `github__create_issue`).
    Prefixed {
        /// Between the key and the name.
        separator: String,
    },
    /// The caller's function of (the server's name, the member's key).
    Custom(NameFn),
}

/// A naming function: (the server's name for an item, the member's key) → its group name.
pub type NameFn = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

impl fmt::Debug for Naming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact => f.write_str("Exact"),
            Self::Prefixed { separator } => f
                .debug_struct("Prefixed")
                .field("separator", separator)
                .finish(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl Naming {
    fn name(&self, name: &str, key: &str) -> String {
        match self {
            Self::Exact => name.to_owned(),
            Self::Prefixed { separator } => format!("{key}{separator}{name}"),
            Self::Custom(name_of) => name_of(name, key),
        }
    }
}

/// One tool, prompt or resource of the group: its name in the group, the member that offers
/// it, and the server's own description of it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Grouped<T> {
    /// Its name in the group (a resource's URI).
    pub name: String,
    /// The key of the member that offers it.
    pub server: String,
    /// As the server lists it (with the server's own name).
    pub item: T,
}

/// Why the group refused something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// A member with this key is already in the group.
    #[error("a server named {0:?} is already in the group")]
    DuplicateServer(String),
    /// No member has this key.
    #[error("no server named {0:?} in the group")]
    UnknownServer(String),
    /// A name a member would bring is taken (or a naming function gave two of its items one
    /// name, or an empty one).
    #[error("{kind} {name:?} of {server:?} collides with {other:?}'s")]
    Collision {
        /// `tool`, `prompt` or `resource`.
        kind: &'static str,
        /// The name in the group.
        name: String,
        /// The member being added.
        server: String,
        /// The member that has it (the same member when its own items collide).
        other: String,
    },
    /// No member offers a tool, prompt or resource of this name.
    #[error("no server in the group offers the {kind} {name:?}")]
    Unknown {
        /// `tool`, `prompt` or `resource`.
        kind: &'static str,
        /// The name asked for.
        name: String,
    },
    /// The member's client failed.
    #[error("server {server:?}: {source}")]
    Client {
        /// The member's key.
        server: String,
        /// What failed.
        #[source]
        source: Box<ClientError>,
    },
}

/// A client of several servers at once (see the [module docs](self)). Cloning is cheap and
/// shares the group.
#[derive(Clone, Debug)]
pub struct ClientGroup {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    naming: Naming,
    state: RwLock<State>,
}

#[derive(Debug, Default)]
struct State {
    members: BTreeMap<String, Member>,
    tools: BTreeMap<String, Grouped<Tool>>,
    prompts: BTreeMap<String, Grouped<Prompt>>,
    resources: BTreeMap<String, Grouped<Resource>>,
}

#[derive(Debug)]
struct Member {
    client: Client,
    /// The task following the member's changes, aborted when the member leaves.
    follower: Option<tokio::task::AbortHandle>,
}

/// A member's lists, named for the group.
#[derive(Default)]
struct Lists {
    tools: Vec<Grouped<Tool>>,
    prompts: Vec<Grouped<Prompt>>,
    resources: Vec<Grouped<Resource>>,
}

impl Default for ClientGroup {
    fn default() -> Self {
        Self::new(Naming::default())
    }
}

impl ClientGroup {
    /// An empty group that names its members' tools and prompts by `naming`.
    pub fn new(naming: Naming) -> Self {
        Self {
            inner: Arc::new(Inner {
                naming,
                state: RwLock::new(State::default()),
            }),
        }
    }

    /// Adds `client` as the member `key`: reads its tools, prompts and resources (what its
    /// server declares), and joins them all or none. Follows the server's list changes when
    /// it declares them.
    ///
    /// # Errors
    /// [`GroupError::DuplicateServer`], [`GroupError::Collision`], or the client's failure to
    /// list ([`GroupError::Client`]).
    pub async fn add(&self, key: impl Into<String>, client: Client) -> Result<(), GroupError> {
        let key = key.into();
        if read(&self.inner.state).members.contains_key(&key) {
            return Err(GroupError::DuplicateServer(key));
        }
        let lists = self.inner.lists(&key, &client).await?;
        {
            let mut state = write(&self.inner.state);
            if state.members.contains_key(&key) {
                return Err(GroupError::DuplicateServer(key));
            }
            state.check(&key, &lists)?;
            state.join(lists);
            state.members.insert(
                key.clone(),
                Member {
                    client: client.clone(),
                    follower: None,
                },
            );
        }
        let follower = follow(Arc::downgrade(&self.inner), key.clone(), client).await;
        if let Some(member) = write(&self.inner.state).members.get_mut(&key) {
            member.follower = follower;
        } else if let Some(follower) = follower {
            // Removed while the follower started.
            follower.abort();
        }
        Ok(())
    }

    /// Removes the member `key` and everything it brought; returns its client, for the caller
    /// to close (or keep using).
    ///
    /// # Errors
    /// [`GroupError::UnknownServer`].
    pub fn remove(&self, key: &str) -> Result<Client, GroupError> {
        let mut state = write(&self.inner.state);
        let member = state
            .members
            .remove(key)
            .ok_or_else(|| GroupError::UnknownServer(key.to_owned()))?;
        if let Some(follower) = member.follower {
            follower.abort();
        }
        state.leave(key);
        Ok(member.client)
    }

    /// The member `key`'s client (for what the group does not route: completions, tasks,
    /// subscriptions).
    pub fn client(&self, key: &str) -> Option<Client> {
        read(&self.inner.state)
            .members
            .get(key)
            .map(|member| member.client.clone())
    }

    /// The members' keys, sorted.
    pub fn servers(&self) -> Vec<String> {
        read(&self.inner.state).members.keys().cloned().collect()
    }

    /// Every tool of the group, by name in the group.
    pub fn tools(&self) -> Vec<Grouped<Tool>> {
        read(&self.inner.state).tools.values().cloned().collect()
    }

    /// Every prompt of the group, by name in the group.
    pub fn prompts(&self) -> Vec<Grouped<Prompt>> {
        read(&self.inner.state).prompts.values().cloned().collect()
    }

    /// Every resource of the group, by URI.
    pub fn resources(&self) -> Vec<Grouped<Resource>> {
        read(&self.inner.state)
            .resources
            .values()
            .cloned()
            .collect()
    }

    /// Calls the tool the group names `name` on the member that offers it (with the server's
    /// own name for it), through that client's input-required loop.
    ///
    /// # Errors
    /// [`GroupError::Unknown`], or the client's failure.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, GroupError> {
        let (server, client, own) = self.route(name, "tool", |state| &state.tools)?;
        client
            .call_tool(own, arguments)
            .await
            .map_err(|source| GroupError::Client {
                server,
                source: Box::new(source),
            })
    }

    /// Gets the prompt the group names `name` from the member that offers it.
    ///
    /// # Errors
    /// [`GroupError::Unknown`], or the client's failure.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, GroupError> {
        let (server, client, own) = self.route(name, "prompt", |state| &state.prompts)?;
        client
            .get_prompt(own, arguments)
            .await
            .map_err(|source| GroupError::Client {
                server,
                source: Box::new(source),
            })
    }

    /// Reads the resource `uri` from the member that lists it.
    ///
    /// # Errors
    /// [`GroupError::Unknown`] (a URI no member lists: for a template's URI, read it through
    /// [`client`](Self::client)), or the client's failure.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, GroupError> {
        let (server, client, own) = self.route(uri, "resource", |state| &state.resources)?;
        client
            .read_resource(own)
            .await
            .map_err(|source| GroupError::Client {
                server,
                source: Box::new(source),
            })
    }

    /// The member, its client and the server's own name for what the group calls `name`.
    fn route<T: Named>(
        &self,
        name: &str,
        kind: &'static str,
        table: impl Fn(&State) -> &BTreeMap<String, Grouped<T>>,
    ) -> Result<(String, Client, String), GroupError> {
        let state = read(&self.inner.state);
        let unknown = || GroupError::Unknown {
            kind,
            name: name.to_owned(),
        };
        let entry = table(&state).get(name).ok_or_else(unknown)?;
        let member = state.members.get(&entry.server).ok_or_else(unknown)?;
        Ok((
            entry.server.clone(),
            member.client.clone(),
            entry.item.own_name().to_owned(),
        ))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            for follower in state.members.values().filter_map(|m| m.follower.as_ref()) {
                follower.abort();
            }
        }
    }
}

/// What the server itself calls an item.
trait Named {
    fn own_name(&self) -> &str;
}

impl Named for Tool {
    fn own_name(&self) -> &str {
        &self.name
    }
}

impl Named for Prompt {
    fn own_name(&self) -> &str {
        &self.name
    }
}

impl Named for Resource {
    fn own_name(&self) -> &str {
        &self.uri
    }
}

/// Which lists a refresh reads again.
#[derive(Clone, Copy)]
struct Kinds {
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Inner {
    /// Reads the lists the member's server declares, named for the group.
    async fn lists(&self, key: &str, client: &Client) -> Result<Lists, GroupError> {
        self.lists_of(key, client, declared(client)).await
    }

    async fn lists_of(
        &self,
        key: &str,
        client: &Client,
        kinds: Kinds,
    ) -> Result<Lists, GroupError> {
        let failed = |source| GroupError::Client {
            server: key.to_owned(),
            source: Box::new(source),
        };
        let name = |own: &str| self.naming.name(own, key);
        let mut lists = Lists::default();
        if kinds.tools {
            for tool in client.list_tools().await.map_err(failed)? {
                lists.tools.push(grouped(name(&tool.name), key, tool));
            }
        }
        if kinds.prompts {
            for prompt in client.list_prompts().await.map_err(failed)? {
                lists.prompts.push(grouped(name(&prompt.name), key, prompt));
            }
        }
        if kinds.resources {
            for resource in client.list_resources().await.map_err(failed)? {
                lists
                    .resources
                    .push(grouped(resource.uri.clone(), key, resource));
            }
        }
        Ok(lists)
    }
}

fn grouped<T>(name: String, key: &str, item: T) -> Grouped<T> {
    Grouped {
        name,
        server: key.to_owned(),
        item,
    }
}

/// What the member's server declares it has.
fn declared(client: &Client) -> Kinds {
    let capabilities = client.server_capabilities().unwrap_or_default();
    Kinds {
        tools: capabilities.tools.is_some(),
        prompts: capabilities.prompts.is_some(),
        resources: capabilities.resources.is_some(),
    }
}

impl State {
    /// Refuses `lists` if a name in it is empty, taken by another member, or given twice.
    fn check(&self, key: &str, lists: &Lists) -> Result<(), GroupError> {
        check_table("tool", key, &lists.tools, &self.tools)?;
        check_table("prompt", key, &lists.prompts, &self.prompts)?;
        check_table("resource", key, &lists.resources, &self.resources)
    }

    fn join(&mut self, lists: Lists) {
        for tool in lists.tools {
            self.tools.insert(tool.name.clone(), tool);
        }
        for prompt in lists.prompts {
            self.prompts.insert(prompt.name.clone(), prompt);
        }
        for resource in lists.resources {
            self.resources.insert(resource.name.clone(), resource);
        }
    }

    fn leave(&mut self, key: &str) {
        self.tools.retain(|_, entry| entry.server != key);
        self.prompts.retain(|_, entry| entry.server != key);
        self.resources.retain(|_, entry| entry.server != key);
    }

    /// Replaces what member `key` has of the refreshed kinds; a name another member holds is
    /// left out, and logged.
    fn replace(&mut self, key: &str, kinds: Kinds, lists: Lists) {
        if !self.members.contains_key(key) {
            // Removed while its lists were read.
            return;
        }
        if kinds.tools {
            replace_table("tool", key, &mut self.tools, lists.tools);
        }
        if kinds.prompts {
            replace_table("prompt", key, &mut self.prompts, lists.prompts);
        }
        if kinds.resources {
            replace_table("resource", key, &mut self.resources, lists.resources);
        }
    }
}

fn check_table<T>(
    kind: &'static str,
    key: &str,
    incoming: &[Grouped<T>],
    table: &BTreeMap<String, Grouped<T>>,
) -> Result<(), GroupError> {
    let collision = |name: &str, other: &str| GroupError::Collision {
        kind,
        name: name.to_owned(),
        server: key.to_owned(),
        other: other.to_owned(),
    };
    let mut seen = std::collections::BTreeSet::new();
    for entry in incoming {
        if entry.name.is_empty() || !seen.insert(entry.name.as_str()) {
            return Err(collision(&entry.name, key));
        }
        if let Some(other) = table.get(&entry.name) {
            return Err(collision(&entry.name, &other.server));
        }
    }
    Ok(())
}

fn replace_table<T>(
    kind: &'static str,
    key: &str,
    table: &mut BTreeMap<String, Grouped<T>>,
    incoming: Vec<Grouped<T>>,
) {
    table.retain(|_, entry| entry.server != key);
    for entry in incoming {
        match table.get(&entry.name) {
            Some(other) => tracing::warn!(
                kind,
                name = %entry.name,
                server = key,
                holder = %other.server,
                "left out of the group: the name is taken"
            ),
            None if entry.name.is_empty() => {
                tracing::warn!(kind, server = key, "left out of the group: an empty name");
            }
            None => {
                table.insert(entry.name.clone(), entry);
            }
        }
    }
}

/// Starts following the member's list changes, if its server declares any: a task that holds
/// the group weakly (a dropped group ends it) and reads a list again when it changes.
async fn follow(
    group: Weak<Inner>,
    key: String,
    client: Client,
) -> Option<tokio::task::AbortHandle> {
    let capabilities = client.server_capabilities().unwrap_or_default();
    let tools = capabilities
        .tools
        .as_ref()
        .is_some_and(|tools| tools.list_changed == Some(true));
    let prompts = capabilities
        .prompts
        .as_ref()
        .is_some_and(|prompts| prompts.list_changed == Some(true));
    let resources = capabilities
        .resources
        .as_ref()
        .is_some_and(|resources| resources.list_changed == Some(true));
    if !(tools || prompts || resources) {
        return None;
    }
    let mut filter = SubscriptionFilter::new();
    if tools {
        filter = filter.with_tools_list_changed();
    }
    if prompts {
        filter = filter.with_prompts_list_changed();
    }
    if resources {
        filter = filter.with_resources_list_changed();
    }
    let mut changes = match client.listen(filter).await {
        Ok(changes) => changes,
        Err(error) => {
            tracing::warn!(server = %key, %error, "the group cannot follow this server's changes");
            return None;
        }
    };
    let task = tokio::spawn(async move {
        while let Some(event) = changes.next().await {
            let kinds = match event {
                ListenEvent::ToolsListChanged => Kinds {
                    tools: true,
                    prompts: false,
                    resources: false,
                },
                ListenEvent::PromptsListChanged => Kinds {
                    tools: false,
                    prompts: true,
                    resources: false,
                },
                ListenEvent::ResourcesListChanged => Kinds {
                    tools: false,
                    prompts: false,
                    resources: true,
                },
                _ => continue,
            };
            let Some(group) = group.upgrade() else {
                return;
            };
            match group.lists_of(&key, &client, kinds).await {
                Ok(lists) => write(&group.state).replace(&key, kinds, lists),
                Err(error) => {
                    tracing::warn!(server = %key, %error, "the group could not read a changed list");
                }
            }
        }
    });
    Some(task.abort_handle())
}
