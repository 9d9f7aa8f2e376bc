// The transport of one MCP request, as the SDK's server sees it: the SDK's Streamable HTTP
// transport, except that requests the server sends to the client (elicitation) leave under ids
// from McpTalkBack (unique in the process, naming this instance), and the client's answers, which
// arrive in later POSTs, possibly at another instance, are handed back under the server's own ids.
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCRequest, type JSONRPCMessage, type MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';
import type { McpTalkBack } from './talk-back.js';

export class RoutedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  private readonly stops = new Set<() => void>();

  constructor(
    private readonly inner: Transport,
    private readonly talkBack: McpTalkBack,
    private readonly session: string,
  ) {
    inner.onmessage = (message, extra) => this.onmessage?.(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => {
      this.stopWaiting();
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (!isJSONRPCRequest(message)) return this.inner.send(message, options);
    const serverId = message.id;
    const wireId = this.talkBack.newRequestId();
    const stop = this.talkBack.expect(this.session, wireId, (answer) => {
      this.stops.delete(stop);
      this.onmessage?.({ ...answer, id: serverId } as JSONRPCMessage);
    });
    this.stops.add(stop);
    return this.inner.send({ ...message, id: wireId }, options);
  }

  async close(): Promise<void> {
    this.stopWaiting();
    await this.inner.close();
  }

  private stopWaiting(): void {
    for (const stop of this.stops) stop();
    this.stops.clear();
  }
}
