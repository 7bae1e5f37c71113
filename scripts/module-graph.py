#!/usr/bin/env python3
"""Draws each library's and app's module graph and fails on a circle (ADR 0042).

Every `crate::a::b` path in a crate's non-test code is an edge from the layer of the file it is
in to the layer it names. A layer is a top-level module of the crate (a folder or a file), except
in `courses-domain`'s `store/`, whose modules are layers of their own (port, sql, each backend,
the copy). Test code (files named `*tests.rs`, folders named `tests`, and a file's `#[cfg(test)] mod ... {`
at its end) may reach back up and is left out. Imports through `lib.rs` re-exports are
refused by scripts/check-layout.sh, so every path names the real module.

    python3 scripts/module-graph.py          # checks, prints each crate's layers in order
    python3 scripts/module-graph.py --dot    # the graphs in Graphviz's language
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = {
    "libs/courses-domain/src": {"store"},
    "libs/mcp-server/src": set(),
    "apps/backend/src": set(),
    "apps/mcp-stdio/src": set(),
}
IDENT = r"[a-z_][a-z0-9_]*"
# `crate::a::b`, `super::super::a`, and the groups `crate::a::{b, c::d}`.
PATH = re.compile(rf"\b((?:crate|(?:super::)*super)::(?:{IDENT}::)*{IDENT})\b(?!::\{{)")
USE_GROUP = re.compile(rf"\b((?:crate|(?:super::)*super)(?:::{IDENT})*)::\{{([^{{}}]*)\}}")


def layer_of(parts, split):
    """The layer a module path (its components) belongs to."""
    if not parts:
        return None
    if parts[0] in split:
        # The folder's own mod.rs only declares its layers: it is none of them.
        return f"{parts[0]}/{parts[1]}" if len(parts) > 1 else None
    return parts[0]


def module_parts(src, path):
    relative = path.relative_to(src).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def non_test_code(path):
    text = path.read_text()
    # A test module is a file's last item by convention: cut from its attribute on.
    test_module = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod [a-z_0-9]+ \{", text)
    text = text if test_module is None else text[: test_module.start()]
    # Comments name modules to explain them; only code imports.
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def graph(src, split):
    modules = {}
    for path in sorted(src.rglob("*.rs")):
        if path.name.endswith("tests.rs") or "tests" in path.relative_to(src).parts[:-1]:
            continue
        modules[tuple(module_parts(src, path))] = path
    edges = {}
    for parts, path in modules.items():
        here = layer_of(list(parts), split)
        if here is None:  # lib.rs / main.rs: the crate's face
            continue
        edges.setdefault(here, set())
        text = non_test_code(path)
        here_module = list(parts) if path.name == "mod.rs" else list(parts[:-1])

        def absolute(words):
            """The module path `words` names from this file, from the crate root."""
            base = []
            if words[0] == "super":
                base = here_module
                while words and words[0] == "super":
                    base, words = base[:-1], words[1:]
            elif words[0] == "crate":
                words = words[1:]
            return base + words

        named = [absolute(m.group(1).split("::")) for m in PATH.finditer(text)]
        for group in USE_GROUP.finditer(text):
            prefix = group.group(1).split("::")
            for item in group.group(2).split(","):
                item = item.strip().split(" as ")[0]
                if item and item != "self":
                    named.append(absolute(prefix + item.split("::")))
                elif item == "self":
                    named.append(absolute(prefix))
        for target in named:
            there = layer_of(target, split)
            known = there is not None and any(key[: len(there.split("/"))] == tuple(there.split("/")) for key in modules)
            if there != here and known:
                edges[here].add(there)
    return edges


def order(edges):
    """The layers from the bottom up, or the circle that prevents an order."""
    done, path, result = set(), [], []

    def visit(node):
        if node in done:
            return None
        if node in path:
            return path[path.index(node):] + [node]
        path.append(node)
        for target in sorted(edges.get(node, ())):
            circle = visit(target)
            if circle:
                return circle
        path.pop()
        done.add(node)
        result.append(node)
        return None

    for node in sorted(edges):
        circle = visit(node)
        if circle:
            return None, circle
    return result, None


def main():
    dot = "--dot" in sys.argv[1:]
    failed = False
    for folder, split in CRATES.items():
        edges = graph(ROOT / folder, split)
        layers, circle = order(edges)
        if dot:
            name = folder.split("/")[1].replace("-", "_")
            print(f"digraph {name} {{")
            for source in sorted(edges):
                for target in sorted(edges[source]):
                    print(f'  "{source}" -> "{target}";')
            print("}")
            continue
        if circle:
            failed = True
            print(f"module-graph: FAILED: {folder} has a circle: {' -> '.join(circle)}")
            continue
        print(f"{folder}: no circle; layers from the bottom up:")
        for layer in layers:
            uses = ", ".join(sorted(edges[layer])) or "(nothing of the crate)"
            print(f"  {layer:<16} uses {uses}")
    if failed:
        print("module-graph: imports must run one way (ARCHITECTURE.md, ADR 0042)")
        sys.exit(1)


if __name__ == "__main__":
    main()
