/**
 * @module storage/sqlite/shares
 * The share methods of the SQLite-dialect store ({@link shareMethods}): share requests, their one
 * decision (a conditional update; a read after a miss only explains it), and the publication of an
 * approved share behind a single-use key, as one batch that spends the key with a fresh claim and
 * writes the link only where that claim is found. D1 has no interactive transaction, so when the
 * batch wrote nothing a read explains why; a share approved in between runs the batch again, at most
 * {@link PUBLISH_ATTEMPTS} times.
 */
import type { ShareStatus } from '../../notes/store.ts'
import * as common from '../common/shares.ts'
import type { PortMethods } from 'stateless-mcp/compose'
import type { SqliteDriver, SqliteRow } from 'stateless-mcp/sqlite'
import { toNote } from './notes.ts'
import { newClaim, SQL } from './statements.ts'

/** How often `publishShare` re-runs when its explanation contradicts its batch (a racing decision). */
const PUBLISH_ATTEMPTS = 3

export const shareMethods: PortMethods<common.ShareMethods, SqliteDriver> = {
  async createShareRequest(request) {
    await this.db.run(SQL.insertShare, [
      request.id,
      request.principal,
      request.noteId,
      request.expiresAt,
    ])
    return common.pendingShareRequest(request)
  },

  async getShareRequest(id) {
    const row = await getShare(this.db, id)
    return row === undefined ? undefined : common.toShareRequest(row)
  },

  async decideShareRequest(id, decision, now) {
    if ((await this.db.get(SQL.decideShare, [id, decision, now])) !== undefined) return 'decided'
    return common.undecidedOutcome((await getShare(this.db, id))?.status)
  },

  async publishShare(principal, shareId, linkId, onceKey) {
    const db = this.db
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      const claim = newClaim()
      const now = Date.now()
      const [spent] = await db.batch([
        { sql: SQL.spendKeyForShare, params: [onceKey, now, claim, shareId, principal] },
        { sql: SQL.insertLink, params: [linkId, now, shareId, onceKey, claim] },
        { sql: SQL.setShareLink, params: [linkId, shareId, onceKey, claim] },
      ])
      if ((spent?.length ?? 0) > 0) return { kind: 'done', value: linkId }

      // Nothing was written; explain why: a spent key first, then the share's state.
      if ((await db.get(SQL.keyUsed, [onceKey])) !== undefined) return { kind: 'already_done' }
      const share = await getShare(db, shareId)
      common.assertPublishable(share, principal)
      if (share.link_id !== null) return { kind: 'already_done' }
      // Publishable now but not when the batch ran (approved in between): run the batch again.
    }
    throw new Error('publishShare: the share kept changing while it was being published')
  },

  async getSharedNote(linkId) {
    const row = await this.db.get(SQL.getSharedNote, [linkId])
    return row === undefined ? undefined : toNote(row)
  },
}

async function getShare(db: SqliteDriver, id: string): Promise<common.ShareRow | undefined> {
  const row = await db.get(SQL.getShare, [id])
  return row === undefined ? undefined : toShareRow(row)
}

function toShareRow(row: SqliteRow): common.ShareRow {
  return {
    id: String(row.id),
    principal: String(row.principal),
    note_id: String(row.note_id),
    status: row.status as ShareStatus,
    expires_at: Number(row.expires_at),
    link_id: row.link_id === null ? null : String(row.link_id),
  }
}
