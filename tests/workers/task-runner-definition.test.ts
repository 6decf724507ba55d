/**
 * `defineTaskRunnerObject` as a server on the engine uses it (stateless-mcp/workers), inside workerd
 * on a real Durable Object's state and the real D1 database: a setup that returns the server's
 * definition (not a compiled server, which only the notes app has) runs a task of that server's own
 * tool to its end, and the object leaves nothing behind. Options that are no duration are refused
 * when the class is defined, naming the option.
 */
import { env, runInDurableObject } from 'cloudflare:test'
import { beforeAll, describe, expect, it } from 'vitest'
import * as z from 'zod'
import { text, tool } from 'stateless-mcp'
import { D1EngineStore } from 'stateless-mcp/d1'
import {
  TASK_RUNNER_BINDING,
  defineTaskRunnerObject,
  type TaskObjectState,
  type TaskRunnerNamespace,
} from 'stateless-mcp/workers'
import { unscheduledTask } from '../support/tasks.ts'

const records = new D1EngineStore({ db: env.DB })
beforeAll(() => records.migrate())

const greet = tool({
  name: 'greet',
  description: 'Greets, as a task.',
  input: z.object({ name: z.string() }),
  task: 'required',
  run: ({ name }) => text(`Hello, ${name}`),
})

describe('a task runner object whose setup gives a server definition', () => {
  it('runs a task of that server to its end, and keeps nothing after', async () => {
    const GreeterTaskRunner = defineTaskRunnerObject(() => ({
      server: { info: { name: 'greeter', version: '1.0.0' }, tools: [greet] },
      deps: undefined,
      store: records,
    }))
    const taskId = await unscheduledTask(records, 'greet', { name: 'Ada' })
    // A state of its own: an object of the bound class no task is ever handed to.
    const runners = env[TASK_RUNNER_BINDING] as TaskRunnerNamespace
    const object = runners.get(runners.idFromName(`definition-${crypto.randomUUID()}`) as never)

    const left = await runInDurableObject(object, async (_, state) => {
      const runner = new GreeterTaskRunner(state as unknown as TaskObjectState, env)
      // What `/schedule` stores, without the alarm it sets (the bound class would answer it).
      await (state as unknown as TaskObjectState).storage.put('task', taskId)
      await runner.alarm()
      return { task: await state.storage.get('task'), alarm: await state.storage.getAlarm() }
    })

    const done = await records.getTask(taskId)
    expect(done?.status).toBe('completed')
    expect(JSON.parse(done!.result!)).toMatchObject({
      content: [{ type: 'text', text: 'Hello, Ada' }],
    })
    expect(left).toEqual({ task: undefined, alarm: null })
  })

  it('refuses options that are no positive duration, naming the option', () => {
    const setup = () => ({ server: { info: { name: 'x', version: '1' } }, deps: 0, store: records })
    for (const options of [{ leaseMs: 0 }, { sliceMs: -1 }, { leaseMs: Number.NaN }]) {
      expect(() => defineTaskRunnerObject(setup, options)).toThrow(
        new RegExp(`options\\.${Object.keys(options)[0]} must be a positive number of milliseconds`)
      )
    }
  })
})
