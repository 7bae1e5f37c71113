"""A user's first minute with a packaged mcp-cursos, through the official Python MCP SDK.

    smoke_client.py [--create TITLE] [--expect TITLE] stdio COMMAND [ARG...]
    smoke_client.py [--create TITLE] [--expect TITLE] http URL KEY

Connects (2026-07-28 when the server offers it), checks the server's name and tools, creates a
course with criar_curso (--create) and/or checks that the catalog lists one with that title
(--expect). The stdio server inherits this process's environment (PATH, npm/uv caches,
DATABASE_PATH). Exit 0 when every check held; the failure is printed otherwise. Run by
scripts/test-release.sh with the interop venv's Python (mcp 2.3.0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def connect(args: argparse.Namespace):
    if args.transport == "stdio":
        params = StdioServerParameters(command=args.target[0], args=args.target[1:], env=dict(os.environ))
        async with Client(params, mode="auto") as client:
            yield client
    else:
        url, key = args.target
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            yield client


async def main(args: argparse.Namespace) -> None:
    async with connect(args) as client:
        assert client.server_info is not None and client.server_info.name == "mcp-cursos", client.server_info
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"criar_curso", "atualizar_curso", "arquivar_curso"} <= tools, sorted(tools)
        if args.create:
            result = await client.call_tool("criar_curso", {"titulo": args.create, "cargaHoraria": 10})
            text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
            assert result.is_error is False, text
            assert result.structured_content and result.structured_content["titulo"] == args.create, text
            print(f"smoke: created {args.create!r} ({result.structured_content['id']})")
        if args.expect:
            read = await client.read_resource("cursos://catalogo")
            catalog = json.loads(read.contents[0].text)
            titles = [course["titulo"] for course in catalog["cursos"]]
            assert args.expect in titles, f"{args.expect!r} not in {titles}"
            print(f"smoke: the catalog lists {args.expect!r}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--create")
    parser.add_argument("--expect")
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("target", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    try:
        asyncio.run(main(arguments))
    except Exception as error:  # noqa: BLE001 - the message is the test's verdict
        print(f"smoke: FAILED: {error!r}", file=sys.stderr)
        sys.exit(1)
