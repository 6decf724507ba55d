/**
 * @module scripts/support/held-import-replica
 * A notes replica that can be held mid-import: the Node entry's own start (`runNodeServer` of
 * `src/node/server.ts`, the same configuration from the environment) with its store wrapped by
 * `holdImports` (`import-hold.ts`), armed and released only through the IPC channel of the process
 * that spawned it. The SIGKILL takeover test and the load test's `--kill` start replicas with it, so
 * the kill is known to land while an import is running. Refuses to start without an IPC channel.
 */
import { runNodeServer } from '../../src/node/server.ts'
import { holdImports } from './import-hold.ts'

if (!process.send) {
  console.error('held-import-replica: spawn it with an IPC channel (import-hold.ts IPC_STDIO)')
  process.exit(1)
}
runNodeServer({ wrapStore: (store) => holdImports(store, process) })
