/**
 * @module scripts/support/local-resources
 * Throw-away resources on this machine that the scripts (conformance runner, load test) and the tests
 * both use: a free TCP port on the loopback interface and a fresh temporary directory. Node only.
 * Starting, watching and stopping processes belongs to each caller (their needs differ).
 */
import { mkdtemp } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
}

/** A new, empty directory under the OS temporary directory; the caller removes it. */
export function tempDataDir(prefix = 'notes-mcp-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix))
}
