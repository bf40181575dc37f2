"""The main job end to end on embedded defaults: record, save a template, replay with new inputs.

An MCP client plays the agent against `toolreel serve` with the bundled demo server
(`fixtures.ids`: users and orders with server-issued ids) and a throwaway SQLite store.
Then the template is replayed twice with new inputs, without any agent: once from the
command line (`toolreel run`) and once as the MCP tool `reel__onboard`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent


def show(title: str, value: Any) -> None:
    print(f"\n== {title}")
    print(value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False))


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(name, arguments)
    step = (result.meta or {}).get("toolreel/step")
    shown = result.structured_content or [getattr(c, "text", "") for c in result.content]
    show(f"{step}: {name} {json.dumps(arguments)}", shown)
    return shown


async def agent_session(config: Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolreel", "serve", "--config", str(config)], env=env, cwd=str(ROOT)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        show("tools the agent sees", [t.name for t in tools.tools if not t.name.startswith("toolreel__")])
        # Like an LLM, the agent copies one id by hand and passes the other on as a @ref.
        user = await call(session, "shop__create_user", {"name": "Alice", "email": "alice@example.com"})
        order = await call(
            session, "shop__create_order", {"user_id": user["id"], "items": [{"sku": "BOOK-1", "qty": 2}]}
        )
        await call(session, "shop__get_order", {"order_id": "@create_order_1.order_id"})
        await call(session, "shop__note", {"text": f"Order {order['order_id']} placed for Alice"})
        # "Save this", as a user says it: no inputs named, the templatizer finds them and checks the template.
        saved = await session.call_tool(
            "toolreel__save_template", {"name": "onboard", "description": "Create a user, place an order, confirm it."}
        )
        answer = saved.structured_content or {}
        show("saved", answer.get("summary"))
        show("the template (refs and inputs inferred)", answer.get("template"))
        show(
            "why",
            [
                f"{i['step']} {i['input_path']} <- {i['ref']} ({i['confidence']}: {i['evidence']})"
                for i in answer.get("inferred", [])
            ],
        )
        replay = await session.call_tool(
            "reel__onboard", {"name": "Carol", "email": "carol@example.com", "sku": "cheese"}
        )
        show("replayed as the MCP tool reel__onboard (name=Carol, sku=cheese)", replay.structured_content)
        if saved.is_error or replay.is_error:
            sys.exit("the demo's save or replay failed: see above")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="toolreel-demo-") as tmp:
        db = f"sqlite:///{tmp}/demo.db"
        config = Path(tmp) / "mcp.json"
        config.write_text(
            json.dumps({"mcpServers": {"shop": {"command": sys.executable, "args": ["-m", "fixtures.ids"]}}})
        )
        env = {**os.environ, "TOOLREEL_DB": db, "PYTHONPATH": str(ROOT)}
        anyio.run(agent_session, config, env)
        show("replay from the command line, no config: toolreel run onboard -i name=Bob -i sku=bread ...", "")
        command = [
            sys.executable,
            "-m",
            "toolreel",
            "run",
            "onboard",
            "-i",
            "name=Bob",
            "-i",
            "email=bob@example.com",
            "-i",
            "sku=bread",
            "--json",
        ]
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        print(done.stdout.strip() or done.stderr.strip())
        if done.returncode != 0:
            sys.exit(f"toolreel run exited {done.returncode}")
        listing = subprocess.run(
            [sys.executable, "-m", "toolreel", "executions", "list"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        show("executions (newest first)", listing.stdout.strip())
        print("\ndemo finished: one recording, one template, two replays with new inputs")


if __name__ == "__main__":
    main()
