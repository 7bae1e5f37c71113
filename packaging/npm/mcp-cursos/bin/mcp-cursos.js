#!/usr/bin/env node
// Runs the native mcp-cursos-stdio binary of this platform, installed as an optional dependency
// (mcp-cursos-<platform>-<arch>), the way esbuild and Biome ship native binaries through npm.
// stdin, stdout and stderr are the binary's own: stdout carries JSON-RPC only.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");

const PLATFORMS = {
  "linux x64": "mcp-cursos-linux-x64",
  // Adding a platform: build its binary, publish mcp-cursos-<platform>-<arch> with it in bin/,
  // list it here and in package.json's optionalDependencies.
};

function binaryPath() {
  if (process.env.MCP_CURSOS_BINARY) return process.env.MCP_CURSOS_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const name = PLATFORMS[key];
  if (!name) {
    throw new Error(
      `mcp-cursos has no binary for ${key} yet (available: ${Object.keys(PLATFORMS).join(", ")}). ` +
        "What works here today: build it from source with Rust 1.95 or later " +
        "(`cargo build --release -p mcp-cursos-stdio` in a clone of the repository) and point this launcher at it " +
        "with MCP_CURSOS_BINARY=<clone>/target/release/mcp-cursos-stdio, or use that binary directly; " +
        "or run the HTTP backend from the container image (podman or docker; see docs/deploy.md)"
    );
  }
  const executable = process.platform === "win32" ? "mcp-cursos-stdio.exe" : "mcp-cursos-stdio";
  try {
    return require.resolve(`${name}/bin/${executable}`);
  } catch {
    throw new Error(
      `the package ${name} (the binary for ${key}) is not installed; ` +
        `reinstall without --no-optional / --omit=optional, or set MCP_CURSOS_BINARY`
    );
  }
}

let binary;
try {
  binary = binaryPath();
} catch (error) {
  process.stderr.write(`mcp-cursos: ${error.message}\n`);
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
  process.stderr.write(`mcp-cursos: cannot start ${path.basename(binary)}: ${error.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  // A child ended by a signal exits like a shell reports it: 128 + the signal's number.
  process.exit(signal ? 128 + (os.constants.signals[signal] ?? 0) : (code ?? 1));
});
