/**
 * Debian's headless Chromium driven through the DevTools protocol (Node's own WebSocket): open a
 * file, evaluate expressions in the page, take a screenshot. A missing binary fails loudly with
 * the command that installs it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export const CHROMIUM = '/usr/bin/chromium'

export interface Browser {
  open(file: string, width?: number): Promise<void>
  evaluate<T>(expression: string): Promise<T>
  /** The whole page, or its top `height` pixels (the picture and the outcome, for the docs). */
  screenshot(height?: number): Promise<Buffer>
  close(): Promise<void>
}

/** Starts headless Chromium with a throwaway profile and one page. */
export async function startChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is not installed at ${CHROMIUM}; install it with: apt-get install -y --no-install-recommends chromium`)
  const profile = mkdtempSync(join(tmpdir(), 'svcops-chromium-'))
  const child: ChildProcess = spawn(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  const wsUrl = await new Promise<string>((resolve, reject) => {
    let err = ''
    const timer = setTimeout(() => reject(new Error(`Chromium did not start: ${err}`)), 30_000)
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString()
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err)
      if (m) {
        clearTimeout(timer)
        resolve(m[1] as string)
      }
    })
    child.on('exit', (code) => reject(new Error(`Chromium exited (${code}): ${err}`)))
  })
  const ws = new WebSocket(wsUrl)
  await new Promise((resolve, reject) => {
    ws.onopen = resolve
    ws.onerror = reject
  })
  let nextId = 1
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  const waiters: Array<{ method: string; resolve: () => void }> = []
  ws.onmessage = (message: MessageEvent) => {
    const m = JSON.parse(String(message.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string }
    if (m.id !== undefined) {
      const p = pending.get(m.id)
      pending.delete(m.id)
      if (m.error) p?.reject(new Error(m.error.message))
      else p?.resolve(m.result)
      return
    }
    for (const w of waiters.filter((x) => x.method === m.method)) {
      waiters.splice(waiters.indexOf(w), 1)
      w.resolve()
    }
  }
  const send = <T>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = nextId++
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }))
    })
  const { targetId } = await send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })
  const { sessionId } = await send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true })
  await send('Page.enable', {}, sessionId)
  return {
    async open(file, width = 1100) {
      await send('Emulation.setDeviceMetricsOverride', { width, height: 900, deviceScaleFactor: 1, mobile: false }, sessionId)
      const loaded = new Promise<void>((resolve) => waiters.push({ method: 'Page.loadEventFired', resolve }))
      await send('Page.navigate', { url: pathToFileURL(file).href }, sessionId)
      await loaded
    },
    async evaluate<T>(expression: string) {
      const r = await send<{ result: { value: T }; exceptionDetails?: { text: string } }>(
        'Runtime.evaluate',
        { expression, returnByValue: true },
        sessionId,
      )
      if (r.exceptionDetails) throw new Error(`In the page: ${r.exceptionDetails.text} (${expression})`)
      return r.result.value
    },
    async screenshot(height?: number) {
      const params = height
        ? { format: 'png', clip: { x: 0, y: 0, width: 1100, height, scale: 1 } }
        : { format: 'png', captureBeyondViewport: true }
      const r = await send<{ data: string }>('Page.captureScreenshot', params, sessionId)
      return Buffer.from(r.data, 'base64')
    },
    async close() {
      ws.close()
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
