// AdminClient: the operator calls of AdminService, one promise each, typed
// from the generated descriptors.
import { AdminService } from "./gen/seatd/v1/admin_service_pb.js";
import { Conn, unaryMethods, type ConnectionOptions, type Unary } from "./rpc.js";

type AdminMethods = typeof AdminService extends { method: infer M } ? { [K in keyof M]: M[K] extends { methodKind: infer K2; input: infer I; output: infer O } ? { methodKind: K2 & "unary"; input: I; output: O } : never } : never;

export interface AdminClientOptions extends ConnectionOptions {
  /** The operator key, or an API key that administers one tenant. */
  key: string;
}

/** AdminClient: createLicense, listLeases, revokeLease, createTenant, ...
 * Each method takes the request message (as a plain object) and returns the
 * response message; errors are the typed SeatdErrors. */
export interface AdminClient extends Unary<AdminMethods> {}
export class AdminClient implements AsyncDisposable {
  readonly #conn: Conn;

  constructor(address: string, o: AdminClientOptions) {
    this.#conn = new Conn(address, o);
    Object.assign(this, unaryMethods(this.#conn, AdminService, () => ({ bearer: o.key, timeoutMs: 30_000 })));
  }

  close(): void { this.#conn.close(); }

  async [Symbol.asyncDispose](): Promise<void> { this.close(); }
}
