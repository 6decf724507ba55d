/**
 * @module notes/share-tool
 * `share_note`, the url-mode flow: the person approves sharing on a web page of this server
 * (`routes/share.ts`), then a read-only link is published once.
 *
 * Round 1 creates a share request (an unguessable id bound to the caller and the note, decidable for
 * `SHARE_REQUEST_TTL_MS`) and picks the future link id, both through `ctx.once` so every later round
 * (on any replica) sees the same values; then it asks the client to open `/share/<id>`. Every round
 * reads the request's stored status first: approved → publish once (keyed by the round's idempotency
 * key, so a duplicated final round answers the same link and publishes nothing more); refused → say so;
 * expired → ask to start again; still pending → ask again (an `accept` only means the page was opened).
 * The URL carries nothing but the share id: no personal data, no credential.
 */
import * as z from 'zod'
import { definitions, text, toolError } from 'stateless-mcp'
import { SHARE_REQUEST_TTL_MS } from './limits.ts'
import { noteIdField } from './schemas.ts'
import type { NotesDeps } from './deps.ts'
import { randomToken } from './tokens.ts'
import { noteNotFound } from './tools.ts'
import { WRITE } from './scopes.ts'

const { tool } = definitions<NotesDeps>()

export const shareNote = tool({
  name: 'share_note',
  title: 'Share a note read-only',
  description:
    'Publish a read-only web link to a note after the user approves on a page of this server ' +
    `(open within ${SHARE_REQUEST_TTL_MS / 60_000} minutes). Needs a client that supports url-mode ` +
    'elicitation.',
  input: z.strictObject({ id: noteIdField.describe('Id of the note to share.') }),
  annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: true },
  scopes: WRITE,
  async run({ id }, ctx) {
    if (!ctx.can('elicitation.url')) {
      return toolError(
        'share_note needs a client that supports url-mode elicitation (the user approves on a web ' +
          'page); this client does not declare elicitation.url. Nothing was shared.'
      )
    }
    const { notes, baseUrl, now } = ctx.deps
    const title = await ctx.once(
      'title',
      async () => (await notes.get(ctx.principal, id))?.title ?? null
    )
    if (title === null) return toolError(noteNotFound(id))
    // Only ids are journaled: the sealed state never carries the raw principal.
    const shareId = await ctx.once('share-request', async () => {
      const share = await notes.createShareRequest({
        id: randomToken(),
        principal: ctx.principal,
        noteId: id,
        expiresAt: now() + SHARE_REQUEST_TTL_MS,
      })
      return share.id
    })
    const linkId = await ctx.once('link-id', randomToken)

    const share = await notes.getShareRequest(shareId)
    if (share?.status === 'approved') {
      // `done` or `already_done` (a duplicated final round): either way the flow's own link id is
      // the one published, as `link-id` was journaled in round 1. An approved share of this caller
      // cannot make `publishShare` throw `ShareNotApprovedError`; anything thrown is a store failure.
      await notes.publishShare(ctx.principal, shareId, linkId, ctx.idempotencyKey)
      const url = `${baseUrl}/shared/${linkId}`
      return {
        content: [
          { type: 'text', text: `Shared "${title}" read-only at ${url}` },
          { type: 'resource_link', uri: url, name: title, mimeType: 'text/html' },
        ],
      }
    }
    if (share?.status === 'refused')
      return text(`Sharing "${title}" was refused on the approval page; nothing was shared.`)
    if (share === undefined || now() >= share.expiresAt) {
      return toolError(
        'The approval page expired before anyone decided; nothing was shared. Call share_note again.'
      )
    }
    const answer = await ctx.elicitUrl('approve', {
      message: `Open this page to approve sharing "${title}" as a read-only link, then come back.`,
      url: `${baseUrl}/share/${shareId}`,
    })
    if (answer.action !== 'accept') return text('Not shared.')
    // Accepted only means the page was opened; no decision yet, so ask again.
    return ctx.askAgain('approve')
  },
})
