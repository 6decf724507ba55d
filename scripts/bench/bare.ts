/**
 * @module scripts/bench/bare
 * The ceiling on Node: the bare Hono app (`bare-app.ts`) on @hono/node-server. Run as its own process
 * by `scripts/bench.ts`.
 */
import { bareApp } from './bare-app.ts'
import { serveBench } from './serve.ts'

serveBench('bare', bareApp.fetch)
