// grpc-js calls built from the service descriptors protoc-gen-es generates:
// each method's path, its (de)serializers and its kind come from the
// descriptor, so there is no second code generator to keep in step.
import { create, fromBinary, toBinary, type DescMessage, type DescMethod, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import * as grpc from "@grpc/grpc-js";
import { seatdError } from "./errors.js";
import { serviceConfig } from "./service-config.js";

/** TLS settings: true for the system roots, or PEM material. */
export interface TlsOptions {
  /** PEM CA certificate(s) to trust instead of the system roots. */
  ca?: string | Buffer;
  /** PEM client certificate and key, for servers that ask for one (mTLS). */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Name to check the server certificate against, when not the address's host. */
  serverName?: string;
}

export interface ConnectionOptions {
  /** TLS: false (default, plaintext), true (system roots) or TlsOptions. */
  tls?: boolean | TlsOptions;
  /** Extra grpc-js channel options; they win over the client's. */
  channelOptions?: grpc.ChannelOptions;
}

const buf = (v: string | Buffer | undefined) => (v === undefined ? undefined : Buffer.from(v));

/** Conn is one grpc-js channel with typed calls. */
export class Conn {
  readonly raw: grpc.Client;

  constructor(address: string, o: ConnectionOptions = {}) {
    const tls = o.tls === true ? {} : o.tls || undefined;
    const creds = tls ? grpc.credentials.createSsl(buf(tls.ca) ?? null, buf(tls.key) ?? null, buf(tls.cert) ?? null) : grpc.credentials.createInsecure();
    const options: grpc.ChannelOptions = {
      "grpc.service_config": serviceConfig,
      "grpc.enable_retries": 1,
      "grpc.keepalive_time_ms": 30_000,
      ...(tls?.serverName ? { "grpc.ssl_target_name_override": tls.serverName, "grpc.default_authority": tls.serverName } : {}),
      ...o.channelOptions,
    };
    this.raw = new grpc.Client(address, creds, options);
  }

  close(): void { this.raw.close(); }

  unary<I extends DescMessage, O extends DescMessage>(m: DescMethod & { input: I; output: O }, req: MessageInitShape<I>, o: CallOptions = {}): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) => {
      const call = this.raw.makeUnaryRequest<MessageInitShape<I>, MessageShape<O>>(path(m), ser(m.input), de(m.output), req, meta(o), callOptions(o), (err, resp) => {
        o.signal?.removeEventListener("abort", cancel);
        if (err) reject(o.signal?.aborted ? o.signal.reason : seatdError(err));
        else resolve(resp as MessageShape<O>);
      });
      const cancel = () => call.cancel();
      if (o.signal?.aborted) call.cancel();
      o.signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  serverStream<I extends DescMessage, O extends DescMessage>(m: DescMethod & { input: I; output: O }, req: MessageInitShape<I>, o: CallOptions = {}): grpc.ClientReadableStream<MessageShape<O>> {
    return this.raw.makeServerStreamRequest<MessageInitShape<I>, MessageShape<O>>(path(m), ser(m.input), de(m.output), req, meta(o), callOptions(o));
  }

  bidi<I extends DescMessage, O extends DescMessage>(m: DescMethod & { input: I; output: O }, o: CallOptions = {}): grpc.ClientDuplexStream<MessageInitShape<I>, MessageShape<O>> {
    return this.raw.makeBidiStreamRequest<MessageInitShape<I>, MessageShape<O>>(path(m), ser(m.input), de(m.output), meta(o), callOptions(o));
  }
}

export interface CallOptions {
  /** Give up after this many ms. */
  timeoutMs?: number;
  /** Cancel the call. */
  signal?: AbortSignal;
  /** Sent as `authorization: Bearer <key>`. */
  bearer?: string;
}

const path = (m: DescMethod) => `/${m.parent.typeName}/${m.name}`;
const ser = <D extends DescMessage>(d: D) => (v: MessageInitShape<D>) => Buffer.from(toBinary(d, create(d, v)));
const de = <D extends DescMessage>(d: D) => (b: Buffer) => fromBinary(d, b);

function meta(o: CallOptions): grpc.Metadata {
  const md = new grpc.Metadata();
  if (o.bearer) md.set("authorization", `Bearer ${o.bearer}`);
  return md;
}

function callOptions(o: CallOptions): grpc.CallOptions {
  return o.timeoutMs ? { deadline: Date.now() + o.timeoutMs } : {};
}

/** Unary is the promise-returning form of a service's unary methods. */
export type Unary<S extends GenServiceMethods> = {
  [K in keyof S as S[K]["methodKind"] extends "unary" ? K : never]: (req: MessageInitShape<S[K]["input"]>, o?: CallOptions) => Promise<MessageShape<S[K]["output"]>>;
};

/** unaryMethods binds every unary method of service s to conn, with defaults for each call. */
export function unaryMethods<S extends GenServiceMethods>(conn: Conn, s: GenService<S>, defaults: () => CallOptions): Unary<S> {
  const out: Record<string, unknown> = {};
  for (const m of s.methods) {
    if (m.methodKind === "unary") out[m.localName] = (req: never, o?: CallOptions) => conn.unary(m, req, { ...defaults(), ...o });
  }
  return out as Unary<S>;
}
