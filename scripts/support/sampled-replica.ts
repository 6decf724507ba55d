/**
 * @module scripts/support/sampled-replica
 * A notes replica whose memory and handles a soak can sample: the Node entry's own start
 * (`runNodeServer` of `src/node/server.ts`, the same configuration from the environment, nothing
 * wrapped) that also answers sample requests on the IPC channel of the process that spawned it
 * (`replica-sampling.ts`). Started with `--expose-gc`, it collects garbage before each heap figure.
 * The load test's `--soak` starts its replicas with it. Refuses to start without an IPC channel.
 */
import { runNodeServer } from '../../src/node/server.ts'
import { answerSamples } from './replica-sampling.ts'

if (!process.send) {
  console.error('sampled-replica: spawn it with an IPC channel (import-hold.ts IPC_STDIO)')
  process.exit(1)
}
const gc = globalThis.gc
answerSamples(process, gc && (() => gc()))
runNodeServer()
