//! The MCP client.
