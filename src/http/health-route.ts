/**
 * @module http/health-route
 * `GET /healthz` for load balancers and orchestrators: answers 200 while the process serves. Reveals
 * nothing about keys, configuration or data.
 */
import { Hono } from 'hono'

export function healthRoute(): Hono {
  return new Hono().get('/healthz', (c) => c.json({ status: 'ok' }))
}
