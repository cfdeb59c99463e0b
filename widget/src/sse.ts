/** Server-Sent Events as the widget reads them (spec "Wire conventions": `event:<type>` / `data:<json>` / blank line). */

/** Reads an SSE stream (`event:` / `data:` / blank line) and calls `on` per event. */
export async function readEvents(res: Response, on: (type: string, data: any) => void): Promise<void> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      let parsed: unknown = null;
      try {
        parsed = data.length ? JSON.parse(data.join('\n')) : null;
      } catch {
        parsed = data.join('\n');
      }
      on(type, parsed);
    }
  }
}
