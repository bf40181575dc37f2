"""The upstream connection pool, shared by the gateway and the replayer.

A client config (`config`) becomes a `Hub` of upstream MCP sessions (`hub`, `upstream`,
`stdio_upstream`, `pipes`), started in parallel and reused for every call; `names` holds the
one `server__tool` naming rule; `prespawn` starts stdio servers before the rest loads. It
imports nothing from the gateway, recorder, templatizer or replayer.
"""
