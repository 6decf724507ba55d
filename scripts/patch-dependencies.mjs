/**
 * @module scripts/patch-dependencies
 * `postinstall`: repairs a known defect of the PostgreSQL driver in place, until a release fixes it.
 * Plain JavaScript, so that it runs on whichever Node npm installs with.
 *
 * postgres.js 3.4.9 (the latest release) batches small writes behind a `setImmediate`, and its two
 * teardown paths (`closed()`, `terminate()`) cancel that immediate without forgetting it or the bytes
 * it would have written (porsager/postgres#1066, #1154, #1208; fixes proposed in #1168, #1176, #1209,
 * none released). When the server restarts or dies under load, either the immediate fires after the
 * socket is gone and throws from a timer, which takes the whole process down (`Cannot read
 * properties of null (reading 'write')`), or the connection keeps a stale timer and never writes
 * again, and every query given to it waits forever. The repair: teardown forgets the pending write,
 * and a write that finds no socket fails the connection's queries with the driver's own
 * `CONNECTION_CLOSED` error instead of throwing.
 *
 * Applied to the three builds of the package (ESM, CommonJS, Workers), idempotently (a marker says
 * it is done), only to the version it was written for: another version is left untouched with a
 * warning to check whether it still needs it. Any other surprise (the code to repair is not where it
 * should be) fails the install, since a server that may crash on a database restart must not start
 * unnoticed.
 */
/* global console */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres')
const VERSION = '3.4.9'
const MARKER = 'notes-mcp: porsager/postgres#1208'
const BUILDS = ['src', 'cjs/src', 'cf/src']

/** Each repair: the text as released, and what it becomes. */
const REPAIRS = [
  {
    what: 'a write that finds the socket gone',
    from: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n',
    to:
      '  function nextWrite(fn) {\n' +
      `    if (!socket) { // ${MARKER}: fail the queries, do not throw from a timer\n` +
      '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
      '      chunk = nextWriteTimer = null\n' +
      "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
      '      return false\n' +
      '    }\n' +
      '    const x = socket.write(chunk, fn)\n',
    count: 1,
  },
  {
    what: 'teardown forgetting the pending write',
    from: '    clearImmediate(nextWriteTimer)\n',
    to: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // ${MARKER}\n`,
    count: 2,
  },
]

/**
 * @param {string} text
 * @param {string} part
 */
function occurrences(text, part) {
  return text.split(part).length - 1
}

/** @param {string} file */
function repair(file) {
  const text = readFileSync(file, 'utf8')
  if (text.includes(MARKER)) return 'already repaired'
  let repaired = text
  for (const { what, from, to, count } of REPAIRS) {
    const found = occurrences(repaired, from)
    if (found !== count) {
      throw new Error(`${file}: expected ${count} of "${what}", found ${found}`)
    }
    repaired = repaired.split(from).join(to)
  }
  writeFileSync(file, repaired)
  return 'repaired'
}

function main() {
  const manifest = join(PACKAGE, 'package.json')
  if (!existsSync(manifest)) return // not installed (a workspace without it)
  const version = /version"\s*:\s*"([^"]+)"/.exec(readFileSync(manifest, 'utf8'))?.[1]
  if (version !== VERSION) {
    console.warn(
      `postgres ${version}: the repair written for ${VERSION} was not applied; ` +
        'check whether porsager/postgres#1208 is fixed in it (scripts/patch-dependencies.mjs).'
    )
    return
  }
  for (const build of BUILDS) {
    const file = join(PACKAGE, build, 'connection.js')
    console.log(`postgres ${version} ${build}/connection.js: ${repair(file)}`)
  }
}

main()
