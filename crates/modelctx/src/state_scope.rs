//! How far state a server keeps is shared: by one process, the processes of one host, or every
//! instance that can reach it. A deployment that spreads requests over instances — a fleet
//! behind a round-robin proxy, a serverless function whose invocations land on instances it
//! does not choose — must not keep in one process what a later request, served elsewhere,
//! needs: a task, a redeemed single-use round, the key that opens a `requestState`. The stores
//! and guards say their scope here, so such a deployment can check at start-up instead of
//! failing one request in N at run time.

/// Who shares a store's (or a key's) state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum StateScope {
    /// This process only (an in-memory store, a key generated at start-up).
    Process,
    /// The processes of one host (an SQLite file).
    Host,
    /// Every instance that reaches it (Redis, a database, keys from the environment).
    Shared,
}
