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

// What works on a machine without this platform's package, in every message that stops here.
const WHAT_WORKS =
  "What works here today: build it from source with Rust 1.95 or later " +
  "(`cargo build --release -p mcp-cursos-stdio` in a clone of the repository) and point this launcher at it " +
  "with MCP_CURSOS_BINARY=<clone>/target/release/mcp-cursos-stdio, or use that binary directly; " +
  "or run the HTTP backend from the container image (podman or docker; see docs/deploy.md)";

// True when npm was told to leave optional dependencies out (--omit=optional, --no-optional):
// npm hands its settings to what it runs as npm_config_* variables.
function optionalOmitted(environment) {
  const omit = (environment.npm_config_omit || "").split(/[\s,]+/);
  return omit.includes("optional") || environment.npm_config_optional === "false";
}

// The message for a platform package that is not installed, `name` at `version` (from this
// package's optionalDependencies). npm skips an optional dependency it cannot install without a
// word, so the launcher is the first to tell: either npm was told to omit it, or npm could not
// fetch it, which is what a package not (yet) published on the registry gives (a 404).
function missingPackageMessage(name, version, key, environment) {
  const wanted = version ? `${name}@${version}` : name;
  const cause = optionalOmitted(environment)
    ? `npm was told to leave optional dependencies out (--omit=optional or --no-optional), and ${wanted} is one; ` +
      "reinstall without that option. "
    : `npm could not install it and went on without it, as it does for an optional dependency: most often because ` +
      `${wanted} is not published on the registry it used (a 404; \`npm view ${wanted}\` tells). `;
  return `the package ${wanted}, the mcp-cursos-stdio binary for ${key}, is not installed: ${cause}${WHAT_WORKS}`;
}

function binaryPath() {
  if (process.env.MCP_CURSOS_BINARY) return process.env.MCP_CURSOS_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const name = PLATFORMS[key];
  if (!name) {
    throw new Error(
      `mcp-cursos has no binary for ${key} yet (available: ${Object.keys(PLATFORMS).join(", ")}). ${WHAT_WORKS}`
    );
  }
  const executable = process.platform === "win32" ? "mcp-cursos-stdio.exe" : "mcp-cursos-stdio";
  try {
    return require.resolve(`${name}/bin/${executable}`);
  } catch {
    const version = (require("../package.json").optionalDependencies || {})[name];
    throw new Error(missingPackageMessage(name, version, key, process.env));
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
