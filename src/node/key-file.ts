/**
 * @module node/key-file
 * Zero-configuration key ring for Node: when `STATE_KEYS` is not set, the ring is read from
 * `<DATA_DIR>/state-keys`, or generated and written there once with file mode 0600. Every replica that
 * shares the data directory (or is given the same `STATE_KEYS`) can then open every other's states.
 * Node-only; the Worker always takes its ring from a secret.
 */
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { formatKeyRing, generateKey } from 'stateless-mcp/compose'

export const KEY_FILE_NAME = 'state-keys'

/** The ring text and whether it was generated just now (so the caller can say so, once). */
export async function loadOrCreateKeyRing(
  dataDir: string
): Promise<{ text: string; path: string; created: boolean }> {
  const path = join(dataDir, KEY_FILE_NAME)
  try {
    return { text: (await readFile(path, 'utf8')).trim(), path, created: false }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  await mkdir(dataDir, { recursive: true })
  const text = formatKeyRing([generateKey()])
  // Write a private temporary file, then link it into place: the link either creates the complete
  // file or fails because another replica got there first, so nobody reads a half-written ring.
  const temporary = `${path}.${crypto.randomUUID()}.tmp`
  await writeFile(temporary, `${text}\n`, { mode: 0o600, flag: 'wx' })
  try {
    await link(temporary, path)
    return { text, path, created: true }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return { text: (await readFile(path, 'utf8')).trim(), path, created: false }
  } finally {
    await unlink(temporary)
  }
}
