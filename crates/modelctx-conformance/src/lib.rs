//! Fixtures for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance@0.2.0-alpha.12`): the server every server scenario calls,
//! built in-process so tests can drive it too. `docs/conformance-fixtures.md` is the contract.
//! Also a local OAuth authorization server ([`auth_server`], the `test-auth-server` binary) for
//! the OAuth client's tests and demos.

pub mod auth_server;
pub mod server;
