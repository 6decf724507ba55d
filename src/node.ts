/**
 * @module node
 * Node entry: `npm start`. Starts the server of `node/server.ts` from the environment; everything it
 * does (store, key ring, telemetry, shutdown) is described there.
 */
import { runNodeServer } from './node/server.ts'

runNodeServer()
