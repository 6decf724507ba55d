/**
 * @module notes/note-id
 * The ids of notes: {@link newNoteId} mints one, of the form `NOTE_ID_PATTERN` (`limits.ts`) that
 * `importNotes` accepts. Every store mints the ids of the notes it creates with it, and `import_notes`
 * mints (and journals) the ids of the notes it will import with it, so a re-run imports under the
 * same ids. Runtime-neutral: random bytes from `mcp/random.ts`.
 */
import { randomBase64url } from '../mcp/random.ts'

/** `n_` + 16 base64url characters (96 random bits): the note ids every adapter mints. */
export function newNoteId(): string {
  return `n_${randomBase64url(12)}`
}
