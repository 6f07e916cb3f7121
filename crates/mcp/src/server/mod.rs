//! The MCP server.
