import type { ClientOptions, BillingUsageResponse, CurrentCheckpointStorageUsageResponse, AuditLogResponse, AuditLogParams, BillingUsageParams, StorageUsageParams, Page, TrainingRun, Checkpoint, SessionSummary, ListTrainingRunsParams, ListUserCheckpointsParams, ListSessionsParams, RequestOptions, SessionSearchRequest, Datum, DatumFromTokensParams } from './gen/full/tinker_wasm.js';
import type { DownloadCheckpointParams, DownloadOptions } from './gen/params.js';
export type { DownloadCheckpointParams, DownloadOptions } from './gen/params.js';

/** A page with navigation. */
export type NavigablePage<T> = Page<T> & {
  /** Whether there is a page after this one. */
  hasNextPage(): boolean;
  /** The next page; rejects with a `TinkerError` when there is none. */
  getNextPage(): Promise<NavigablePage<T>>;
};

/** A list call: `await` it for the first page, or `for await (const item of …)` over every item. */
export declare class PagePromise<T> implements PromiseLike<NavigablePage<T>>, AsyncIterable<T> {
  /** The first page (fetched once; awaiting the list gives it too). */
  firstPage(): Promise<NavigablePage<T>>;
  then<R1 = NavigablePage<T>, R2 = never>(onFulfilled?: ((value: NavigablePage<T>) => R1 | PromiseLike<R1>) | null, onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null): Promise<R1 | R2>;
  /** `firstPage().catch(onRejected)`. */
  catch<R = never>(onRejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<NavigablePage<T> | R>;
  /** Every item of every page, in order, fetching each page as it is reached. */
  [Symbol.asyncIterator](): AsyncIterator<T>;
}

/** Async-iterable list methods of `RestClient`. */
export interface RestClientLists extends RestClientDownloads {
  /** Training runs, newest first. */
  listTrainingRuns(params?: ListTrainingRunsParams, options?: RequestOptions): PagePromise<TrainingRun>;
  /** All of the caller's checkpoints, newest first. */
  listUserCheckpoints(params?: ListUserCheckpointsParams, options?: RequestOptions): PagePromise<Checkpoint>;
  /** Session ids. */
  listSessions(params?: ListSessionsParams, options?: RequestOptions): PagePromise<string>;
  /** Session search (experimental). */
  searchSessions(request?: SessionSearchRequest, options?: RequestOptions): PagePromise<SessionSummary>;
}

/** Progress of a checkpoint download. */
export interface DownloadProgress {
  /** The file being downloaded (relative path). */
  path: string;
  /** Bytes of this file so far. */
  fileBytes: number;
  /** This file's size, if the server announced it. */
  fileSize: number | null;
  /** Bytes of every file so far. */
  bytes: number;
}

/** One downloaded file. */
export interface DownloadedFile {
  /** The file (relative path). */
  path: string;
  /** Its size in bytes. */
  bytes: number;
  /** Where it was written (with `directory`, in Node). */
  localPath?: string;
  /** Its contents (without `directory`). */
  blob?: Blob;
}

/** Checkpoint download methods of `RestClient`. */
export interface RestClientDownloads {
  /** The files of an `external_weights` checkpoint, each as a `ReadableStream`, read in order. */
  openCheckpointFiles(tinker_path: string, options?: DownloadOptions): AsyncIterable<{
    /** The file (relative path). */
    path: string;
    /** Its size in bytes, if the server announced it. */
    size: number | null;
    /** Its contents. */
    stream: ReadableStream<Uint8Array>;
  }>;
  /** Downloads an `external_weights` checkpoint (export one with `TrainingClient.saveWeightsExternal`): to `directory` in Node, else as Blobs. */
  downloadCheckpoint(tinker_path: string, params?: DownloadCheckpointParams, options?: DownloadOptions): Promise<{
    /** The files, in path order. */
    files: DownloadedFile[];
    /** Bytes of every file. */
    bytes: number;
  }>;
}

/**
 * A next-token `cross_entropy` datum from a full token sequence: input `tokens[0..n-1]`,
 * targets `tokens[1..n]`, and weights shifted the same way.
 * @example datumFromTokens(tokenizer.encode(prompt + answer), { prompt_length: tokenizer.encode(prompt).length })
 */
export declare function datumFromTokens(tokens: Uint32Array | Int32Array | ArrayLike<number>, params?: DatumFromTokensParams): Datum;

/**
 * The calls that need an organisation admin role (Python 0.38's `AdminClient`), on their own
 * client constructed like a `RestClient`:
 * ```js
 * const admin = new AdminClient();   // TINKER_API_KEY, TINKER_BASE_URL
 * const usage = await admin.getBillingUsage({ starting_on: '2026-07-13T00:00:00Z', ending_before: new Date() });
 * console.log(`${usage.data.length} billing events`);
 * await admin.close();
 * ```
 */
export declare class AdminClient {
  constructor(options?: ClientOptions);
  /** Hourly billing usage events in [starting_on, ending_before) (admin or billing-admin role). */
  getBillingUsage(params: BillingUsageParams): Promise<BillingUsageResponse>;
  /** Current checkpoint count, size and projected cost, optionally of one project. */
  getCurrentCheckpointStorageUsage(params?: StorageUsageParams): Promise<CurrentCheckpointStorageUsageResponse>;
  /** The organisation's audit log (admin role). */
  getAuditLog(params?: AuditLogParams): Promise<AuditLogResponse>;
  /** Stops the client's timers. */
  close(): Promise<void>;
  /** `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}
