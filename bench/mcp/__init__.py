"""python -m bench mcp: the MCP server's overhead over the REST request it runs (issue 7)."""
