//! Fixtures for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance@0.2.0-alpha.12`): the server every server scenario calls,
//! built in-process so tests can drive it too. `docs/conformance-fixtures.md` is the contract.

pub mod server;
