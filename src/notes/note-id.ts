/**
 * @module notes/note-id
 * The ids of notes: {@link newNoteId} mints one, of the form `NOTE_ID_PATTERN` (`limits.ts`) that
 * `importNotes` accepts. Every store mints the ids of the notes it creates with it, and `import_notes`
 * mints (and journals) the ids of the notes it will import with it, so a re-run imports under the
 * same ids. {@link noteIdOfKey} derives one from a round's single-use key instead, for a note a final
 * round creates: run again, the round names the same note. Runtime-neutral: random bytes from
 * `mcp/random.ts`, SHA-256 from Web Crypto.
 */
import { randomBase64url, sha256Base64url } from 'stateless-mcp'

/** `n_` + 16 base64url characters (96 random bits): the note ids every adapter mints. */
export function newNoteId(): string {
  return `n_${randomBase64url(12)}`
}

/**
 * The id of the note a round with single-use key `key` (`ctx.idempotencyKey`) creates: the same for
 * every run of that round (a client retrying its final round, a replica taking a 2025 flow over),
 * and as unguessable as the key (the first 96 bits of its SHA-256).
 */
export async function noteIdOfKey(key: string): Promise<string> {
  return `n_${(await sha256Base64url(`note:${key}`)).slice(0, 16)}`
}
