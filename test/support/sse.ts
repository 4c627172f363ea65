/** A minimal Server-Sent Events client over fetch, for tests and the benchmark. */
export interface SseEvent {
  readonly id: string | undefined
  readonly data: string
  /** performance.now() when the event was parsed. */
  readonly receivedAt: number
}

export interface SseStream {
  readonly status: number
  readonly contentType: string | null
  readonly events: Array<SseEvent>
  readonly comments: Array<string>
  /** Resolves when the server ends the stream (not when we abort it). */
  readonly ended: Promise<void>
  readonly close: () => void
  /** Waits until `predicate` holds over the events so far. */
  readonly waitFor: (predicate: (events: ReadonlyArray<SseEvent>) => boolean, timeoutMs?: number) => Promise<void>
  readonly body: string
}

export const openEvents = async (
  url: string,
  headers: Record<string, string>,
  onEvent?: (event: SseEvent) => void
): Promise<SseStream> => {
  const controller = new AbortController()
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: controller.signal })
  const events: Array<SseEvent> = []
  const comments: Array<string> = []
  const waiters = new Set<() => void>()
  let body = ""
  const notify = () => {
    for (const w of waiters) w()
  }
  const parse = (block: string) => {
    let id: string | undefined
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) comments.push(line.slice(1).trim())
      else if (line.startsWith("id:")) id = line.slice(3).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
    }
    if (data.length > 0) {
      const event = { id, data: data.join("\n"), receivedAt: performance.now() }
      events.push(event)
      onEvent?.(event)
    }
  }
  const ended = (async () => {
    if (res.body === null || !res.headers.get("content-type")?.startsWith("text/event-stream")) {
      body = await res.text()
      return
    }
    const reader = res.body.getReader()
    const decoder = new TextDecoder()
    let buffer = ""
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          parse(buffer.slice(0, cut))
          buffer = buffer.slice(cut + 2)
        }
        notify()
      }
    } catch {
      // aborted by close()
    }
    notify()
  })()
  const waitFor = (predicate: (events: ReadonlyArray<SseEvent>) => boolean, timeoutMs = 15_000) =>
    new Promise<void>((resolve, reject) => {
      if (predicate(events)) return resolve()
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(new Error(`SSE: condition not met after ${timeoutMs} ms with ${events.length} events`))
      }, timeoutMs)
      const check = () => {
        if (!predicate(events)) return
        clearTimeout(timer)
        waiters.delete(check)
        resolve()
      }
      waiters.add(check)
    })
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    events,
    comments,
    ended,
    close: () => controller.abort(),
    waitFor,
    get body() {
      return body
    }
  }
}
