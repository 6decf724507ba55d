/**
 * @module storage/common/shares
 * What every adapter's share methods ({@link ShareMethods}) decide the same way: the share-request
 * row as both dialects select it and the request it maps to, what `createShareRequest` answers, why
 * `decideShareRequest` did not apply, and `publishShare`'s refusal. Runtime-neutral: only the store
 * contract.
 */
import {
  ShareNotApprovedError,
  type DecideOutcome,
  type NotesStore,
  type ShareRequest,
  type ShareStatus,
} from '../../notes/store.ts'

/** The share methods of the store contract: one port module per dialect implements them. */
export type ShareMethods = Pick<
  NotesStore,
  'createShareRequest' | 'getShareRequest' | 'decideShareRequest' | 'publishShare' | 'getSharedNote'
>

/** A share-request row as every adapter selects it (times as the driver returns them). */
export interface ShareRow {
  id: string
  principal: string
  note_id: string
  status: ShareStatus
  expires_at: number | string
  link_id: string | null
}

/** A stored share request; `text` undoes the adapter's escaping of stored strings, if any. */
export function toShareRequest(
  row: ShareRow,
  text: (stored: string) => string = (stored) => stored
): ShareRequest {
  const request: ShareRequest = {
    id: text(row.id),
    principal: text(row.principal),
    noteId: text(row.note_id),
    status: row.status,
    expiresAt: Number(row.expires_at),
  }
  if (row.link_id !== null) request.linkId = text(row.link_id)
  return request
}

/** What `createShareRequest` answers once the request is stored. */
export function pendingShareRequest(
  request: Omit<ShareRequest, 'status' | 'linkId'>
): ShareRequest {
  return {
    id: request.id,
    principal: request.principal,
    noteId: request.noteId,
    status: 'pending',
    expiresAt: request.expiresAt,
  }
}

/**
 * Why `decideShareRequest`'s conditional update did not apply, from the share's status read after it
 * (`undefined`: no such share). The update was the decision; this only explains a miss.
 */
export function undecidedOutcome(status: ShareStatus | undefined): DecideOutcome {
  if (status === undefined) return 'not_found'
  return status === 'pending' ? 'expired' : 'already_decided'
}

/**
 * Throws {@link ShareNotApprovedError} unless `share` exists, belongs to `principal` and is approved
 * (`publishShare`'s precondition). Compare stored values: an adapter that escapes stored strings passes
 * the escaped principal.
 */
export function assertPublishable<Share extends { principal: string; status: ShareStatus }>(
  share: Share | undefined,
  principal: string
): asserts share is Share {
  if (share === undefined || share.principal !== principal || share.status !== 'approved') {
    throw new ShareNotApprovedError('share request is not an approved share of this principal')
  }
}
