"""The issue's cases through the official MCP Python SDK (a real client
with an elicitation callback), against `bashtool mcp`.

Usage: approvals_client.py BASHTOOL WORKDIR OUTSIDE REMOTE
WORKDIR is the server's --cwd, OUTSIDE a directory outside every writable
root of the sandbox, REMOTE a directory the sandbox may write (a bare git
repository goes there). Exits non-zero on the first failed check.
"""

import os
import subprocess
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

BASHTOOL, WORKDIR, OUTSIDE, REMOTE = sys.argv[1:5]


class Person:
    """Answers each question with the next scripted decision."""

    def __init__(self):
        self.decisions = []
        self.questions = []

    async def __call__(self, context, params):
        self.questions.append(params.message)
        decision = self.decisions.pop(0)
        if decision in ("decline", "cancel"):
            return types.ElicitResult(action=decision)
        return types.ElicitResult(action="accept", content={"decision": decision})


def server(*flags):
    env = dict(os.environ)
    env["BASHTOOL_STATE_DIR"] = os.path.join(WORKDIR, "state")
    env["XDG_CONFIG_HOME"] = WORKDIR
    env.pop("BASHTOOL_CONFIG", None)
    return StdioServerParameters(
        command=BASHTOOL, args=["mcp", "--cwd", WORKDIR, *flags], env=env
    )


def text(result):
    return "\n".join(block.text for block in result.content)


def check(condition, message):
    if not condition:
        print("FAILED:", message, file=sys.stderr)
        sys.exit(1)


async def asking_client():
    person = Person()
    target = os.path.join(OUTSIDE, "report")
    write = f"echo report >> {target}"
    async with stdio_client(server()) as (read, send):
        async with ClientSession(read, send, elicitation_callback=person) as session:
            await session.initialize()
            tools = await session.list_tools()
            bash = next(tool for tool in tools.tools if tool.name == "bash")
            properties = bash.input_schema["properties"]
            check("outside_sandbox" in properties and "justification" in properties, properties)
            check("outside_sandbox: true" in bash.description, bash.description)

            refused = await session.call_tool("bash", {"command": write})
            check(refused.is_error and not os.path.exists(target), text(refused))

            person.decisions.append("allow_once")
            allowed = await session.call_tool(
                "bash",
                {"command": write, "outside_sandbox": True, "justification": "the report lives there"},
            )
            check(not allowed.is_error, text(allowed))
            check(open(target).read() == "report\n", "written once")
            check("Reason: the report lives there" in person.questions[-1], person.questions[-1])
            check("approved once by the user, asked through the MCP client" in text(allowed), text(allowed))

            # Once means once: the next call is asked again, and refused.
            person.decisions.append("deny")
            denied = await session.call_tool("bash", {"command": write, "outside_sandbox": True})
            check(denied.is_error and "Not run: the user refused" in text(denied), text(denied))
            check(open(target).read() == "report\n", "nothing ran on deny")
            check(len(person.questions) == 2, person.questions)

            # For this session: the next identical command is not asked.
            person.decisions.append("allow_session")
            first = await session.call_tool("bash", {"command": write, "outside_sandbox": True})
            second = await session.call_tool("bash", {"command": write, "outside_sandbox": True})
            check(not first.is_error and not second.is_error, text(second))
            check(len(person.questions) == 3, person.questions)
            check(open(target).read() == "report\n" * 3, "two more lines")

            # A blocked git push --force runs only after approval.
            bare = os.path.join(REMOTE, "remote.git")
            repo = os.path.join(WORKDIR, "repo")
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run([*git, "init", "-q", "--bare", bare], check=True)
            subprocess.run([*git, "init", "-q", "-b", "main", repo], check=True)
            subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], cwd=repo, check=True)
            push = {"command": f"git push -q --force {bare} main", "working_directory": "repo"}
            blocked_before = subprocess.run(["git", "rev-parse", "-q", "--verify", "main"], cwd=bare, capture_output=True)
            check(blocked_before.returncode != 0, "nothing pushed yet")
            person.decisions.append("decline")
            declined = await session.call_tool("bash", push)
            check(declined.is_error and "the user refused" in text(declined), text(declined))
            check(
                subprocess.run(["git", "rev-parse", "-q", "--verify", "main"], cwd=bare, capture_output=True).returncode != 0,
                "nothing pushed on decline",
            )
            person.decisions.append("allow_once")
            pushed = await session.call_tool("bash", push)
            check(not pushed.is_error, text(pushed))
            head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout
            remote = subprocess.run(["git", "rev-parse", "main"], cwd=bare, capture_output=True, text=True).stdout
            check(head == remote and head, f"pushed {head!r} vs {remote!r}")
            check("rule git_push_force" in person.questions[-1], person.questions[-1])


async def client_without_elicitation():
    async with stdio_client(server()) as (read, send):
        async with ClientSession(read, send) as session:
            await session.initialize()
            tools = await session.list_tools()
            bash = next(tool for tool in tools.tools if tool.name == "bash")
            properties = bash.input_schema["properties"]
            check("outside_sandbox" not in properties, properties)
            check("justification" not in properties, properties)
            check("outside_sandbox" not in bash.description, bash.description)
            blocked = await session.call_tool("bash", {"command": "git push --force"})
            check(
                blocked.is_error and "this MCP client does not support elicitation" in text(blocked),
                text(blocked),
            )


async def main():
    await asking_client()
    await client_without_elicitation()
    print("ok")


anyio.run(main)
