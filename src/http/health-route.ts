/**
 * @module http/health-route
 * The probes of load balancers and orchestrators, without auth, revealing nothing about keys,
 * configuration or data:
 * - `GET /healthz`, liveness: 200 while the process serves (restart it when this fails);
 * - `GET /readyz`, readiness: 200 `{"status":"ready"}` while the replica takes new work, 503
 *   `{"status":"draining"}` with `Retry-After` once its shutdown began (`draining` aborted: send new
 *   work elsewhere; what is in flight still finishes here). A runtime without a drain (Workers) is
 *   always ready. Neither probe reads the shared database: one database blip must not take every
 *   replica out of the balancer at once (a request that needs the database answers its own error).
 */
import { Hono } from 'hono'

/** `Retry-After` of a draining replica's `/readyz`: a probe soon tells the next replica apart. */
const DRAINING_RETRY_AFTER_SECONDS = 5

export interface HealthRouteOptions {
  /** Aborted once this replica's shutdown began: `/readyz` answers 503 from then on. */
  draining?: AbortSignal
}

export function healthRoute({ draining }: HealthRouteOptions = {}): Hono {
  return new Hono()
    .get('/healthz', (c) => c.json({ status: 'ok' }))
    .get('/readyz', (c) => {
      if (!draining?.aborted) return c.json({ status: 'ready' })
      c.header('retry-after', String(DRAINING_RETRY_AFTER_SECONDS))
      return c.json({ status: 'draining' }, 503)
    })
}
