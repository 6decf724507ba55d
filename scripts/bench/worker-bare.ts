/**
 * @module scripts/bench/worker-bare
 * The ceiling on workerd: the bare Hono app (`bare-app.ts`) as a Worker. Bundled and served by
 * `workerd.ts`.
 */
import { bareApp } from './bare-app.ts'

export default bareApp
