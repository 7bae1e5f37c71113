// Loads a package from the pinned npm prefix of scripts/install-test-tools.sh (target/test-tools/npm/oauth),
// whose path is in OAUTH_NODE_MODULES (target/test-tools/env.sh). ESM has no NODE_PATH, so each script asks here.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.OAUTH_NODE_MODULES;
if (!modules) {
  console.error('OAUTH_NODE_MODULES is not set: source target/test-tools/env.sh (bash scripts/install-test-tools.sh)');
  process.exit(2);
}
const require = createRequire(join(modules, 'resolve-from-here.js'));

/** The module `specifier` (a package or a subpath export) from the pinned prefix. */
export async function load(specifier) {
  return import(pathToFileURL(require.resolve(specifier)).href);
}
