/**
 * @module node
 * Node entry: `npm start`. Turns on Node's module compile cache first (modules kept on disk
 * type-stripped and compiled, in `NODE_COMPILE_CACHE` or else the system's temporary folder;
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off), so a replica started again loads its code in less
 * than half the time; then starts the server of `node/server.ts` from the environment, which
 * describes everything it does (store, key ring, telemetry, shutdown).
 * Launched with `--max-semi-space-size=16` (`npm start`, the container image): V8's young generation
 * then has the same cap on any host; left to V8 it follows the host's memory, and a replica's resident
 * set grows under load by up to three times that cap (`scripts/loadtest/processes.ts` says more).
 */
import { enableCompileCache, flushCompileCache } from 'node:module'

enableCompileCache()
// Imported only now: a static import would load the server before the cache is on.
const { runNodeServer } = await import('./node/server.ts')
// Written now, not at exit: a replica is mostly stopped by a signal, which skips the exit's write.
flushCompileCache()
runNodeServer()
