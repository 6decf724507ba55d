/**
 * @module storage/postgres/shares
 * The share methods of the PostgreSQL store ({@link shareMethods}): share requests, their one
 * decision (a conditional update; a read after a miss only explains it), and the publication of an
 * approved share behind a single-use key, in one transaction that locks the share's row, so
 * concurrent publications of one share are ordered and a later one sees the link.
 */
import type { Sql, TransactionSql } from 'postgres'
import type { OnceOutcome } from '../../notes/store.ts'
import * as common from '../common/shares.ts'
import type { PortMethods } from 'stateless-mcp/compose'
import type { NoteRow } from '../common/notes.ts'
import { toNote } from './notes.ts'
import { decodePgText as dec, encodePgText as enc } from 'stateless-mcp/postgres'

/** Thrown inside a transaction to roll it back and answer `already_done`. */
class AlreadyDone extends Error {}

export const shareMethods: PortMethods<common.ShareMethods, Sql> = {
  async createShareRequest(request) {
    await this.db`
      INSERT INTO share_requests (id, principal, note_id, status, expires_at)
      VALUES (${enc(request.id)}, ${enc(request.principal)}, ${enc(request.noteId)}, 'pending',
        ${request.expiresAt})`
    return common.pendingShareRequest(request)
  },

  async getShareRequest(id) {
    const row = await getShare(this.db, id)
    return row === undefined ? undefined : common.toShareRequest(row, dec)
  },

  async decideShareRequest(id, decision, now) {
    const sql = this.db
    const decided = await sql`
      UPDATE share_requests SET status = ${decision}, decided_at = ${now}
      WHERE id = ${enc(id)} AND status = 'pending' AND expires_at > ${now}
      RETURNING id`
    if (decided.count > 0) return 'decided'
    const row = await getShare(sql, id)
    return common.undecidedOutcome(row?.status)
  },

  async publishShare(principal, shareId, linkId, onceKey) {
    const sql = this.db
    try {
      return await sql.begin(async (tx): Promise<OnceOutcome<string>> => {
        const [spent] = await tx`SELECT 1 FROM used_keys WHERE once_key = ${enc(onceKey)}`
        if (spent !== undefined) return { kind: 'already_done' }
        // The row lock orders concurrent publications of one share: a later one sees the link.
        const share = await getShare(tx, shareId, true)
        // The row holds escaped strings: compare with the escaped principal (the escape is one-to-one).
        common.assertPublishable(share, enc(principal))
        if (share.link_id !== null) return { kind: 'already_done' }
        const now = Date.now()
        const used = await tx`
          INSERT INTO used_keys (once_key, used_at) VALUES (${enc(onceKey)}, ${now})
          ON CONFLICT DO NOTHING`
        // Spent meanwhile by another transaction: roll back, write nothing.
        if (used.count === 0) throw new AlreadyDone()
        await tx`
          INSERT INTO shared_links (id, share_id, principal, note_id, created_at)
          VALUES (${enc(linkId)}, ${share.id}, ${share.principal}, ${share.note_id}, ${now})`
        await tx`UPDATE share_requests SET link_id = ${enc(linkId)} WHERE id = ${share.id}`
        return { kind: 'done', value: linkId }
      })
    } catch (error) {
      if (error instanceof AlreadyDone) return { kind: 'already_done' }
      throw error
    }
  },

  async getSharedNote(linkId) {
    const [row] = await this.db<Array<NoteRow<string[]>>>`
      SELECT n.id, n.title, n.body, n.tags, n.created_at, n.updated_at, n.version
      FROM shared_links AS l JOIN notes AS n ON n.principal = l.principal AND n.id = l.note_id
      WHERE l.id = ${enc(linkId)}`
    return row === undefined ? undefined : toNote(row)
  },
}

/** The stored (still escaped) share row; `forUpdate` locks it until the transaction ends. */
async function getShare(
  sql: Sql | TransactionSql,
  id: string,
  forUpdate = false
): Promise<common.ShareRow | undefined> {
  const [row] = await sql<common.ShareRow[]>`
    SELECT id, principal, note_id, status, expires_at, link_id FROM share_requests
    WHERE id = ${enc(id)} ${forUpdate ? sql`FOR UPDATE` : sql``}`
  return row
}
