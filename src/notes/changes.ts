/**
 * @module notes/changes
 * Tells open `subscriptions/listen` streams that a principal's notes changed: the resource list after a
 * create or delete, the `note://` resource after an update or delete. Events are scoped to the
 * principal, so no other caller hears of the change. Handlers publish after the store confirmed the
 * change, never before; a bus that fails surfaces as a failed call (logged by the engine).
 */
import type { EventBus } from 'stateless-mcp'
import { noteUri } from './format.ts'

type Change = 'created' | 'updated' | 'deleted'

export async function publishNoteChange(
  bus: EventBus,
  principal: string,
  id: string,
  change: Change
): Promise<void> {
  if (change !== 'updated') await bus.publish({ kind: 'resources_list_changed', principal })
  if (change !== 'created')
    await bus.publish({ kind: 'resource_updated', uri: noteUri(id), principal })
}
