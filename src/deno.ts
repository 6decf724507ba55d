/**
 * @module deno
 * Deno entry, for `deno serve` (`npm run start:deno`) and Deno Deploy: the replica of
 * `node/replica.ts` (the same environment, store and key ring as `npm start`; Deno runs it through
 * its Node APIs) as the module's default `fetch` export. `deno serve` owns the listener: it takes HOST
 * and PORT from `--host` and `--port` (the npm script passes them on), and on SIGINT/SIGTERM it stops
 * accepting at once, so SHUTDOWN_DELAY_SECONDS does not apply; the rest of the drain is
 * `node/drain.ts`'s: `/readyz` turns 503, streams are let go with `retry`, leases are released, the
 * requests in flight finish within SHUTDOWN_GRACE_SECONDS, the store closes and the process exits 0.
 */
import { drainOnSignals } from './node/drain.ts'
import { openReplica } from './node/replica.ts'

const replica = await openReplica(process.env, 'Deno')

/** `deno serve`'s second argument: `completed` settles once the response was delivered (or cut). */
interface DenoServeInfo {
  completed: Promise<void>
}

/** Requests whose response is not yet delivered: what the drain waits for. */
let inFlight = 0
let onIdle: (() => void) | undefined
const delivered = () => {
  if (--inFlight === 0) onIdle?.()
}

drainOnSignals({
  replica,
  listener: {
    close: () =>
      new Promise<void>((resolve) => {
        if (inFlight === 0) return resolve()
        onIdle = resolve
      }),
    closeAll: () => inFlight,
  },
})

export default {
  fetch(request: Request, info: DenoServeInfo): Response | Promise<Response> {
    inFlight++
    info.completed.then(delivered, delivered)
    // Only the request: the second argument is connection info, not an environment for the app.
    return replica.app.fetch(request)
  },
}
