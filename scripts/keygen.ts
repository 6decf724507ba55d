/**
 * @module scripts/keygen
 * `npm run keygen`: prints one new `requestState` key entry (`kid:secret`) on stdout and, on stderr,
 * how to roll it into `STATE_KEYS`. Generation and the entry format belong to `mcp/key-ring`; this
 * script only prints. It never reads or writes configuration.
 */

import { formatKeyRing, generateKey } from '../src/mcp/key-ring.ts'

const entry = formatKeyRing([generateKey()])

process.stdout.write(`${entry}\n`)
process.stderr.write(
  'Add it to STATE_KEYS on every replica (comma-separated; the FIRST entry seals, every entry opens): ' +
    'append it, then move it first once all replicas have it, and drop the old entry one state TTL later.\n'
)
