// What the MCP server calls itself, on the resource-style GETs and in the JSON-RPC handshake.
export const MCP_SERVER_NAME = 'tally';
export const MCP_SERVER_VERSION = '2.0.0';
export const MCP_PROTOCOL_VERSION = '2025-11-25';
