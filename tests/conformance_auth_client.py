"""The client the conformance suite's auth scenarios run: `toolreel call URL --auth-follow` lists the
tools, then calls the first one (a scope step-up happens on a call), with the pre-registered client the
scenario hands over in MCP_CONFORMANCE_CONTEXT. A helper, not a test module.

    conformance client --command "python tests/conformance_auth_client.py" --suite auth
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLREEL = Path(sys.executable).parent / "toolreel"


def main() -> None:
    url = sys.argv[-1]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    command = [str(TOOLREEL), "call", url, "--auth-follow"]
    if context.get("client_id"):
        command += ["--client-id", context["client_id"]]
    if context.get("client_secret"):
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        command += ["--client-secret-env", "CONFORMANCE_CLIENT_SECRET"]
    listed = subprocess.run(command, stdout=subprocess.PIPE, check=False)
    if listed.returncode != 0:
        sys.exit(listed.returncode)
    tools = json.loads(listed.stdout or b"[]")
    if tools:
        sys.exit(subprocess.run([*command[:3], tools[0]["name"], *command[3:]], check=False).returncode)


if __name__ == "__main__":
    main()
