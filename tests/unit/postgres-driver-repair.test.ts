/**
 * The repair `scripts/patch-dependencies.mjs` makes to the PostgreSQL driver at install (postgres.js
 * 3.4.9, porsager/postgres#1208), shown on the driver itself over a scripted socket (its `socket`
 * option), no server and no timing: a connection whose socket closes while a small write of it waits
 * for its `setImmediate` must fail that query with `CONNECTION_CLOSED` and serve the next one on a new
 * socket. Released as it is, the driver keeps the stale timer, never writes again, and the next query
 * waits forever (or the timer fires on a socket that is gone and throws, ending the process).
 */
import { EventEmitter } from 'node:events'
import postgres from 'postgres'
import { describe, expect, it } from 'vitest'

/** One backend message: its type, then its length (itself included) and `body`. */
function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeUInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

const AUTHENTICATION_OK = message('R', Buffer.from([0, 0, 0, 0]))
const READY = message('Z', Buffer.from('I'))
const SELECT_0 = message('C', Buffer.from('SELECT 0\0'))

/**
 * A socket the driver writes to, answering as a server would: authentication and ready to the
 * startup message, an empty result to each simple query ('Q').
 */
class ScriptedSocket extends EventEmitter {
  readyState = 'open'
  readonly written: Buffer[] = []

  write(chunk: Buffer, done?: () => void): boolean {
    this.written.push(chunk)
    const answer = chunk[0] === 0x51 ? [SELECT_0, READY] : [AUTHENTICATION_OK, READY]
    setImmediate(() => this.emit('data', Buffer.concat(answer)))
    done?.()
    return true
  }

  /** The server goes away: the socket closes, without an error. */
  drop(): void {
    this.readyState = 'closed'
    this.emit('close', false)
  }

  end(): void {
    this.drop()
  }

  destroy(): void {
    this.drop()
  }

  setKeepAlive(): void {}
}

describe('the PostgreSQL driver, as installed', () => {
  it('fails the query whose write a closed socket cut short, then serves the next one on a new socket', async () => {
    const sockets: ScriptedSocket[] = []
    // `socket` is an option of the driver its type declarations leave out.
    const options = {
      max: 1,
      fetch_types: false,
      onnotice: () => {},
      socket: () => {
        const socket = new ScriptedSocket()
        sockets.push(socket)
        return socket
      },
    }
    const sql = postgres(options as postgres.Options<Record<string, never>>)
    try {
      expect(await sql`select 1`.simple()).toHaveLength(0)
      const first = sockets[0] as ScriptedSocket
      const cut = sql`select 2`.simple()
      // Runs before the driver's own immediate (queued later, from the query's microtask): the
      // socket closes while the query's bytes wait to be written.
      setImmediate(() => first.drop())
      await expect(cut).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' })
      expect(await sql`select 3`.simple()).toHaveLength(0)
      expect(sockets).toHaveLength(2)
    } finally {
      await sql.end({ timeout: 0 })
    }
  })
})
